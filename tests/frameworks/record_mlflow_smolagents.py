"""Record smolagents runs under MLflow's own autologging, read by `tests/test_mlflow_smolagents.py`.

    python tests/frameworks/record_mlflow_smolagents.py OUTDIR [SCENARIO ...]     (OUTDIR: tests/data/mlflow-smolagents)

Each scenario runs in its own subprocess (autolog patches smolagents process-wide) against the project's scripted
loopback server (`record_oi_faults.ScriptedOpenAI`: request n gets reply n, usage 100+n in and 10+n out; no network),
under `mlflow.smolagents.autolog()` (`run_mlflow._configure`: a SQLite store in a temporary folder, OTLP dual export to the
fake server), and writes `OUTDIR/<scenario>.mlflow.jsonl` (`Trace.to_json()` of every trace, in the order they started:
format `mlflow`), `OUTDIR/<scenario>.otlp.jsonl` (the same spans over OTLP: format `otel`) and `OUTDIR/<scenario>.truth.json`:
each run's task and answer, what each tool was called with and returned or raised (`tool_runs`, in order), the errors
smolagents kept in its memory, the tokens its memory counted and how many requests the server answered.

- `code`: a `CodeAgent`; step 1's code calls `get_weather` for Paris and Tokyo and prints, step 2's calls `final_answer`;
- `code-error`: a `CodeAgent`; step 1's code calls `get_weather("Atlantis")`, which raises (the step fails with
  `AgentExecutionError`), step 2's calls `final_answer`;
- `code-two-runs`: the `code` agent run twice, one task after the other (`agent.run(q)` each), written to one file;
- `tool-steps`: a `ToolCallingAgent` calling `get_weather` (Paris), then `get_weather` (Tokyo), then `final_answer`;
- `tool-runs-on`: a `ToolCallingAgent` asked about Paris, then asked a second question on the same memory
  (`agent.run(q, reset=False)`: a second user turn of one conversation), then a third afresh (`agent.run(q)`, the same
  agent: smolagents clears its memory), each run calling `get_weather` then `final_answer`.

A `CodeAgent` runs the model's code in a worker thread (smolagents' `LocalPythonExecutor` under its default timeout), where
MLflow loses its span context: each tool the code calls (`final_answer` too) is written as a trace of its own. MLflow
(3.17.2, smolagents 1.26) records no model request of any run.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import calls_reply, record_each_in_subprocess, text_reply, weather_tool  # noqa: E402
from mlflow_smolagents_common import WEATHER, Scenario, final_reply, record_mlflow_smolagents  # noqa: E402
from record_oi_faults import call  # noqa: E402

QUESTION = "Compare the weather in Paris and Tokyo."
ANSWER = "Paris is sunny (21 C); Tokyo is rainy (14 C)."
SECOND = "Is it warmer in Paris or in Tokyo?"
WARMER = "Paris is warmer (21 C against 14 C)."

BOTH = text_reply('Thought: check both cities.\n<code>\np = get_weather(city="Paris")\nt = get_weather(city="Tokyo")\nprint(p, t)\n</code>')
SCENARIOS: dict[str, Scenario] = {
    "code": ("code", [(QUESTION, [BOTH, final_reply(ANSWER)])]),
    "code-error": ("code", [("What is the weather in Atlantis?", [text_reply('Thought: check it.\n<code>\nw = get_weather(city="Atlantis")\nprint(w)\n</code>'),
                                                                  final_reply("I could not get the weather for Atlantis.")])]),
    "code-two-runs": ("code", [(QUESTION, [BOTH, final_reply(ANSWER)]), (SECOND, [BOTH, final_reply(WARMER)])]),
    "tool-steps": ("tool", [(QUESTION, [calls_reply(call("call_p", "get_weather", {"city": "Paris"})), calls_reply(call("call_t", "get_weather", {"city": "Tokyo"})),
                                        calls_reply(call("call_f", "final_answer", {"answer": ANSWER}))])]),
    "tool-runs-on": ("tool", [(q, [calls_reply(call(f"call_{n}", "get_weather", {"city": city})), calls_reply(call(f"call_f{n}", "final_answer", {"answer": a}))])
                              for n, (q, city, a) in enumerate([("What is the weather in Paris?", "Paris", "Sunny, 21 C."),
                                                                ("And in Tokyo?", "Tokyo", "Rainy, 14 C."),
                                                                ("What is the weather in Tokyo?", "Tokyo", "Rainy, 14 C.")])]),
}
KEPT = {"tool-runs-on": (1,)}  # (the runs that go on with the run before them, `reset=False`)


def record(out: Path, name: str) -> dict[str, Any]:
    """`name` (module docstring): `get_weather` raises `ValueError` for a city it does not know."""
    return record_mlflow_smolagents(out, name, SCENARIOS[name], lambda ran: [weather_tool(WEATHER, ran, raise_unknown=True)], memory_tokens=True,
                                    kept=KEPT.get(name, ()))


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all) into the folder `argv[0]`; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, {n: (lambda out, n=n: record(out, n)) for n in SCENARIOS})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or [str(HERE.parent / "data" / "mlflow-smolagents")]))
