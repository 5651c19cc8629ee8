"""Record the Agents SDK runs behind `tests/test_agents_cancelled_runs.py`, with the installed libraries.

    python tests/frameworks/record_agents_cancel.py [OUTDIR [SCENARIO ...]]   (OUTDIR: tests/data/agents-cancel)

Each scenario (`SCENARIOS`) runs the real OpenAI Agents SDK (chat-completions model, streamed) against the project's
scripted loopback server (`record_agents_faults.Streaming`: request n gets reply n, as SSE chunks; no network), under
OpenInference's `OpenAIAgentsInstrumentor` and the SDK's own tracing at once, one subprocess a scenario. The model's
one reply says "Checking both." and asks for `quick(x=1)` and `slow(x=2)` (a tool that takes a while):

- `after_turn`: `Runner.run_streamed`, `result.cancel(mode="after_turn")` on the first tool-call event: both tools
  run, no further request, `final_output` None;
- `immediate`: the same with `result.cancel()` (mode `immediate`): no tool runs, `final_output` None;
- `task_cancel`: `Runner.run` in an `asyncio` task cancelled once `quick` has returned, while `slow` runs;
- `stop`: the contrast, no cancel: `tool_use_behavior="stop_on_first_tool"`, `final_output` is `quick`'s output.

Writes `<s>.oi.jsonl` (OTLP/JSON, format `otel`), `<s>.export.jsonl` (format `openai-agents`: every exported item,
`Trace.export()` when the trace starts and `Span.export()` as each span ends, one per line, as a `TracingProcessor`
writing `item.export()` does; so a span that ends after its trace, a tool cancelled mid-way, is kept as an
exporter sends it) and `<s>.truth.json` (what the application saw: which tools ran and returned what, how many
model requests were made, `final_output`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

FRAMEWORKS = Path(__file__).resolve().parent  # tests/frameworks: the fake server and the recorders' plumbing
OUT = FRAMEWORKS.parent / "data" / "agents-cancel"
sys.path.insert(0, str(FRAMEWORKS))

from common import agents_recording, record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from record_agents_faults import Streaming, _chat  # noqa: E402
from record_oi_faults import MODEL, call  # noqa: E402

QUESTION = "Run both tools please."
REPLIES = [_chat("Checking both.", call("call_q1", "quick", {"x": 1}), call("call_s1", "slow", {"x": 2})), _chat("Done: quick=1, slow=2")]


class _Items:
    """A trace processor keeping every exported item as it comes: the trace when it starts, each span when it ends."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def on_trace_start(self, trace: Any) -> None:
        if (e := trace.export()) is not None:
            self.items.append(e)

    def on_trace_end(self, trace: Any) -> None:
        pass

    def on_span_start(self, span: Any) -> None:
        pass

    def on_span_end(self, span: Any) -> None:
        if (e := span.export()) is not None:
            self.items.append(e)

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


def _agent(stop: bool, ran: list[dict[str, Any]]) -> Any:
    """The agent, its tools noting in `ran` what they did (`started` / `returned`)."""
    from agents import Agent, function_tool

    @function_tool
    def quick(x: int) -> str:
        """Quick tool."""
        ran.append({"tool": "quick", "returned": f"quick={x}"})
        return f"quick={x}"

    @function_tool
    async def slow(x: int) -> str:
        """Slow tool."""
        ran.append({"tool": "slow", "started": True})
        await asyncio.sleep(0.3)
        ran.append({"tool": "slow", "returned": f"slow={x}"})
        return f"slow={x}"

    return Agent(name="Worker", instructions="Work.", tools=[quick, slow], model=MODEL,
                 tool_use_behavior="stop_on_first_tool" if stop else "run_llm_again")


async def _streamed(agent: Any, mode: str | None) -> Any:
    """`Runner.run_streamed`, cancelled with `mode` on the first tool-call event (`None`: not cancelled); its `final_output`."""
    from agents import Runner

    result = Runner.run_streamed(agent, QUESTION)
    async for event in result.stream_events():
        if mode is not None and event.type == "run_item_stream_event" and event.item.type == "tool_call_item":
            result.cancel(mode=mode)
    return result.final_output


async def _task_cancelled(agent: Any, ran: list[dict[str, Any]]) -> Any:
    """`Runner.run` in a task cancelled once `quick` has returned (while `slow` sleeps); `None`: it returned nothing."""
    from agents import Runner

    task = asyncio.create_task(Runner.run(agent, QUESTION))
    while not any(r.get("returned", "").startswith("quick") for r in ran):
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return None
    raise AssertionError("the run was not cancelled")


def record(name: str, out: Path) -> dict[str, Any]:
    """Record scenario `name` into `out`; returns its truth."""
    from agents import add_trace_processor

    ran: list[dict[str, Any]] = []
    items = _Items()
    with Streaming(list(REPLIES)) as fake, agents_recording(fake, out, name, files=("{}.oi.jsonl", "{}.sdk-traces.jsonl")):
        add_trace_processor(items)
        agent = _agent(name == "stop", ran)

        async def run() -> Any:
            final = await (_task_cancelled(agent, ran) if name == "task_cancel" else _streamed(agent, None if name == "stop" else name))
            await asyncio.sleep(0.5)  # let a cancelled tool's span end, as it would before an exporter's next batch
            return final

        final_output = asyncio.run(run())
        requests = fake.n
    (out / f"{name}.sdk-traces.jsonl").unlink()  # (`{trace, spans}` at the trace's end: it misses a span ending later)
    write_jsonl(out / f"{name}.export.jsonl", items.items)
    returned = {r["tool"]: r["returned"] for r in ran if "returned" in r}
    truth = {"final_output": final_output, "model_requests": requests, "input": QUESTION, "preamble": "Checking both.",
             "asked": [{"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])} for c in REPLIES[0]["tool_calls"]],
             "returned": returned, "started_not_returned": sorted({r["tool"] for r in ran if r.get("started")} - set(returned))}
    write_truth(out, name, truth)
    return truth


SCENARIOS = {name: (lambda out, name=name: record(name, out)) for name in ("after_turn", "immediate", "task_cancel", "stop")}


if __name__ == "__main__":
    args = sys.argv[1:] or [str(OUT)]
    sys.exit(record_each_in_subprocess(__file__, args, SCENARIOS))
