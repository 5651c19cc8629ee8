"""A nightly sweep of a trace store (`start: last_run`) under a cap (`max_traces`, `max_results`, `dataset.limit`) that loses nothing.

A capped read stops after N traces. The store formats read oldest first, so what a capped read
leaves is the newer end of its window; `start: last_run` alone would start the next night at the
last finished run's start and never read it. So:

- the cap counts only *new* traces, ones without a result in the run directory (`seen_ids`):
  the overlap re-read every night, and the trace a cut read stopped at, cost a read, never a
  place under the cap (else a cap no larger than the overlap's traces would read the same N
  finished traces every night, for good);
- a capped read writes `sweep.json` in the run directory when it ends: where it began (`from`),
  where the cap cut it (`cut`, the start of the last trace read; null when it read its window to
  the end), when (`at`), and the new traces it handed to the run (`pending`);
- the next `start: last_run` (`window_start`) starts at the last finished run's start or the cut,
  whichever is earlier, less `overlap_s`. The cut counts only once every pending trace has a
  result (the run that read them got that far); until then the next read starts where that one
  began (`from`), so an interrupted night is read again, its finished cases skipped by the resume.
  A finished run that began after `at` read without a cap from at most there: the file is spent.

A trace the store says is still running (MLflow's `IN_PROGRESS`) is not scored: its verdict would
be final on half a trace. The read skips it (`hold`), warns how many it skipped, and records the
earliest start of those (`held`) in `sweep.json`, capped or not; the next `start: last_run` starts
no later than that less `overlap_s` and `HELD_SLACK`, so the trace is read again, and scored once it has finished,
however long it ran. (A window of start times would otherwise pass it by: it began before the night that skipped it.)

The run's results are read for their case ids only when a cap is set or `sweep.json` exists.
A shard (`run.shard`, as the run directory's manifest records it) counts and records only its
own traces: the others are another shard's, never scored in this directory.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tracejudge.core.log import get_logger

__all__ = ["HELD_SLACK", "SIDECAR", "Sweep", "seen_ids", "window_start"]

SIDECAR = "sweep.json"
CAPS = ("max_traces", "max_results")  # the formats' own caps (phoenix, mlflow-server)

log = get_logger(__name__)


def _time(text: Any) -> datetime | None:
    try:
        when = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)


def last_finished(run_dir: Path) -> datetime | None:
    """The start of the last segment of `run_dir` that finished; None when none did."""
    for name in ("checkpoint.json", "summary.json"):
        try:
            data = json.loads((Path(run_dir) / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        starts = [t for s in data.get("segments") or [] if isinstance(s, dict) and s.get("ended") == "finished"
                  and (t := _time(s.get("started_at"))) is not None]
        if starts:
            return max(starts)
    return None


def seen_ids(run_dir: Path) -> set[str]:
    """The case ids with any result line in `run_dir` (a provisional one too: its case was read and is the resume's)."""
    from tracejudge.engine import store

    return {key[0] for line in store.iter_result_lines(Path(run_dir) / store.RESULTS) if (key := store.line_key(line)) is not None}


def _sidecar(run_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((Path(run_dir) / SIDECAR).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and _time(data.get("at")) is not None else None


# A held trace's start as the store gave it while it ran may be later than the start it has once finished (MLflow's,
# by a millisecond with `overlap_s: 0`, which then left it outside the next window): the window starts this much earlier.
HELD_SLACK = timedelta(seconds=2)


def window_start(run_dir: Path, overlap_s: float, capped: bool) -> tuple[datetime | None, set[str] | None]:
    """`(start of the next window or None for everything, the run's case ids or None)` for `start: last_run` (module docstring)."""
    finished = last_finished(run_dir)
    overlap = timedelta(seconds=overlap_s)
    start = finished - overlap if finished is not None else None
    side = _sidecar(run_dir)
    if side is not None and finished is not None and finished > _time(side["at"]):  # type: ignore[operator]
        side = None  # a later finished run read past it without a cap
    seen = seen_ids(run_dir) if capped or side is not None else None
    if side is None:
        return start, seen
    assert seen is not None
    # Less the overlap, as every start here: MLflow dates a trace in progress by the spans it holds so far, which may begin
    # after its root does (a finished trace was seen dated a second before the in-progress one).
    held = _time(side.get("held")) if side.get("held") else None
    return _earliest(_recorded_start(side, seen, start, overlap), held - overlap - HELD_SLACK if held is not None else None), seen


def _recorded_start(side: dict[str, Any], seen: set[str], start: datetime | None, overlap: timedelta) -> datetime | None:
    """`start` moved back to where the record `side` says the cap left off (or its read began, when it was interrupted)."""
    if all(str(t) in seen for t in side.get("pending") or []):
        cut = _time(side.get("cut")) if side.get("cut") else None
        if cut is None:
            return start
        return cut - overlap if start is None else min(start, cut - overlap)
    began = _time(side.get("from")) if side.get("from") else None  # the read it describes never got its traces scored
    return None if began is None or start is None else min(start, began)


def _earliest(start: datetime | None, other: datetime | None) -> datetime | None:
    """The earlier of two window starts; None (read everything) wins, `other` None changes nothing."""
    return start if start is None or other is None else min(start, other)


class Sweep:
    """One read's cap and its record (`sweep.json`); `take` builds it from the dataset `bind_last_run` made."""

    def __init__(self, cap: int | None, run_dir: Path | None = None, seen: set[str] | None = None, start: str | None = None,
                 shard: tuple[int, int] | None = None) -> None:
        self.cap, self.run_dir, self.seen, self.start, self.shard = cap, run_dir, seen or set(), start, shard
        self.count = 0  # new traces read
        self.pending: list[str] = []
        self.last: datetime | None = None
        self.cut = False
        self.skipped = 0  # traces still in progress, left for a later read
        self.held: datetime | None = None  # the earliest start of those

    @classmethod
    def take(cls, dataset: Any, cap_key: str) -> tuple[dict[str, Any], Sweep]:
        """`(dataset.options without the sweep's private entry, the Sweep)`; the cap is the lower of `cap_key` and `dataset.limit`."""
        options = dict(dataset.options)
        state = options.pop("_sweep", None) or {}
        caps = [c for c in (options.get(cap_key), getattr(dataset, "limit", None)) if c is not None]
        run_dir = Path(state["run_dir"]) if state.get("run_dir") else None
        return options, cls(min(caps) if caps else None, run_dir, state.get("seen"), options.get("start"), state.get("shard"))

    def _new(self, trace_id: str) -> bool:
        if trace_id in self.seen:
            return False
        if self.shard is None:
            return True
        from tracejudge.engine.shards import shard_index

        return shard_index(trace_id, self.shard[1]) == self.shard[0]

    def full(self, trace_id: str) -> bool:
        """True when the cap is reached and `trace_id` would be one more new trace: the read stops before it (cut)."""
        if self.cap is not None and self.count >= self.cap and self._new(trace_id):
            self.cut = True
        return self.cut

    def took(self, trace_id: str, started: datetime | None) -> None:
        """`trace_id` (its trace started at `started`) is handed to the run."""
        if self._new(trace_id):
            self.count += 1
            if self.run_dir is not None and self.cap is not None:
                self.pending.append(trace_id)
        if started is not None and (self.last is None or started > self.last):
            self.last = started

    def hold(self, trace_id: str, started: datetime | None) -> None:
        """`trace_id` (started at `started`) is still in progress: not handed to the run, kept inside the next window."""
        self.skipped += 1
        if started is not None and (self.held is None or started < self.held):
            self.held = started

    def finish(self, where: str, what: str) -> None:
        """The read ended (not abandoned): warn when the cap cut it or traces in progress were skipped, and record it for
        the next `start: last_run`."""
        if self.skipped:
            nxt = ("the next run with start: last_run reads them again" if self.run_dir is not None
                   else "run again once they have finished to score them")
            log.warning(f"{where}: skipped {self.skipped} trace(s) still in progress (not scored on half a trace); {nxt}",
                        skipped=self.skipped)
        if self.cut:
            after = self.last.isoformat() if self.last else "its start"
            nxt = ("the next run with start: last_run goes on from there" if self.run_dir is not None
                   else "later traces were not read: raise the cap or narrow the window")
            log.warning(f"{where}: the cap of {self.cap} new traces cut the window; read up to traces started at {after}, {nxt}",
                        cap=self.cap, option=what)
        if self.run_dir is None or (self.cap is None and self.held is None):
            return
        from tracejudge.engine import store

        record = {"at": datetime.now(UTC).isoformat(), "from": self.start, "cut": self.last.isoformat() if self.cut and self.last else None,
                  "pending": self.pending, "held": self.held.isoformat() if self.held else None}
        try:
            store.atomic_write_text(self.run_dir / SIDECAR, json.dumps(record) + "\n")
        except OSError as exc:  # the next night then reads from where this one began: more reading, nothing lost
            log.warning(f"{self.run_dir / SIDECAR}: not written ({exc.strerror or exc})")
