"""Record a tool-using pydantic-ai agent on Anthropic under OpenInference's pydantic-ai span processor, with its truth.

    python tests/frameworks/record_pydantic_ai_oi.py OUTDIR [RECORDING ...]     (OUTDIR: tests/data/anthropic-instrumentations)

writes `OUTDIR/openinference-pydantic-ai/<run>.jsonl` (OTLP/JSON) and `<run>.truth.json`. A real
`pydantic_ai.Agent` on `AnthropicModel` (thinking on) talks to `fake_anthropic.ScriptedAnthropic` on loopback with
`record_anthropic.REPLIES` (two parallel `get_weather` calls, then `convert_temperature`, then the answer);
pydantic-ai's own instrumentation (`InstrumentationSettings`, data-format version 5, its default) makes the
spans and openinference-instrumentation-pydantic-ai's `OpenInferenceSpanProcessor`, added before the exporter,
adds OpenInference attributes to each as it ends (how its README sets it up). Runs:

- `tools`: OpenInference's processor on, as above;
- `plain-tools`: the same run without it (pydantic-ai's own spans only), the control.

`get_weather` raises `ModelRetry` for Tokyo: pydantic-ai sends the model a `tool_result` with `is_error: true`
(`RetryPromptPart`). The truth is what pydantic-ai sent and got: the last request body's messages, the answer.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import instrumented, pydantic_ai_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from fake_anthropic import RESPONSE_MODEL, ScriptedAnthropic  # noqa: E402
from record_anthropic import MODEL, QUESTION, REPLIES, SYSTEM  # noqa: E402

KIND = "openinference-pydantic-ai"


def _truth(bodies: list[dict[str, Any]], answer: str) -> dict[str, Any]:
    """Calls, results and steps as the last request body shows them (pydantic-ai keeps the whole conversation)."""
    calls: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    results = {b["tool_use_id"]: b for m in bodies[-1]["messages"] if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"}
    for m in bodies[-1]["messages"]:
        if m["role"] != "assistant":
            continue
        uses = [b for b in m["content"] if b["type"] == "tool_use"]
        steps.append({"thinking": "".join(b["thinking"] for b in m["content"] if b["type"] == "thinking") or None,
                      "text": "".join(b["text"] for b in m["content"] if b["type"] == "text") or None, "calls": [b["id"] for b in uses]})
        for b in uses:
            r = results[b["id"]]
            text = r["content"] if isinstance(r["content"], str) else "".join(c["text"] for c in r["content"])
            calls.append({"id": b["id"], "name": b["name"], "arguments": b["input"], "result": text, "is_error": bool(r.get("is_error")),
                          "step": len(steps) - 1})
    steps.append({"thinking": None, "text": answer, "calls": []})
    usage = {"input_tokens": sum(u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"] for _, u in REPLIES),
             "output_tokens": sum(u["output_tokens"] for _, u in REPLIES), "requests": len(REPLIES),
             "uncached_input_tokens": sum(u["input_tokens"] for _, u in REPLIES)}
    system = bodies[0].get("system")
    return {"input": QUESTION, "user_turns": [QUESTION], "system": system if isinstance(system, str) else "".join(b["text"] for b in system),
            "calls": calls, "steps": steps, "output": answer, "usage": usage, "model": {"request": MODEL, "response": RESPONSE_MODEL}}


def record(out: Path, run: str) -> Any:
    """Run the agent once (`run`: `tools` with OpenInference's processor, `plain-tools` without); write the recording and truth."""
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    with ScriptedAnthropic(REPLIES) as fake, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        provider = pydantic_ai_provider(fake, oi=run == "tools")
        model = AnthropicModel(MODEL, provider=AnthropicProvider(base_url=fake.url, api_key="sk-ant-fake"))
        agent = Agent(model, instructions=SYSTEM, capabilities=instrumented(provider),
                      model_settings={"anthropic_thinking": {"type": "enabled", "budget_tokens": 2048}, "max_tokens": 4096})

        @agent.tool_plain
        def get_weather(city: str, unit: str | None = None) -> str:
            """Current weather in a city."""
            if city != "Paris":
                raise ModelRetry(f"weather service unavailable for {city}")
            return "sunny, 21 C"

        @agent.tool_plain
        def convert_temperature(celsius: float, to: str, round: dict[str, int] | None = None) -> str:
            """Convert Celsius to another scale."""
            return "69.8 F"

        result = agent.run_sync(QUESTION)
        write_otlp(provider, fake, out / KIND / f"{run}.jsonl")
        provider.shutdown()
        truth = _truth(fake.bodies, result.output)
    write_truth(out / KIND, run, truth)
    return result.output


RECORDINGS = {f"{KIND}/{run}": (lambda out, r=run: record(out, r)) for run in ("tools", "plain-tools")}


def main(argv: list[str]) -> int:
    """Record the recordings named in `argv[1:]` (default: all) into `argv[0]`, each in a subprocess; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, RECORDINGS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
