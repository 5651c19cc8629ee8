"""Record smolagents managed agents that are `CodeAgent`s under MLflow's own autologging, read by
`tests/test_mlflow_smolagents_managed.py`.

    python tests/frameworks/record_mlflow_smolagents_managed.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/mlflow-smolagents-managed)

Each scenario runs in its own subprocess (autolog patches smolagents process-wide) under `mlflow.smolagents.autolog()`
(`run_mlflow._configure`: a SQLite store in a temporary folder, OTLP dual export to the fake server) against the project's
loopback server answering by content (`record_subagents_streams.ByContent`: the manager and its managed agent are told
apart by their prompts; no network), and writes `OUTDIR/<scenario>.mlflow.jsonl` (`Trace.to_json()` of every trace, in
the order they started: format `mlflow`), `OUTDIR/<scenario>.otlp.jsonl` (the same spans over OTLP: format `otel`) and
`OUTDIR/<scenario>.truth.json`: the task and answer, each tool's arguments and result in the order they ran (`calls`),
the managed agent's name, the task smolagents gave it and its answer (`managed`), what the manager's steps observed
(`observations`, from its memory), the requests the server answered and the traces MLflow wrote.

- `tool-manager`: a `ToolCallingAgent` manager's first reply calls `get_time` and its managed `CodeAgent` `researcher`
  (smolagents runs the two at once, in threads); the researcher's code calls `get_weather("Paris")` and prints it, its
  next code calls `final_answer`; the manager then calls `final_answer`;
- `code-manager`: the same with a `CodeAgent` manager, whose code calls `get_time()` and `researcher(task=…)` and prints
  both, then `final_answer(…)`;
- `tool-manager-fails`: `tool-manager` whose researcher's model is unreachable (a closed loopback port): its run raises
  `AgentGenerationError`, which the manager's step records as its call's failure; the manager then answers.

A `CodeAgent` runs its model's code in a worker thread where MLflow loses its span context: each tool the code calls,
and a managed agent's run the manager's code makes, is a trace of its own.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, calls_reply, record_each_in_subprocess, text_reply, weather_tool  # noqa: E402
from mlflow_smolagents_common import WEATHER, final_reply  # noqa: E402
from record_mlflow_agents import _write  # noqa: E402
from record_oi_faults import call  # noqa: E402
from run_mlflow import _configure  # noqa: E402

QUESTION = "What is the weather in Paris, and what time is it?"
ANSWER = "Paris is sunny, 21 C; it is 12:00 UTC."
TASK = "Find the weather in Paris."
RESEARCHED = "Paris: sunny, 21 C"


def _script(body: dict[str, Any]) -> dict[str, Any]:
    """The model: the managed agent (its task names it) writes code calling `get_weather`, then answers; the manager
    (offered tools when it is a `ToolCallingAgent`, none as a `CodeAgent`) asks both, then answers."""
    said = [m for m in body["messages"] if m["role"] != "system"]
    first = "".join(p.get("text", "") for p in said[0]["content"]) if isinstance(said[0]["content"], list) else said[0]["content"]
    done = sum(1 for m in said if m["role"] == "assistant")
    if "You're a helpful agent named 'researcher'" in first:
        return text_reply('Thought: look it up.\n<code>\nw = get_weather(city="Paris")\nprint(w)\n</code>') if done == 0 else final_reply(RESEARCHED)
    if not body.get("tools"):
        return text_reply(f'Thought: ask.\n<code>\nt = get_time()\nw = researcher(task="{TASK}")\nprint(t, w)\n</code>') if done == 0 \
            else final_reply(ANSWER)
    if done == 0 and "Error executing request to team member" not in json.dumps(body["messages"]):  # (a failed step: answer)
        return calls_reply(call("call_m1", "get_time", {}), call("call_m2", "researcher", {"task": TASK}))
    return calls_reply(call("call_m3", "final_answer", {"answer": ANSWER}))


def record(out: Path, name: str) -> dict[str, Any]:
    """`name` (module docstring)."""
    from record_subagents_streams import ByContent

    with ByContent(_script) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store, autolog="smolagents")
        from smolagents import CodeAgent, OpenAIServerModel, ToolCallingAgent, tool

        calls: list[dict[str, Any]] = []

        @tool
        def get_time() -> str:
            """The time now, in UTC."""
            calls.append({"name": "get_time", "arguments": {}, "result": "12:00Z"})
            return "12:00Z"

        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake", client_kwargs={"max_retries": 0})
        unreachable = OpenAIServerModel(model_id=MODEL, api_base="http://127.0.0.1:9/v1", api_key="sk-fake", client_kwargs={"max_retries": 0})
        researcher = CodeAgent(tools=[weather_tool(WEATHER, calls)], model=unreachable if name.endswith("-fails") else model, max_steps=3, verbosity_level=0, name="researcher",
                               description="Finds the weather.")
        kind = CodeAgent if name.startswith("code-") else ToolCallingAgent
        manager = kind(tools=[get_time], model=model, max_steps=3, verbosity_level=0, managed_agents=[researcher])
        answer = manager.run(QUESTION)
        steps = manager.memory.get_full_steps()
        last = researcher.memory.steps[-1]
        managed = {"name": researcher.name, "task": researcher.task, "answer": getattr(last, "action_output", None)}
        truth = {"input": QUESTION, "output": answer, "calls": calls, "managed": managed, "requests": fake.n,
                 "observations": [s.get("observations") for s in steps if "observations" in s],
                 "step_errors": [s["error"] for s in steps if isinstance(s.get("error"), dict)]}
        return _write(out, name, mlflow, fake, store, truth)


SCENARIOS = ("tool-manager", "code-manager", "tool-manager-fails")


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all) into the folder `argv[0]`; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, {n: (lambda out, n=n: record(out, n)) for n in SCENARIOS})


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or [str(HERE.parent / "data" / "mlflow-smolagents-managed")]))
