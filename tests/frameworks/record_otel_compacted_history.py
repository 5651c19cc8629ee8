"""Record plain OpenAI chat loops that compact their history before a request, behind `tests/test_otel_compacted_history.py`.

    python tests/frameworks/record_otel_compacted_history.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/compacted-history)

A hand-written `client.chat.completions.create` loop (tool `get_weather`; no span around it, so each request is a trace
of its own) under opentelemetry-instrumentation-openai (OpenLLMetry, `tl-…`) or openinference-instrumentation-openai
(`oi-…`), against a scripted loopback server (`record_otel_loop_faults.Scripted`, request n gets `REPLIES[scenario][n]`;
no network). Before some requests the application compacts its history, as chat applications do to stay within the
context window: it keeps the system prompt and the user's question(s) and drops the tool rounds between (their calls and
results), so a request replays neither the whole history nor a suffix of it. Writes `OUTDIR/<scenario>.jsonl`
(OTLP/JSON) and `OUTDIR/<scenario>.truth.json` (what the application sent and got: its user turns, every call it ran with
its result, each turn's answer and the last, token usage). Each scenario runs in its own subprocess.

- `tl-compact-round`, `oi-compact-round`: one question; a call (Paris), its result, another call (Tokyo), its result;
  before the last request the Paris round is dropped (system prompt, question, the Tokyo round); then the answer.
- `oi-compact-round-session`: the same inside OpenInference's `using_session("chat-1")` (the requests share a session id).
- `tl-compact-turns`, `oi-compact-turns`: two questions; each turn's tool round is dropped once the turn is answered
  (the application stores the user's and the assistant's texts only), so the second question's first request sends
  the system prompt, the first question, its answer and the second question.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "data" / "compacted-history"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted, _openai_instrumentor, call, chat  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
SYSTEM = {"role": "system", "content": "Be brief."}
ROUND = ["Weather in Paris, then Tokyo?"]
TURNS = ["Weather in Paris?", "And in Tokyo?"]
REPLIES = {
    "round": [chat("Checking Paris.", call("call_1", "get_weather", {"city": "Paris"})), chat("Now Tokyo.", call("call_2", "get_weather", {"city": "Tokyo"})),
              chat("Paris is sunny (21 C); Tokyo is rainy (14 C).")],
    "turns": [chat(None, call("call_1", "get_weather", {"city": "Paris"})), chat("Sunny, 21 C."), chat(None, call("call_2", "get_weather", {"city": "Tokyo"})),
              chat("Rainy, 14 C.")],
}


def _turn(client: Any, messages: list[dict[str, Any]], calls: list[dict[str, Any]], spent: dict[str, int], compact_at: int | None) -> str:
    """One user turn: requests until a reply calls no tool; before request `compact_at` of the turn the tool rounds
    before the latest one are dropped. Returns the answer; `messages` ends with it."""
    n = 0
    while True:
        if n == compact_at:
            first_tool_round = next(i for i, m in enumerate(messages) if m.get("tool_calls"))
            latest = max(i for i, m in enumerate(messages) if m.get("tool_calls"))
            messages[first_tool_round:latest] = []
        r = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        n += 1
        spent["input_tokens"] += r.usage.prompt_tokens
        spent["output_tokens"] += r.usage.completion_tokens
        spent["requests"] += 1
        msg = r.choices[0].message.model_dump(exclude_none=True)
        messages.append(msg)
        if not msg.get("tool_calls"):
            return msg["content"]
        for c in msg["tool_calls"]:
            args = json.loads(c["function"]["arguments"])
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": WEATHER[args["city"]]})
            calls.append({"id": c["id"], "name": "get_weather", "arguments": args, "result": WEATHER[args["city"]]})


def app(client: Any, kind: str) -> dict[str, Any]:
    calls: list[dict[str, Any]] = []
    spent = {"input_tokens": 0, "output_tokens": 0, "requests": 0}
    if kind == "round":
        messages = [SYSTEM, {"role": "user", "content": ROUND[0]}]
        answer = _turn(client, messages, calls, spent, compact_at=2)
        return {"user_turns": ROUND, "output": answer, "answers": [answer], "calls": calls, "usage": spent}
    kept: list[dict[str, Any]] = [SYSTEM]  # what the application stores: the user's and the assistant's texts
    answers = []
    for text in TURNS:
        kept.append({"role": "user", "content": text})
        answers.append(_turn(client, list(kept), calls, spent, compact_at=None))
        kept.append({"role": "assistant", "content": answers[-1]})
    return {"user_turns": TURNS, "output": answers[-1], "answers": answers, "calls": calls, "usage": spent}


def record(out: Path, name: str, inst: str, kind: str, session: bool = False) -> Any:
    from openai import OpenAI

    replies = iter(REPLIES[kind])
    with Scripted(lambda body, headers: (next(replies), {"prompt_tokens": 100 + len(body["messages"]), "completion_tokens": 10, "total_tokens": 110 + len(body["messages"])})) as fake:
        provider = otel_provider(fake, "openai-loop")
        _openai_instrumentor(inst).instrument(tracer_provider=provider)
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        if session:
            from openinference.instrumentation import using_session

            with using_session("chat-1"):
                truth = app(client, kind)
        else:
            truth = app(client, kind)
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": [truth]})
    return truth["output"]


SCENARIOS = {
    "tl-compact-round": lambda out: record(out, "tl-compact-round", "tl", "round"),
    "oi-compact-round": lambda out: record(out, "oi-compact-round", "oi", "round"),
    "oi-compact-round-session": lambda out: record(out, "oi-compact-round-session", "oi", "round", session=True),
    "tl-compact-turns": lambda out: record(out, "tl-compact-turns", "tl", "turns"),
    "oi-compact-turns": lambda out: record(out, "oi-compact-turns", "oi", "turns"),
}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], SCENARIOS))
