"""Structural comparison of tool-call arguments, shared by every metric.

Rules:

- key order never matters; nested mappings compare key by key, lists item
  by item (same length, same order);
- numbers compare numerically (`1 == 1.0`), but a bool is never a number
  (`True != 1`) — a deliberate deviation from Python's `==`, which the
  peers inherit;
- strings compare exactly;
- `subset` mode: every expected key must be present and match, extra actual
  keys are allowed — at every depth of nested mappings; `exact` mode: the
  key sets must be equal at every depth;
- an expected value may be a matcher (a mapping whose keys are one of the
  matcher keys below plus, for `$approx`, `tol`; key order is irrelevant),
  and matchers nest — an `$any_of` option may itself be a matcher, a
  matcher may sit at any depth of a mapping or list:
  `{"$any_of": [v1, v2, …]}` — matches if any option matches;
  `{"$regex": "pat"}` — a string that `re.search` finds `pat` in;
  `{"$approx": x, "tol": t}` — a number within `t` of `x` (default `1e-9`);
  `{"$absent": true}` — as a mapping value: the key must not be present;
  `{"$loose": "text"}` — a string equal to `text` once both lose spaces and
  `,./-_*^`, are lower-cased and read `'` as `"` (BFCL's `standardize_string`,
  which the `bfcl` format's string answers use: `"New York, NY"` accepts
  `"new york ny"`);
  `{"$strict": 5}` — the value, a number of the same kind: `5` but not `5.0`, and `{"$strict": 5.0}` not `5`, at any
  depth of a list or mapping too (`[1, 2]` not `[1.0, 2]`) (BFCL's type check, which refuses a float for an `integer`
  parameter);
  `{"$python_eq": v}` — a value Python's `==` finds equal to `v`, whatever the mode: `True == 1 == 1.0`, a list
  item by item, a mapping with the same keys at every depth, nothing inside read as a matcher (τ²-bench's action
  check, `Action.compare_with_tool_call`, compares arguments so: the `tau2-bench` format's expectations use it;
  reasons show it as `v`, `shown_expected`);
  a matcher is also met by a value equal to the matcher mapping itself, so arguments copied from a
  real call whose values are `$`-keyed mappings (a MongoDB-style `{"$regex": "^A"}` filter) match
  that call, as pydantic-evals' plain equality finds;
- actual arguments given as a JSON string are decoded first (OpenAI's
  `function.arguments`); a string that is not a JSON object compares
  unequal to any mapping (`arguments_invalid` on the `ToolCall`).
"""

from __future__ import annotations

from typing import Any, Literal

from tracejudge.core.records import decode_arguments
from tracejudge.llm.redact import MASK, masked_under, redact_quoted
from tracejudge.stages.score.call_text import dumps as _dumps, raw_value, render_call
from tracejudge.stages.score.expected_shown import python_values, shown_expected
from tracejudge.stages.score.value_rules import MATCHER_KEYS as _MATCHER_KEYS, REGEX_TIMEOUT_S, compile_pattern, is_number as _is_number, \
    matcher_key as _matcher_key, same_json as _same_json, same_kind as _same_kind, standardize

__all__ = [
    "ABSENT",
    "ArgMode",
    "REGEX_TIMEOUT_S",
    "compile_pattern",
    "first_difference",
    "is_matcher",
    "match_arguments",
    "match_top_level",
    "match_value",
    "python_values",
    "render_call",
    "short_json",
    "short_pair",
    "shown_expected",
]

ArgMode = Literal["subset", "exact"]

class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


ABSENT = _Absent()
"""Stands for a key missing from the actual arguments."""


def is_matcher(value: Any) -> bool:
    """True if `value` is a matcher mapping (`{"$any_of": …}`, `{"$regex": …}`, …)."""
    return isinstance(value, dict) and _matcher_key(value) is not None


def _decoded(actual: Any) -> Any:
    if isinstance(actual, str):
        decoded, ok = decode_arguments(actual)
        return decoded if ok else actual
    return actual


