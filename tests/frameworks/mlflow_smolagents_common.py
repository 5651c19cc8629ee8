"""What the recorders of smolagents runs under MLflow's own autologging share (`record_mlflow_smolagents.py`,
`record_mlflow_smolagents_no_args.py`): the scripted replies' shapes and the recording of one scenario."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import MODEL, text_reply, write_jsonl, write_truth
from record_oi_faults import ScriptedOpenAI
from run_mlflow import _clean, _configure

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
# scenario: (agent kind, [(task, replies of its run)])
Scenario = tuple[str, list[tuple[str, list[dict[str, Any]]]]]


def final_reply(text: str) -> dict[str, Any]:
    """A `CodeAgent` reply whose code answers `text` (`final_answer`)."""
    return text_reply(f'Thought: answer.\n<code>\nfinal_answer("{text}")\n</code>')


def record_mlflow_smolagents(out: Path, name: str, scenario: Scenario, tools: Callable[[list[dict[str, Any]]], list[Any]],
                             memory_tokens: bool = False, kept: tuple[int, ...] = ()) -> dict[str, Any]:
    """Run `scenario` (agent kind `code` or `tool`, each run's task and replies) under `mlflow.smolagents.autolog()` against
    the scripted server, one agent a run with `tools(ran)` (each tool appends what it ran to `ran`); write
    `out/<name>.mlflow.jsonl`, `out/<name>.otlp.jsonl` and `out/<name>.truth.json`: each run's task, answer, `tool_runs`
    and `step_errors` (with `memory_tokens`, the tokens its memory counted), the requests answered and the traces written.
    The runs numbered in `kept` go on with the agent before them and its memory (`agent.run(task, reset=False)`; their
    truth says `"reset": false`). Returns the truth."""
    kind, runs = scenario
    with ScriptedOpenAI([reply for _, replies in runs for reply in replies]) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store, autolog="smolagents")
        from mlflow.tracing.provider import provider
        from smolagents import CodeAgent, OpenAIServerModel, ToolCallingAgent

        ran: list[dict[str, Any]] = []
        agent_tools = tools(ran)
        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake", client_kwargs={"max_retries": 0})
        done = []
        for n, (task, _) in enumerate(runs):
            agent_kind = CodeAgent if kind == "code" else ToolCallingAgent
            if n not in kept:
                agent = agent_kind(tools=agent_tools, model=model, max_steps=4, verbosity_level=0)
            start, steps_before = len(ran), len(agent.memory.steps) if n in kept else 0
            answer = agent.run(task, reset=False) if n in kept else agent.run(task)
            steps = agent.memory.get_full_steps()[steps_before:]
            done.append({"task": task, "answer": answer, "tool_runs": ran[start:], **({"reset": False} if n in kept else {}),
                         "step_errors": [s["error"] for s in steps if isinstance(s.get("error"), dict)]})
            if memory_tokens:
                usage = [s.get("token_usage") for s in steps if isinstance(s.get("token_usage"), dict)]
                done[-1]["memory_tokens"] = {"input_tokens": sum(u["input_tokens"] for u in usage), "output_tokens": sum(u["output_tokens"] for u in usage)}
        traces = sorted(mlflow.search_traces(return_type="list"), key=lambda t: t.info.request_time)
        write_jsonl(out / f"{name}.mlflow.jsonl", [_clean(t.to_json(), store) for t in traces])
        provider.get().force_flush()
        write_jsonl(out / f"{name}.otlp.jsonl", fake.take_otlp())
        truth = {"agent": kind, "runs": done, "requests": fake.n, "traces": len(traces)}
    write_truth(out, name, truth)
    return truth
