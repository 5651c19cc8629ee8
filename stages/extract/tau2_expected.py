"""A τ²-bench task's expected actions as the project's expected tool calls, compared as upstream compares them."""

from __future__ import annotations

from typing import Any

__all__ = ["expected_from_action"]


def expected_from_action(action: dict[str, Any]) -> dict[str, Any]:
    """One τ²-bench expected action → `{name, arguments}`, honouring `compare_args`.

    Without `compare_args` the expectation compares the keys the call carries (`argument_keys: "call"`): every
    τ²-bench release (`Action.compare_with_tool_call`, v0.1.0 to v1.0.1) takes `tool_call.arguments.keys()` then,
    so a call omitting an action's key still matches and one adding a key does not. With `compare_args` only those
    keys are compared, whatever else the call carries (`argument_keys: "expected"`), in `exact` too. Each value is
    compared as upstream compares it, with Python's `==` (`_as_compared`).
    """
    args = action.get("arguments") or {}
    keys = action.get("compare_args")
    if keys is None:
        return {"name": action["name"], "arguments": {k: _as_compared(v) for k, v in args.items()}, "argument_keys": "call"}
    if not keys:
        return {"name": action["name"], "arguments": None}
    # (The listed keys only, in every mode: upstream reads those of the call and ignores its others.)
    return {"name": action["name"], "arguments": {k: _as_compared(args[k]) if k in args else {"$absent": True} for k in keys},
            "argument_keys": "expected"}


def _as_compared(value: Any) -> Any:
    """An action's argument value as upstream's `==` compares it: `{"$python_eq": value}` where the project's rules
    could find otherwise, else `value` as it is (a reason shows either as the value: `shown_expected`).

    They could for a number or a bool (`True == 1 == 1.0` there, a bool never a number here) and for a mapping
    (compared whole there, key by key in `arguments: subset` here, a `$`-keyed one read as a matcher), at any depth
    of a list; a string, null, or a list of only those, compares alike under both.
    """
    return value if _alike(value) else {"$python_eq": value}


def _alike(value: Any) -> bool:
    return value is None or isinstance(value, str) or isinstance(value, list) and all(map(_alike, value))