def match_value(expected: Any, actual: Any, mode: ArgMode = "exact") -> bool:
    """Does `actual` satisfy `expected` (a plain value or a matcher)? `actual` may be `ABSENT`."""
    # The common plain types first, by exact type: each gives what the general rules below give it.
    te = type(expected)
    if te is str:
        return type(actual) is str and expected == actual
    if te is int or te is float:
        ta = type(actual)
        if ta is int or ta is float:
            return expected == actual
    elif te is list and type(actual) is list:
        if len(expected) != len(actual):
            return False
        for e, a in zip(expected, actual):
            if type(e) is str:  # (the commonest item: compared here, as the first branch above would)
                if type(a) is not str or e != a:
                    return False
            elif type(e) is dict and type(a) is dict and (len(e) > 2 or _MATCHER_KEYS.isdisjoint(e)):
                if not _match_plain(e, a, mode):  # (a list of plain mappings: what the mapping branch below calls)
                    return False
            elif not match_value(e, a, mode):
                return False
        return True
    elif te is dict and type(actual) is dict and (len(expected) > 2 or _MATCHER_KEYS.isdisjoint(expected)):
        return _match_plain(expected, actual, mode)  # not a matcher (`_matcher_key` is None): what `match_arguments` does
    if isinstance(expected, dict):
        key = _matcher_key(expected)
        if key is not None:
            return _match_matcher(key, expected, actual, mode)
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


def _match_matcher(key: str, m: dict[str, Any], actual: Any, mode: ArgMode) -> bool:
    if key == "$python_eq":  # (first: `==` alone decides, and the matcher mapping itself is no equal of `v`)
        return actual is not ABSENT and m[key] == actual
    if type(actual) is dict and _same_json(m, actual):
        return True  # the very mapping: a call whose argument is `{"$regex": "^A"}` (a query language's) meets a copy of it
    if key == "$any_of":
        options = m[key]
        return isinstance(options, list) and any(match_value(option, actual, mode) for option in options)
    if key == "$absent":
        # `{"$absent": false}` is the converse: the key must be present, any value.
        return (actual is ABSENT) == bool(m[key])
    if actual is ABSENT:
        return False
    if key == "$loose":
        return isinstance(actual, str) and isinstance(m[key], str) and standardize(actual) == standardize(m[key])
    if key == "$strict":
        return _same_kind(m[key], actual)
    if key == "$regex":
        if not isinstance(actual, str):
            return False
        try:
            return compile_pattern(str(m[key])).search(actual, timeout=REGEX_TIMEOUT_S) is not None
        except TimeoutError:
            # A catastrophic pattern must cost one score, not hang a run of 50,000 cases.
            raise ValueError(f"$regex {str(m[key])[:60]!r} took over {REGEX_TIMEOUT_S:g} s on a {len(actual)}-character value") from None
    # $approx
    target, tol = m[key], m.get("tol", 1e-9)
    return _is_number(actual) and _is_number(target) and abs(actual - target) <= tol


def match_arguments(expected: dict[str, Any] | None, actual: dict[str, Any] | str, mode: ArgMode = "subset") -> bool:
    """Do `actual` arguments satisfy `expected` in `mode`?

    `expected=None` matches any arguments (name-only expectation). A JSON
    string is decoded first; raw, undecodable `actual` arguments never match
    a mapping.
    """
    if expected is None:
        return True
    if type(actual) is not dict:
        actual = _decoded(actual)
        if not isinstance(actual, dict):
            return False
    return _match_plain(expected, actual, mode)


def _match_plain(expected: dict[str, Any], actual: dict[str, Any], mode: ArgMode) -> bool:
    """`match_arguments` of two mappings: each expected key's value matched, and in `exact` mode no other key."""
    get = actual.get
    for key, exp in expected.items():
        te = type(exp)
        if te is str:  # the commonest value, compared here as `match_value` compares it
            got = get(key)
            if type(got) is not str or exp != got:
                return False
        elif te is dict and (len(exp) > 2 or _MATCHER_KEYS.isdisjoint(exp)) and type(got := get(key, ABSENT)) is dict:
            if not _match_plain(exp, got, mode):  # a nested plain mapping: what `match_value` calls for it
                return False
        elif not match_value(exp, get(key, ABSENT), mode):
            return False
    return mode != "exact" or actual.keys() <= expected.keys()


def match_top_level(expected: dict[str, Any], actual: dict[str, Any] | str, mode: ArgMode = "subset") -> bool:
    """pydantic-evals' `ArgumentCorrectness` rule: only the top level is a subset.

    In `subset` mode every expected key must be present and its value must
    match *in full* (a nested mapping compares in `exact` mode); in `exact`
    mode the whole structure must be equal. Matchers are honoured at any depth.
    """
    actual = _decoded(actual)
    if not isinstance(actual, dict):
        return False
    for key, exp in expected.items():
        if not match_value(exp, actual.get(key, ABSENT), "exact"):
            return False
    return mode == "subset" or all(key in expected for key in actual)


