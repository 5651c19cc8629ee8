"""MLflow's smolagents autolog: which agent runs went on with the memory of the run before them (`reset=False`).

Under `mlflow.smolagents.autolog()` each `agent.run` is a trace of its own, with no session: the user's second question
to the same agent (`agent.run(task, reset=False)`: the agent keeps its memory, and the model is sent the first run's
steps) would be a conversation of its own, without the turn it goes on from. Format `smolagents` reads that memory as
one conversation of two turns, and format `otel` joins the OpenInference traces of such runs by the history the second
run's requests replay; MLflow records no model request of a smolagents 1.x run, so there is no replay to join by. The
run's AGENT span records what links them instead, among the agent's attributes MLflow keeps
(`mlflow_smolagents.agent_run`):

- its inputs hold `"reset": false` (smolagents' default, `True`, is not recorded: a run that starts afresh, on the
  same memory object cleared, is a conversation of its own);
- its `memory` is the same `AgentMemory` object as the earlier run's (its `repr`, `<smolagents.memory.AgentMemory
  object at 0x…>`, names the object's address in the process);
- its `task` attribute, recorded as the run started, before smolagents set the new one, is the earlier run's task.

Such a run goes on from the latest run that ended before it began with that memory and that task, not already gone
on from (`chains`). A run with no such earlier run (its first run was not recorded with it) stays apart.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import TypeVar

from tracejudge.stages.extract.otel.conventions.mlflow_smolagents import agent_run
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import unjson

__all__ = ["MEMORY", "Run", "chains", "run_of"]

MEMORY = b"AgentMemory object at"  # (what a trace must hold to be a smolagents run's that MLflow recorded: its memory's repr)

K = TypeVar("K", bound=Hashable)


@dataclass
class Run:
    """A smolagents run: its memory's repr, its task, the task its agent had before it, whether it kept the memory
    (`reset=False`), its times in ns."""

    memory: str
    task: str | None
    before: str | None
    kept: bool
    start: int
    end: int


def run_of(span: Span) -> Run | None:
    """The run of `span` when it is a smolagents agent's run MLflow recorded with its memory and inputs, else None."""
    if not agent_run(span):
        return None
    memory, inputs, before = unjson(span.attrs.get("memory")), unjson(span.attrs.get("mlflow.spanInputs")), unjson(span.attrs.get("task"))
    if not isinstance(memory, str) or not isinstance(inputs, dict):
        return None
    task = inputs.get("task")
    return Run(memory, task if isinstance(task, str) else None, before if isinstance(before, str) else None, inputs.get("reset") is False,
               span.start, span.end)


def chains(runs: dict[K, Run]) -> dict[K, K]:
    """Each run's key mapped to the key of the first run of its chain (module docstring): itself for a run that goes on
    from none. In the order the runs started (ties: the keys' order)."""
    head: dict[K, K] = {}
    last: dict[K, K] = {}  # a chain's first run: its latest
    for key, run in sorted(runs.items(), key=lambda item: item[1].start):
        earlier = [k for k, r in runs.items() if k in head and r.end <= run.start and r.memory == run.memory and r.task == run.before
                   and last[head[k]] == k]
        head[key] = head[max(earlier, key=lambda k: runs[k].start)] if run.kept and run.before is not None and earlier else key
        last[head[key]] = key
    return head
