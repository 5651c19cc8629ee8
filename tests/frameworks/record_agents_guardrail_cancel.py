"""Record the Agents SDK runs behind `tests/test_agents_guardrail_cancel.py`: an input guardrail trips while tools run.

    python tests/frameworks/record_agents_guardrail_cancel.py [OUTDIR [SCENARIO ...]]   (OUTDIR: tests/data/agents-guardrail-cancel)

Each scenario runs the real OpenAI Agents SDK (0.24.0) against the project's scripted loopback server
(`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network), under OpenInference's
`OpenAIAgentsInstrumentor` and the SDK's own export at once (`common.agents_recording`), one subprocess a scenario.
The agent has an input guardrail `slow_check` (run beside the first turn, the SDK's default `run_in_parallel=True`)
that takes 0.8 s and trips. The model's first reply says "Let me check." and asks for `get_weather(city="Paris")`
(returns at once) and `slow_forecast(city="Paris")` (an async tool that sleeps 3 s): `get_weather` returns,
`slow_forecast` is cancelled mid-way when the tripwire fires, and `Runner.run` raises `InputGuardrailTripwireTriggered`.

- `slow_tool`: chat-completions model;
- `slow_tool_responses`: the Responses API model (the SDK's default), whose export keeps no request output.

Writes `oi-<s>.jsonl` (OTLP/JSON, format `otel`), `export-<s>.jsonl` (format `openai-agents`) and `<s>.truth.json`
(what the application saw: the calls the model asked for, each tool body's start and whether it returned, and what,
the guardrail's verdict, the exception the run raised, how many model requests were made).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

FRAMEWORKS = Path(__file__).resolve().parent
OUT = FRAMEWORKS.parent / "data" / "agents-guardrail-cancel"
sys.path.insert(0, str(FRAMEWORKS))

QUESTION = "Weather in Paris?"
CALLS = [("call_g1", "get_weather", {"city": "Paris"}), ("call_g2", "slow_forecast", {"city": "Paris"})]


def _replies(api: str) -> list[Any]:
    if api == "chat_completions":
        calls = [{"id": c, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}} for c, n, a in CALLS]
        return [{"role": "assistant", "content": "Let me check.", "tool_calls": calls}, {"role": "assistant", "content": "unused"}]
    said = {"type": "message", "id": "msg_0", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "Let me check.", "annotations": []}]}
    calls = [{"type": "function_call", "id": f"fc_{i}", "call_id": c, "name": n, "arguments": json.dumps(a), "status": "completed"}
             for i, (c, n, a) in enumerate(CALLS)]
    return [[said, *calls], [{**said, "id": "msg_1", "content": [{"type": "output_text", "text": "unused", "annotations": []}]}]]


async def _run(ran: list[dict[str, Any]]) -> Any:
    from agents import Agent, GuardrailFunctionOutput, Runner, function_tool, input_guardrail

    @input_guardrail
    async def slow_check(ctx: Any, agent: Any, text: Any) -> GuardrailFunctionOutput:
        await asyncio.sleep(0.8)
        ran.append({"guardrail": "slow_check", "tripwire_triggered": True})
        return GuardrailFunctionOutput(output_info="blocked topic", tripwire_triggered=True)

    def get_weather(city: str) -> str:
        """Weather in a city."""
        ran.append({"name": "get_weather", "arguments": {"city": city}, "started": True, "returned": "sunny, 21 C"})
        return "sunny, 21 C"

    async def slow_forecast(city: str) -> str:
        """Ten-day forecast for a city."""
        mine = {"name": "slow_forecast", "arguments": {"city": city}, "started": True, "returned": None}
        ran.append(mine)
        await asyncio.sleep(3)
        mine["returned"] = "mild all week"
        return "mild all week"

    agent = Agent(name="Assistant", instructions="Help.", tools=[function_tool(get_weather), function_tool(slow_forecast)],
                  model="gpt-4o-mini", input_guardrails=[slow_check])
    return await Runner.run(agent, QUESTION)


def record(name: str, out: Path) -> dict[str, Any]:
    from common import agents_recording, write_truth
    from record_oi_faults import ScriptedOpenAI

    api = "responses" if name.endswith("_responses") else "chat_completions"
    ran: list[dict[str, Any]] = []
    with ScriptedOpenAI(_replies(api)) as fake:
        with agents_recording(fake, out, name, api=api):
            try:
                result: Any = asyncio.run(_run(ran))
            except Exception as exc:  # the run's own failure is the scenario
                result = exc
        requests = fake.n
    if not isinstance(result, Exception):
        raise SystemExit(f"{name}: the guardrail did not stop the run ({result.final_output!r})")
    truth = {"input": QUESTION, "asked": [{"id": c, "name": n, "arguments": a} for c, n, a in CALLS],
             "tools": [r for r in ran if "name" in r], "guardrails": [r for r in ran if "guardrail" in r],
             "raised": f"{type(result).__name__}: {result}", "final_output": None, "model_requests": requests}
    write_truth(out, name, truth)
    return truth


SCENARIOS = {name: (lambda out, name=name: record(name, out)) for name in ("slow_tool", "slow_tool_responses")}


if __name__ == "__main__":
    from common import record_each_in_subprocess

    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], SCENARIOS))
