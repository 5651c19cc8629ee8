"""The judge cache behind a guard: its faults are counted warnings, never failed cases."""

from __future__ import annotations

from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.llm.cache import JudgeCache
from tracejudge.stages.judge.calls.stats import JudgeStats

__all__ = ["GuardedCache"]

log = get_logger("tracejudge.judge")


class GuardedCache:
    """A `JudgeCache` whose failures (disk full, a corrupt database) are warnings, not failed cases.

    A read that fails is a miss; a write that fails loses only the saving
    on a later run. Each failure counts in `stats.cache_errors`; the first
    is logged.
    """

    def __init__(self, cache: JudgeCache, stats: JudgeStats) -> None:
        self._cache = cache
        self._stats = stats

    @property
    def raw(self) -> JudgeCache:
        """The cache itself, unguarded (its faults raise): for reads whose faults the caller counts (`_failed`)."""
        return self._cache

    def _failed(self, what: str, exc: Exception) -> None:
        self._stats.cache_errors += 1
        if self._stats.cache_errors == 1:
            log.warning("judge cache unusable; judging goes on without it", operation=what, error=f"{type(exc).__name__}: {str(exc)[:200]}")

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached entry under `key`, or None (also when the read fails)."""
        try:
            return self._cache.get(key)
        except Exception as exc:  # any storage fault: sqlite3, OSError, diskcache's own
            self._failed("read", exc)
            return None

    def put(self, key: str, value: dict[str, Any], components: dict[str, Any], slot: str) -> None:
        """Store `value` under `key` (see `JudgeCache.put`); a failed write is counted, not raised."""
        try:
            self._cache.put(key, value, components, slot)
        except Exception as exc:
            self._failed("write", exc)

    def explain(self, components: dict[str, Any], slot: str) -> str:
        """Why `components` missed the cache (`JudgeCache.explain`); a failed read says so."""
        try:
            return self._cache.explain(components, slot)
        except Exception as exc:
            self._failed("read", exc)
            return "the cache could not be read"
