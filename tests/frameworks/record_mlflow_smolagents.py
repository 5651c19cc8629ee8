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
- `tool-steps`: a `ToolCallingAgent` calling `get_weather` (Paris), then `get_weather` (Tokyo), then `final_answer`.

A `CodeAgent` runs the model's code in a worker thread (smolagents' `LocalPythonExecutor` under its default timeout), where
MLflow loses its span context: each tool the code calls (`final_answer` too) is written as a trace of its own. MLflow
(3.17.2, smolagents 1.26) records no model request of any run.
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
QUESTION = "Compare the weather in Paris and Tokyo."
ANSWER = "Paris is sunny (21 C); Tokyo is rainy (14 C)."
SECOND = "Is it warmer in Paris or in Tokyo?"
WARMER = "Paris is warmer (21 C against 14 C)."


def _code(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


BOTH = _code('Thought: check both cities.\n<code>\np = get_weather(city="Paris")\nt = get_weather(city="Tokyo")\nprint(p, t)\n</code>')
# scenario: (agent kind, [(task, replies of its run)])
SCENARIOS: dict[str, tuple[str, list[tuple[str, list[dict[str, Any]]]]]] = {
    "code": ("code", [(QUESTION, [BOTH, _code(f'Thought: answer.\n<code>\nfinal_answer("{ANSWER}")\n</code>')])]),
    "code-error": ("code", [("What is the weather in Atlantis?", [_code('Thought: check it.\n<code>\nw = get_weather(city="Atlantis")\nprint(w)\n</code>'),
                                                                  _code('Thought: it failed.\n<code>\nfinal_answer("I could not get the weather for Atlantis.")\n</code>')])]),
    "code-two-runs": ("code", [(QUESTION, [BOTH, _code(f'Thought: answer.\n<code>\nfinal_answer("{ANSWER}")\n</code>')]),
                               (SECOND, [BOTH, _code(f'Thought: answer.\n<code>\nfinal_answer("{WARMER}")\n</code>')])]),
    "tool-steps": ("tool", [(QUESTION, [{"role": "assistant", "content": None, "tool_calls": [call("call_p", "get_weather", {"city": "Paris"})]},
                                        {"role": "assistant", "content": None, "tool_calls": [call("call_t", "get_weather", {"city": "Tokyo"})]},
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
        def get_weather(city: str) -> str:
            """Weather in a city.

            Args:
                city: the city
            """
            if city not in WEATHER:
                ran.append({"name": "get_weather", "arguments": {"city": city}, "error": f"no such city: {city}"})
                raise ValueError(f"no such city: {city}")
            ran.append({"name": "get_weather", "arguments": {"city": city}, "result": WEATHER[city]})
            return WEATHER[city]

        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake", client_kwargs={"max_retries": 0})
        done = []
        for task, _ in runs:
            agent_kind = CodeAgent if kind == "code" else ToolCallingAgent
            agent = agent_kind(tools=[get_weather], model=model, max_steps=4, verbosity_level=0)
            start = len(ran)
            answer = agent.run(task)
            steps = agent.memory.get_full_steps()
            usage = [s.get("token_usage") for s in steps if isinstance(s.get("token_usage"), dict)]
            done.append({"task": task, "answer": answer, "tool_runs": ran[start:],
                         "step_errors": [s["error"] for s in steps if isinstance(s.get("error"), dict)],
                         "memory_tokens": {"input_tokens": sum(u["input_tokens"] for u in usage), "output_tokens": sum(u["output_tokens"] for u in usage)}})
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
    sys.exit(main(sys.argv[1:] or [str(HERE.parent / "data" / "mlflow-smolagents")]))
