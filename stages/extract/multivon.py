"""Format `multivon`: multivon-eval `EvalCase` records, with an `agent_trace` or without (a plain case).

Framing: JSONL, one `EvalCase` per line as multivon-eval builds it
(`EvalCase(input=..., agent_trace=[AgentStep(...)], expected_tool_calls=[...])`
dumped to JSON)::

    {"input": "Search for recent AI papers and write a summary",
     "agent_trace": [{"thought": "I need to search first",
                      "tool_calls": [{"name": "search", "arguments": {"query": "AI papers 2025"},
                                      "result": ["Paper A", "Paper B"]}]},
                     {"thought": "Now summarize", "tool_calls": [{"name": "summarize"}],
                      "output": "Here are the key AI papers ..."}],
     "expected_tool_calls": ["search", "summarize"]}

Each `AgentStep` is one step (`thought`, `tool_calls`, `output`); a
`ToolCall` keeps `name`, `arguments` (a mapping, or a JSON string decoded
like any provider's; missing means `{}`) and `result`. multivon's
`expected_tool_calls` is a list of tool *names*: each becomes an expected
call matched on the name alone (`arguments: null`); objects `{name,
arguments}` are accepted too. A call with an `error` (a message, or `true`)
is failed, as is one whose result text starts with an `error_prefixes`
option value (multivon's own examples write results like `"Error: 404"`).
The trace `output` is the record's `actual_output` / `output` when present,
else the last step output. `id` is the record's `id`, else multivon's own `case_id` (text, or a whole number
as its text, as a native `id`; any other value is refused naming `case_id`), else `"<file>:<line>"`; a key that is no
`EvalCase`, `AgentStep` or `ToolCall` field (nor a native case's) is refused, naming the nearest one
(`expected_tool_call`: did you mean `expected_tool_calls`?), with `agent_trace` or without; `context`,
`expected_output`, `tags`, `metadata` pass through; `user_messages` (the
native shape, `[{"step", "content"}]`) becomes the trace's user turns. A record
without `agent_trace` is read as multivon reads it: its output is scored by the
judges, and `ToolCallAccuracy` skips it (see `adapt`).

`conversation` is multivon's multi-turn history, `[{"role": "user" | "assistant", "content": "text"}]`: the
turns before the one `input` asks (its conversation evaluators judge the response "given the conversation
history"; its template writes `input` as the history's last user turn too, and its Inspect export sends the
history, then `input`). Each user turn is one of `trace.user_messages`, each assistant turn a step whose
`output` is its text, before the `agent_trace` steps; `input` is the last user turn, unless the history already
ends with it. The trace's `output` stays this turn's answer. A history turn the trace cannot hold (a `system`
or `tool` role, content that is not text, a key beside `role` and `content`), and a record with both
`conversation` and `user_messages` (two accounts of the user's turns), are refused naming the field.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, register_format
from tracejudge.stages.extract.common import CASE_FIELDS, build_case, case_fields, decode_line, fail, json_type, read_lines

__all__ = ["NO_AGENT_TRACE", "Options", "adapt"]

NO_AGENT_TRACE = "multivon_no_agent_trace"
"""The metadata key set (true) on a case read from a record without `agent_trace`: its steps were not recorded."""


# multivon-eval's `EvalCase` fields, and what this reader takes beside them (`id`, the output, `user_messages`).
_PLAIN_FIELDS = frozenset({"input", "expected_output", "context", "conversation", "agent_trace", "expected_tool_calls", "metadata",
                           "tags", "reference_output", "case_id", "revision", "source_id", "id", "actual_output", "output",
                           "user_messages"})
_NATIVE = frozenset(CASE_FIELDS)  # a native case's own keys (`expected_passages`, per-case `metrics`, ...) pass through too
_FIELDS = _PLAIN_FIELDS | _NATIVE


_STEP_FIELDS = ("thought", "tool_calls", "output")  # multivon-eval's `AgentStep`
_CALL_FIELDS = ("name", "arguments", "result", "id", "error")  # its `ToolCall`, and a call's id and error besides


def _known(obj: dict[str, Any], allowed: Any, where: str, cid: str) -> None:
    # A misspelt key (`expected_tool_call`, `argumnets`) would score against nothing: refused, naming the nearest.
    for key in obj:
        if key not in allowed:
            _unknown(key, allowed, where, cid)


def _unknown(key: Any, allowed: Any, where: str, cid: str) -> None:
    from tracejudge.core.suggest import did_you_mean

    hint = did_you_mean(str(key), allowed, n=1, typo=True)
    fail(f"unknown field {key!r} (not a multivon-eval field){'; ' + hint if hint else ''}",
         field=f"{where}.{key}" if where else str(key), case_id=cid)


def _named(record: dict[str, Any]) -> dict[str, Any]:
    """`record` with multivon's own `case_id` as its `id` when it has none (`EvalCase.case_id`, as `save_jsonl` writes it).

    A whole number is taken as its text, as a native `id` is; any other value (a fraction, `true`, an object, empty
    text) is refused naming `case_id`: falling back to `file:line` would file the case's results under a name that
    changes when the file is reordered, without a word.
    """
    value = record.get("case_id")
    if record.get("id") is not None or value is None:
        return record
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        got = repr(value) if isinstance(value, float) else json_type(value)
        fail(f"expected the case's id as text (or a whole number), got {got}", field="case_id")
    text = str(value)
    if not text.strip() or "\x00" in text:
        fail("the case id is empty, only whitespace or holds NUL: give every case a distinct, non-empty id", field="case_id")
    return {**record, "id": text}


_ROLES = ("user", "assistant")
_MESSAGE = '{"role": "user" or "assistant", "content": "text"}'


def _history(record: dict[str, Any], cid: str) -> list[tuple[str, str]]:
    """The record's `conversation` as `(role, content)` turns, each one checked (module docstring); `[]` when it has none."""
    value = record.get("conversation")
    if value is None or value == []:
        return []  # (multivon's evaluators skip a case whose `conversation` is empty as one without it)
    if not isinstance(value, list):
        fail(f"expected a list of messages {_MESSAGE}, got {json_type(value)}", field="conversation", case_id=cid)
    if record.get("user_messages"):
        fail("conversation and user_messages both give the user's turns, which cannot be told apart or merged: keep one",
             field="user_messages", case_id=cid)
    turns = []
    for i, msg in enumerate(value):
        where = f"conversation[{i}]"
        if not isinstance(msg, dict):
            fail(f"expected a message {_MESSAGE}, got {json_type(msg)}", field=where, case_id=cid)
        for key in msg:
            if key not in ("role", "content"):
                # (a `name`, a `tool_calls` list: the trace has no place for it, and dropping it would judge less than was said)
                from tracejudge.core.suggest import did_you_mean

                hint = did_you_mean(str(key), ("role", "content"), n=1, typo=True)
                fail(f"a conversation message holds role and content only, so {key!r} would not be read"
                     f"{'; ' + hint if hint else ''}", field=f"{where}.{key}", case_id=cid)
        role, content = msg.get("role"), msg.get("content")
        if role not in _ROLES:
            fail(f"{role!r} is no turn the trace can hold: a conversation turn is the user's or the assistant's "
                 f"({_MESSAGE})", field=f"{where}.role", case_id=cid)
        if not isinstance(content, str):
            fail(f"expected the turn's text, got {json_type(content)}", field=f"{where}.content", case_id=cid)
        turns.append((role, content))
    return turns