def first_difference(
    expected: dict[str, Any] | None, actual: dict[str, Any] | str, mode: ArgMode = "subset", nested_mode: ArgMode | None = None
) -> str | None:
    """A short human description of the first argument that does not match, or `None`.

    `nested_mode` is the mode for values below the top level (default: `mode`);
    `ArgumentCorrectness` passes `exact` there, as `match_top_level` does.
    """
    if expected is None:
        return None
    actual = _decoded(actual)
    if not isinstance(actual, dict):
        # JSON of another kind shows as that value, as `render_call` shows it (`["x",1]`); text that is no JSON, quoted.
        value = raw_value(actual)
        shown = repr(redact_quoted(value, 80)[:80]) if isinstance(value, str) else redact_quoted(_dumps(value, sort_keys=True), 80)[:80]
        return f"arguments are not a JSON object: {shown}"
    return _diff(expected, actual, mode, nested_mode or mode, "")


def _diff(expected: dict[str, Any], actual: dict[str, Any], mode: ArgMode, nested: ArgMode, prefix: str) -> str | None:
    for key, exp in expected.items():
        got = actual.get(key, ABSENT)
        if match_value(exp, got, nested):
            continue
        path = f"{prefix}{key}"
        shown = shown_expected(exp)  # (for the reason only: `exp` still decides, a `$python_eq` in it compares by `==`)
        if type(exp) is dict and len(exp) == 1 and "$python_eq" in exp:
            # A mapping's first differing key found by the same `==` a key deeper.
            if isinstance(shown, dict) and isinstance(got, dict) and not masked_under(key, shown):
                inner = _diff({k: {"$python_eq": v} for k, v in shown.items()}, got, "exact", "exact", path + ".")
                if inner:
                    return inner
        # (Not into a mapping under a credential's key: shown masked whole, as the call's text shows it.)
        elif isinstance(exp, dict) and not is_matcher(exp) and isinstance(got, dict) and not masked_under(key, exp):
            inner = _diff(exp, got, nested, nested, path + ".")
            if inner:
                return inner
        if got is ABSENT:
            return f"{path}: expected {short_json(shown, key=key, beside=(expected, actual))}, missing"
        want, seen = short_pair(shown, got, key=key, beside=(expected, actual))
        return f"{path}: expected {want}, got {seen}"
    if mode == "exact":
        for key in actual:
            if key not in expected:
                return f"{prefix}{key}: unexpected argument {short_json(actual[key], key=key, beside=actual)}"
    return None


def short_json(value: Any, limit: int = 60, key: Any = None, beside: Any = None) -> str:
    """Compact JSON of `value` cut to `limit` characters, for reasons (credentials masked before the cut).

    `key`: the name of the argument `value` is, if any. Shown apart from its key, a value would escape the masking of a
    field by its name (`{"password": "hunter2"}` in a call), so a value that `masked_under` that key is `[REDACTED]`;
    `beside`: the arguments it is one of (`masked_under`'s: their other keys may show an authentication).
    """
    if value is ABSENT:
        return "<absent>"
    if key is not None and masked_under(key, value, beside):
        return MASK
    text = redact_quoted(_dumps(value), limit)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short_pair(expected: Any, got: Any, limit: int = 60, key: Any = None, beside: Any = None) -> tuple[str, str]:
    """`short_json` of both values, cut around their first differing character; under an argument's name `key`, a value
    `masked_under` it is `[REDACTED]` (`password: expected [REDACTED], got [REDACTED]`: they differ, not shown how).

    Two long values that share a prefix longer than `limit` would otherwise
    read the same once cut; each is shown from a little before the first
    difference (a leading `…` marks the cut), so the reason shows where
    they part.
    """
    if expected is ABSENT or got is ABSENT or key is not None and (masked_under(key, expected, beside) or masked_under(key, got, beside)):
        return short_json(expected, limit, key, beside), short_json(got, limit, key, beside)
    a, b = redact_quoted(_dumps(expected)), redact_quoted(_dumps(got))  # whole: the part shown may be anywhere
    if len(a) <= limit and len(b) <= limit:
        return a, b
    i = _common_prefix(a, b)
    start = max(0, i - limit // 3)

    def cut(text: str) -> str:
        head = "…" if start else ""
        part = text[start:start + limit - len(head)]
        return head + (part if start + len(part) >= len(text) else part[:-1] + "…")

    return cut(a), cut(b)


def _common_prefix(a: str, b: str) -> int:
    """The length of the longest common prefix of `a` and `b`.

    A binary search over slice comparisons (each a C `memcmp`): reasons cut long values around
    their first difference, and a character-by-character Python loop over two long values cost
    more than the rest of the reason.
    """
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # invariant: a[:lo] == b[:lo], and the common prefix is at most hi long
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo
