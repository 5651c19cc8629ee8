"""`checkpoint.json`'s typed model, and the reads of run-directory files a journal's open checks it against.

`RunJournal.open` (`tracejudge.engine.checkpoint`) reuses a checkpoint only when it validates as
`CheckpointFile` and agrees with `results.idx` (`read_index`: its keys and CRC-32) and
`results.jsonl` (`untouched`: size and mtime as recorded). Nothing here writes.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from tracejudge.core.regular_file import open_regular
from tracejudge.engine import store
from tracejudge.engine.keyset import KeySet

__all__ = ["FORMAT", "CheckpointFile", "line_at", "mtime_ns", "read_index", "recorded_config_hash", "size_of", "untouched"]

FORMAT = 2  # `CheckpointFile.format` of the checkpoints this version writes (and reuses)


class CheckpointFile(BaseModel):
    """`checkpoint.json`, validated before anything in it is used."""

    # Validators built on first use: only a resume reads a checkpoint, and building them cost every run's start-up.
    model_config = ConfigDict(extra="forbid", strict=True, defer_build=True)

    format: int
    tracejudge_version: str
    results_bytes: int = Field(ge=0)
    results_lines: int = Field(ge=0)
    index_crc32: int = Field(ge=0, lt=1 << 32)
    results_crc32: int | None = Field(default=None, ge=0, lt=1 << 32)
    # results.jsonl's mtime when the checkpoint was written: a file still of `results_bytes` bytes with this mtime
    # has not been touched since, and its CRC-32 need not be recomputed (a full read: ~1 s at a million results).
    results_mtime_ns: int | None = None
    metric_keys: list[str]
    segments: list[dict[str, Any]]
    aggregator: dict[str, Any]
    provisional: dict[str, str] = {}
    judge_spent: dict[str, int] = {}
    failures: dict[str, int] = {}
    # `run.max_resume_retries` when it was written (None: not recorded): which failures `provisional` left final.
    max_retries: int | None = None
    judge_final: dict[str, int] = {}
    # The judge's samples and panel counts of the results it covers (`judge_stats.JudgeTally.dump`); None: a checkpoint
    # written before it kept them, which a run whose results the judge judged does not reuse (`journal_open`).
    judge_tally: dict[str, Any] | None = None


def read_index(path: Path, n: int) -> tuple[KeySet, int]:
    """The first `n` keys of `results.idx` as a `KeySet` (built at once: `KeySet.from_index`), and their CRC-32.

    Raises `NotRegularFile` (an `OSError`) for a FIFO or a device in its place, which a plain open waited on."""
    with open_regular(path) as fh:
        data = fh.read(n * 8)
    return KeySet.from_index(data, size_hint=n), zlib.crc32(data)


def size_of(path: Path) -> int:
    """The size of `path` in bytes; -1 when it does not exist."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return -1


def mtime_ns(path: Path) -> int | None:
    """The mtime of `path` in nanoseconds; None when it does not exist."""
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return None


def untouched(results: Path, cp: CheckpointFile, size: int) -> bool:
    """True when results.jsonl is as the checkpoint left it: its size and mtime are those recorded (nothing appended or edited since)."""
    return cp.results_mtime_ns is not None and size == cp.results_bytes and mtime_ns(results) == cp.results_mtime_ns


def recorded_config_hash(run_dir: Path) -> str | None:
    """The config hash the run directory's last segment ran with: its checkpoint's, else summary.json's; None if neither says.

    Lets a resume refuse a config change when manifest.json is gone.
    """
    run_dir = Path(run_dir)
    try:
        cp = CheckpointFile.model_validate_json(store.read_text(run_dir / store.CHECKPOINT))
        hashes = [s.get("config_hash") for s in cp.segments if isinstance(s.get("config_hash"), str)]
        if hashes:
            return hashes[-1]
    except (OSError, ValueError):
        pass
    try:
        value = json.loads(store.read_text(run_dir / store.SUMMARY)).get("config_hash")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def line_at(path: Path, offset: int) -> int:
    """The 1-based line number of byte `offset` of `path` (for naming a damaged line; rare, so one read)."""
    with open(path, "rb") as fh:
        return fh.read(offset).count(b"\n") + 1
