"""Structural comparison of tool-call arguments, shared by every metric.

Rules (DESIGN.md, "Metrics"):

- key order never matters; nested mappings compare key by key, lists item
  by item (same length, same order);
- numbers compare numerically (`1 == 1.0`), but a bool is never a number
  (`True != 1`) — a deliberate deviation from Python's `==`, which the
  peers inherit;
- strings compare exactly;
- `subset` mode: every expected key must be present and match, extra actual
  keys are allowed — at every depth of nested mappings; `exact` mode: the
  key sets must be equal at every depth;
- an expected value may be a matcher (a mapping with one `$` key), and
  matchers nest:
  `{"$any_of": [v1, v2, …]}` — matches if any option matches;
  `{"$regex": "pat"}` — a string that `re.search` finds `pat` in;
  `{"$approx": x, "tol": t}` — a number within `t` of `x` (default `1e-9`);
  `{"$absent": true}` — as a mapping value: the key must not be present;
- arguments kept raw because they were not valid JSON (`arguments_invalid`)
  compare unequal to any mapping.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Literal

__all__ = ["ABSENT", "ArgMode", "first_difference", "is_matcher", "match_arguments", "match_value", "render_call"]

ArgMode = Literal["subset", "exact"]

_MATCHER_KEYS = frozenset({"$any_of", "$regex", "$approx", "$absent"})


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


ABSENT = _Absent()
"""Stands for a key missing from the actual arguments."""


def is_matcher(value: Any) -> bool:
    """True if `value` is a matcher mapping (`{"$any_of": …}`, `{"$regex": …}`, …)."""
    return isinstance(value, dict) and bool(value) and next(iter(value)) in _MATCHER_KEYS


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def match_value(expected: Any, actual: Any, mode: ArgMode = "exact") -> bool:
    """Does `actual` satisfy `expected` (a plain value or a matcher)? `actual` may be `ABSENT`."""
    if isinstance(expected, dict):
        if expected and next(iter(expected)) in _MATCHER_KEYS:
            return _match_matcher(expected, actual, mode)
        if not isinstance(actual, dict):
            return False
        return match_arguments(expected, actual, mode)
    if actual is ABSENT:
        return False
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(expected, bool) and isinstance(actual, bool) and expected == actual
    if _is_number(expected):
        return _is_number(actual) and expected == actual
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(match_value(e, a, mode) for e, a in zip(expected, actual))
        )
    if expected is None:
        return actual is None
    return type(expected) is type(actual) and expected == actual


def _match_matcher(m: dict[str, Any], actual: Any, mode: ArgMode) -> bool:
    if "$any_of" in m:
        return any(match_value(option, actual, mode) for option in m["$any_of"])
    if "$absent" in m:
        return (actual is ABSENT) == bool(m["$absent"])
    if actual is ABSENT:
        return False
    if "$regex" in m:
        return isinstance(actual, str) and _regex(m["$regex"]).search(actual) is not None
    if "$approx" in m:
        tol = m.get("tol", 1e-9)
        return _is_number(actual) and abs(actual - m["$approx"]) <= tol
    return False


def match_arguments(expected: dict[str, Any] | None, actual: dict[str, Any] | str, mode: ArgMode = "subset") -> bool:
    """Do `actual` arguments satisfy `expected` in `mode`?

    `expected=None` matches any arguments (name-only expectation). Raw,
    undecodable `actual` arguments (a `str`) never match a mapping.
    """
    if expected is None:
        return True
    if not isinstance(actual, dict):
        return False
    for key, exp in expected.items():
        if not match_value(exp, actual.get(key, ABSENT), mode):
            return False
    if mode == "exact":
        for key in actual:
            if key not in expected:
                return False
    return True


def first_difference(expected: dict[str, Any] | None, actual: dict[str, Any] | str, mode: ArgMode = "subset") -> str | None:
    """A short human description of the first argument that does not match, or `None`."""
    if expected is None:
        return None
    if not isinstance(actual, dict):
        return f"arguments are not valid JSON: {str(actual)[:80]!r}"
    return _diff(expected, actual, mode, "")


def _diff(expected: dict[str, Any], actual: dict[str, Any], mode: ArgMode, prefix: str) -> str | None:
    for key, exp in expected.items():
        got = actual.get(key, ABSENT)
        path = f"{prefix}{key}"
        if match_value(exp, got, mode):
            continue
        if isinstance(exp, dict) and not is_matcher(exp) and isinstance(got, dict):
            inner = _diff(exp, got, mode, path + ".")
            if inner:
                return inner
        if got is ABSENT:
            return f"{path}: expected {_short(exp)}, missing"
        return f"{path}: expected {_short(exp)}, got {_short(got)}"
    if mode == "exact":
        for key in actual:
            if key not in expected:
                return f"{prefix}{key}: unexpected argument {_short(actual[key])}"
    return None


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_call(name: str, arguments: Any, limit: int = 120) -> str:
    """`name({"k":"v"})`, shortened to `limit` characters, for reasons."""
    if arguments is None:
        return f"{name}(…)"
    text = json.dumps(arguments, default=str, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"{name}({text})"
