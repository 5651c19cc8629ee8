"""Record a smolagents agent run again on its memory (`reset=False`) after a run that reached `max_steps`.

    python tests/frameworks/record_smolagents_run_on.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/smolagents-run-on)

Each scenario runs in a subprocess of its own, recorded twice at once: by openinference-instrumentation-smolagents
(`OUTDIR/<scenario>.oi.jsonl`, OTLP/JSON, read as `format: otel`) and as the agent's memory after both runs
(`OUTDIR/<scenario>.memory.jsonl`, read as `format: smolagents`). The model is a scripted loopback server
(`record_oi_faults.ScriptedOpenAI`, request n gets reply n; no network).

- `tool`: a `ToolCallingAgent` (`max_steps=2`) calls `get_weather` for "Olso" on each step, which raises (no such city), and
  never `final_answer`; smolagents asks the model for an answer itself (`provide_final_answer`), which it gives; then `agent.run("And tomorrow in Tokyo?",
  reset=False)` calls `get_weather` once and answers through `final_answer`;
  (a failed step is replayed as its error alone, with no call id to link the runs by);
- `tool-answered`: the same second run after a first run that answered through `final_answer`, for comparison.

`OUTDIR/<scenario>.truth.json` holds the two tasks, what each `agent.run` returned, each step's error and how many chat
requests the server got.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import calls_reply, record_each_in_subprocess, smolagents_recording, step_errors, weather_tool, write_memory, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

OUT = HERE.parent / "data" / "smolagents-run-on"
WEATHER, TASKS = {"Oslo": "snowy, -3 C", "Tokyo": "rainy, 14 C"}, ["Weather in Oslo?", "And tomorrow in Tokyo?"]
_AGAIN = [calls_reply(call("c3", "get_weather", {"city": "Tokyo"})), calls_reply(call("c4", "final_answer", {"answer": "Rainy, 14 C."}))]
REPLIES = {
    "tool": [calls_reply(call("c1", "get_weather", {"city": "Olso"})), calls_reply(call("c2", "get_weather", {"city": "Olso"})),
             {"role": "assistant", "content": "Oslo's weather is unknown."}, *_AGAIN],
    "tool-answered": [calls_reply(call("c1", "get_weather", {"city": "Oslo"})), calls_reply(call("c2", "final_answer", {"answer": "Snowy, -3 C."})),
                      *_AGAIN],
}


def run(out: Path, name: str) -> Any:
    from smolagents import ToolCallingAgent

    runs: list[dict[str, Any]] = []
    server = ScriptedOpenAI(REPLIES[name])
    with smolagents_recording(server, out, name) as model:
        agent = ToolCallingAgent(tools=[weather_tool(WEATHER, runs, raise_unknown=True)], model=model, max_steps=2, verbosity_level=0)
        returned = [str(agent.run(TASKS[0])), str(agent.run(TASKS[1], reset=False))]
    steps = write_memory(out, name, agent)
    write_truth(out, name, {"tasks": TASKS, "returned": returned, "step_errors": step_errors(steps), "tool_runs": runs, "requests": server.n})
    return returned


SCENARIOS = {n: (lambda out, n=n: run(out, n)) for n in REPLIES}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], SCENARIOS))
