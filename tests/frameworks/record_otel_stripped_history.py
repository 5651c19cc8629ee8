"""Record plain OpenAI chat loops inside OpenInference's `using_session` that resend their history with the assistant's
texts stripped, behind `tests/test_otel_stripped_history.py`.

    python tests/frameworks/record_otel_stripped_history.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/stripped-history)

A hand-written `client.chat.completions.create` loop (tool `get_weather`; no span around it, so each request is a trace
of its own) under openinference-instrumentation-openai, every request inside `using_session("chat-1")` (OpenInference's
context manager: each span gets `session.id` `chat-1`), against a scripted loopback server (`record_otel_loop_faults.Scripted`,
request n gets `REPLIES[kind][n]`; no network). The model says a few words beside its calls ("Checking Paris.") and
answers each question; the application does not send the assistant's words back:

- `oi-texts-round`: one question, two tool rounds; each request's history keeps the assistant's calls but not its text
  (`{"role": "assistant", "content": None, "tool_calls": […]}`), as applications that drop the model's chatter do;
- `oi-texts-turns`: two questions; the same, and an answer (an assistant message with no calls) is not sent back at all,
  so the second question's request holds the first question, its calls and results, and the second question;
- `oi-users-turns`: two questions; the application stores only the user's turns, so the second question's request
  holds the two questions (each turn's own tool rounds are sent whole while it lasts);
- `oi-tools-turns`: two questions; the application stores the user's turns and the tool results (the assistant's
  messages dropped: a server that does not check that a tool message follows its call accepts it, as this one does).

`tl-texts-round` is `oi-texts-round` under opentelemetry-instrumentation-openai (OpenLLMetry), without a session (it
has no `using_session`). Writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON) and `OUTDIR/<scenario>.truth.json` (what the
application sent and got: its user turns, every call it ran with its result, each turn's answer and the last, token
usage). Each scenario runs in its own subprocess.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "data" / "stripped-history"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted, _openai_instrumentor, call, chat  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
SYSTEM = {"role": "system", "content": "Be brief."}
QUESTIONS = {"round": ["Weather in Paris, then Tokyo?"], "turns": ["Weather in Paris?", "And in Tokyo?"]}
REPLIES = {
    "round": [chat("Checking Paris.", call("call_1", "get_weather", {"city": "Paris"})), chat("Now Tokyo.", call("call_2", "get_weather", {"city": "Tokyo"})),
              chat("Paris is sunny (21 C); Tokyo is rainy (14 C).")],
    "turns": [chat("Checking Paris.", call("call_1", "get_weather", {"city": "Paris"})), chat("Sunny, 21 C."),
              chat("Checking Tokyo.", call("call_2", "get_weather", {"city": "Tokyo"})), chat("Rainy, 14 C.")],
}


def _no_texts(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The assistant's messages without their text; one that then says and asks nothing is left out."""
    out = []
    for m in messages:
        if m["role"] == "assistant":
            if not m.get("tool_calls"):
                continue
            m = {**m, "content": None}
        out.append(m)
    return out


STRIP = {  # strip name -> (what a request sends of its own turn, what the application keeps of a finished turn)
    "texts": (_no_texts, _no_texts),
    "users": (lambda ms: ms, lambda ms: [m for m in ms if m["role"] in ("system", "user")]),
    "tools": (lambda ms: ms, lambda ms: [m for m in ms if m["role"] in ("system", "user", "tool")]),
}


def app(client: Any, kind: str, strip: str) -> dict[str, Any]:
    sent, kept_of = STRIP[strip]
    calls: list[dict[str, Any]] = []
    spent = {"input_tokens": 0, "output_tokens": 0, "requests": 0}
    kept: list[dict[str, Any]] = [SYSTEM]  # what the application stores of the turns before
    answers = []
    for text in QUESTIONS[kind]:
        turn: list[dict[str, Any]] = [{"role": "user", "content": text}]
        while True:
            r = client.chat.completions.create(model=MODEL, messages=kept + sent(turn), tools=TOOLS)
            spent["input_tokens"] += r.usage.prompt_tokens
            spent["output_tokens"] += r.usage.completion_tokens
            spent["requests"] += 1
            msg = r.choices[0].message.model_dump(exclude_none=True)
            turn.append(msg)
            if not msg.get("tool_calls"):
                answers.append(msg["content"])
                break
            for c in msg["tool_calls"]:
                args = json.loads(c["function"]["arguments"])
                turn.append({"role": "tool", "tool_call_id": c["id"], "content": WEATHER[args["city"]]})
                calls.append({"id": c["id"], "name": "get_weather", "arguments": args, "result": WEATHER[args["city"]]})
        kept += kept_of(turn)
    return {"user_turns": QUESTIONS[kind], "output": answers[-1], "answers": answers, "calls": calls, "usage": spent}


def record(out: Path, name: str) -> Any:
    from openai import OpenAI

    inst, strip, kind = name.split("-")
    replies = iter(REPLIES[kind])
    with Scripted(lambda body, headers: (next(replies), {"prompt_tokens": 100 + len(body["messages"]), "completion_tokens": 10, "total_tokens": 110 + len(body["messages"])})) as fake:
        provider = otel_provider(fake, "openai-loop")
        _openai_instrumentor(inst).instrument(tracer_provider=provider)
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        if inst == "oi":
            from openinference.instrumentation import using_session

            with using_session("chat-1"):
                truth = app(client, kind, strip)
        else:
            truth = app(client, kind, strip)
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": [truth]})
    return truth["output"]


SCENARIOS = {n: (lambda out, n=n: record(out, n)) for n in ("oi-texts-round", "oi-texts-turns", "oi-users-turns", "oi-tools-turns", "tl-texts-round")}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], SCENARIOS))
