"""What a metric's parameter errors say, in the config's words: where the mistake is and what to write instead."""

from __future__ import annotations

import re
from typing import Any

from tracejudge.core import suggest

__all__ = ["param_error", "param_problems"]

_SEQUENCE_TYPES = frozenset({"tuple_type", "list_type", "set_type", "frozen_set_type"})


def param_problems(errors: list[Any], prefix: str, cls: type) -> list[tuple[tuple[Any, ...], str]]:
    """Every mistake of a metric's parameters as `(loc, message)`, one a problem, from pydantic's `errors()` of
    validating `cls`: an unknown key beside a missing one is one problem (`pair_missing`), and each message starts with
    `prefix` (`"ToolCalls: "`). The config's errors and a metric built from Python (`ToolCalls(argument=...)`) say the
    same from this."""
    merged = suggest.pair_missing(suggest.merge_union_errors(errors), cls)
    return [param_error((*err["loc"],), prefix, err, cls) for err in merged]


def param_error(loc: tuple[Any, ...], prefix: str, err: Any, cls: type) -> tuple[tuple[Any, ...], str]:
    """`(loc, message)` of one parameter error. A value a class parses itself (promptfoo's `value`) says where inside it
    the mistake is (`ctx.where`: `value.mode`, `value.steps[1].name`): the loc goes down to that key, so a config error
    names the line of the key at fault, not the `value:` line above a block of them, and the message says it once."""
    ctx = err.get("ctx") or {}
    where, message = ctx.get("where"), ctx.get("message")
    parts = re.findall(r"[^.\[\]]+", where) if isinstance(where, str) else []
    if parts and isinstance(message, str) and loc and str(loc[-1]) == parts[0]:
        return (*loc, *parts[1:]), prefix + message
    return loc, prefix + _param_message(err, cls)


def _param_message(err: Any, cls: type) -> str:
    """What one pydantic error of a metric's parameters says, in the config's words."""
    if err["type"] in _SEQUENCE_TYPES:  # (pydantic says "a valid tuple" of a field a config writes as a list)
        got = err.get("input")
        return "Input should be a list" + (f", such as [{got}]" if isinstance(got, str) else "")
    if err["type"] == "missing":
        return "required parameter is missing"
    if err["type"] == suggest.PAIRED:
        return str(err["msg"])
    hint = suggest.error_hint(err, cls)
    if err["type"] == "extra_forbidden" and not hint:
        hint = _sibling_hint(str(err["loc"][-1]) if err.get("loc") else "", cls)
    return ("unknown parameter" if err["type"] == "extra_forbidden" else suggest.message(err)) + hint


# A metric and the one that takes a peer's parameters for the same check: deepeval's ToolCorrectnessMetric options
# (`should_consider_ordering`, `should_exact_match`, `evaluation_params`, …) are DeepEvalToolCorrectness's, not
# ToolCorrectness's (the plain tool-name recall).
_SIBLINGS = {"ToolCorrectness": ("DeepEvalToolCorrectness", "deepeval's ToolCorrectnessMetric, its options and its score")}


def _sibling_hint(param: str, cls: type) -> str:
    """`"; DeepEvalToolCorrectness takes should_consider_ordering (…)"` when `cls`'s sibling metric has `param`, else ""."""
    sibling, what = _SIBLINGS.get(getattr(cls, "__name__", ""), (None, ""))
    if sibling is None or not param:
        return ""
    from tracejudge.core import registry

    other = registry.metric_types().get(sibling)
    fields = getattr(other, "model_fields", {})
    if param not in fields:
        return ""
    return f"; `type: {sibling}` takes {param} ({what})"
