"""The leaf comparisons `value_match`'s matchers use, none of which reads a matcher.

- `standardize`: BFCL's string rule (`$loose`);
- `compile_pattern` and `REGEX_TIMEOUT_S`: the `regex` library's patterns (`$regex`, the `Regex` metric);
- `same_kind`: equal with every value of the same JSON kind (`$strict`);
- `same_json`: equal under the project's rules (numbers by value, a bool never a number);
- `matcher_key`: which matcher a mapping is, if any.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import regex

__all__ = ["MATCHER_KEYS", "REGEX_TIMEOUT_S", "compile_pattern", "is_number", "matcher_key", "same_json", "same_kind", "standardize"]


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """`pattern` compiled by the `regex` library (cached); raises `regex.error` when invalid."""
    import regex  # here: most runs match no pattern, and its import costs tens of milliseconds

    return regex.compile(pattern)


REGEX_TIMEOUT_S = 1.0
"""A `$regex` matcher or `Regex` metric that backtracks longer than this on one value gives the metric `value: null`."""


_DROPPED = str.maketrans("", "", " ,./-_*^")  # what BFCL's `standardize_string` drops (its `regex_string`)


def standardize(text: str) -> str:
    """BFCL's `standardize_string`: `text` without spaces and `,./-_*^`, lower-cased, each `'` made `"`.

    `standardize("April 1, 2024") == standardize("april 1 2024") == "april12024"`; `"O'Neil"` → `'o"neil'`; `""` → `""`.
    Source: ShishirPatil/gorilla, `bfcl_eval/eval_checker/ast_eval/ast_checker.py`.
    """
    return text.translate(_DROPPED).lower().replace("'", '"')


def is_number(v: Any) -> bool:
    """An int or a float, not a bool."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def same_kind(a: Any, b: Any) -> bool:
    """`a == b` with every value of the same JSON kind at every depth: an int is no float, nor a bool an int, in a list
    or a mapping too (`$strict`: `[1, 2]` is not met by `[1.0, 2]`)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return a.keys() == b.keys() and all(same_kind(v, b[k]) for k, v in a.items())
    if type(a) is list:
        return len(a) == len(b) and all(same_kind(x, y) for x, y in zip(a, b))
    return same_json(a, b)


def same_json(a: Any, b: Any) -> bool:
    """`a == b` as JSON values under the project's rules (numbers by value, a bool never a number, no matcher read)."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same_json(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if is_number(a):
        return is_number(b) and a == b
    return type(a) is type(b) and a == b


MATCHER_KEYS = frozenset({"$any_of", "$regex", "$approx", "$absent", "$loose", "$strict", "$python_eq"})
# Keys a matcher may carry besides its `$` key.
_MATCHER_EXTRA = {"$approx": frozenset({"tol"})}


def matcher_key(value: dict[str, Any]) -> str | None:
    """The `$` key of a matcher mapping, or `None` for a plain mapping.

    A mapping is a matcher when exactly one of its keys is a matcher key and
    every other key is one that matcher allows (`tol` for `$approx`), in any
    order. Anything else — `{"$regex": "x", "flags": 1}`, an unknown
    `$where` — is a plain mapping compared key by key.
    """
    if not value or len(value) > 2 or MATCHER_KEYS.isdisjoint(value):
        return None
    found = [k for k in value if k in MATCHER_KEYS]
    if len(found) != 1:
        return None
    key = found[0]
    allowed = _MATCHER_EXTRA.get(key, frozenset())
    if all(k == key or k in allowed for k in value):
        return key
    return None
