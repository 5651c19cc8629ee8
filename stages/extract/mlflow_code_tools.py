"""Format `mlflow`: the tool calls of a smolagents `CodeAgent` run, which MLflow writes as traces of their own, read as the run's.

A `CodeAgent` runs the model's code in a worker thread (smolagents' `LocalPythonExecutor`, under its default timeout), and
`mlflow.smolagents.autolog()` loses its span context there: every tool the code calls (`final_answer` included) is a trace
of its own, one `TOOL` span `<ToolClass>.__call__` with no parent and no session, while the run's trace (`CodeAgent.run`)
holds no call. Read line by line, such a run is one case without its calls and one case per call.

`joined` reads the file once before the records are read (only the lines that can be such a run or such a call are
decoded) and joins each such call's trace to the one trace whose `CodeAgent.run` span (`mlflow_smolagents.code_run`) holds
it in time: its span goes into that trace, under that span, and its own line is not read as a case. A call that no run
holds, or that two runs running at once both hold, stays a case of its own; so does one whose run is in a session (read
with its session's traces, `conversation_groups`). A managed agent the code calls runs in that thread too: its run is a
trace of its own (`mlflow_smolagents.managed_run` at its root, its tools under it), joined the same way, whole, and then
read as the call that ran it (`mlflow_smolagents.managed_calls`). A managed agent that is itself a `CodeAgent` runs its own
code in a worker thread of its own: its calls are traces of their own, held in time by its run and by the manager's; each
joins the innermost (the managed run, which joins the manager's with them). Format `otel` joins the same spans read over
OTLP (`otel.strays`).

`ListedRuns` does the same for traces listed oldest first by a server (format `mlflow-server`): a run's trace is held
until a trace that began after the run ended is listed (no call of the run can come after it), the calls listed
meanwhile joined to it (a managed `CodeAgent`'s run held inside its manager's, the calls of its code joined to it). A call whose run was not listed in the same read (it began before the window) stays a case.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tracejudge.stages.extract.common import JsonLine
from tracejudge.stages.extract.otel.conventions.mlflow_smolagents import code_run, managed_run, tool_call
from tracejudge.stages.extract.otel.native import native_span, nanos
from tracejudge.stages.load import RawRecord, loads_line, read_jsonl

__all__ = ["ListedRuns", "code_parts", "joined", "with_calls"]

_RUN, _CALL = b"python_executor", b".__call__"  # what a line must hold to be a `CodeAgent` run's trace, or a tool call's
_AGENT = (b'"max_steps"', b'"step_number"')  # what a managed agent's run holds (`mlflow_smolagents.agent_run`)


def joined(dataset: Any, records: Iterator[RawRecord], session_key: str) -> Iterator[RawRecord]:
    """`records` (the format's, in its order) with each lone tool call's trace joined to the `CodeAgent` run holding it
    (module docstring): that run's record holds its span, its own record is left out. `session_key`: the trace metadata
    key of a trace's session. Only the calls' traces (one span each) are kept in memory, and of the runs their times."""
    runs: dict[tuple[str, int], tuple[dict[str, Any], int, int]] = {}  # (file, line): (run span without attributes, start, end)
    calls: list[tuple[tuple[str, int], dict[str, Any], int, int]] = []  # ((file, line), trace, start, end)
    for raw in read_jsonl(dataset.path):  # (no limit: a run's calls may come after the last record read)
        data = raw.payload
        if raw.error is not None or not isinstance(data, bytes):
            continue
        if _RUN not in data and not (_CALL in data and data.count(b'"span_id"') == 1) and not all(k in data for k in _AGENT):
            continue  # (neither a run, nor a call's trace: one span, nor a managed agent's run)
        record = _decoded(data)
        if record is None:
            continue
        for kind, span, start, end in code_parts(record, session_key):
            if kind == "run":
                runs[(raw.file, raw.line)] = (span, start, end)
            else:
                calls.append(((raw.file, raw.line), record, start, end))
    held: dict[tuple[str, int], list[tuple[str, int]]] = {}  # a run's place: the places of the calls' traces it holds
    traces = {place: record for place, record, _, _ in calls}
    for place, _, start, end in calls:
        holder = _innermost([at for at, (_, s, e) in runs.items() if s <= start and end <= e and at != place], runs, traces)
        if holder is not None:
            held.setdefault(holder, []).append(place)
    gone = {place for places in held.values() for place in places}  # the places of the calls joined to a run
    for raw in records:
        place = (raw.file, raw.line)
        if place in gone:
            continue
        if place in held and isinstance(raw.payload, JsonLine) and (record := _decoded(raw.payload.data)) is not None:
            raw.payload = JsonLine(json.dumps(_nested(place, record, runs, held, traces, set())).encode(), raw.payload.default_id)
        yield raw


def _innermost(holders: list[tuple[str, int]], runs: dict[tuple[str, int], tuple[dict[str, Any], int, int]],
               traces: dict[tuple[str, int], dict[str, Any]]) -> tuple[str, int] | None:
    """The run of `holders` (places of runs holding a call in time) the call is joined to: the only one, or the one inside
    all the others when each of those is a managed `CodeAgent`'s run joined to the one around it (its place in `traces`:
    a managed agent's code loses MLflow's context too, so its run and its calls are each a trace, all inside the
    manager's run). Two runs at once that are not a manager and the agent it runs: None, whose the call is is unknown."""
    if len(holders) <= 1:
        return holders[0] if holders else None
    by_length = sorted(holders, key=lambda at: runs[at][2] - runs[at][1])
    for inner, outer in zip(by_length, by_length[1:]):
        if inner not in traces or not (runs[outer][1] <= runs[inner][1] and runs[inner][2] <= runs[outer][2]):
            return None
    return by_length[0]


def _nested(place: tuple[str, int], record: dict[str, Any], runs: dict[tuple[str, int], tuple[dict[str, Any], int, int]],
            held: dict[tuple[str, int], list[tuple[str, int]]], traces: dict[tuple[str, int], dict[str, Any]],
            seen: set[tuple[str, int]]) -> dict[str, Any]:
    """`record` (the trace at `place`) with the traces its run holds added, each with those its own run holds (a managed
    `CodeAgent`'s calls inside its run, inside the manager's); `seen` stops a loop (two runs of the same times)."""
    seen.add(place)
    inner = [_nested(at, traces[at], runs, held, traces, seen) for at in held.get(place, []) if at not in seen]
    return json.loads(with_calls(record, runs[place][0], inner)) if inner and place in runs else record


def code_parts(record: dict[str, Any], session_key: str) -> list[tuple[str, dict[str, Any], int, int]]:
    """`[(kind, span, start ns, end ns)]` of a decoded trace (`Trace.to_json()`): `("run", the `CodeAgent.run` span without
    its attributes, …)` for a run's trace, `("call", its one span, …)` for a lone tool call's (its root span, for a managed
    agent's run); `[]` for any other trace and
    for one in a session (read with its session's traces). Format `mlflow-server` joins what it reads with these too."""
    if not isinstance(record.get("data"), dict) or not isinstance(record["data"].get("spans"), list) or _session(record, session_key):
        return []
    spans = [s for s in record["data"]["spans"] if isinstance(s, dict)]
    found = []
    for span in spans:
        start, end = nanos(span.get("start_time_unix_nano", span.get("start_time"))), nanos(span.get("end_time_unix_nano", span.get("end_time")))
        for kind in _kinds(span, len(spans)) if start is not None and end is not None else ():
            found.append((kind, {k: v for k, v in span.items() if k != "attributes"} if kind == "run" else span, start, end))
    return found


class _Held:
    """A `CodeAgent` run's trace held by `ListedRuns`: its record, its run span, its times, what it holds (traces, or the
    `_Held` of a managed run inside it) and the run holding it (a managed `CodeAgent`'s run), if any."""

    def __init__(self, raw: RawRecord | None, payload: dict[str, Any], run: dict[str, Any], start: int, end: int,
                 outer: _Held | None) -> None:
        self.raw, self.payload, self.run, self.start, self.end, self.outer = raw, payload, run, start, end, outer
        self.calls: list[dict[str, Any] | _Held] = []

    def joined(self) -> dict[str, Any]:
        """Its trace with the traces it holds added (a managed run's with those its own run holds)."""
        calls = [c.joined() if isinstance(c, _Held) else c for c in self.calls]
        return json.loads(with_calls(self.payload, self.run, calls)) if calls else self.payload


class ListedRuns:
    """The `CodeAgent` runs of a listing oldest first (`mlflow-server`), each held with the calls it holds (module docstring).

    A managed `CodeAgent`'s run under a `CodeAgent` manager is a trace of its own too, a call the manager's run holds and a
    run holding its own code's calls: it is held inside the manager's run, and each call joins the innermost run holding
    it, as `joined` reads a file (`_innermost`)."""

    def __init__(self, session_key: str) -> None:
        self.session_key = session_key
        self.open: list[_Held] = []

    def due(self, started_ns: int) -> Iterator[RawRecord]:
        """The held runs that ended before `started_ns` (the start of the trace listed next), with their calls, in order
        (a managed run is no record: it went with its manager's run)."""
        done = [r for r in self.open if r.end < started_ns]
        self.open = [r for r in self.open if r.end >= started_ns]
        yield from (self._record(r) for r in done if r.outer is None)

    def joined_call(self, raw: RawRecord) -> bool:
        """Whether `raw` (payload: a decoded trace) is a lone tool call, or a managed agent's run, that a held run holds in
        time: then it is kept with that run (the innermost, when a managed run holds it too), to be read in its case, and
        is no record (no case) of its own. A managed `CodeAgent`'s run so kept is held itself, for its code's calls."""
        parts = code_parts(raw.payload, self.session_key) if self.open else []  # (no run held: no span looked at)
        call = next((p for p in parts if p[0] == "call"), None)
        if call is None:
            return False
        holder = self._innermost([r for r in self.open if r.start <= call[2] and call[3] <= r.end])
        if holder is None:  # (none: its run is not in this read; two at once: whose it is cannot be told)
            return False
        run = next((p for p in parts if p[0] == "run"), None)
        if run is None:
            holder.calls.append(raw.payload)
        else:
            inner = _Held(None, raw.payload, run[1], run[2], run[3], holder)
            holder.calls.append(inner)
            self.open.append(inner)
        return True

    @staticmethod
    def _innermost(holders: list[_Held]) -> _Held | None:
        """The one of `holders`, or the innermost when each is a managed run held by the next one out; else None."""
        if len(holders) <= 1:
            return holders[0] if holders else None
        by_length = sorted(holders, key=lambda r: r.end - r.start)
        if all(inner.outer is outer for inner, outer in zip(by_length, by_length[1:])):
            return by_length[0]
        return None

    def held(self, raw: RawRecord) -> bool:
        """Whether `raw` is a `CodeAgent` run's trace, then held (`due`, `rest`) for the calls listed after it."""
        run = next((p for p in code_parts(raw.payload, self.session_key) if p[0] == "run"), None)
        if run is not None:
            self.open.append(_Held(raw, raw.payload, run[1], run[2], run[3], None))
        return run is not None

    def rest(self) -> Iterator[RawRecord]:
        """Every run still held (the listing ended), with its calls."""
        done, self.open = self.open, []
        yield from (self._record(r) for r in done if r.outer is None)

    @staticmethod
    def _record(held: _Held) -> RawRecord:
        raw = held.raw
        assert raw is not None  # (only a managed run, which has an outer run, is held without a record)
        if held.calls:
            raw.payload = held.joined()
        return raw


def _decoded(data: bytes) -> dict[str, Any] | None:
    """A line's trace when it decodes to one with a list of spans, else None (the format's reader names its error)."""
    try:
        record = loads_line(data)
    except (ValueError, RecursionError):
        return None
    payload = record.get("data") if isinstance(record, dict) else None
    return record if isinstance(payload, dict) and isinstance(payload.get("spans"), list) else None


def _session(record: dict[str, Any], key: str) -> bool:
    info = record.get("info") if isinstance(record.get("info"), dict) else {}
    meta = info.get("trace_metadata") or info.get("request_metadata") or {}
    return isinstance(meta, dict) and bool(meta.get(key))


def _kinds(span: dict[str, Any], count: int) -> tuple[str, ...]:
    """`("run",)` for a `CodeAgent.run` span, `("call",)` for the one span of a trace that is a smolagents tool call, or for
    the root span of a managed agent's run (its trace joins whole), both for the root of a managed `CodeAgent`'s run (it
    holds its code's calls and joins its manager's run), else `()`."""
    attrs = span.get("attributes")
    if not isinstance(attrs, dict):
        return ()
    view = native_span("", "", None, span.get("name"), 0, 0, attrs)
    root = not (span.get("parent_span_id") or span.get("parent_id"))
    call = root and ((count == 1 and tool_call(view)) or managed_run(view))
    return ("run",) * code_run(view) + ("call",) * bool(call)


def with_calls(record: dict[str, Any], run: dict[str, Any], calls: list[dict[str, Any]]) -> bytes:
    """The JSON text of `record` with the spans of each of `calls` (traces) added, their root under its `run` span."""
    context = run.get("context") if isinstance(run.get("context"), dict) else {}
    run_id = run.get("span_id") or context.get("span_id")
    spans = list(record["data"]["spans"])
    for call in calls:
        for span in call["data"]["spans"]:
            span = dict(span)
            if "context" in span and isinstance(span["context"], dict):  # (MLflow 2: ids under `context`, the parent as `parent_id`)
                span["context"] = {**span["context"], "trace_id": context.get("trace_id", span["context"].get("trace_id"))}
                span["parent_id"] = span.get("parent_id") or run_id
            else:
                span["trace_id"] = run.get("trace_id", span.get("trace_id"))
                span["parent_span_id"] = span.get("parent_span_id") or run_id
            spans.append(span)
    return json.dumps({**record, "data": {**record["data"], "spans": spans}}).encode()
