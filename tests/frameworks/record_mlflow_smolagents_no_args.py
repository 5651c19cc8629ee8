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
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402
from run_mlflow import _clean, _configure  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
TIMES = iter(f"10:0{n} UTC" for n in range(10))  # (each call of get_time returns the next: calls tell apart by their results)
QUESTION = "What time is it, and what is the weather in Paris?"
ANSWER = "It is 10:00 UTC; Paris is sunny (21 C)."
SECOND = "And what time is it now?"
LATER = "It is now 10:01 UTC; Paris is still sunny."


def _code(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def _final(text: str) -> dict[str, Any]:
    return _code(f'Thought: answer.\n<code>\nfinal_answer("{text}")\n</code>')


BOTH = _code('Thought: check the time and the weather.\n<code>\nt = get_time()\nw = get_weather(city="Paris")\nprint(t, w)\n</code>')
TWICE = _code("Thought: check the time twice.\n<code>\na = get_time()\nb = get_time()\nprint(a, b)\n</code>")
# scenario: (agent kind, [(task, replies of its run)])
SCENARIOS: dict[str, tuple[str, list[tuple[str, list[dict[str, Any]]]]]] = {
    "code": ("code", [(QUESTION, [BOTH, _final(ANSWER)])]),
    "code-only": ("code", [("What time is it?", [TWICE, _final("It is 10:01 UTC.")])]),
    "code-two-runs": ("code", [(QUESTION, [BOTH, _final(ANSWER)]), (SECOND, [BOTH, _final(LATER)])]),
    "tool-steps": ("tool", [(QUESTION, [{"role": "assistant", "content": None, "tool_calls": [call("call_t", "get_time", {})]},
                                        {"role": "assistant", "content": None, "tool_calls": [call("call_p", "get_weather", {"city": "Paris"})]},
                                        {"role": "assistant", "content": None, "tool_calls": [call("call_f", "final_answer", {"answer": ANSWER})]}])]),
}


def record(out: Path, name: str) -> dict[str, Any]:
    """`name` (module docstring)."""
    kind, runs = SCENARIOS[name]
    with ScriptedOpenAI([reply for _, replies in runs for reply in replies]) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store, autolog="smolagents")
        from mlflow.tracing.provider import provider
        from smolagents import CodeAgent, OpenAIServerModel, ToolCallingAgent, tool

        ran: list[dict[str, Any]] = []

        @tool
        def get_time() -> str:
            """The current time (UTC)."""
            now = next(TIMES)
            ran.append({"name": "get_time", "arguments": {}, "result": now})
            return now

        @tool
        def get_weather(city: str) -> str:
            """Weather in a city.

            Args:
                city: the city
            """
            ran.append({"name": "get_weather", "arguments": {"city": city}, "result": WEATHER[city]})
            return WEATHER[city]

        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake", client_kwargs={"max_retries": 0})
        done = []
        for task, _ in runs:
            agent_kind = CodeAgent if kind == "code" else ToolCallingAgent
            agent = agent_kind(tools=[get_time, get_weather], model=model, max_steps=4, verbosity_level=0)
            start = len(ran)
            answer = agent.run(task)
            steps = agent.memory.get_full_steps()
            done.append({"task": task, "answer": answer, "tool_runs": ran[start:],
                         "step_errors": [s["error"] for s in steps if isinstance(s.get("error"), dict)]})
        traces = sorted(mlflow.search_traces(return_type="list"), key=lambda t: t.info.request_time)
        write_jsonl(out / f"{name}.mlflow.jsonl", [_clean(t.to_json(), store) for t in traces])
        provider.get().force_flush()
        write_jsonl(out / f"{name}.otlp.jsonl", fake.take_otlp())
        truth = {"agent": kind, "runs": done, "requests": fake.n, "traces": len(traces)}
    write_truth(out, name, truth)
    return truth


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all) into the folder `argv[0]`; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, {n: (lambda out, n=n: record(out, n)) for n in SCENARIOS})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or [str(HERE.parent / "data" / "mlflow-smolagents-no-args")]))
