"""Record pydantic-ai runs that ended before the tool calls of their last model request ran, with their truth.

    python tests/frameworks/record_pydantic_ai_unrun.py OUTDIR [RECORDING ...]     (OUTDIR: tests/data/pydantic-ai-unrun)

writes `OUTDIR/<scenario>-<instrumentation>.jsonl` (OTLP/JSON, format `otel`) and `<…>.truth.json`. A real
`pydantic_ai.Agent` (`str` output, tool `get_weather`) on `OpenAIChatModel` talks to the project's scripted loopback server
(`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network; `record_smolagents_streams.Streaming`, the same
streaming its replies, for the `events` scenarios). Scenarios:

- `tool_limit`: `run(..., usage_limits=UsageLimits(tool_calls_limit=2))`; the first reply calls `get_weather` (Paris), which
  runs; the second calls it for Tokyo and Oslo: pydantic-ai checks the limit before running them and raises
  `UsageLimitExceeded` ("The next tool call(s) would exceed the tool_calls_limit of 2 (tool_calls=3)…"): neither runs;
- `iter_stopped`: the application iterates `agent.iter(...)` and leaves the loop when it reaches the `CallToolsNode` of the
  first reply (which calls `get_weather` for Paris): the call never runs, nothing is raised, the run has no result;
- `iter_after_tools`: the same application leaves the loop one node later, at the `ModelRequestNode` that would send the
  first reply's call results: `get_weather` (Paris) ran, no request followed, nothing is raised, the run has no result;
- `events_stopped`: the application iterates `agent.run_stream_events(...)` (inside its `async with`) and leaves at the
  first `FunctionToolResultEvent`: `get_weather` (Paris) ran, no request followed, nothing is raised, the run has no result;
- `events` (for comparison): the same events iterated to the end: the run answers "Paris is sunny, 21 C.";
- `request_limit` (for comparison): `UsageLimits(request_limit=2)`; both replies' calls run, then the third request would
  exceed the limit: `UsageLimitExceeded` with every call run.

Instrumentations: `v5`, pydantic-ai's own `Instrumentation` capability at its default data-format version (5); `oi`, the same
with openinference-instrumentation-pydantic-ai's `OpenInferenceSpanProcessor` before the exporter.

The truth is what the run's messages (`capture_run_messages()`, as `record_pydantic_ai_deferred._truth` reads
`all_messages()`) say: the prompt, every response with its calls and each call's return (none for a call that did not
run), the tools that really ran (`tools_ran`), the output (none here but for completeness), and what the run raised
(`raised`, `"<type>: <message>"`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import instrumented, pydantic_ai_recording, record_per_instrumentation, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402
from record_pydantic_ai_deferred import _reply, _truth  # noqa: E402
from record_smolagents_streams import Streaming  # noqa: E402

OUT = HERE.parent / "data" / "pydantic-ai-unrun"
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C", "Oslo": "snow, -2 C"}
PARIS = call("call_w1", "get_weather", {"city": "Paris"})
TWO = _reply(None, call("call_w2", "get_weather", {"city": "Tokyo"}), call("call_w3", "get_weather", {"city": "Oslo"}))
# scenario: (how the run is driven, usage limits, prompt, replies)
SCENARIOS: dict[str, tuple[str, dict[str, int], str, list[dict[str, Any]]]] = {
    "tool_limit": ("run", {"tool_calls_limit": 2}, "Weather in Paris, Tokyo and Oslo?", [_reply(None, PARIS), TWO]),
    "iter_stopped": ("iter", {}, "Weather in Paris?", [_reply("Let me check.", PARIS), _reply("Paris is sunny, 21 C.")]),
    "request_limit": ("run", {"request_limit": 2}, "Weather in Paris, Tokyo and Oslo?", [_reply(None, PARIS), TWO, _reply("unused")]),
    "iter_after_tools": ("iter_after", {}, "Weather in Paris?", [_reply("Let me check.", PARIS), _reply("Paris is sunny, 21 C.")]),
    "events_stopped": ("events_after", {}, "Weather in Paris?", [_reply("Let me check.", PARIS), _reply("Paris is sunny, 21 C.")]),
    "events": ("events", {}, "Weather in Paris?", [_reply("Let me check.", PARIS), _reply("Paris is sunny, 21 C.")]),
}
INSTRUMENTATIONS = ("v5", "oi")


def _agent(model: Any, provider: Any, ran: list[dict[str, Any]]) -> Any:
    from pydantic_ai import Agent

    agent = Agent(model, instructions="You report the weather.", capabilities=instrumented(provider))

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Weather in a city."""
        ran.append({"name": "get_weather", "arguments": {"city": city}, "result": WEATHER[city]})
        return WEATHER[city]

    return agent


async def _drive(how: str, agent: Any, prompt: str, limits: Any) -> Any:
    """Run `agent` as `how` says; its output (None: it has none)."""
    if how == "run":
        return (await agent.run(prompt, usage_limits=limits)).output
    if how.startswith("events"):  # (2.x: an async context manager, its events iterated inside it)
        async with agent.run_stream_events(prompt, usage_limits=limits) as events:
            async for event in events:
                if how == "events_after" and type(event).__name__ == "FunctionToolResultEvent":
                    return None  # the application stops here: the call ran, its result is never sent
                if type(event).__name__ == "AgentRunResultEvent":
                    return event.result.output
        return None
    async with agent.iter(prompt, usage_limits=limits) as run:
        tools_ran = False
        async for node in run:
            if type(node).__name__ == "CallToolsNode":
                if how == "iter":
                    return None  # the application stops here: the reply's calls never run
                tools_ran = True
            elif type(node).__name__ == "ModelRequestNode" and tools_ran:
                return None  # `iter_after`: the application stops here: the calls ran, their results are never sent
    return run.result.output if run.result else None


def record(out: Path, scenario: str, inst: str) -> Any:
    """Run `scenario` under instrumentation `inst` (see the module doc); write the recording and its truth."""
    from pydantic_ai import UsageLimits, capture_run_messages
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    how, limits, prompt, replies = SCENARIOS[scenario]
    name = f"{scenario}-{inst}"
    ran: list[dict[str, Any]] = []
    raised = output = None
    server = (Streaming if how.startswith("events") else ScriptedOpenAI)(replies)  # (`run_stream_events` streams its requests)
    with pydantic_ai_recording(server, out / f"{name}.jsonl", oi=inst == "oi") as (model, provider):
        agent = _agent(model, provider, ran)
        with capture_run_messages() as messages:
            try:
                output = asyncio.run(_drive(how, agent, prompt, UsageLimits(**limits)))
            except Exception as e:  # noqa: BLE001 (what the application saw is the truth)
                raised = f"{type(e).__name__}: {e}"
    truth = _truth(json.loads(ModelMessagesTypeAdapter.dump_json(messages)), [output], ran)
    write_truth(out, name, {**truth, "raised": raised, "requests": server.n})
    return [output, raised]


if __name__ == "__main__":
    sys.exit(record_per_instrumentation(__file__, sys.argv[1:], OUT, record, SCENARIOS, INSTRUMENTATIONS))
