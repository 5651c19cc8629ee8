"""When a run journal rewrites `checkpoint.json`, and what it writes there.

`RunJournal` (`tracejudge.engine.checkpoint`) keeps the run's state as results come; these functions write
it down. `checkpoint_if_due` is the writer's hook after every fsynced group: it records the segment once it
has done something and rewrites the checkpoint when one is due (`checkpoint_due`: by result count and time
together); `write_checkpoint` writes the file at once. They stand apart from the journal's bookkeeping
because they are a schedule and a file format, not a rule about results. The journal binds
`checkpoint_if_due` and `write_checkpoint` as its methods `_checkpoint` and `_write_checkpoint`, and they
call each other through those, so a timer set on the class (the benchmarks') sees every write.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

from tracejudge.core.version import __version__
from tracejudge.engine import store
from tracejudge.engine.checkpoint_file import FORMAT, mtime_ns
from tracejudge.engine.journal_counts import _has_usage
from tracejudge.stages.aggregate.state import dump_state

if TYPE_CHECKING:
    from tracejudge.engine.checkpoint import RunJournal

__all__ = ["CHECKPOINT_EVERY_RESULTS", "CHECKPOINT_EVERY_S", "CHECKPOINT_MAX_S", "checkpoint_due", "checkpoint_if_due", "write_checkpoint"]

# A checkpoint is rewritten after a flush once both CHECKPOINT_EVERY_RESULTS results and CHECKPOINT_EVERY_S
# seconds have passed since the last one, or CHECKPOINT_MAX_S seconds whatever the count. By count and time
# together, so its cost per result is bounded on a slow or loaded machine too (a timer alone rewrote the
# aggregate ever more often per result the slower the run went). Results after the last checkpoint are
# never lost: they are in results.jsonl, and a resume re-reads them (at most about this many).
CHECKPOINT_EVERY_RESULTS = 1000
CHECKPOINT_EVERY_S = 2.0
CHECKPOINT_MAX_S = 30.0


def checkpoint_if_due(journal: RunJournal) -> None:
    """Rewrite `journal`'s checkpoint if it is due (`RunJournal._checkpoint`: the writer calls it after every fsynced group).

    Serializing the aggregate costs milliseconds, so between groups it is rewritten only when enough results and
    time have passed (see CHECKPOINT_EVERY_RESULTS); at close, always. A segment that has written nothing and used
    no paid service is not recorded. Raises `OSError` when the file cannot be written.
    """
    now = time.monotonic()
    if journal._closing:
        journal._checkpointed_at_close = True
    elif journal._recorded and not checkpoint_due(journal, now):
        if journal.on_progress is not None:
            journal.on_progress()  # (the resume cursor walks what was just written: its save at the end has less left)
        return
    journal._last_checkpoint = now
    seg = journal._segment
    seg["elapsed_s"] = round(time.monotonic() - journal._t0, 3)
    if journal.usage_source is not None:
        seg["usage"] = journal.usage_source()
    if not journal._recorded:
        if seg["results"] == 0 and not _has_usage(seg["usage"]) and not _completes(journal, seg):
            if journal._closing and journal._announced:
                _withdraw(journal, seg)
            return
        if not journal._announced:
            journal.segments.append(seg)
        journal._recorded = True
    journal._write_checkpoint()


def _completes(journal: RunJournal, seg: dict[str, Any]) -> bool:
    """True when `seg`, closing as `finished` with nothing new, is what ends a run whose last recorded segment did not
    finish (killed after writing its last result, stopped, failed), or ran with another config or dataset (a `--force`
    resume, or one with an earlier config of the history: manifest.json now names this segment's): recorded, so the run
    reads as finished. Not recorded, `tracejudge report` kept calling the run interrupted (`run_state`: the manifest names
    a config no recorded segment ended with) and giving the resume command that changed nothing."""
    if not (journal._closing and seg["ended"] == "finished"):
        return False
    earlier = [s for s in journal.segments if s is not seg]
    if not earlier:
        return False
    last = earlier[-1]
    return last.get("ended") != "finished" or any(
        isinstance(last.get(key), str) and isinstance(seg.get(key), str) and last[key] != seg[key]
        for key in ("config_hash", "dataset_fingerprint"))


def _withdraw(journal: RunJournal, seg: dict[str, Any]) -> None:
    # An announced segment that did nothing: a stopped one stays, saying so and how to resume; one that finished is
    # taken back out, so the run's history reads as that of any segment that did nothing (none recorded).
    if seg["ended"] == "finished":
        journal.segments = [s for s in journal.segments if s is not seg]
    journal._write_checkpoint()


def checkpoint_due(journal: RunJournal, now: float) -> bool:
    """Have enough results and time (`now`: `time.monotonic()`), or time alone, passed since `journal`'s last checkpoint?"""
    waited = now - journal._last_checkpoint
    assert journal._writer is not None
    grown = journal._writer.lines - journal._lines_at_checkpoint
    return waited >= CHECKPOINT_MAX_S or (waited >= CHECKPOINT_EVERY_S and grown >= CHECKPOINT_EVERY_RESULTS)


def write_checkpoint(journal: RunJournal) -> None:
    """Write `journal`'s checkpoint now (`RunJournal._write_checkpoint`): its aggregate, counts and segments, and the
    size, lines and CRCs of the results the writer has flushed. Raises `OSError` when the file cannot be written."""
    w = journal._writer
    assert w is not None
    journal._lines_at_checkpoint = w.lines
    body = {
        "format": FORMAT,
        "tracejudge_version": __version__,
        "results_bytes": w.size,
        "results_lines": w.lines,
        "index_crc32": w.index_crc,
        "results_crc32": w.results_crc,
        "results_mtime_ns": mtime_ns(journal.run_dir / store.RESULTS),
        "metric_keys": journal.metric_keys,
        "segments": journal.segments,
        "aggregator": dump_state(journal.agg),
        "provisional": {str(k): v for k, v in journal.provisional.items()},
        "judge_spent": journal.judge_spent,
        "failures": {str(k): v for k, v in journal.failures.items()},
        "max_retries": journal.max_retries,
        "judge_final": journal.judge_final,
        "judge_tally": journal.judge_tally.dump() if journal.judge_tally is not None else {},
    }
    # No fsync: the checkpoint only ever claims results already fsynced, and one lost
    # or garbled by a power cut fails validation and is rebuilt from results.jsonl.
    # Compact: with `indent` json runs its pure-Python encoder (the aggregate's reservoirs are
    # thousands of numbers); without, its C encoder, ~10x faster for the same values.
    store.atomic_write_text(journal.run_dir / store.CHECKPOINT, json.dumps(body, separators=(",", ":")) + "\n", durable=False)
    if journal.on_checkpoint is not None:
        journal.on_checkpoint()
