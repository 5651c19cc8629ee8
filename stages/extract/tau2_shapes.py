"""The JSON types a τ²-bench simulation, and its task's expected actions, must have for the `tau2-bench` adapter to read them.

A results file edited by hand, or written by a fork of τ²-bench, may hold a message that is a number, `tool_calls` as a
string, `usage` as text or `compare_args` as one string. Read as they are, these raised Python's own errors (`'int' object
has no attribute 'get'`), which named no field, or worse, `compare_args: "abc"` was read as the keys `a`, `b`, `c` and
scored the simulation against expectations nobody wrote. `shape_problem` names the first such part instead, so the
simulation is one `invalid_input` saying where, and the others score.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.common import json_type

__all__ = ["criteria_actions", "shape_problem"]


def criteria_actions(task: Any) -> Any:
    """A task's `evaluation_criteria.actions` as the file has it; None when the task or its criteria is no object."""
    criteria = task.get("evaluation_criteria") if isinstance(task, dict) else None
    return criteria.get("actions") if isinstance(criteria, dict) else None


def _count(value: Any) -> bool:
    return value is None or isinstance(value, (int, float)) and not isinstance(value, bool)


# Upstream's `Message` (sierra-research/tau2-bench `src/tau2/data_model/message.py`): a system, assistant, user or tool
# message, or a `MultiToolMessage` (`role: tool` holding `tool_messages`); each `content` is text or null, a tool
# message's `id` text, a tool call's `id` text and its `arguments` an object.
_ROLES = ("system", "assistant", "user", "tool")


def _message(msg: Any, at: str, roles: tuple[str, ...] = _ROLES) -> tuple[str, str] | None:
    """`(field, why)` when `msg` is no message upstream's data model reads (a role it has not, content not text)."""
    if not isinstance(msg, dict):
        return at, f"expected a message object, got {json_type(msg)}"
    role = msg.get("role")
    if role not in roles:  # (any other was skipped without a word, whatever it said)
        got = "the field is missing" if "role" not in msg else f"got {json_type(role)}" + (f" {role!r}" if isinstance(role, str) else "")
        return f"{at}.role", f"expected {' or '.join(repr(r) for r in roles)}; {got}"
    if msg.get("content") is not None and not isinstance(msg["content"], str):
        return f"{at}.content", f"expected text or null, got {json_type(msg['content'])}"
    parts = msg.get("tool_messages")
    # (`ToolMessage.id: str`. Upstream requires it; one left out is read as no id, pairing by order, for a writer that
    # keeps none: a deliberate difference.)
    if role == "tool" and parts is None and not isinstance(msg.get("id", ""), str):
        return f"{at}.id", f"expected the id of the call it answers (text), got {json_type(msg['id'])}"
    if role == "tool" and parts is not None:
        if not isinstance(parts, list):
            return f"{at}.tool_messages", f"expected a list of tool messages, got {json_type(parts)}"
        return next(filter(None, (_message(p, f"{at}.tool_messages[{i}]", ("tool",)) for i, p in enumerate(parts))), None)
    return None


def _call(call: dict[str, Any], at: str) -> tuple[str, str] | None:
    """As upstream's `ToolCall` validates them: `id: str = ""` (null is no text) and `arguments: dict`, required."""
    if not isinstance(call.get("id", ""), str):
        return f"{at}.id", f"expected the call's id (text), got {json_type(call['id'])}"
    if not isinstance(call.get("arguments"), dict):
        got = "the field is missing" if "arguments" not in call else f"got {json_type(call['arguments'])}"
        return f"{at}.arguments", f"expected an object of arguments; {got}"
    return None


def _messages(messages: list[Any], where: str) -> tuple[str, str] | None:
    for k, msg in enumerate(messages):
        at = f"{where}.messages[{k}]"
        if (problem := _message(msg, at)) is not None:
            return problem
        calls = msg.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            return f"{at}.tool_calls", f"expected a list of tool calls, got {json_type(calls)}"
        for j, call in enumerate(calls or []):
            if not isinstance(call, dict):
                return f"{at}.tool_calls[{j}]", f"expected a tool call object, got {json_type(call)}"
            if call.get("name") is not None and not isinstance(call["name"], str):
                return f"{at}.tool_calls[{j}].name", f"expected the tool's name, got {json_type(call['name'])}"
            if (problem := _call(call, f"{at}.tool_calls[{j}]")) is not None:
                return problem
        usage = msg.get("usage")
        if usage is not None and not isinstance(usage, dict):
            return f"{at}.usage", f"expected a usage object, got {json_type(usage)}"
        for key in ("prompt_tokens", "completion_tokens"):
            if not _count((usage or {}).get(key)):
                return f"{at}.usage.{key}", f"expected a token count, got {json_type(usage[key])}"  # type: ignore[index]
    return None


def _reward(reward: Any, where: str) -> tuple[str, str] | None:
    if reward is None:
        return None
    if not isinstance(reward, dict):
        return f"{where}.reward_info", f"expected an object, got {json_type(reward)}"
    checks = reward.get("action_checks")
    if checks is not None and not isinstance(checks, list):
        return f"{where}.reward_info.action_checks", f"expected a list, got {json_type(checks)}"
    for i, check in enumerate(checks or []):
        action = check.get("action") if isinstance(check, dict) else None
        if not isinstance(check, dict) or action is not None and not isinstance(action, dict):
            bad = check if not isinstance(check, dict) else action
            field = f"{where}.reward_info.action_checks[{i}]" + ("" if bad is check else ".action")
            return field, f"expected an object, got {json_type(bad)}"
    return None


def _actions(task: dict[str, Any]) -> tuple[str, str] | None:
    at = f"tasks[id={task.get('id')!r}].evaluation_criteria"
    criteria = task.get("evaluation_criteria")
    if criteria is not None and not isinstance(criteria, dict):
        return at, f"expected an object, got {json_type(criteria)}"
    actions = criteria_actions(task)
    if actions is not None and not isinstance(actions, list):
        return f"{at}.actions", f"expected a list of actions, got {json_type(actions)}"
    for i, action in enumerate(actions or []):
        here = f"{at}.actions[{i}]"
        if not isinstance(action, dict):
            return here, f"expected an action object, got {json_type(action)}"
        if not isinstance(action.get("name"), str) or not action["name"]:
            return f"{here}.name", f"expected the tool's name, got {json_type(action.get('name'))}"
        args, keys = action.get("arguments"), action.get("compare_args")
        if args is not None and not isinstance(args, dict):
            return f"{here}.arguments", f"expected an object of arguments, got {json_type(args)}"
        if keys is not None and not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
            return f"{here}.compare_args", f"expected a list of argument names, got {json_type(keys)}"
    return None


def shape_problem(sim: dict[str, Any], task: dict[str, Any], where: str) -> tuple[str, str] | None:
    """`(field, why)` of the first part of simulation `sim` (named `where`, `simulations[3]`; its `messages` a list) or of
    its `task`'s expected actions whose JSON type the adapter cannot read, or None. A task's fields are named by its id
    (`tasks[id='6'].evaluation_criteria.actions[0].compare_args`): the error is the simulation's, filed at its line."""
    for key in ("agent_cost", "duration"):  # (read into the trace's usage, whose error would name the trace's field)
        if not _count(sim.get(key)):
            return f"{where}.{key}", f"expected a number, got {json_type(sim[key])}"
    return _messages(sim["messages"], where) or _reward(sim.get("reward_info"), where) or _actions(task)
