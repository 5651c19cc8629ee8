"""Record the traces behind `tests/test_otel_content_off.py`: a plain OpenAI loop recorded with content capture off.

    python tests/frameworks/record_content_off.py OUTDIR [SCENARIO ...]

writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON) and `OUTDIR/<scenario>.truth.json` (what the application sent and got).
Each scenario runs in its own subprocess against the scripted loopback server of `record_otel_loop_faults.py`
(no network): a chat loop asks for the weather in Paris, the model calls `get_weather`, then answers; two requests.

- `oi-content-off`: openinference-instrumentation-openai with `OPENINFERENCE_HIDE_INPUTS` and `OPENINFERENCE_HIDE_OUTPUTS`
  set, the privacy settings OpenInference documents for production (`input.value` is `__REDACTED__`);
- `tl-content-off`: opentelemetry-instrumentation-openai (OpenLLMetry) with `TRACELOOP_TRACE_CONTENT=false` (no messages).
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
from record_otel_loop_faults import QUESTION, WEATHER, Scripted, _openai_instrumentor, call, chat  # noqa: E402

HIDE = {"oi": {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"}, "tl": {"TRACELOOP_TRACE_CONTENT": "false"}}


def _reply(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, int]]:
    step = sum(1 for m in body["messages"] if m["role"] == "assistant")
    usage = {"prompt_tokens": 100 + step, "completion_tokens": 20 + step, "total_tokens": 120 + 2 * step}
    if step == 0:
        return chat(None, call("call_1", "get_weather", {"city": "Paris"})), usage
    return chat(f"It is {body['messages'][-1]['content']}."), usage


def content_off(out: Path, name: str, kind: str) -> Any:
    os.environ.update(HIDE[kind])  # read when the instrumentor starts
    from openai import OpenAI

    with Scripted(_reply) as fake:
        provider = otel_provider(fake, "openai-loops")
        _openai_instrumentor(kind).instrument(tracer_provider=provider)
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
        messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
        calls = []
        while True:
            message = client.chat.completions.create(model=MODEL, messages=messages, tools=tools).choices[0].message.model_dump(exclude_none=True)
            messages.append(message)
            if not message.get("tool_calls"):
                break
            for c in message["tool_calls"]:
                args = json.loads(c["function"]["arguments"])
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": WEATHER[args["city"]]})
                calls.append({"id": c["id"], "name": "get_weather", "arguments": args, "result": WEATHER[args["city"]]})
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": [{"user_turns": [QUESTION], "output": message["content"], "calls": calls, "hidden": HIDE[kind],
                                       "usage": {"input_tokens": 201, "output_tokens": 41, "requests": 2}}]})
    return message["content"]


SCENARIOS = {"oi-content-off": lambda out: content_off(out, "oi-content-off", "oi"), "tl-content-off": lambda out: content_off(out, "tl-content-off", "tl")}


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all), each in a subprocess; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, SCENARIOS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
