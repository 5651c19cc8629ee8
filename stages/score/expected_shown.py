"""Expected values as a user reads them, and as a metric comparing with Python's `==` reads them.

An expectation may hold `{"$python_eq": v}` (the `tau2-bench` format writes one where Python's `==` and the project's
JSON rules could disagree): it says how `v` compares, not what was expected. `shown_expected` gives what reasons,
reports and the viewer show (`amount: 50`); `python_values` gives what a metric using `==` itself compares (deepeval's).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tracejudge.stages.score.value_rules import matcher_key as _matcher_key

__all__ = ["python_values", "shown_expected"]


def python_values(value: Any) -> Any:
    """`value` with each `{"$python_eq": v}` in it, at any depth, read as `v`, and each mapping's key whose value is
    `{"$absent": true}` left out (`value` itself when it holds neither).

    For a metric that compares with Python's `==` itself (deepeval's): the matcher's own rule, so it meets what it meets;
    and a mapping without the key is what `==` finds equal only to one that lacks it too, as `$absent` wants.
    """
    if type(value) is dict:
        if len(value) == 1 and "$python_eq" in value:
            return value["$python_eq"]
        if any(map(_wants_absent, value.values())):
            value = {k: v for k, v in value.items() if not _wants_absent(v)}
    return _containers(value, python_values) if type(value) is dict or type(value) is list else value


def _wants_absent(value: Any) -> bool:
    return type(value) is dict and "$absent" in value and _matcher_key(value) == "$absent" and bool(value["$absent"])


def shown_expected(value: Any) -> Any:
    """An expected value as reasons, reports and the viewer show it: each `{"$python_eq": v}` that is read as a matcher
    (at any depth of a mapping or list, or an `$any_of` option) is `v`; every other matcher is shown as written, and
    nothing inside one is changed. `value` itself when it holds no `$python_eq`.

    The wrapper says how `v` compares (Python's `==`, as the `tau2-bench` format reads an action's values), not what
    was expected: `amount: 50`, not `amount: {"$python_eq": 50}`. A `v` holding a mapping shaped as a matcher (the
    literal value `{"$regex": "^A"}`, at any depth) keeps its wrapper: shown bare, it would read as the matcher it is not.
    """
    if type(value) is dict:
        key = _matcher_key(value)
        if key == "$python_eq":
            return value if _holds_matcher(value[key]) else value[key]
        if key is None:
            return _containers(value, shown_expected)
        options = value[key] if key == "$any_of" else None
        if type(options) is list and (shown := _containers(options, shown_expected)) is not options:
            return {**value, key: shown}
        return value
    return _containers(value, shown_expected) if type(value) is list else value


def _holds_matcher(value: Any) -> bool:
    """Whether `value` is, or holds at any depth, a mapping the project would read as a matcher (`value_rules.matcher_key`)."""
    if type(value) is dict:
        return _matcher_key(value) is not None or any(map(_holds_matcher, value.values()))
    return type(value) is list and any(map(_holds_matcher, value))


def _containers(value: dict[str, Any] | list[Any], read: Callable[[Any], Any]) -> Any:
    """`value` with each mapping or list in it through `read`: `value` itself when none changes. Scalars are passed
    over without a call (`read` leaves them as they are), and a copy is made only at the first change: an expected
    call is rendered for every case, and almost none holds a `$python_eq`."""
    out: Any = None
    for k, v in value.items() if type(value) is dict else enumerate(value):
        if type(v) is dict or type(v) is list:
            shown = read(v)
            if shown is not v:
                if out is None:
                    out = dict(value) if type(value) is dict else list(value)
                out[k] = shown
    return value if out is None else out

