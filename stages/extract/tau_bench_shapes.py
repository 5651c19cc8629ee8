"""The JSON types a τ-bench run's messages, and a τ-bench task's actions, must have for the readers to take them as read.

Upstream (sierra-research/tau-bench) writes every message itself, so a file holds only these shapes unless it was
edited or written by other code: `system` (the policy text), `user` (the simulator's text: `EnvResponse.observation:
str` in `tau_bench/types.py`), `assistant` (the model's message as litellm dumps it: `content` text, or null when it
calls a tool; `tool_calls` null or `[{id, type, function: {name, arguments}}]`, `arguments` the JSON text of an object,
which `message_to_action` in `tau_bench/agents/tool_calling_agent.py` decodes into `Action.kwargs: Dict[str, Any]`)
and `tool` (`tool_call_id`, `name`, `content`: the environment's text). A task is `Task` of `tau_bench/types.py`:
`actions: List[Action]` (`{name: str, kwargs: dict}`, both required) and `outputs: List[str]`.

Read as they were, a message with no role, `role: null` or a role upstream has not was passed over without a word (the
first user turn gone, the next taken for the case's `input`), a `content` object became the case's input, arguments
that are not the JSON text of an object were kept flagged where upstream's agent stops the run on them, and a task's
`kwargs: []` became no arguments or `outputs: "abc"` three required outputs; `NaN` in arguments was written as `null`, a
task without `actions` expected no calls, and a `user_id` that is no text was not compared. Each is refused instead,
naming the field.
"""

from __future__ import annotations

import json
import math
from typing import Any

from tracejudge.stages.extract.common import json_type
from tracejudge.stages.load import JSON_ERRORS

__all__ = ["ROLES", "task_problem", "traj_problem"]

ROLES = ("system", "user", "assistant", "tool")
_MISSING = object()


def _got(value: Any) -> str:
    """What the file holds, in JSON's words: `got null`, `got a string 'bot'`, `the field is missing`."""
    if value is _MISSING:
        return "the field is missing"
    return f"got {json_type(value)}" + (f" {value!r}" if isinstance(value, str) else "")


class _NotFinite(ValueError):
    """A NaN or Infinity in arguments text: Python's json reads them, JSON has none."""


def _not_finite(name: str) -> Any:
    raise _NotFinite(name)


def _non_finite(value: Any, at: str) -> tuple[str, str] | None:
    """`(field, why)` of the first NaN or Infinity in parsed JSON `value` (a dict key by `.key`, an item by `[i]`)."""
    if isinstance(value, float) and not math.isfinite(value):
        return at, f"holds {value!r}, which is no JSON number (JSON has only finite numbers)".replace("nan", "NaN").replace("inf", "Infinity")
    if isinstance(value, dict):
        return next(filter(None, (_non_finite(v, f"{at}.{k}") for k, v in value.items())), None)
    if isinstance(value, list):
        return next(filter(None, (_non_finite(v, f"{at}[{i}]") for i, v in enumerate(value))), None)
    return None


def _arguments(args: Any) -> str | None:
    """Why `args` is not what upstream's agent decodes into an action's kwargs (the JSON text of an object), or None."""
    from tracejudge.stages.extract.surrogates import surrogate_field

    if not isinstance(args, str):
        return f"expected the JSON text of an object (upstream's agent decodes it with json.loads); {_got(args)}"
    try:
        # Kept, a NaN or Infinity was written as null: a changed value where the record's own is refused.
        value = json.loads(args, parse_constant=_not_finite)
    except _NotFinite as exc:
        return f"the text holds {exc}, which is no JSON number (JSON has only finite numbers)"
    except JSON_ERRORS:
        return f"expected the JSON text of an object; {_got(args[:80])}, which is not JSON"
    if not isinstance(value, dict):
        return f"expected the JSON text of an object; the text holds {json_type(value)}"
    if (field := surrogate_field(value)) is not None:
        return f"`{field}` holds a lone surrogate escape (half of a UTF-16 pair, no character on its own), which no UTF-8 file can hold"
    return None


def _name(name: str) -> str | None:
    """Why text `name` names no tool (only whitespace, a NUL or a lone surrogate in it), or None."""
    from tracejudge.core.record_fields import tool_name_problem
    from tracejudge.stages.extract.surrogates import surrogate_field

    # (the records' one rule for a tool name, said in this reader's words)
    if (problem := tool_name_problem(name)) is not None:
        said = "got only whitespace" if problem[0] == "tool_name_empty" else "it holds a NUL character:"
        return f"expected the tool's name; {said} {name!r}"
    if surrogate_field(name) is not None:
        return "expected the tool's name; it holds a lone surrogate (half of a UTF-16 pair, no character on its own)"
    return None


