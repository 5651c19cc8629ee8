"""The `history` a run directory's manifest keeps: every config (and dataset) the directory has run with, each entry
the manifest's hashed keys then (`config_hash`, the config with its credentials masked, the dataset's files and
fingerprint, the version) and the changes `--force` accepted for it; and which segments ran with which entry.

A resume with a config already in the history changes nothing to refuse (`known_config`); one that `--force`
accepted is added (`with_history`), so a run's summary can say which segments ran with which config
(`configs_by_segment`). A manifest written before `history` existed has its one config as the whole history.
"""

from __future__ import annotations

from typing import Any

from tracejudge.engine.manifest import diff
from tracejudge.core.extra_body import recorded_config
from tracejudge.llm.redact import redact_config

__all__ = ["configs_by_segment", "known_config", "with_history"]

_HISTORY_KEYS = ("config_hash", "config_secrets", "config", "dataset", "dataset_fingerprint", "tracejudge_version")


def _history(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    # A manifest written before `history` existed: its one config is the whole history.
    got = manifest.get("history")
    if isinstance(got, list) and all(isinstance(h, dict) for h in got) and got:
        return list(got)
    return [{k: manifest[k] for k in _HISTORY_KEYS if k in manifest}]


def known_config(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    """True when `new` (config and dataset) is one the run directory of manifest `old` already ran with: no change, nothing to refuse."""
    if old is None:
        return False
    return any(not diff(entry, new) for entry in _history(old) if isinstance(entry.get("config"), dict) and "dataset" in entry)


def with_history(old: dict[str, Any] | None, new: dict[str, Any], forced: list[str]) -> dict[str, Any]:
    """`new` with the `history` of configs the directory has run with (see the module docstring).

    `old` is the recorded manifest (None: a directory with no results yet);
    `forced` the changes `--force` accepted (recorded on the new entry). A
    config already in the history is not added again.
    """
    # (Each past config as a manifest keeps it now, credentials masked, a long extra_body value by its digest: an entry
    # written before they were is so.)
    history = [] if old is None else [{**h, "config": recorded_config(redact_config(h["config"]))} if isinstance(h.get("config"), dict) else h
                                      for h in _history(old)]
    if not any(h.get("config_hash") == new["config_hash"] and h.get("dataset_fingerprint") == new["dataset_fingerprint"] for h in history):
        entry = {k: new[k] for k in _HISTORY_KEYS if k in new}
        if forced:
            entry["forced_changes"] = list(forced)
        history.append(entry)
    return {**new, "history": history}


def configs_by_segment(manifest: dict[str, Any], segments: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """Which segments ran with which config, when more than one did: `[{config_hash, segments: [n, …], forced_changes}]`.

    None when every segment used one config. Segments are matched by the
    `config_hash` the checkpoint records for each, and by its `dataset_fingerprint` where it
    records one: a `--force`d dataset change keeps the config hash, so two history entries
    share it. Each segment is listed once: a segment that recorded no fingerprint (written
    by an older version) goes to the first entry with its config hash.
    """
    history = _history(manifest)
    used: list[list[int]] = [[] for _ in history]
    for seg in segments:
        same = [i for i, entry in enumerate(history) if seg.get("config_hash") == entry.get("config_hash")]
        exact = [i for i in same if seg.get("dataset_fingerprint") == history[i].get("dataset_fingerprint")]
        if same:
            used[(exact or same)[0]].append(int(seg.get("segment", 0)))
    out = [{"config_hash": entry.get("config_hash"), "segments": got, "forced_changes": entry.get("forced_changes", [])}
           for entry, got in zip(history, used, strict=True) if got]
    return out if len(out) > 1 else None
