"""The content-addressed judge cache (diskcache).

The key is the sha256 of the canonical JSON (sorted keys, no whitespace) of
exactly these components — everything that determines the answer and
nothing else:

    provider, base_url, model, messages, sampling (temperature, max_tokens),
    response_format (the verdict schema and its name), prompt_version,
    rubric, trial

Never ids, timestamps, run ids, retry/timeout/concurrency settings or
provenance markers: the judge prompt renders a trace without call ids and
with arguments in sorted-key JSON, so those cannot leak in through
`messages` either. API keys are not part of anything stored.

Only good answers are stored (`put` is called by the judge after a verdict
parsed and validated): errors, truncated output and unparseable verdicts
never become hits. Beside each entry the cache keeps, under a separate
index key per (case, metric, trial, request), the components of the latest
entry written for it, so a miss can be explained (`explain`) by the
components that differ.

diskcache stores in SQLite with its own locking, so several processes may
share one cache directory.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import diskcache

__all__ = ["COMPONENTS", "DiskJudgeCache", "JudgeCache", "cache_key", "canonical", "diff_components"]

_MANY = 500  # keys per query: under SQLite's oldest limit of 999 bound parameters

COMPONENTS = ("provider", "base_url", "model", "messages", "sampling", "response_format", "prompt_version", "rubric", "trial")


def canonical(value: Any) -> str:
    """Canonical JSON: sorted keys, no whitespace, UTF-8 kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cache_key(components: dict[str, Any]) -> str:
    """sha256 hex of the canonical JSON of `components` (exactly the keys of `COMPONENTS`).

    Raises `ValueError` when a component is missing or an extra one is given,
    so nothing else can slip into the key.
    """
    if set(components) != set(COMPONENTS):
        raise ValueError(f"cache key components must be exactly {COMPONENTS}, got {sorted(components)}")
    return hashlib.sha256(canonical(components).encode()).hexdigest()


def diff_components(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Names of the components that differ between two key component sets, in `COMPONENTS` order."""
    return [c for c in COMPONENTS if canonical(old.get(c)) != canonical(new.get(c))]


class JudgeCache(Protocol):
    """What the judge needs from a cache."""

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored answer for `key`, or `None`."""
        ...

    def put(self, key: str, value: dict[str, Any], components: dict[str, Any], slot: str) -> None:
        """Store a good answer; remember `components` as the latest for `slot` (case, metric, trial, request)."""
        ...

    def explain(self, components: dict[str, Any], slot: str) -> str:
        """Why `components` missed: the components that differ from the latest entry for `slot`."""
        ...


class DiskJudgeCache:
    """`JudgeCache` on a diskcache directory (safe across processes).

    The directory is opened on first use, so a directory that cannot be
    created or a corrupt database raises (`OSError`, `sqlite3.Error`) from
    `get`/`put`/`explain`, where the judge treats it as a cache fault, not
    from the constructor.
    """

    def __init__(self, directory: Path) -> None:
        self._directory = Path(directory)
        self._opened: diskcache.Cache | None = None

    @property
    def _cache(self) -> diskcache.Cache:
        if self._opened is None:
            self._directory.mkdir(parents=True, exist_ok=True)
            self._opened = diskcache.Cache(str(self._directory), size_limit=2**40, eviction_policy="none")
        return self._opened

    def get(self, key: str) -> dict[str, Any] | None:
        value = self._cache.get("v:" + key)
        return value if isinstance(value, dict) else None

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored answers of those `keys` that are in the cache, by key: what `get` gives each, in one SQLite query
        per `_MANY` keys instead of one per key (diskcache's own fast path of `get`, over many keys at once).

        A cache that counts hits or orders evictions by access (diskcache settings this class never sets) updates its
        statistics on each read: it is read key by key, through `get`.
        """
        cache = self._cache
        if cache.statistics or cache.eviction_policy != "none":
            return {k: v for k in keys if (v := self.get(k)) is not None}
        disk = cache._disk  # noqa: SLF001 - the key encoding and the value decoding diskcache's `get` uses
        wanted: dict[Any, str] = {}
        for key in dict.fromkeys(keys):
            db_key, raw = disk.put("v:" + key)
            if raw:  # a text key is always stored raw; anything else goes through `get`
                wanted[db_key] = key
        out: dict[str, dict[str, Any]] = {}
        todo = list(wanted)
        for start in range(0, len(todo), _MANY):
            part = todo[start:start + _MANY]
            rows = cache._sql(  # noqa: SLF001
                "SELECT key, mode, filename, value FROM Cache WHERE raw = 1 AND key IN (" + ",".join("?" * len(part)) + ")"
                " AND (expire_time IS NULL OR expire_time > ?)", (*part, time.time())).fetchall()
            for db_key, mode, filename, db_value in rows:
                try:
                    value = disk.fetch(mode, filename, db_value, False)
                except OSError:  # removed since the query (as diskcache's `get`: a miss)
                    continue
                if isinstance(value, dict):
                    out[wanted[db_key]] = value
        return out

    def put(self, key: str, value: dict[str, Any], components: dict[str, Any], slot: str) -> None:
        self._cache.set("v:" + key, value)
        self._cache.set("i:" + slot, components)

    def explain(self, components: dict[str, Any], slot: str) -> str:
        old = self._cache.get("i:" + slot)
        if not isinstance(old, dict):
            return "no earlier entry for this case and metric"
        changed = diff_components(old, components)
        return ("changed: " + ", ".join(changed)) if changed else "an entry with these components was written and then removed"

    def __len__(self) -> int:
        return sum(1 for k in self._cache.iterkeys() if str(k).startswith("v:"))

    def close(self) -> None:
        """Close the SQLite connection of this process (if it was opened)."""
        if self._opened is not None:
            self._opened.close()
