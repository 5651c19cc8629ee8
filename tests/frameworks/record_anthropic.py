"""Record a tool-using Anthropic Messages API loop under the Anthropic instrumentations, with its ground truth.

    python tests/frameworks/record_anthropic.py OUTDIR [RECORDING ...]     (OUTDIR: tests/data/anthropic-instrumentations)

writes `OUTDIR/<instrumentation>/<run>.jsonl` (OTLP/JSON, one export request a line, as `common.write_otlp`
writes them) and `<run>.truth.json` (what the application itself sent and got). Instrumentations:
`openinference-anthropic` (openinference-instrumentation-anthropic), `traceloop-anthropic`
(opentelemetry-instrumentation-anthropic, OpenLLMetry) and `anthropic-sdk` (the SDK's own tracing, content recorded:
it writes the system prompt in `gen_ai.system_instructions`); runs: `tools` (`messages.create`) and
`tools-stream` (the same loop through `messages.stream(...)` / `get_final_message()`). Each recording
runs in its own subprocess (instrumentors patch the SDK process-wide) against `fake_anthropic.ScriptedAnthropic`
on loopback (no network). The script (`REPLIES`), the same for every recording:

1. system prompt `SYSTEM`, user `QUESTION`; the model answers with a `thinking` block, a text block and two
   parallel `tool_use` blocks: `get_weather{city: Paris}` and `get_weather{city: Tokyo, unit: celsius}`;
2. the application sends both `tool_result`s in one user message: Paris's as a string, Tokyo's with
   `is_error: true`; the model thinks again and asks `convert_temperature{celsius: 21, to: F, round: {decimals: 1}}`;
3. that result goes back as a list of text blocks; the model answers with text alone.

Usage includes prompt-cache reads and writes: the input the model read per request is `input_tokens +
cache_read_input_tokens + cache_creation_input_tokens` (the API counts them apart); the truth's `usage` says both.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from fake_anthropic import RESPONSE_MODEL, ScriptedAnthropic  # noqa: E402

MODEL = "claude-sonnet-4-5"
SYSTEM = "You are a weather assistant. Use the tools; never guess a temperature."
QUESTION = "Compare the weather in Paris and Tokyo, and give Paris's temperature in Fahrenheit."
ANSWER = "Paris is sunny at 21 C (69.8 F). I could not get Tokyo's weather: the weather service is unavailable."
TOOLS = [
    {"name": "get_weather", "description": "Current weather in a city.",
     "input_schema": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string"}}, "required": ["city"]}},
    {"name": "convert_temperature", "description": "Convert Celsius to another scale.",
     "input_schema": {"type": "object", "properties": {"celsius": {"type": "number"}, "to": {"type": "string"}, "round": {"type": "object"}},
                      "required": ["celsius", "to"]}},
]


def _use(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": name, "input": args}


def _usage(inp: int, out: int, read: int, write: int) -> dict[str, int]:
    return {"input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": read, "cache_creation_input_tokens": write}


REPLIES: list[tuple[list[dict[str, Any]], dict[str, int]]] = [
    ([{"type": "thinking", "thinking": "Both cities are independent: ask for both at once.", "signature": "sig-step-0"},
      {"type": "text", "text": "I'll check both cities at once."},
      _use("toolu_01", "get_weather", {"city": "Paris"}),
      _use("toolu_02", "get_weather", {"city": "Tokyo", "unit": "celsius"})], _usage(412, 96, 0, 0)),
    ([{"type": "thinking", "thinking": "Paris is 21 C; Tokyo failed. Convert Paris to Fahrenheit.", "signature": "sig-step-1"},
      _use("toolu_03", "convert_temperature", {"celsius": 21, "to": "F", "round": {"decimals": 1}})], _usage(60, 41, 412, 90)),
    ([{"type": "text", "text": ANSWER}], _usage(30, 38, 502, 0)),
]


def run_tool(name: str, args: dict[str, Any]) -> tuple[Any, bool]:
    """The application's tools: (the `tool_result` content it sends back, is_error)."""
    if name == "get_weather":
        return ("sunny, 21 C", False) if args["city"] == "Paris" else (f"weather service unavailable for {args['city']}", True)
    return [{"type": "text", "text": "69.8 F"}], False  # content as a list of blocks, as the API also takes it


