"""Record the traces behind `tests/test_otel_dropped_attributes.py`: long tool loops whose spans pass the OTel SDK's limit of
attributes per span.

    python tests/frameworks/record_dropped_attributes.py OUTDIR [SCENARIO ...]

writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON, one export request a line) and `OUTDIR/<scenario>.truth.json` (what the
application itself sent and got, per conversation: its user turns, each call with the result it sent back, the answers,
the token usage, and the session id it ran in). Each scenario runs in its own subprocess against the project's scripted
loopback OpenAI server (`record_otel_loop_faults.Scripted`; no network), under openinference-instrumentation-openai with
the OTel SDK's span limits as the environment leaves them: the default 128 attributes per span unless the scenario sets
`OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT` (the variables setting it are cleared first).

Two plain `openai` chat loops, conversations A and B, run interleaved (A's turn k, then B's turn k), each asking the
same questions ("Hello, what's the weather?", then "Turn k: and now?"). For turn k the server asks, per response,
for `CALLS` `get_weather` calls on cities of the conversation (A: Paris, Tokyo, Lima; B: Rome, Oslo, Cairo, so every
result repeats three turns later), then answers "Turn k: <results>." quoting them. OpenInference writes one attribute
per message field, so past the limit the Python SDK evicts the attributes set first: `input.value`, `session.id`, the
first input messages (the oldest one kept may lose its role only).

- `oi-cut`: 14 turns each, call ids of their own (`call_A3_1`): from turn 9 on every request lost its first messages.
- `oi-cut-session`: the same, 12 turns, each conversation inside `using_session("sess-A" / "sess-B")`: the later spans
  lost `session.id` too.
- `oi-cut-reused-ids`: 12 turns, the server numbering calls per response (`call_1`, `call_2` in every response of both
  conversations, as llama.cpp does): only the texts at the same positions tell the conversations apart, and a result
  replayed with the same id and text as one three turns earlier is another call's.
- `oi-cut-limit`: 12 turns with `OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT=32`: requests keep a few messages of histories of up
  to 60 (their indices past the sparseness `view.nested` reads as a list).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted, _openai_instrumentor, call, chat  # noqa: E402

CITIES = {"A": ["Paris", "Tokyo", "Lima"], "B": ["Rome", "Oslo", "Cairo"]}
WEATHER = {"Paris": "sunny", "Tokyo": "rainy", "Lima": "foggy", "Rome": "hot", "Oslo": "cold", "Cairo": "dry"}
CALLS = 3  # get_weather calls per turn
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
_LIMITS = ("OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "OTEL_ATTRIBUTE_COUNT_LIMIT")


def question(k: int) -> str:
    """The user's k-th question, the same in both conversations."""
    return "Hello, what's the weather?" if k == 1 else f"Turn {k}: and now?"


def _reply(reused_ids: bool) -> Any:
    """The server: turn k's calls for the conversation of header `X-Conv`, then the answer quoting their results."""

    def reply(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, int]]:
        conv, messages = headers["X-Conv"], body["messages"]
        k = sum(1 for m in messages if m["role"] == "user")
        asking = messages[-1]["role"] == "user"
        usage = {"prompt_tokens": 30 + 2 * len(messages) + (conv == "B"), "completion_tokens": 5 + k % 4 + asking}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if asking:
            cities = [CITIES[conv][(k + j) % 3] for j in range(CALLS)]
            ids = [f"call_{j + 1}" if reused_ids else f"call_{conv}{k}_{j + 1}" for j in range(CALLS)]
            return chat(None, *(call(i, "get_weather", {"city": c}) for i, c in zip(ids, cities, strict=True))), usage
        results = [m["content"] for m in messages[-CALLS:]]
        return chat(f"Turn {k}: {', '.join(results)}."), usage

    return reply


def _turn(client: Any, conv: str, messages: list[dict[str, Any]], truth: dict[str, Any], session: str | None) -> None:
    """One user turn of conversation `conv`: requests until the model answers, every call answered in its order."""
    import contextlib

    from openinference.instrumentation import using_session

    while True:
        with using_session(session) if session else contextlib.nullcontext():
            r = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, extra_headers={"X-Conv": conv})
        usage = truth["usage"]
        usage["input_tokens"] += r.usage.prompt_tokens
        usage["output_tokens"] += r.usage.completion_tokens
        usage["requests"] += 1
        message = r.choices[0].message.model_dump(exclude_none=True)
        messages.append(message)
        if not message.get("tool_calls"):
            truth["answers"].append(message["content"])
            return
        for c in message["tool_calls"]:
            args = json.loads(c["function"]["arguments"])
            result = WEATHER[args["city"]]
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
            truth["calls"].append({"id": c["id"], "name": c["function"]["name"], "arguments": args, "result": result})


def loop_scenario(out: Path, name: str, turns: int, sessions: bool = False, reused_ids: bool = False, limit: int | None = None) -> Any:
    """Conversations A and B, `turns` turns each, interleaved; returns how many spans lost attributes."""
    for var in _LIMITS:
        os.environ.pop(var, None)  # the SDK's defaults unless the scenario sets its own
    if limit is not None:
        os.environ["OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT"] = str(limit)
    from openai import OpenAI

    with Scripted(_reply(reused_ids)) as fake:
        provider = otel_provider(fake, "dropped-attributes")
        _openai_instrumentor("oi").instrument(tracer_provider=provider)
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        history = {c: [{"role": "system", "content": "Weather bot."}] for c in CITIES}
        truth = {c: {"session": f"sess-{c}" if sessions else None, "user_turns": [], "calls": [], "answers": [],
                     "usage": {"input_tokens": 0, "output_tokens": 0, "requests": 0}} for c in CITIES}
        for k in range(1, turns + 1):
            for conv in CITIES:
                history[conv].append({"role": "user", "content": question(k)})
                truth[conv]["user_turns"].append(question(k))
                _turn(client, conv, history[conv], truth[conv], truth[conv]["session"])
        write_otlp(provider, fake, out / f"{name}.jsonl")
        kept = provider._span_limits.max_span_attributes  # (what the SDK applied: the default, or the scenario's variable)
        provider.shutdown()
    docs = [json.loads(line) for line in (out / f"{name}.jsonl").read_text().splitlines()]
    spans = [s for d in docs for rs in d["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
    lossy = [int(s["droppedAttributesCount"]) for s in spans if s.get("droppedAttributesCount")]
    write_truth(out, name, {"attribute_limit": kept, "spans": len(spans), "lossy_spans": len(lossy), "dropped_attributes": sum(lossy),
                            "conversations": [truth[c] for c in CITIES]})
    return {"spans": len(spans), "lossy_spans": len(lossy), "dropped": sum(lossy)}


SCENARIOS = {
    "oi-cut": lambda out: loop_scenario(out, "oi-cut", 9),
    "oi-cut-session": lambda out: loop_scenario(out, "oi-cut-session", 8, sessions=True),
    "oi-cut-reused-ids": lambda out: loop_scenario(out, "oi-cut-reused-ids", 8, reused_ids=True),
    "oi-cut-limit": lambda out: loop_scenario(out, "oi-cut-limit", 8, limit=24),
}


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all), each in a subprocess; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, SCENARIOS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
