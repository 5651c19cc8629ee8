"""`configs.jsonl`: the configs a run directory's results were computed with, append-only and never derived.

`manifest.json` says what a run directory runs with, and `checkpoint.json`
and `summary.json` repeat its hash, but all three are rewritten in place: a
garbled manifest plus a deleted checkpoint (of a run killed before its first
summary) would leave nothing that says which config wrote the results. So
every segment, before it writes its first result, makes sure the last line
of `configs.jsonl` is its own config:

    {"config_hash": "…", "config": {…}, "dataset": {…}, "dataset_fingerprint": "…", "tracejudge_version": "…"}

(a line is appended, and fsynced, only when the hash or dataset differs from
the last line's, so resumes with one config do not grow the file). A config
with masked values also records `config_secrets` (their digests and the run
directory's salt, `engine.config_secrets`): a resume that cannot read the
manifest reuses the salt from here. A resume
that cannot read the manifest compares its config with the last line and
refuses with the full key-by-key diff; one that finds no record at all
refuses too, since it cannot prove the config is the same (`--force`
accepts). A torn or damaged line is skipped: the previous one stands.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tracejudge.core.regular_file import open_regular

__all__ = ["CONFIGS", "append", "last"]

CONFIGS = "configs.jsonl"
_KEYS = ("config_hash", "config", "dataset", "dataset_fingerprint", "tracejudge_version")


def last(run_dir: Path) -> dict[str, Any] | None:
    """The last readable entry of `RUN_DIR/configs.jsonl` (a dict with the manifest's `_KEYS`), or None."""
    path = Path(run_dir) / CONFIGS
    try:
        with open_regular(path) as fh:  # (a FIFO in its place: unreadable, not waited on)
            data = fh.read()
    except OSError:
        return None
    for raw in reversed(data.splitlines()):
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("config_hash"), str) and isinstance(entry.get("config"), dict):
            return entry
    return None


def append(run_dir: Path, manifest: dict[str, Any]) -> None:
    """Append `manifest`'s config to `RUN_DIR/configs.jsonl` unless the last entry already is it (fsynced; raises `OSError`)."""
    entry = {k: manifest.get(k) for k in _KEYS}
    if "config_secrets" in manifest:
        entry["config_secrets"] = manifest["config_secrets"]
    prior = last(run_dir)
    if prior is not None and prior.get("config_hash") == entry["config_hash"] and prior.get("dataset_fingerprint") == entry["dataset_fingerprint"]:
        return
    line = (json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(Path(run_dir) / CONFIGS, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
