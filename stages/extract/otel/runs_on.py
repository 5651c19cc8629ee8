"""Join a smolagents run that MLflow recorded going on with the memory of the run before it (`reset=False`) to that run.

`mlflow.smolagents.autolog()` writes each `agent.run` as a trace of its own, over OTLP as in its store, and records no
model request whose replayed history `stitch` could join them by. A run's AGENT span says which run it went on from
(`mlflow_smolagents_memory`): its trace joins that run's conversation, as format `mlflow` joins the same traces, each run
a turn, as format `smolagents` reads the agent's memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tracejudge.stages.extract.otel.conventions import group_views
from tracejudge.stages.extract.otel.conventions.mlflow_smolagents_memory import Run, chains, run_of
from tracejudge.stages.extract.otel.spans import Group

__all__ = ["join_runs_on"]


def _run(group: Group) -> Run | None:
    """The run of a trace no conversation key grouped whose one root is a smolagents run MLflow recorded, else None."""
    ids = {s.span_id for s in group.spans}
    roots = [s for s in group.spans if s.parent_id not in ids]
    return run_of(roots[0]) if group.key_attr is None and len(roots) == 1 else None


def join_runs_on(groups: Iterable[Group]) -> Iterator[Group]:
    """`groups` with each run that went on from an earlier one joined to that run's group (its spans take that group's
    first trace id; its trace ids are listed after that group's), order kept."""
    groups = list(groups)
    runs = {id(g): run for g in groups if (run := _run(g)) is not None}
    if not any(run.kept for run in runs.values()):
        yield from groups
        return
    by_id = {id(g): g for g in groups}
    gone: set[int] = set()
    for key, head in chains(runs).items():
        if key == head:
            continue
        host, group = by_id[head], by_id[key]
        for span in group.spans:
            span.trace_id = host.traces[0]
        host.spans.extend(group.spans)
        host.views = {**group_views(host), **group_views(group)}
        host.traces.extend(group.traces)
        gone.add(key)
    yield from (g for g in groups if id(g) not in gone)
