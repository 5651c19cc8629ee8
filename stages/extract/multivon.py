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
`ToolCall` keeps `name`, `arguments` (a mapping; missing means `{}`) and
`result`. Lines and text are read as multivon's loader reads them (`multivon_text`: Unicode-blank lines
skipped, a byte-order mark refused, a blank tool name and half a UTF-16 pair kept in a form a case holds). Types are checked as multivon-eval's `case_from_dict` checks them
(text `thought`/`output`, a list `tool_calls`, text `name`, mapping
`arguments`, text `input`, list `tags`, mapping `metadata`): what it refuses
(`null` included, `arguments` as JSON text, and a NaN or infinite number anywhere) is refused naming the field. multivon's
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

import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict
from tracejudge.core.record_fields import tool_name_problem
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, register_format
from tracejudge.stages.extract.common import CASE_FIELDS, JsonLine, build_case, case_fields, decode_line, fail, json_type
from tracejudge.stages.extract.multivon_text import blank_name, may_hold_lone_surrogate, mended, read_multivon

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
_STEP = '{"thought": "text", "tool_calls": [...], "output": "text"}'
_CALL = '{"name": "tool", "arguments": {...}, "result": ...}'


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


_TEXT_OR_NULL = ("expected_output", "reference_output", "revision", "source_id")


def _case_types(record: dict[str, Any], cid: str) -> None:
    """Refuse an `EvalCase` field of a type multivon-eval's loader (`case_from_dict`) refuses, naming it.

    Beside an `agent_trace` as without one: `input` is text; `expected_output`, `reference_output`, `revision` and
    `source_id` text or null (the last two not empty); `context` text, a list of text or null; `tags` a list of text
    and `metadata` an object (null is neither). (`case_id`, `expected_tool_calls` and `conversation` are checked where
    they are read.)
    """
    if "input" not in record:
        fail("the case has no input: multivon-eval's EvalCase needs the request as text", field="input", case_id=cid)
    if not isinstance(record["input"], str):
        fail(f"expected the request as text, got {json_type(record['input'])}", field="input", case_id=cid)
    for key in _TEXT_OR_NULL:
        value = record.get(key)
        if value is not None and not isinstance(value, str):
            fail(f"expected text or null, got {json_type(value)}", field=key, case_id=cid)
        if value == "" and key in ("revision", "source_id"):
            fail("empty text: give a value or null", field=key, case_id=cid)
    context = record.get("context")
    if context is not None and not isinstance(context, str):
        items = context if isinstance(context, list) else [context]
        bad = next((i for i, x in enumerate(items) if not isinstance(x, str)), None)
        if bad is not None:
            fail(f"expected text or a list of text, got {json_type(items[bad])}",
                 field=f"context[{bad}]" if isinstance(context, list) else "context", case_id=cid)
    for key, want, kind in (("tags", list, "a list of text"), ("metadata", dict, "an object")):
        value = record.get(key, want())
        if not isinstance(value, want):
            fail(f"expected {kind}, got {json_type(value)}", field=key, case_id=cid)
        bad = next((i for i, x in enumerate(value) if not isinstance(x, str)), None) if key == "tags" else None
        if bad is not None:
            fail(f"expected a tag as text, got {json_type(value[bad])}", field=f"tags[{bad}]", case_id=cid)


# A line holding a non-finite number spells NaN, an infinity, an exponent (`1e400`) or 309 digits in a row: what
# `_may_hold_odd_number` looks for, in a few microseconds, since walking every record to find none cost a quarter of
# the format's extract (the regular expressions are kept to what Python's engine scans fast).
_EXPONENT = re.compile(rb"[eE][+0-9]")
_DIGITS = b"0123456789"
_DIGIT_RUN = re.compile(rb"[0-9]{309}")


def _may_hold_odd_number(data: bytes) -> bool:
    """Whether the JSON line `data` may hold a NaN or infinite number (False: surely none)."""
    return (b"NaN" in data or b"Infinity" in data or _EXPONENT.search(data) is not None
            or (len(data) - len(data.translate(None, _DIGITS)) >= 309 and _DIGIT_RUN.search(data) is not None))


def _finite(value: Any, where: str, cid: str) -> None:
    """Refuse a NaN or infinite number (`NaN`, `Infinity`, `1e400`) anywhere in `value`, naming its place.

    multivon-eval's loader re-writes each case as strict JSON and refuses such a number wherever it is; read, an
    argument's NaN would be written `null` by `extract`, and the extracted case would match an expected null.
    """
    if isinstance(value, float):
        if not math.isfinite(value):
            fail(f"{value} is not a finite number (a JSON number beyond ±1.8e308, or NaN/Infinity), which multivon-eval's "
                 "loader refuses: write it as a string to keep it", field=where, case_id=cid)
    elif isinstance(value, dict):
        for key, item in value.items():
            _finite(item, f"{where}.{key}" if where else str(key), cid)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _finite(item, f"{where}[{i}]", cid)


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
            out.append({"name": blank_name(item), "arguments": None})
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            out.append({"name": blank_name(item["name"]), "arguments": item.get("arguments")})
        else:
            fail("expected a tool name", field=f"expected_tool_calls[{i}]", case_id=cid)
    return out


