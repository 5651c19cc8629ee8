"""MLflow traces still in progress in a file read by format `mlflow`: skipped with a warning, as `mlflow-server` skips them.

MLflow logs a trace when it begins (`info.state: IN_PROGRESS`, MLflow 2's `info.status`) and logs its spans as they end;
`search_traces` run while an agent is still running returns it so, its root span missing and its last node's input at
the top (a LangGraph `Send` payload, `{"__type": "tool_call_with_context", …}`). Scored, its verdict would be final on
half a trace, so it is no case: one warning names its file, line and trace id, and says to write it again once the
run has finished. Only lines holding the text `IN_PROGRESS` are decoded to tell.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.common import JsonLine
from tracejudge.stages.extract.said_once import first_time
from tracejudge.stages.extract.skipped import note_skipped
from tracejudge.stages.load import RawRecord

__all__ = ["finished", "in_progress"]

log = get_logger("tracejudge.extract.mlflow")
_STATE = "IN_PROGRESS"


def in_progress(record: Any) -> bool:
    """Whether a decoded `Trace.to_json()` record is of a trace MLflow still holds as running (`info.state` or MLflow 2's
    `info.status` `IN_PROGRESS`)."""
    info = record.get("info") if isinstance(record, dict) else None
    return isinstance(info, dict) and _STATE in (info.get("state"), info.get("status"))


def finished(records: Iterator[RawRecord]) -> Iterator[RawRecord]:
    """`records` without the traces still in progress, each warned of once (module docstring); others pass as they are."""
    for raw in records:
        data = raw.payload.data if isinstance(raw.payload, JsonLine) else None
        if raw.error is None and isinstance(data, bytes) and _STATE.encode() in data:
            try:
                record = json.loads(data)
            except (ValueError, RecursionError):
                record = None  # (`adapt` names what is wrong with the line)
            if in_progress(record):
                _warn(raw, record["info"])
                note_skipped(raw.file, raw.line, "a trace still in progress")  # (a file of nothing else is refused saying so)
                continue
        yield raw


def _warn(raw: RawRecord, info: dict[str, Any]) -> None:
    place = f"{raw.file}:{raw.line}"
    if not first_time("mlflow_in_progress", place):
        return
    tid = info.get("trace_id") or info.get("request_id")
    log.warning(f"mlflow: {place}: trace {tid} is still in progress (state {_STATE}: it was written before its run ended, "
                "its root span missing), so it is skipped, not scored on half a trace, as format mlflow-server skips one; "
                "write it again once its run has finished to score it", trace_id=tid, file=raw.file, line=raw.line)
