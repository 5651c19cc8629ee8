"""Where a run's `view.idx` lives and the fingerprints of `results.jsonl` it keeps, to tell a file appended to (read on
from where the index stopped) from one rewritten or edited in place (read again whole; `tracejudge.viewer.index`)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

__all__ = ["HEAD", "cache_path", "head", "tail"]

HEAD = 4096  # bytes of results.jsonl fingerprinted at its start, and before where the index stopped


def cache_path(run_dir: Path) -> Path:
    """Where the index of a run directory this process cannot write lives: `~/.cache/tracejudge/view/<sha1>.idx`."""
    digest = hashlib.sha1(str(run_dir.resolve()).encode()).hexdigest()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tracejudge" / "view"
    base.mkdir(parents=True, exist_ok=True)
    return base / f"{digest}.idx"


def head(path: Path) -> str:
    """A fingerprint of the first `HEAD` bytes of `path`: a file rewritten from its start differs in them."""
    with open(path, "rb") as fh:
        return hashlib.sha1(fh.read(HEAD)).hexdigest()


def tail(path: Path, end: int) -> str:
    """A fingerprint of the `HEAD` bytes of `path` before byte `end` (the end of what was indexed): a line before it
    edited to another length moves them, which an append never does."""
    with open(path, "rb") as fh:
        fh.seek(max(0, end - HEAD))
        return hashlib.sha1(fh.read(min(end, HEAD))).hexdigest()
