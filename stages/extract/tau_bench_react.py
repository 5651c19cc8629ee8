"""τ-bench runs of upstream's `react` and `act` agent strategies, read as upstream's agent reads them.

sierra-research/tau-bench `tau_bench/agents/chat_react_agent.py` (`ChatReActAgent`) calls no tools
through the model's API: the model answers in text, `Thought:\\n<reasoning>\\nAction:\\n{"name": …,
"arguments": {…}}` (`react`), or the `Action:` part alone (`act`). `generate_next_step` takes the text
after the last `Action:` as the action; `solve` sends the environment's answer to a tool back as a
`user` message `"API output: " + observation`, and the action `respond` (`RESPOND_ACTION_NAME`) with
`{"content": text}` is the reply to the user, whose answer comes back unprefixed. So here:

- every assistant message is one step (one model request); the text before its last `Action:`,
  without the `Thought:` label, is the step's `thought` (none for `act`);
- an action naming a tool is the step's one call (`id` null: the format has none), and the
  `API output: …` user message right after it is that call's result, prefix removed; an output
  starting with `Error:` or `Unknown action ` marks the call failed, as for a `tool` message of the
  tool-calling strategy (`tau_bench.settle`). Such a message is no user turn;
- `respond` is no call: its `content` is the step's `output`, the agent's reply (the trace's `output` is
  the last reply, an empty `content` included, as `tau_bench` reads an empty assistant text);
- an action that is not JSON is sent to the user as the reply by upstream's agent ("this is a hack":
  `respond` with the text after `Action:` as content), and τ-bench's output check reads it as one: so
  is it here, the step's `output`, with the step's `error` saying the action did not parse;
- JSON naming a tool whose `arguments` are missing or not an object ends an upstream run (its
  assertion, then `Action`'s validation): only an edited record holds one. The call is kept, its
  arguments raw and flagged `arguments_invalid` (`ToolCall`), as other readers flag arguments that
  are no JSON object. Other JSON (no object naming an action, `respond` without a `content` text)
  also ends an upstream run; its text is read as the reply, as text that is not JSON, with the error.

A run none of whose actions parse has nothing that tells it from a chat of the tool-calling strategy,
and is read as one (`is_react`): its assistant texts are replies, whole.
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.stages.extract.tau_bench import Turns, settle
from tracejudge.stages.load import JSON_ERRORS, json_error

__all__ = ["API_OUTPUT", "RESPOND", "is_react", "parse_action", "react_turns"]

ACTION = "Action:"
API_OUTPUT = "API output: "  # what `ChatReActAgent.solve` puts before a tool's observation
RESPOND = "respond"  # upstream's RESPOND_ACTION_NAME
_CONTENT = "content"  # upstream's RESPOND_ACTION_FIELD_NAME
_MISSING = object()


def parse_action(text: str) -> tuple[str | None, str, Any, str | None]:
    """`(thought, action text, action, why)` of one assistant text, split as `ChatReActAgent.generate_next_step` splits it.

    The action text is what follows the last `Action:` (the whole text when there is none), stripped; `action` is
    its JSON value, or `None` with `why` (the decoding error) when it is not JSON. The thought is the text before,
    its `Thought:` label dropped; `None` when empty. Never raises.
    """
    before, found, after = text.rpartition(ACTION)
    action_text = (after if found else text).strip()
    thought = before.strip().removeprefix("Thought:").strip() if found else ""
    try:
        action: Any = json.loads(action_text)
    except JSON_ERRORS as exc:  # (a huge number or deep nesting too: upstream's own `json.loads` would stop the run there)
        return thought or None, action_text, None, json_error(exc)
    return thought or None, action_text, action, None


def _names_action(action: Any) -> bool:
    return isinstance(action, dict) and isinstance(action.get("name"), str) and bool(action["name"])


def is_react(traj: list[Any]) -> bool:
    """Whether a run's messages are those of the `react`/`act` strategies, not of tool calling.

    True when no message has tool calls and none is a `tool` message, and some assistant text holds an
    `Action:` whose JSON names an action. A tool-calling run whose replies merely say "Action:" stays one.
    """
    react = False
    for msg in traj:
        if not isinstance(msg, dict):
            continue
        role = msg.get("role")
        if role == "tool" or (role == "assistant" and msg.get("tool_calls")):
            return False
        text = msg.get("content")
        if not react and role == "assistant" and isinstance(text, str) and ACTION in text:
            react = _names_action(parse_action(text)[2])
    return react


def _arguments(action: dict[str, Any]) -> dict[str, Any]:
    """A call's fields for `arguments`: a mapping (or JSON text of one) as it is, anything else raw and flagged."""
    args = action.get("arguments", _MISSING)
    if isinstance(args, (dict, str)):
        return {"arguments": args}  # (a string is decoded, or flagged, by `ToolCall` as any reader's JSON-text arguments)
    raw = "(missing)" if args is _MISSING else json.dumps(args)
    return {"arguments": raw, "arguments_invalid": True}


def _step(text: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """`(step, its call or None)` of one assistant text (see the module docstring)."""
    thought, action_text, action, why = parse_action(text)
    step: dict[str, Any] = {"thought": thought}
    # Upstream's agent sends an action that is not JSON to the user as its reply; the other misshapen ones stop its run.
    said = "τ-bench's agent sends such text to the user as its reply" if why else "upstream's agent stops the run on it; read as the reply"
    if why is None and _names_action(action):
        if action["name"] != RESPOND:
            call = {"id": None, "name": action["name"], **_arguments(action), "result": None, "error": None}
            step["tool_calls"] = [call]
            return step, call
        args = action.get("arguments")
        reply = args.get(_CONTENT) if isinstance(args, dict) else None
        if isinstance(reply, str):
            step["output"] = reply
            return step, None
        why = f"`{RESPOND}` without a `{_CONTENT}` text in its arguments"
    elif why is None:
        why = 'not an object naming an action ({"name": …, "arguments": {…}})'
    step["output"] = action_text
    step["error"] = f"{ACTION} {why}; {said}"
    return step, None


def react_turns(traj: list[Any]) -> Turns:
    """The steps, user turns, final reply and model requests of a `react`/`act` run's messages (`is_react`).

    Messages that are not objects, and roles other than system, user and assistant, are passed over. A user
    message starting with `API output: ` answers the call of the step just before it, if that call has no
    result yet; any other user message is a user turn, placed before the step that answered it.
    """
    steps: list[dict[str, Any]] = []
    users: list[dict[str, Any]] = []
    final_output: str | None = None
    waiting: dict[str, Any] | None = None  # the call of the last step, until its API output comes
    requests = 0
    for msg in traj:
        if not isinstance(msg, dict):
            continue
        role, content = msg.get("role"), msg.get("content")
        if role == "user":
            if isinstance(content, str) and content.startswith(API_OUTPUT):
                if waiting is not None:
                    settle(waiting, content[len(API_OUTPUT):])
                waiting = None
                continue
            users.append({"step": len(steps), "content": content})
            waiting = None
        elif role == "assistant":
            requests += 1
            if not isinstance(content, str):  # (no text: upstream's agent could not have read an action from it)
                steps.append({"output": None})
                waiting = None
                continue
            step, waiting = _step(content)
            steps.append(step)
            if isinstance(step.get("output"), str):  # (an empty reply too: the agent's last reply, as `tau_bench` reads one)
                final_output = step["output"]
    return Turns(steps, users, final_output, requests)
