"""Opening a run directory's journal: its state recovered from the files (`RunJournal.open` calls `recover`).

See `tracejudge.engine.checkpoint` for what is recovered and when the checkpoint is reused or rebuilt.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from tracejudge.core.log import get_logger
from tracejudge.core.records import CaseResult
from tracejudge.core.regular_file import open_regular
from tracejudge.core.version import __version__
from tracejudge.engine import store
from tracejudge.engine.checkpoint_file import FORMAT, CheckpointFile, line_at, read_index, size_of, untouched
from tracejudge.engine.checkpoint_sanity import implausible, typed_segments
from tracejudge.engine.journal_counts import _now
from tracejudge.engine.keyset import KeySet, result_key
from tracejudge.engine.result_shape import check_score_values, line_problem
from tracejudge.engine.segment_end import last_sign_of_life, read_failed_ends, settle_segments
from tracejudge.stages.aggregate.state import StateError, restore

if TYPE_CHECKING:
    from tracejudge.engine.checkpoint import RunJournal

__all__ = ["recover"]

log = get_logger("tracejudge.checkpoint")


def recover(
    journal: RunJournal,
    *,
    metric_keys: list[str],
    new_aggregator: Callable[[], Any],
    config_hash: str,
    dataset_fingerprint: str | None,
    forced: bool,
    flush_every: int,
    flush_seconds: float,
    max_retries: int,
) -> None:
    """Fill a new `journal` from its run directory's files and open its writer (`RunJournal.open`'s work).

    Raises `OSError` on I/O failure.
    """
    journal.metric_keys = list(metric_keys)
    journal.max_retries = max_retries
    journal._segment = {
        "segment": 0,
        "started_at": _now(),
        "elapsed_s": 0.0,
        "results": 0,
        "ended": "running",
        "config_hash": config_hash,
        **({"dataset_fingerprint": dataset_fingerprint} if dataset_fingerprint else {}),
        "forced": forced,
        "pid": os.getpid(),
        "usage": {},
    }
    d = journal.run_dir
    store.remove_stale_temps(d)
    results = d / store.RESULTS
    last_write = last_sign_of_life(d)  # (before this segment touches a file: `repair_tail` may cut results.jsonl)
    torn = store.repair_tail(results)
    size = results.stat().st_size if results.exists() else 0
    journal.fresh = size == 0
    cp = _read_checkpoint(journal)
    changed = torn > 0
    start = lines = crc = 0
    reused = False
    if cp is not None:
        _, bad = typed_segments(cp.segments)
        journal.segments = list(cp.segments) if bad is None else []  # mistyped records: the run's history is lost, not trusted
        reused = _reuse(journal, cp, size, new_aggregator)
        if reused:
            start, lines, crc = cp.results_bytes, cp.results_lines, cp.index_crc32
    if not reused:
        changed = changed or size > 0 or cp is not None
        journal.agg = new_aggregator()
        journal.done = KeySet()
    # Results after the checkpoint: written by a segment killed before its next checkpoint.
    tail_keys = bytearray()
    tail = damaged = 0
    offset = start
    for raw in store.iter_result_lines(results, start):
        offset += len(raw)
        try:
            r = CaseResult.model_validate_json(raw)
            check_score_values(r)  # (a score of NaN typed in: damaged as `report` counts it, not a crash of the fold)
        except ValueError as exc:
            # Damage (a disk error, an edit): the line is left in place, named by every
            # reader, and its (case, trial), not being finished, is redone by this run.
            damaged += 1
            log.warning("damaged result line skipped; its case is redone", file=str(results), line=line_at(results, offset - len(raw)),
                        error=line_problem(exc, raw))
            continue
        k = result_key(r.case_id, r.trial)
        if journal.done.contains_hash(k) and k not in journal.provisional:
            # A second line for a finished (case, trial) is an edit (a line overwritten with a copy of
            # another): never counted twice. `report` skips it by the same rule (`stages.reports.rebuild`).
            damaged += 1
            log.warning("repeated result line skipped; the first one counts", file=str(results), line=line_at(results, offset - len(raw)),
                        case_id=r.case_id, trial=r.trial)
            continue
        journal._account(r, k, raw.decode("utf-8").rstrip("\n"))
        journal.done.add_hash(k)
        tail_keys += k.to_bytes(8, "little")
        tail += 1
    idx_path = d / store.INDEX
    if size_of(idx_path) != lines * 8 or tail_keys:
        with open(idx_path, "ab") as idx:
            idx.truncate(lines * 8)
            idx.write(tail_keys)
    crc = zlib.crc32(tail_keys, crc)
    lines += tail
    journal.finished = len(journal.done)
    journal.retrying = journal.pending_retries()
    read_failed_ends(d, journal.segments, tidy=True)  # (a segment whose end not even the checkpoint could record)
    killed = settle_segments(journal.segments, tail, rebuilt=not reused, lines=lines - tail, last_write=last_write)
    changed = changed or tail > 0 or killed or damaged > 0
    # Rebuilt too when results.jsonl is gone (or empty) under a checkpoint that counted results: the dataset cursor, which
    # skips the records those results stood for, must not be trusted then, or their cases would never be scored again.
    rebuilt = not reused and (size > 0 or (cp is not None and cp.results_lines > 0))
    journal.recovery = {"torn_bytes": torn, "tail_results": tail, "rebuilt": rebuilt, "killed_segment": killed,
                     "damaged_lines": damaged}
    journal._segment["segment"] = 1 + max((int(s.get("segment", 0)) for s in journal.segments), default=0)
    # The CRC of results.jsonl as it stands: `_reuse` checked the head, only the tail is read.
    if not size:
        results_crc: int | None = 0
    elif reused and cp is not None and journal._results_crc is not None:
        results_crc = store.file_crc32(results, size - cp.results_bytes, offset=cp.results_bytes, crc=journal._results_crc)
    else:
        results_crc = store.file_crc32(results, size)
    from tracejudge.stages.reports.superseded import result_writer

    # Reports an earlier segment left (a PASS) are made to say the run is being written before this segment's first new
    # result is on disk: killed after it (SIGKILL, `os._exit`), nothing in the directory says PASS (`reports.superseded`).
    journal._writer = result_writer(
        d, journal._segment, size=size, lines=lines, index_crc=crc, results_crc=results_crc, flush_every=flush_every,
        flush_seconds=flush_seconds, on_flush=journal._checkpoint
    )
    if changed:
        journal._write_checkpoint()


def _read_checkpoint(journal: RunJournal) -> CheckpointFile | None:
    p = journal.run_dir / store.CHECKPOINT
    if not p.exists():
        return None
    try:
        with open_regular(p) as fh:  # (a FIFO in its place: unreadable, not waited on)
            return CheckpointFile.model_validate_json(fh.read())
    except (OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, ValidationError):
            err = exc.errors()[0]
            first = f"{'.'.join(map(str, err['loc'])) or '(root)'}: {err['msg']}"
        log.warning("checkpoint does not validate; rebuilding from results.jsonl", file=str(p), error=first[:200])
        return None


def _reuse(journal: RunJournal, cp: CheckpointFile, size: int, new_aggregator: Callable[[], Any]) -> bool:
    """Load index and aggregate from a validated checkpoint if it agrees with the files."""
    why = None
    nbytes, nlines, crc = cp.results_bytes, cp.results_lines, cp.index_crc32
    idx_path = journal.run_dir / store.INDEX
    try:
        if cp.format != FORMAT or cp.tracejudge_version != __version__:
            why = "written by another tracejudge version"
        elif cp.metric_keys != journal.metric_keys:
            why = "the metrics changed"
        elif cp.judge_tally is None and cp.judge_final.get("judged_results"):
            # Its judge samples and panel counts were not kept: counted again from the lines, as they stand.
            log.info("checkpoint not reused: it holds no judge samples or panel counts; rebuilding from results.jsonl",
                     run_dir=str(journal.run_dir))
            return False
        elif _frees_spent(cp, journal.max_retries):
            # Asked for (a raised run.max_resume_retries), so not warned about.
            log.info("checkpoint not reused: run.max_resume_retries now retries failures it holds as final; rebuilding from results.jsonl",
                     run_dir=str(journal.run_dir))
            return False
        elif nbytes > size:
            why = "results.jsonl is shorter than the checkpoint says"
        elif not idx_path.exists() or idx_path.stat().st_size < nlines * 8:
            why = "results.idx is shorter than the checkpoint says"
        elif cp.results_crc32 is not None and not untouched(journal.run_dir / store.RESULTS, cp, size) and \
                store.file_crc32(journal.run_dir / store.RESULTS, nbytes) != cp.results_crc32:
            why = "results.jsonl changed before the checkpoint's end (a damaged or edited line)"
        else:
            agg = restore(cp.aggregator, new_aggregator())
            tally = _judge_tally(cp.judge_tally)  # (raises ValueError before the journal takes anything)
            done, got_crc = read_index(idx_path, nlines)
            if got_crc != crc:
                why = "results.idx does not match its checksum"
            elif (absurd := implausible(cp, done)) is not None:
                why = f"its values cannot be true of results.jsonl ({absurd})"
            else:
                journal.done = done
                journal.agg = agg
                journal._results_crc = cp.results_crc32
                journal.provisional = {int(k): v for k, v in cp.provisional.items()}
                journal.note_dead_places()
                journal.failures = {int(k): v for k, v in cp.failures.items()}
                journal.judge_spent.update(cp.judge_spent)
                journal.judge_final.update(cp.judge_final)
                journal.judge_tally = tally
    except StateError as exc:
        why = f"aggregate state unusable ({exc})"
    except (ValueError, OSError) as exc:
        why = f"unreadable ({type(exc).__name__}: {exc})"
    if why:
        log.warning("checkpoint not reused; rebuilding from results.jsonl", run_dir=str(journal.run_dir), reason=why)
        return False
    return True


def _judge_tally(state: dict[str, Any] | None) -> Any:
    """The judge's samples and panel counts a checkpoint holds (`judge_stats.JudgeTally`); None when it holds none."""
    if not state:
        return None
    from tracejudge.stages.judge.judge_stats import JudgeTally

    return JudgeTally.load(state)


def _frees_spent(cp: CheckpointFile, max_retries: int) -> bool:
    """Does `max_retries` (`run.max_resume_retries` now) make a failure that checkpoint `cp` holds as final provisional again?

    A failure past the limit the checkpoint was written with is folded into its aggregate, which nothing unfolds: only a
    rebuild from results.jsonl retries it. Without a recorded limit, any failure within the new one and not provisional
    may be such a result (or one a later result superseded): rebuilt as well, once.
    """
    return any(n <= max_retries and k not in cp.provisional and (cp.max_retries is None or n > cp.max_retries) for k, n in cp.failures.items())