def agent_loop(client: Any, stream: bool) -> dict[str, Any]:
    """The application: ask, run every tool_use block of a reply (in its order), send the results in one message; returns its truth."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    calls: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    spent = {"input_tokens": 0, "output_tokens": 0, "requests": 0, "uncached_input_tokens": 0}
    answer = None
    while answer is None:
        kw = dict(model=MODEL, max_tokens=4096, system=SYSTEM, tools=TOOLS, messages=messages, thinking={"type": "enabled", "budget_tokens": 2048})
        if stream:
            with client.messages.stream(**kw) as s:
                r = s.get_final_message()
        else:
            r = client.messages.create(**kw)
        u = r.usage
        spent = {"input_tokens": spent["input_tokens"] + u.input_tokens + (u.cache_read_input_tokens or 0) + (u.cache_creation_input_tokens or 0),
                 "output_tokens": spent["output_tokens"] + u.output_tokens, "requests": spent["requests"] + 1,
                 "uncached_input_tokens": spent["uncached_input_tokens"] + u.input_tokens}
        blocks = [b.model_dump(exclude_none=True) for b in r.content]
        messages.append({"role": "assistant", "content": blocks})
        uses = [b for b in blocks if b["type"] == "tool_use"]
        steps.append({"thinking": "".join(b["thinking"] for b in blocks if b["type"] == "thinking") or None,
                      "text": "".join(b["text"] for b in blocks if b["type"] == "text") or None, "calls": [b["id"] for b in uses]})
        if not uses:
            answer = steps[-1]["text"]
            break
        results = []
        for b in uses:
            content, failed = run_tool(b["name"], b["input"])
            results.append({"type": "tool_result", "tool_use_id": b["id"], "content": content, **({"is_error": True} if failed else {})})
            text = content if isinstance(content, str) else "".join(c["text"] for c in content)
            calls.append({"id": b["id"], "name": b["name"], "arguments": b["input"], "result": text, "is_error": failed, "step": len(steps) - 1})
        messages.append({"role": "user", "content": results})
    return {"input": QUESTION, "user_turns": [QUESTION], "system": SYSTEM, "calls": calls, "steps": steps, "output": answer,
            "usage": spent, "model": {"request": MODEL, "response": RESPONSE_MODEL}}


def _instrumentor(kind: str) -> Any:
    if kind == "openinference-anthropic":
        from openinference.instrumentation.anthropic import AnthropicInstrumentor
    else:
        from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor
    return AnthropicInstrumentor()


def record(out: Path, kind: str, run: str) -> Any:
    """Run `run` (`tools`, `tools-stream`) under instrumentation `kind`; write `out/<kind>/<run>.jsonl` and its truth.

    `anthropic-sdk` is the SDK's own tracing (`open_telemetry` client option, content recorded), no instrumentor."""
    import anthropic

    with ScriptedAnthropic(REPLIES) as fake:
        provider = otel_provider(fake, "anthropic-loop")
        traced: dict[str, Any] = {"open_telemetry": {"tracer_provider": provider, "traces": {"content_mode": "content"}}}
        if kind != SDK:
            _instrumentor(kind).instrument(tracer_provider=provider)
            traced = {"open_telemetry": False}  # the instrumentor's spans alone, whatever the global tracer provider
        client = anthropic.Anthropic(base_url=fake.url, api_key="sk-ant-fake", max_retries=0, **traced)
        truth = agent_loop(client, stream=run.endswith("-stream"))
        write_otlp(provider, fake, out / kind / f"{run}.jsonl")
        provider.shutdown()
    write_truth(out / kind, run, truth)
    return truth["output"]


SDK = "anthropic-sdk"
RECORDINGS = {f"{kind}/{run}": (lambda out, k=kind, r=run: record(out, k, r))
              for kind in ("openinference-anthropic", "traceloop-anthropic", SDK) for run in ("tools", "tools-stream")}


def main(argv: list[str]) -> int:
    """Record the recordings named in `argv[1:]` (default: all) into `argv[0]`, each in a subprocess; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, RECORDINGS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
