"""The resume state of a run directory: finished keys, the aggregate so far, and segments.

A run directory is written by one or more *segments* (one process each: the
first run, then every resume). `RunJournal.open` rebuilds, from the files
`tracejudge.engine.store` describes, everything a new segment needs, without parsing
every finished result:

- the finished `(case_id, trial)` keys: read from `results.idx` (8 bytes a
  result) into a `KeySet`;
- the aggregate: typed JSON in `checkpoint.json` (`tracejudge.stages.aggregate.state`),
  which records how many bytes and lines of `results.jsonl` it covers;
- only the results written after that checkpoint (a segment killed between
  its fsync and its checkpoint) are parsed and folded.

When the checkpoint is missing, does not validate, or disagrees with the files
(its CRC of the index, its byte count, its metric keys), everything is rebuilt
from `results.jsonl`, which costs one full parse.

Every segment that wrote a result or used a paid service leaves a record
(`segments` in `checkpoint.json` and `summary.json`): start time, elapsed
seconds, results written, how it ended (`finished`, `interrupted`, `killed`),
and its stages' usage counters. A segment's record is refreshed at every
flush, so a killed segment keeps what it had at its last flush; run totals
(elapsed, usage, cost) are the sums over segments. When the checkpoint is
rewritten, and what it holds, is `tracejudge.engine.journal_checkpoint`'s.

Run directories travel (CI caches, shared disks), so reading a checkpoint
never executes anything: every field is validated by a pydantic model
(`CheckpointFile`), the aggregate is numbers and strings poured into an
aggregator built from the current config, and a checkpoint that does not
validate, or names anything the config does not, is discarded with a warning
and rebuilt from `results.jsonl`.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.core.records import UNTERMINATED_LINE, WORKER_ERROR, CaseResult, Status
from tracejudge.engine import journal_standing as standing
from tracejudge.engine import store
from tracejudge.engine.checkpoint_file import CheckpointFile, recorded_config_hash
from tracejudge.engine.journal_checkpoint import checkpoint_due, checkpoint_if_due, write_checkpoint
from tracejudge.engine.journal_counts import add_judge_counts, add_judge_tally, add_line_spend, sum_usage, transient_failure
from tracejudge.engine.journal_open import recover
from tracejudge.engine.keyset import KeySet, result_key, trial_key
from tracejudge.engine.rendered import Finished
from tracejudge.engine.result_guards import guard_scores
from tracejudge.llm.redact import redact_labels
from tracejudge.engine.segment_end import closing_checkpoint_failed, failed_write, record_failed_end

__all__ = ["CheckpointFile", "RunJournal", "recorded_config_hash", "sum_usage"]

log = get_logger("tracejudge.checkpoint")

def _place(result: CaseResult) -> tuple[str, int] | None:
    # The file and line a result's error names (`store.error_place`).
    err = result.error
    return None if err is None or err.file is None or err.line is None else (err.file, err.line)


class RunJournal:
    """Open results, index and checkpoint of one run directory for one segment.

    Use `open()`; then `record()` each new result, `tick()` now and then (time-bounded
    flushes when results trickle in), and `close()` once at the end. The
    caller must hold the run directory's lock.

    Attributes:
        done: `KeySet` of `result_key(case_id, trial)` of every finished result.
        agg: the aggregator, having folded every finished result.
        finished: number of results in `results.jsonl` at open.
        segments: records of earlier segments (and this one once it is recorded).
        recovery: what open had to repair: `{"torn_bytes", "tail_results", "rebuilt", "killed_segment"}`.
    """

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.done = KeySet()
        self.agg: Any = None
        self.finished = 0
        self.segments: list[dict[str, Any]] = []
        self.recovery: dict[str, Any] = {}
        self.metric_keys: list[str] = []
        self.usage_source: Callable[[], dict[str, dict[str, float]]] | None = None
        # Called with each result `record` writes (the reports collect their material as the run goes).
        self.on_record: Callable[[CaseResult], None] | None = None
        # Called instead with each batch `record_finished` writes, when set (one call a batch, not one a result).
        self.on_records: Callable[[list[Finished]], None] | None = None
        # Called after each checkpoint is written (the resume cursor is saved with it, `tracejudge.engine.cursor`).
        self.on_checkpoint: Callable[[], None] | None = None
        self.on_progress: Callable[[], None] | None = None  # after a flushed group that wrote no checkpoint
        self.fresh = False  # results.jsonl was empty (or absent) at open: every result is this segment's
        # Results skipped for the judge budget, and transient failures with retries left:
        # written, but not finished work. A resume redoes them; the newer result supersedes
        # the line. `{result_key: json line}`.
        self.provisional: dict[int, str] = {}
        # How many transient failures (`RETRYABLE_STATUSES`) each (case, trial) has had,
        # counted from results.jsonl; past `max_retries` the failure is final.
        self.failures: dict[int, int] = {}
        # (file, line) → key of a standing dead worker's result whose error names them (`_displace`).
        self.dead_at: dict[tuple[str, int], int] = {}
        self.max_retries = 2
        self.retrying = 0  # provisional failures this segment redoes
        # Judge tokens spent, summed from the results themselves (each score's `judge`
        # info, cache hits count 0): unlike a segment's counters, these survive kill -9.
        self.judge_spent: dict[str, int] = {"input_tokens": 0, "output_tokens": 0, "requests": 0, "answered": 0}
        # The judge gate's counts over final results (provisional ones are added at summary
        # time, see `judge_gate_counts`): rebuilt from results.jsonl, so a kill cannot lose them.
        self.judge_final: dict[str, int] = {"judged_results": 0, "judge_error_results": 0}
        # The `judge.samples` and panel counts of the final results (`judge_stats.JudgeTally`; None until a result holds
        # any): rebuilt from results.jsonl like `judge_final`, so a killed segment's results count too.
        self.judge_tally: Any = None
        self._segment: dict[str, Any] = {}
        self._results_crc: int | None = None
        self._t0 = time.monotonic()
        self._writer: store.ResultWriter | None = None
        self._recorded = False
        self._announced = False  # this segment's record is in checkpoint.json from its start (`announce`)
        self._closed = False
        self._closing = False
        self._checkpointed_at_close = False
        self.close_error: OSError | None = None  # the closing checkpoint's failed write, if any
        self._last_checkpoint = 0.0
        self._lines_at_checkpoint = 0  # results.jsonl's line count the last checkpoint covers
        self._expected: frozenset[str] | None = None  # (`_per_result`)

    # ------------------------------------------------------------------ open

    @classmethod
    def open(
        cls,
        run_dir: Path,
        *,
        metric_keys: list[str],
        new_aggregator: Callable[[], Any],
        config_hash: str,
        dataset_fingerprint: str | None = None,
        forced: bool = False,
        flush_every: int = 256,
        flush_seconds: float = 0.5,
        max_retries: int = 2,
    ) -> RunJournal:
        """Recover the run directory's state and start a new segment.

        `new_aggregator()` makes an empty aggregator with `fold(CaseResult)`;
        `metric_keys` must match the checkpoint's for its aggregate to be
        reused. `max_retries` is how many transient failures of one (case,
        trial) stay provisional (redone by the next segment); the one after
        that is final. `config_hash` and `dataset_fingerprint` (the manifest's) are recorded
        on the segment, so a summary can say which segments ran on what. Raises `OSError` on I/O failure.
        """
        self = cls(run_dir)
        recover(self, metric_keys=metric_keys, new_aggregator=new_aggregator, config_hash=config_hash,
                dataset_fingerprint=dataset_fingerprint, forced=forced, flush_every=flush_every, flush_seconds=flush_seconds,
                max_retries=max_retries)
        return self

    # --------------------------------------------------------------- writing

    def record(self, result: CaseResult) -> bool:
        """Append one new result (folded first, so every checkpoint matches the flushed lines).

        Returns False, writing nothing, for a budget skip of a (case, trial)
        whose standing line is already a budget skip: re-running a run whose
        budget is spent must not grow the file. Raises `ValueError` when the
        result holds text that JSON cannot carry (nothing is written then).
        """
        assert self._writer is not None
        if type(result) is Finished:
            return self._record_finished(result)
        if result.tags or result.metadata:  # copied from the dataset (or a live agent's turns): no credential is written
            result.tags, result.metadata = redact_labels(result.tags, result.metadata)
        guard_scores(result, self._per_result(), self.agg.metric_keys)
        line = result.model_dump_json()
        key = result_key(result.case_id, result.trial)
        if result.status is Status.skipped_budget and self.provisional.get(key):
            return False
        self._account(result, key, line)
        self._segment["results"] += 1
        self._writer.add(line, key)
        if self.on_record is not None:
            self.on_record(result)
        return True

    def _per_result(self) -> frozenset[str]:
        """The keys of the metrics every result of status ok holds a score of (the aggregate's: not those over trials)."""
        keys = self._expected
        if keys is None:
            keys = self._expected = frozenset(getattr(self.agg, "metric_keys", ()))
        return keys

    def _record_finished(self, done: Finished) -> bool:
        # `record` for a result rendered where it was scored: status ok, no judge, so final (it ends any
        # provisional standing of its key) and counted by the judge gate as not judged.
        key = trial_key(done.rendered.id_hash, done.trial)
        line = done.line()
        if self.provisional:
            self.provisional.pop(key, None)
        self.agg.fold(done)
        final = self.judge_final
        if "judged_items" not in final:  # (what `_account` adds for any final result)
            final["judged_items"] = final["parse_failed_items"] = 0
        self._segment["results"] += 1
        assert self._writer is not None
        self._writer.add(line, key)
        if self.on_record is not None:
            self.on_record(done)
        return True

    def record_finished(self, batch: list[Finished]) -> bool:
        """`record` each result of `batch` (rendered where it was scored, `engine.rendered`), in order, at once.

        The same lines, folds and report material as one `record` call per result, with one encode, one
        fold loop and one flush check for the batch; returns True when a flush is due (then call `aflush`).
        Raises `ValueError` before anything is recorded when a line cannot be written: the caller then
        records them one by one.
        """
        assert self._writer is not None
        if not batch:
            return False
        data = b"\n".join([d.line() for d in batch]) + b"\n"  # (rendered as UTF-8 already: `engine.rendered`)
        keys = [trial_key(d.rendered.id_hash, d.trial) for d in batch]
        if self.provisional:
            for key in keys:
                self.provisional.pop(key, None)
        self.agg.fold_finished(batch, keys)
        final = self.judge_final
        if "judged_items" not in final:  # (what `_account` adds for any final result)
            final["judged_items"] = final["parse_failed_items"] = 0
        self._segment["results"] += len(batch)
        due = self._writer.add_many(data, struct.pack(f"<{len(keys)}Q", *keys), len(keys))
        if self.on_records is not None:
            self.on_records(batch)
        elif self.on_record is not None:
            for done in batch:
                self.on_record(done)
        return due

    def room(self) -> int:
        """How many results `record_finished` may take before a group is full (`flush_every` less those pending; at least 1)."""
        assert self._writer is not None
        return max(1, self._writer.flush_every - self._writer.pending)

    async def aflush(self) -> None:
        """Write and fsync the pending results, the fsync in a worker thread (`store.ResultWriter.aflush`), then
        rewrite the checkpoint if it is due. Raises `OSError` as `record` does when the write fails."""
        assert self._writer is not None
        await self._writer.aflush()

    def _account(self, result: CaseResult, key: int, line: str) -> None:
        add_line_spend(self.judge_spent, result)
        # A provisional result stays out of the checkpointed aggregate (it is folded
        # only into summaries, see `summary_aggregate`) until a later result replaces it.
        if result.status is Status.skipped_budget or (result.error is not None and result.error.kind == UNTERMINATED_LINE):
            self.provisional[key] = line  # (a torn last line's: every resume reads the line again, however often)
            return
        if transient_failure(result):
            n = self.failures[key] = self.failures.get(key, 0) + 1
            if n <= self.max_retries:
                self.provisional[key] = line
                if (place := _place(result)) is not None and result.error.kind == WORKER_ERROR:  # type: ignore[union-attr]
                    self.dead_at[place] = key
                return
        elif self.dead_at and (place := _place(result)) is not None:
            self._displace(place, key)
        self.provisional.pop(key, None)
        self.agg.fold(result)
        add_judge_counts(self.judge_final, result)
        self.judge_tally = add_judge_tally(self.judge_tally, result)

    def _displace(self, place: tuple[str, int], key: int) -> None:
        # A final result of `place` supersedes a standing dead worker's result filed there under another key
        # (`store.error_place`): its entry is left empty, so nothing stands under that key, and its key is not finished
        # (a record of that id is still scored).
        dead = self.dead_at.pop(place, None)
        if dead is not None and dead != key and self.provisional.get(dead):
            self.provisional[dead] = ""

    def note_dead_places(self) -> None:
        """Index the standing dead workers' results by the file and line their errors name (`_displace`), after
        `provisional` was loaded from a checkpoint."""
        self.dead_at = {place: k for k, line in self.provisional.items() if (place := store.error_place(line, dead=True)) is not None}

    def is_done(self, key: int) -> bool:
        """Is the (case, trial) of `key` finished (a budget-skipped one is not)?"""
        return self.done.contains_hash(key) and key not in self.provisional

    # What the standing results say (final and provisional), for summaries and the command's last lines
    # (`journal_standing`), bound as methods.
    summary_aggregate = standing.summary_aggregate
    pending_retries = standing.pending_retries
    spent_retries = standing.spent_retries
    judge_gate_counts = standing.judge_gate_counts
    standing_judge_tally = standing.standing_judge_tally
    fix_judge_block = standing.fix_judge_block

    def tick(self) -> None:
        """Flush if pending results have waited `flush_seconds`; rewrite a checkpoint that is due.

        A checkpoint is otherwise considered only after a flush, so a run that wrote a burst of
        results and then stalled (a slow judge, a hung metric) would keep a checkpoint that claims
        none of them, and a resume after a kill would re-read them all.
        """
        w = self._writer
        if w is None or self._closed:
            return
        if w.syncing:
            return  # (a group is being written: the aggregate holds results the files do not yet)
        if w.flush_due():
            w.flush()
        elif not w.pending and w.broken is None and self._recorded and w.lines > self._lines_at_checkpoint \
                and checkpoint_due(self, time.monotonic()):
            self._checkpoint()  # (nothing pending: the aggregate holds exactly the flushed lines)

    def announce(self) -> None:
        """Record this segment as running in checkpoint.json before it writes anything, when no earlier segment is recorded.

        A run killed (SIGKILL, a CI timeout) before its first result otherwise left no checkpoint, and
        `tracejudge report` read its empty results as a finished run of nothing (a FAIL). With the record,
        report sees a segment that never ended and the command (`segment["command"]`) that resumes it.
        A run with earlier segments has a last record saying how it ended and is left as it is here, so
        resuming a finished run with nothing left to do still changes no file.
        """
        if self._writer is None or self._closed or self._recorded or self.segments or self._writer.broken is not None:
            return
        self.segments.append(self._segment)
        self._announced = True
        self._write_checkpoint()

    def close(self, ended: str) -> None:
        """Flush, and record how this segment `ended` (`finished`, `interrupted`, or `error` with the segment's `error`) if
        it did anything. A write that fails here (the last group, the checkpoint: a full disk) does not raise: the segment is
        recorded `ended: error` and `broken` (the group's) or `close_error` (the checkpoint's) says why."""
        w = self._writer
        if w is None or self._closed:
            return
        self._closed = True
        self._segment["ended"] = ended
        self._closing = True  # the final flush's checkpoint is written whatever the time
        try:
            w.close()
        except OSError as exc:
            if w.broken is None:  # (results are on disk: the checkpoint its flush wrote could not be)
                return closing_checkpoint_failed(self, exc)
        if w.broken is not None:
            # A write failed (disk full): the aggregate holds results not on disk, so no checkpoint may claim it; the last
            # one stands and the resume re-reads the tail. Only its record of this segment changes, to say why it ended.
            record = record_failed_end(self.run_dir, self._segment, w.broken, w.lines, self._t0)
            if record is not None:
                self._segment.update(ended="error", **failed_write(w.broken))
            return
        try:
            self._checkpointed_at_close or self._checkpoint()
        except OSError as exc:
            closing_checkpoint_failed(self, exc)

    def detach(self) -> None:
        """Drop the hooks the run set and the writer's hook back to this journal, once the segment is closed.

        They make reference cycles (journal → writer → journal's checkpoint; journal → the cursor's closure →
        journal) that hold the whole segment — aggregate, report material, every result the reports kept — until
        a full garbage collection finds it: at 10,000 cases the one the interpreter makes at exit took ~0.06 CPU-s
        longer for it. Without them it is freed when the run returns.
        """
        if self._writer is not None:
            self._writer.on_flush = None
        self.on_record = self.on_records = self.on_checkpoint = self.on_progress = self.usage_source = None

    # When the checkpoint is rewritten and what it holds (`journal_checkpoint`), bound as methods: the writer's flush
    # hook and the journal's own calls reach them here, and so does a timer set on the class.
    _checkpoint = checkpoint_if_due
    _write_checkpoint = write_checkpoint

    # --------------------------------------------------------------- totals

    @property
    def broken(self) -> OSError | None:
        """The write error (disk full, ...) that stopped results.jsonl from growing, if any."""
        return None if self._writer is None else self._writer.broken

    @property
    def segment(self) -> dict[str, Any]:
        """This segment's record (live: refreshed at every flush)."""
        return self._segment

    def totals(self) -> dict[str, Any]:
        """Run totals over recorded segments: `elapsed_s`, `results`, `segments`, `usage`."""
        segs = self.segments
        return {
            "elapsed_s": round(sum(float(s.get("elapsed_s") or 0.0) for s in segs), 3),
            "results": sum(int(s.get("results") or 0) for s in segs),
            "segments": len(segs),
            "usage": sum_usage(segs),
        }
