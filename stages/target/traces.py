"""`RUN_DIR/traces.jsonl`: the live traces of a run, kept beside its results for re-scoring.

One line per (case, trial) the target ran (a later line for the same pair,
from a resumed run, supersedes an earlier one):

```json
{"case_id": "c1", "trial": 0, "status": "ok", "error": null,
 "conversation_id": "c1/0/9b1e…", "attempts": 1,
 "turns": [{"input": "…", "output": "…", "tool_calls": [...]}],
 "case": {"id": "c1", "input": "…", "expected_tool_calls": [...], "trace": {...}}}
```

`case` is a native case with the live trace (partial when the target
failed), its credentials masked as a result line masks what it copies
(`recorded_case`: tags and metadata by `redact_labels`, every other string by
`redact_details`: a value under a credential's name, a token, a URL's
password); `turns` is `null` for a single-turn case; `target` fingerprints the
`target` config that made the line (`target_fingerprint`). A resumed run
takes an answered pair's trace from here instead of calling the agent again
(`Answered`): the line reached the file before its result, so a kill between
the two costs no second agent call. Each line is written and
flushed to the OS before the stage hands its work on, so a line always
reaches the file before its result does and a killed run never has a result
without its trace (fsync follows within `fsync_seconds`, and on close).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracejudge.engine import store
from tracejudge.llm.redact import quoted_clean, redact_details, redact_labels

if TYPE_CHECKING:
    from tracejudge.core.config import TargetConfig
    from tracejudge.core.records import Case, Trace

__all__ = ["TRACES", "Answered", "TraceIndex", "TraceWriter", "recorded_case", "target_fingerprint"]

TRACES = "traces.jsonl"


def _masked_case(data: dict[str, Any]) -> dict[str, Any]:
    """A case's JSON (without its trace) with its credentials masked: tags and metadata as a result line masks them
    (`redact_labels`), every other string as the viewer masks a case (`redact_details`); the id is kept. The same
    object when nothing needs masking."""
    tags, metadata = redact_labels(data.get("tags"), data.get("metadata"))
    rest = {k: v for k, v in data.items() if k not in ("id", "tags", "metadata")}
    if rest and not quoted_clean([json.dumps(rest, ensure_ascii=False)]):
        rest = redact_details(rest)
    elif tags is data.get("tags") and metadata is data.get("metadata"):
        return data
    labels = {"tags": tags, "metadata": metadata}
    return {k: labels[k] if k in labels else rest.get(k, v) for k, v in data.items()}


def recorded_case(case: Case, trace: Trace | None) -> dict[str, Any]:
    """The `case` object of a trace line: `case` with `trace` as JSON, the case's own fields masked (`_masked_case`).

    `trace` is kept as it is: the target stage has masked it already (`scrub`).
    """
    data = _masked_case(case.model_dump(mode="json", exclude_defaults=True, exclude={"trace"}))
    if trace is not None:
        data = {**data, "trace": trace.model_dump(mode="json", exclude_defaults=True)}
    return data


class TraceWriter:
    """Append trace lines to a `traces.jsonl`, cutting a torn last line first."""

    def __init__(self, path: Path, fsync_seconds: float = 0.5) -> None:
        self.path = path
        store.repair_tail(path)
        self._fh = open(path, "ab")
        self._fsync_seconds = fsync_seconds
        self._last_sync = time.monotonic()
        self.written = 0

    def add(self, record: dict[str, Any]) -> None:
        """Write one record as a line and flush it to the OS."""
        self._fh.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
        self._fh.flush()
        self.written += 1
        if time.monotonic() - self._last_sync >= self._fsync_seconds:
            os.fsync(self._fh.fileno())
            self._last_sync = time.monotonic()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()


class TraceIndex:
    """Random access to a `traces.jsonl` by (case_id, trial), for replay.

    Opening scans the file once and keeps only byte offsets (the last line of
    each pair wins); `get` reads one line. Lines that are not valid JSON
    records (a torn tail) are skipped. Raises `FileNotFoundError` when the
    file does not exist.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._where: dict[tuple[str, int], tuple[int, int]] = {}
        offset = 0
        with open(path, "rb") as fh:
            for line in fh:
                if line.endswith(b"\n"):
                    try:
                        head = json.loads(line)
                        self._where[(str(head["case_id"]), int(head["trial"]))] = (offset, len(line))
                    except (ValueError, KeyError, TypeError):
                        pass
                offset += len(line)
        self._fh = open(path, "rb")

    def __len__(self) -> int:
        return len(self._where)

    def get(self, case_id: str, trial: int) -> dict[str, Any] | None:
        """The record of (case_id, trial), or `None` when the run has none."""
        where = self._where.get((case_id, trial))
        if where is None:
            return None
        data: dict[str, Any] = json.loads(os.pread(self._fh.fileno(), where[1], where[0]))
        return data

    def close(self) -> None:
        self._fh.close()


def target_fingerprint(cfg: TargetConfig) -> str:
    """16 hex digits of sha256 over the `target` config, less what cannot change an answer (`concurrency`)."""
    body = json.dumps(cfg.model_dump(mode="json", exclude={"concurrency"}), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(body.encode()).hexdigest()[:16]


class Answered:
    """The answered (case, trial) pairs of a run's own `traces.jsonl`, for its resume.

    `get(case, trial)` gives the recorded line only when it holds an answer (`status` ok) made by the
    same target config (`fingerprint`, see `target_fingerprint`) for the same case (every field but the
    trace equal, as masked when the line holds it masked: an edit of a masked value alone is not seen): an
    edited case or a changed target is asked again. Lines written before lines
    carried a fingerprint are never reused. Raises `FileNotFoundError` when the file does not exist.
    """

    def __init__(self, path: Path, fingerprint: str) -> None:
        self.index = TraceIndex(path)
        self.fingerprint = fingerprint

    def get(self, case: Case, trial: int) -> dict[str, Any] | None:
        """The recorded line of an answer to `case` (trial `trial`) that still holds, else `None`."""
        rec = self.index.get(case.id, trial)
        if rec is None or rec.get("status") != "ok" or rec.get("target") != self.fingerprint:
            return None
        was = {k: v for k, v in (rec.get("case") or {}).items() if k != "trace"}
        now = case.model_dump(mode="json", exclude_defaults=True, exclude={"trace"})
        # (a line holds the case masked, `recorded_case`; one written before lines were masked holds it as it was)
        if (was != now and was != _masked_case(now)) or not isinstance(rec["case"].get("trace"), dict):
            return None
        return rec

    def close(self) -> None:
        self.index.close()