def _call(call: Any, at: str) -> tuple[str, str] | None:
    if not isinstance(call, dict):
        return at, f"expected a tool call object, got {json_type(call)}"
    if call.get("id") is not None and not isinstance(call["id"], str):  # (null or missing: paired by order, `tau_bench`)
        return f"{at}.id", f"expected the call's id (text), got {json_type(call['id'])}"
    fn = call.get("function")
    if not isinstance(fn, dict):
        return f"{at}.function", f"expected an object {{name, arguments}}; {_got(call.get('function', _MISSING))}"
    if "name" in fn and (not isinstance(fn["name"], str) or not fn["name"]):
        return f"{at}.function.name", f"expected the tool's name; {_got(fn['name'])}"
    if "name" in fn and (why := _name(fn["name"])) is not None:
        return f"{at}.function.name", why
    # (A missing name is left to the reader, which names a typo of the key.)
    if "name" in fn and (why := _arguments(fn.get("arguments", _MISSING))) is not None:
        return f"{at}.function.arguments", why
    return None


def _message(msg: Any, at: str) -> tuple[str, str] | None:
    """`(field, why)` when `msg` is no message upstream writes (see the module docstring), else None."""
    if not isinstance(msg, dict):
        return at, f"expected a message object, got {json_type(msg)}"
    role = msg.get("role", _MISSING)
    if role not in ROLES:
        return f"{at}.role", f"expected {', '.join(repr(r) for r in ROLES[:-1])} or {ROLES[-1]!r}; {_got(role)}"
    content = msg.get("content", _MISSING)
    if role == "assistant":
        if content is not _MISSING and content is not None and not isinstance(content, str):
            return f"{at}.content", f"expected text or null (null when it calls a tool), got {json_type(content)}"
    elif not isinstance(content, str):
        return f"{at}.content", f"expected the {role} message's text; {_got(content)}"
    calls = msg.get("tool_calls")
    if calls is not None and role != "assistant":
        return f"{at}.tool_calls", f"only an assistant message calls tools; this one is {role!r}"
    if calls is not None and not isinstance(calls, list):
        return f"{at}.tool_calls", f"expected a list of tool calls or null, got {json_type(calls)}"
    if role == "tool" and msg.get("tool_call_id") is not None and not isinstance(msg["tool_call_id"], str):
        return f"{at}.tool_call_id", f"expected the id of the call it answers (text), got {json_type(msg['tool_call_id'])}"
    return next(filter(None, (_call(call, f"{at}.tool_calls[{j}]") for j, call in enumerate(calls or []))), None)


def traj_problem(traj: list[Any]) -> tuple[str, str] | None:
    """`(field, why)` of the first message of a run's `traj` upstream could not have written (`traj[1].role`,
    `traj[4].tool_calls[0].function.arguments`), or None."""
    return next(filter(None, (_message(msg, f"traj[{i}]") for i, msg in enumerate(traj))), None)


def task_problem(task: Any, at: str) -> tuple[str, str] | None:
    """`(field, why)` of the first part of a τ-bench task (named `at`: `""` for a tasks file's own record, else the
    prefix of its fields, `info.task.`) that upstream's `Task` refuses: actions that are no list of `{name, kwargs}`
    with text names and object kwargs, or no `actions` at all, `outputs` that are no list of texts, a `user_id` that
    is no text; or None. Absent `outputs` are none; an absent `user_id` is not compared."""
    if not isinstance(task, dict):
        return at.rstrip(".") or "task", f"expected a task object, got {json_type(task)}"
    if "user_id" in task and not isinstance(task["user_id"], str):
        # (Passed over, the run's user was not compared with the tasks file's: a run of another domain went unnoticed.)
        return f"{at}user_id", f"expected the id of the task's user (text), got {json_type(task['user_id'])}"
    actions = task.get("actions", _MISSING)
    if actions is _MISSING:
        # Upstream's `Task.actions` has no default; read as none, a task would expect no calls where its actions are lost.
        return f"{at}actions", "required list of actions is missing (a task whose right outcome is no change has `actions: []`)"
    if not isinstance(actions, list):
        return f"{at}actions", f"expected a list of actions, got {json_type(actions)}"
    for i, action in enumerate(actions):
        here = f"{at}actions[{i}]"
        if not isinstance(action, dict):
            return here, f"expected an action object {{name, kwargs}}, got {json_type(action)}"
        if not isinstance(action.get("name"), str) or not action["name"]:
            return f"{here}.name", f"expected the tool's name; {_got(action.get('name', _MISSING))}"
        if not isinstance(action.get("kwargs"), dict):
            return f"{here}.kwargs", f"expected an object of arguments (name: value); {_got(action.get('kwargs', _MISSING))}"
        if (where := _non_finite(action["kwargs"], f"{here}.kwargs")) is not None:
            # (Python's json reads NaN and Infinity; compared as expected arguments, no call could ever match one.)
            return where
    outputs = task.get("outputs", [])
    if not isinstance(outputs, list):
        return f"{at}outputs", f"expected a list of texts the agent must say, got {json_type(outputs)}"
    for i, output in enumerate(outputs):
        if not isinstance(output, str):
            return f"{at}outputs[{i}]", f"expected text, got {json_type(output)}"
    return None
