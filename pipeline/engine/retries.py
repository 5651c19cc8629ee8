"""How many results of a run directory the same `tracejudge run` command would redo, read from its files alone.

A run that ends with transient failures standing (a judge, target or provider error, a dead worker) prints the
command that retries them (`RunJournal.pending_retries`). `tracejudge report` over shards reads each shard's
results instead, nothing of its journal open: this gives it the same count, so the merged report can name each
shard's command.
"""

from __future__ import annotations

from pathlib import Path

from tracejudge.core.config_sections import RunSection
from tracejudge.core.records import RETRYABLE_STATUSES, WORKER_ERROR
from tracejudge.engine import store
from tracejudge.engine.journal_counts import judge_refused, refusal_line

__all__ = ["pending_retries", "standing_retries"]

# What the journal counts as a failure to retry (`records.RETRYABLE_STATUSES` and a dead worker's case): a budget skip
# and a torn last line are provisional too, but not failures.
_RETRY_MARKS = (*(f'"status":"{s}"'.encode() for s in sorted(RETRYABLE_STATUSES)), f'"kind":"{WORKER_ERROR}"'.encode())


def pending_retries(run_dir: Path) -> int:
    """How many (case, trial) of `run_dir` stand as a transient failure that the same command redoes: failed at most
    `run.max_resume_retries` times (the manifest's config; else the default), as the run that wrote them counts.

    One pass over results.jsonl; only the lines after the first failure are parsed. 0 when it cannot be read.
    """
    return standing_retries(run_dir)[0]


def standing_retries(run_dir: Path) -> tuple[int, int]:
    """`(pending_retries(run_dir), how many of them the judge model refused to judge)` (`journal_counts.judge_refused`:
    retried like a transient failure, but a refusal is the judge's answer)."""
    manifest = store.read_manifest(run_dir, strict=False) or {}
    limit = ((manifest.get("config") or {}).get("run") or {}).get("max_resume_retries")
    if not isinstance(limit, int):
        limit = RunSection.model_fields["max_resume_retries"].default
    failures: dict[tuple[str, int], int] = {}
    standing: set[tuple[str, int]] = set()
    refused: set[tuple[str, int]] = set()  # of `standing`, those whose last line is a refusal
    dead: dict[tuple[str, int], tuple[str, int]] = {}  # (file, line) → key of a dead worker's result there (`store.error_place`)
    try:
        for line in store.iter_result_lines(run_dir / store.RESULTS):
            failed = any(mark in line for mark in _RETRY_MARKS)
            if not (failed or standing):
                continue
            key = store.line_key(line)
            if key is None:
                continue
            if failed:
                failures[key] = failures.get(key, 0) + 1
                standing.add(key)
                if refusal_line(line) and judge_refused([line.decode(errors="replace")]):
                    refused.add(key)
                else:
                    refused.discard(key)
                if (place := store.error_place(line, dead=True)) is not None:
                    dead[place] = key
            else:
                standing.discard(key)
                if dead and not any(mark in line for mark in store.PROVISIONAL_MARKS) and (place := store.error_place(line)) in dead:
                    standing.discard(dead.pop(place))  # type: ignore[arg-type]
    except OSError:
        return 0, 0
    pending = {key for key in standing if failures[key] <= limit}
    return len(pending), len(pending & refused)
