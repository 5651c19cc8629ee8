"""Record smolagents runs that raised (`agent.run(task)` not streamed), with the installed smolagents.

    python tests/frameworks/record_smolagents_raised.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/smolagents-raised)

Each scenario runs once, in a subprocess of its own (the instrumentor patches smolagents once per process), recorded twice:
by openinference-instrumentation-smolagents (`OUTDIR/<scenario>.oi.jsonl`, OTLP/JSON, read as `format: otel`) and as the
agent's memory after its runs (`OUTDIR/<scenario>.memory.jsonl`, `{"id", "steps": agent.memory.get_full_steps()}`, read as
`format: smolagents`). `OUTDIR/<scenario>.truth.json` holds, for each run, its task, what it returned or raised
(`"<type>: <message>"`), what each tool was called with and returned (`tool_runs`), and how many chat requests the
server got. The model is `record_smolagents_streams.Streaming` (request n gets reply n; a reply may be an HTTP error; no
network); the OpenAI client does not retry.

Scenarios (in each, a model request gets HTTP 500 and smolagents re-raises it as `AgentGenerationError` out of `run`):

- `tool`: `ToolCallingAgent`; `get_weather` (Paris), then the second request fails;
- `code`: `CodeAgent`; step 1's code calls `get_weather` (Paris) and prints, then the second request fails;
- `planning`: `ToolCallingAgent(planning_interval=1)`: a plan, `get_weather` (Paris), then the second plan's request fails;
- `first-step`: `ToolCallingAgent`; the first request fails;
- `planning-first`: `ToolCallingAgent(planning_interval=1)`; the first request, the first plan's, fails;
- `second-run`: `ToolCallingAgent`; a first run answers at once ("Paris is sunny."); a second run on the same memory
  (`reset=False`, "And Tokyo?") calls `get_weather` (Tokyo), then its next request fails.

openinference-instrumentation-smolagents (0.1.43) records the exception on a run's agent span and re-raises without ending
the span: a run that raised has no agent span in the export; its steps name it as their parent (in `first-step` one step
does: the trace's root is that step).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import calls_reply as _calls, record_each_in_subprocess, smolagents_recording, text_reply as _text  # noqa: E402
from common import weather_tool, write_memory, write_truth  # noqa: E402
from record_oi_faults import call  # noqa: E402
from record_smolagents_streams import SERVER_ERROR, Streaming  # noqa: E402

OUT = HERE.parent / "data" / "smolagents-raised"
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
PARIS = call("c1", "get_weather", {"city": "Paris"})
PLAN = "1. Check the weather in Paris.\n2. Answer."
# scenario: (agent kind, agent keyword arguments, the runs' tasks, replies)
SCENARIOS: dict[str, tuple[str, dict[str, Any], list[str], list[dict[str, Any]]]] = {
    "tool": ("tool", {}, ["What is the weather in Paris?"], [_calls(PARIS), SERVER_ERROR]),
    "code": ("code", {}, ["What is the weather in Paris?"],
             [_text('Thought: check Paris.\n<code>\nw = get_weather(city="Paris")\nprint(w)\n</code>'), SERVER_ERROR]),
    "planning": ("tool", {"planning_interval": 1}, ["What is the weather in Paris?"], [_text(PLAN), _calls(PARIS), SERVER_ERROR]),
    "first-step": ("tool", {}, ["What is the weather in Paris?"], [SERVER_ERROR]),
    "planning-first": ("tool", {"planning_interval": 1}, ["What is the weather in Paris?"], [SERVER_ERROR]),
    "second-run": ("tool", {}, ["What is the weather in Paris?", "And Tokyo?"],
                   [_calls(call("c0", "final_answer", {"answer": "Paris is sunny."})), _calls(call("c2", "get_weather", {"city": "Tokyo"})),
                    SERVER_ERROR]),
}


def run(out: Path, name: str) -> Any:
    from smolagents import CodeAgent, ToolCallingAgent

    kind, kwargs, tasks, replies = SCENARIOS[name]
    runs: list[dict[str, Any]] = []
    ran: list[dict[str, Any]] = []
    server = Streaming(replies)
    with smolagents_recording(server, out, name) as model:
        agent = (CodeAgent if kind == "code" else ToolCallingAgent)(tools=[weather_tool(WEATHER, runs)], model=model, verbosity_level=0, **kwargs)
        for i, task in enumerate(tasks):
            entry: dict[str, Any] = {"task": task, "returned": None, "raised": None}
            try:
                entry["returned"] = agent.run(task, reset=i == 0)
            except Exception as e:  # noqa: BLE001 (what the application saw is the truth)
                entry["raised"] = f"{type(e).__name__}: {e}"
            ran.append(entry)
    write_memory(out, name, agent)
    write_truth(out, name, {"runs": ran, "tool_runs": runs, "requests": server.n})
    return ran


RUNS = {n: (lambda out, n=n: run(out, n)) for n in SCENARIOS}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], RUNS))