def _call(tc: Any, where: str, cid: str, prefixes: tuple[str, ...]) -> dict[str, Any]:
    # multivon-eval's loader takes a call with a text `name` and a mapping `arguments` (missing: `{}`); so does this one.
    if not isinstance(tc, dict):
        fail(f"expected a tool call {_CALL}, got {json_type(tc)}", field=where, case_id=cid)
    _known(tc, _CALL_FIELDS, where, cid)
    name = tc.get("name")
    if "name" not in tc:
        fail(f"the tool call has no name: multivon-eval's ToolCall needs one {_CALL}", field=f"{where}.name", case_id=cid)
    if not isinstance(name, str):
        fail(f"expected the tool's name as text, got {json_type(name)}", field=f"{where}.name", case_id=cid)
    name = blank_name(name)  # (multivon loads `""`, which no trace holds: a name no tool has, `multivon_text`)
    problem = tool_name_problem(name)
    if problem:
        fail(f"{problem[1]}: a call must name its tool", field=f"{where}.name", case_id=cid)
    args = tc.get("arguments", {})
    if not isinstance(args, dict):
        # (JSON text is no exception: multivon refuses it, and a trace it cannot load is no trace it scored)
        fix = "; decode the JSON text into an object" if isinstance(args, str) else ""
        fail(f"expected the call's arguments as an object (name: value), got {json_type(args)}{fix}",
             field=f"{where}.arguments", case_id=cid)
    error = tc.get("error")
    result = tc.get("result")
    if error is True:
        error = result if isinstance(result, str) and result else "error"
    elif not isinstance(error, str) or not error:
        error = result if prefixes and isinstance(result, str) and result.startswith(prefixes) else None
    return {"id": tc.get("id"), "name": name, "arguments": args, "result": result, "error": error}


def _text(step: dict[str, Any], key: str, where: str, cid: str) -> str | None:
    """`step[key]` (`thought` or `output`): text, or None when missing; null or any other JSON type is refused, as multivon's loader does."""
    value = step.get(key)
    if key in step and not isinstance(value, str):
        fail(f"expected the step's {key} as text, got {json_type(value)}", field=f"{where}.{key}", case_id=cid)
    return value


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
    if isinstance(payload, JsonLine) and may_hold_lone_surrogate(payload.data):
        record = mended(record, keep=frozenset({"id", "case_id"}))  # (multivon loads them; an id stays: `multivon_text`)
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
        if foreign:
            fail(f"agent_trace: required list of steps is missing (and {foreign[0]!r} is no EvalCase field)",
                 field="agent_trace", case_id=cid)
        _case_types(record, cid)  # (multivon refuses a plain case for its input, not for the trace it may leave out)
        trace = []
        fields["metadata"] = {**(fields.get("metadata") or {}), NO_AGENT_TRACE: True}
    elif not isinstance(trace, list):
        fail(f"expected a list of steps {_STEP}, got {json_type(trace)}", field="agent_trace", case_id=cid)
    else:
        _known(record, _FIELDS, "", cid)
    history = _history(record, cid)
    steps, users = _earlier(history, record.get("input")) if history else ([], record.get("user_messages") or [])
    last_output = None
    for i, step in enumerate(trace):
        where = f"agent_trace[{i}]"
        if not isinstance(step, dict):
            fail(f"expected a step {_STEP}, got {json_type(step)}", field=where, case_id=cid)
        _known(step, _STEP_FIELDS, where, cid)
        calls = step.get("tool_calls", [])
        if not isinstance(calls, list):
            fail(f"expected a list of tool calls, got {json_type(calls)}", field=f"{where}.tool_calls", case_id=cid)
        output = _text(step, "output", where, cid)
        steps.append(
            {
                "thought": _text(step, "thought", where, cid),
                "tool_calls": [_call(tc, f"{where}.tool_calls[{j}]", cid, prefixes) for j, tc in enumerate(calls)],
                "output": output,
            }
        )
        if output is not None:
            last_output = output
    _case_types(record, cid)  # (after the steps: a record's trace problem is the one worth naming first)
    if not isinstance(payload, JsonLine) or _may_hold_odd_number(payload.data):
        _finite(record, "", cid)
    final = record.get("actual_output", record.get("output", last_output))
    # Without `conversation`, multivon's EvalCase records one request (`input`); a record may add the user's turns in the native shape.
    return build_case({**fields, "trace": {"steps": steps, "user_messages": users, "output": final}})


register_format(Format("multivon", read=read_multivon, adapt=adapt, prepare=lambda ds: Options.model_validate(ds.options), options=Options))
