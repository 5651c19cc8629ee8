"""`tracejudge run --explain-cache`: why the judge's requests missed its cache, said on stderr at the end of the run.

Every miss is explained in its score (`judge.cache_miss`) and counted by reason in `summary.json`
(`judge.cache_misses_explained`); a user who asked for the explanation reads it here without opening either: the
reasons grouped, the most frequent first, a few lines at most.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_REASONS", "explain_lines"]

MAX_REASONS = 4  # lines of reasons; the rest are counted in one more line
_MAX_CHARS = 200  # of one reason (a long list of changed components, two weights described)


def explain_lines(summary: dict[str, Any], cache_enabled: bool, new_results: int) -> list[str]:
    """The lines `run --explain-cache` prints on stderr for a run whose summary is `summary`: how many requests missed the
    judge cache for each reason, or why there is nothing to explain (the cache off, no judge, nothing judged now)."""
    judge = summary.get("judge") or {}
    if not cache_enabled:
        return ["--explain-cache: the judge cache is off (cache.enabled: false): no request was looked up in it"]
    if not judge.get("requests") and not judge.get("cache_hits") and not judge.get("cache_misses_explained"):
        return ["--explain-cache: no judge request was made: nothing was looked up in the judge cache"]
    if not new_results:
        return ["--explain-cache: no case was judged by this command (every one was already finished): no cache miss to explain"]
    explained = {str(k): int(v) for k, v in (judge.get("cache_misses_explained") or {}).items() if isinstance(v, int) and v > 0}
    misses = sum(explained.values())
    if not misses:
        return ["judge cache: no request missed it (--explain-cache: nothing to explain)"]
    ranked = sorted(explained.items(), key=lambda kv: (-kv[1], kv[0]))
    lines = [f"judge cache: {misses} {_plural(misses, 'request')} missed it (--explain-cache; each score's judge.cache_miss says why):"]
    shown = ranked if len(ranked) <= MAX_REASONS else ranked[:MAX_REASONS - 1]
    lines += [f"  {n} because {_short(why)}" for why, n in shown]
    rest = ranked[len(shown):]
    if rest:
        n = sum(v for _, v in rest)
        lines.append(f"  {n} for {len(rest)} other reasons (summary.json judge.cache_misses_explained lists them all)")
    return lines


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + "s"


def _short(text: str) -> str:
    text = " ".join(text.split())  # one line each, whatever a reason holds
    return text if len(text) <= _MAX_CHARS else text[:_MAX_CHARS - 1] + "…"
