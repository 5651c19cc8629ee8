"""Format `mlflow`: a smolagents agent run again on its memory (`agent.run(task, reset=False)`) is the next turn of its run.

Each `agent.run` is a trace of its own under `mlflow.smolagents.autolog()`; a run that went on with the memory of the run
before it, as its AGENT span records (`mlflow_smolagents_memory`), joins that run's trace as a paused LangGraph run joins
its resume (`mlflow_trace._Joined`): one case, the first trace's id, each run a turn, as format `smolagents` reads the
agent's memory. A run in a session stays with its session's traces (they are one case already).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from tracejudge.stages.extract.otel.conventions.mlflow_smolagents_memory import MEMORY, Run, chains, run_of
from tracejudge.stages.extract.otel.native import nanos, native_span
from tracejudge.stages.load import RawRecord, loads_line, read_jsonl

__all__ = ["run_on"]


def run_on(dataset: Any, records: Iterator[RawRecord], join: Callable[[list[Any]], Any], session_key: str) -> Iterator[RawRecord]:
    """`records` with each chain of runs on one memory (module docstring) yielded as one record, its payload `join` of
    their payloads in the order they ran, at the place of the chain's first trace, once its last one was read.
    `session_key`: the trace metadata key of a trace's session. Raises nothing: a line that does not decode is no run."""
    heads = chains(_runs(dataset, session_key))
    members: dict[tuple[str, int], list[tuple[str, int]]] = {}
    for place, head in heads.items():
        members.setdefault(head, []).append(place)
    held: dict[tuple[str, int], dict[tuple[str, int], RawRecord]] = {}
    for raw in records:
        head = heads.get((raw.file, raw.line))
        if head is None or len(members[head]) == 1:
            yield raw
            continue
        got = held.setdefault(head, {})
        got[(raw.file, raw.line)] = raw
        if len(got) == len(members[head]):
            first = got[head]
            yield RawRecord(first.file, first.line, join([got[p].payload for p in members[head]]), end=first.end)
            del held[head]
    for got in held.values():  # (a member the read left out, by `dataset.limit`: the others as they are)
        yield from got.values()


def _runs(dataset: Any, session_key: str) -> dict[tuple[str, int], Run]:
    """Every smolagents run's trace in the dataset's file, by place; only the lines holding an agent's memory are decoded."""
    out = {}
    for raw in read_jsonl(dataset.path):
        if raw.error is not None or not isinstance(raw.payload, bytes) or MEMORY not in raw.payload:
            continue
        try:
            record = loads_line(raw.payload)
        except (ValueError, RecursionError):
            continue
        run = _run(record, session_key) if isinstance(record, dict) else None
        if run is not None:
            out[(raw.file, raw.line)] = run
    return out


def _run(record: dict[str, Any], session_key: str) -> Run | None:
    """The run of a decoded trace whose one root span is a smolagents agent's run (`run_of`), outside any session; else None."""
    info = record.get("info") if isinstance(record.get("info"), dict) else {}
    meta = info.get("trace_metadata") or info.get("request_metadata") or {}
    data = record.get("data") if isinstance(record.get("data"), dict) else {}
    spans = [s for s in data.get("spans") or [] if isinstance(s, dict)]
    roots = [s for s in spans if not (s.get("parent_span_id") or s.get("parent_id"))]
    if (isinstance(meta, dict) and meta.get(session_key)) or len(roots) != 1 or not isinstance(roots[0].get("attributes"), dict):
        return None
    root = roots[0]
    start, end = nanos(root.get("start_time_unix_nano", root.get("start_time"))), nanos(root.get("end_time_unix_nano", root.get("end_time")))
    if start is None or end is None:
        return None
    return run_of(native_span("", "", None, root.get("name"), start, end, root["attributes"]))