def _earlier(history: list[tuple[str, str]], request: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """`(steps, user messages)` of the turns before the agent's steps: the history, then `request` (the record's `input`)."""
    steps: list[dict[str, Any]] = []
    users: list[dict[str, Any]] = []
    for role, content in history:
        if role == "user":
            users.append({"step": len(steps), "content": content})
        else:
            steps.append({"output": content})
    # multivon's own template repeats `input` as the history's last user turn: the same turn, said once.
    if request is not None and history[-1] != ("user", request):
        users.append({"step": len(steps), "content": request})
    return steps, users


class Options(BaseModel):
    """`dataset.options` of `multivon`: `error_prefixes` (result texts that mark a failed call)."""

    model_config = ConfigDict(extra="forbid")

    error_prefixes: list[str] = []


def _expected(value: Any, cid: str) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        fail("expected_tool_calls must be a list of tool names", field="expected_tool_calls", case_id=cid)
    out = []
    for i, item in enumerate(value):
        if isinstance(item, str):
            out.append({"name": item, "arguments": None})
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            out.append({"name": item["name"], "arguments": item.get("arguments")})
        else:
            fail("expected a tool name", field=f"expected_tool_calls[{i}]", case_id=cid)
    return out


def _call(tc: Any, where: str, cid: str, prefixes: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(tc, dict):
        fail("a tool call must be an object", field=where, case_id=cid)
    _known(tc, _CALL_FIELDS, where, cid)
    name = tc.get("name")
    if not isinstance(name, str) or not name:
        fail("tool call has no name", field=f"{where}.name", case_id=cid)
    error = tc.get("error")
    result = tc.get("result")
    if error is True:
        error = result if isinstance(result, str) and result else "error"
    elif not isinstance(error, str) or not error:
        error = result if prefixes and isinstance(result, str) and result.startswith(prefixes) else None
    return {"id": tc.get("id"), "name": name, "arguments": tc.get("arguments"), "result": result, "error": error}


def adapt(payload: Any, options: Options | None = None) -> Case:
    """Turn one `EvalCase` line into a `Case` (see the module docstring).

    A record without `agent_trace` (missing or null: a plain multivon case, made of `EvalCase`'s fields and a string
    `input`; any other record is refused as before) becomes a trace of its output alone,
    with `metadata[NO_AGENT_TRACE]` true: `ToolCallAccuracy` then skips it (`value: null`), as multivon-eval does.
    Raises `AdapterError` naming the field (`agent_trace[1].tool_calls[0].name`)
    when `agent_trace` is not a list or a step or call cannot be read.
    """
    opts = options or Options()
    prefixes = tuple(opts.error_prefixes)
    record, default_id = decode_line(payload)
    fields = case_fields(_named(record), default_id)  # (`id` wins over `case_id` when both are given)
    cid = str(fields["id"])
    fields["expected_tool_calls"] = _expected(record.get("expected_tool_calls"), cid)
    trace = record.get("agent_trace")
    if trace is None:
        # multivon's plain (non-agent) cases: its tool evaluators skip them, its output judges score the answer. Only a
        # record made of `EvalCase`'s own fields (and a native case's, as beside an `agent_trace`): another format's
        # record (a native `trace`, τ-bench's `traj`) is not one.
        foreign = [k for k in record if k not in _FIELDS]
        from tracejudge.core.suggest import closest

        for key in foreign:
            if closest(str(key), _FIELDS, 1, typo=True):
                _unknown(key, _FIELDS, "", cid)  # a misspelt field: named, with the one meant, not blamed on `agent_trace`
        if foreign or not isinstance(record.get("input"), str):
            fail("agent_trace: required list of steps is missing" + (f" (and {foreign[0]!r} is no EvalCase field)" if foreign
                 else ""), field="agent_trace", case_id=cid)
        trace = []
        fields["metadata"] = {**(fields.get("metadata") or {}), NO_AGENT_TRACE: True}
    elif not isinstance(trace, list):
        fail("agent_trace must be a list of steps", field="agent_trace", case_id=cid)
    else:
        _known(record, _FIELDS, "", cid)
    history = _history(record, cid)
    steps, users = _earlier(history, record.get("input")) if history else ([], record.get("user_messages") or [])
    last_output = None
    for i, step in enumerate(trace):
        where = f"agent_trace[{i}]"
        if not isinstance(step, dict):
            fail("a step must be an object", field=where, case_id=cid)
        _known(step, _STEP_FIELDS, where, cid)
        calls = step.get("tool_calls") or []
        if not isinstance(calls, list):
            fail("tool_calls must be a list", field=f"{where}.tool_calls", case_id=cid)
        output = step.get("output")
        steps.append(
            {
                "thought": step.get("thought"),
                "tool_calls": [_call(tc, f"{where}.tool_calls[{j}]", cid, prefixes) for j, tc in enumerate(calls)],
                "output": output,
            }
        )
        if output is not None:
            last_output = output
    final = record.get("actual_output", record.get("output", last_output))
    # Without `conversation`, multivon's EvalCase records one request (`input`); a record may add the user's turns in the native shape.
    return build_case({**fields, "trace": {"steps": steps, "user_messages": users, "output": final}})


register_format(Format("multivon", read=read_lines, adapt=adapt, prepare=lambda ds: Options.model_validate(ds.options), options=Options))
