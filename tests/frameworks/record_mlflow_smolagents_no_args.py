"""Record smolagents runs calling a tool that takes no argument, under MLflow's own autologging, read by
`tests/test_mlflow_smolagents_no_args.py`.

    python tests/frameworks/record_mlflow_smolagents_no_args.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/mlflow-smolagents-no-args)

As `record_mlflow_smolagents.py`: each scenario in its own subprocess against the scripted loopback server
(`record_oi_faults.ScriptedOpenAI`; no network), under `mlflow.smolagents.autolog()` (`run_mlflow._configure`), writing
`OUTDIR/<scenario>.mlflow.jsonl` (format `mlflow`), `OUTDIR/<scenario>.otlp.jsonl` (format `otel`) and
`OUTDIR/<scenario>.truth.json` (each run's task and answer, what each tool was called with and returned, in order, as the
tools themselves saw it).

- `code`: a `CodeAgent`; step 1's code calls `get_time()` (no argument) and `get_weather(city="Paris")` and prints, step 2's
  calls `final_answer`;
- `code-only`: a `CodeAgent`; step 1's code calls `get_time()` twice and prints, step 2's calls `final_answer`;
- `code-two-runs`: the `code` agent run twice, one task after the other, written to one file;
- `tool-steps`: a `ToolCallingAgent` calling `get_time` (arguments `{}`), then `get_weather` (Paris), then `final_answer`.

A `CodeAgent` runs the model's code in a worker thread where MLflow loses its span context: each tool call is a trace of its
own. A call with no argument has inputs `{}` there (MLflow drops the empty `*args` and `**kwargs`, and the code passed no
`sanitize_inputs_outputs`).
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

TIMES = iter(f"10:0{n} UTC" for n in range(10))  # (each call of get_time returns the next: calls tell apart by their results)
QUESTION = "What time is it, and what is the weather in Paris?"
ANSWER = "It is 10:00 UTC; Paris is sunny (21 C)."
SECOND = "And what time is it now?"
LATER = "It is now 10:01 UTC; Paris is still sunny."

BOTH = text_reply('Thought: check the time and the weather.\n<code>\nt = get_time()\nw = get_weather(city="Paris")\nprint(t, w)\n</code>')
TWICE = text_reply("Thought: check the time twice.\n<code>\na = get_time()\nb = get_time()\nprint(a, b)\n</code>")
SCENARIOS: dict[str, Scenario] = {
    "code": ("code", [(QUESTION, [BOTH, final_reply(ANSWER)])]),
    "code-only": ("code", [("What time is it?", [TWICE, final_reply("It is 10:01 UTC.")])]),
    "code-two-runs": ("code", [(QUESTION, [BOTH, final_reply(ANSWER)]), (SECOND, [BOTH, final_reply(LATER)])]),
    "tool-steps": ("tool", [(QUESTION, [calls_reply(call("call_t", "get_time", {})), calls_reply(call("call_p", "get_weather", {"city": "Paris"})),
                                        calls_reply(call("call_f", "final_answer", {"answer": ANSWER}))])]),
}


def _tools(ran: list[dict[str, Any]]) -> list[Any]:
    """`get_time()`, which takes no argument, and `get_weather(city)`, each run appended to `ran`."""
    from smolagents import tool

    @tool
    def get_time() -> str:
        """The current time (UTC)."""
        now = next(TIMES)
        ran.append({"name": "get_time", "arguments": {}, "result": now})
        return now

    return [get_time, weather_tool(WEATHER, ran)]


def record(out: Path, name: str) -> dict[str, Any]:
    """`name` (module docstring)."""
    return record_mlflow_smolagents(out, name, SCENARIOS[name], _tools)


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all) into the folder `argv[0]`; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, {n: (lambda out, n=n: record(out, n)) for n in SCENARIOS})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or [str(HERE.parent / "data" / "mlflow-smolagents-no-args")]))
