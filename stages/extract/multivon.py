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
else the last step output. `id` is the record's `id`, else multivon's own `case_id`, else `"<file>:<line>"`; a key that is no
`EvalCase`, `AgentStep` or `ToolCall` field (nor a native case's) is refused, naming the nearest one
(`expected_tool_call`: did you mean `expected_tool_calls`?); `context`,
`expected_output`, `tags`, `metadata` pass through; `user_messages` (the
native shape, `[{"step", "content"}]`) becomes the trace's user turns. A record
without `agent_trace` is read as multivon reads it: its output is scored by the
judges, and `ToolCallAccuracy` skips it (see `adapt`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, register_format
from tracejudge.stages.extract.common import CASE_FIELDS, build_case, case_fields, decode_line, fail, read_lines

__all__ = ["NO_AGENT_TRACE", "Options", "adapt"]

NO_AGENT_TRACE = "multivon_no_agent_trace"
"""The metadata key set (true) on a case read from a record without `agent_trace`: its steps were not recorded."""


# multivon-eval's `EvalCase` fields, and what this reader takes beside them (`id`, the output, `user_messages`).
_PLAIN_FIELDS = frozenset({"input", "expected_output", "context", "conversation", "agent_trace", "expected_tool_calls", "metadata",
                           "tags", "reference_output", "case_id", "revision", "source_id", "id", "actual_output", "output",
                           "user_messages"})
_NATIVE = frozenset(CASE_FIELDS)  # a native case's own keys (`expected_passages`, per-case `metrics`, ...) pass through too


_STEP_FIELDS = ("thought", "tool_calls", "output")  # multivon-eval's `AgentStep`
_CALL_FIELDS = ("name", "arguments", "result", "id", "error")  # its `ToolCall`, and a call's id and error besides


def _known(obj: dict[str, Any], allowed: Any, where: str, cid: str) -> None:
    # A misspelt key (`expected_tool_call`, `argumnets`) would score against nothing: refused, naming the nearest.
    for key in obj:
        if key not in allowed:
            from tracejudge.core.suggest import did_you_mean

            hint = did_you_mean(str(key), allowed, n=1, typo=True)
            fail(f"unknown field {key!r} (not a multivon-eval field){'; ' + hint if hint else ''}",
                 field=f"{where}.{key}" if where else str(key), case_id=cid)


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
    # multivon-eval's own id is `case_id` (`EvalCase.case_id`, as its `save_jsonl` writes it); `id` wins when both are given.
    named = {**record, "id": record["case_id"]} if "id" not in record and isinstance(record.get("case_id"), (str, int)) else record
    fields = case_fields(named, default_id)
    cid = str(fields["id"])
    fields["expected_tool_calls"] = _expected(record.get("expected_tool_calls"), cid)
    trace = record.get("agent_trace")
    if trace is None:
        # multivon's plain (non-agent) cases: its tool evaluators skip them, its output judges score the answer. Only a
        # record made of `EvalCase`'s own fields: another format's record (a native `trace`, τ-bench's `traj`) is not one.
        foreign = sorted(set(record) - _PLAIN_FIELDS)
        from tracejudge.core.suggest import closest

        if any(closest(str(k), _PLAIN_FIELDS, 1, typo=True) for k in foreign):
            _known(record, _PLAIN_FIELDS, "", cid)  # a misspelt EvalCase field: named, with the one meant
        if foreign or not isinstance(record.get("input"), str):
            fail("agent_trace: required list of steps is missing" + (f" (and {foreign[0]!r} is no EvalCase field)" if foreign
                 else ""), field="agent_trace", case_id=cid)
        trace = []
        fields["metadata"] = {**(fields.get("metadata") or {}), NO_AGENT_TRACE: True}
    elif not isinstance(trace, list):
        fail("agent_trace must be a list of steps", field="agent_trace", case_id=cid)
    else:
        _known(record, _PLAIN_FIELDS | _NATIVE, "", cid)
    steps = []
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
    # multivon's EvalCase records one request (`input`); a record may add the conversation's user turns in the native shape.
    users = record.get("user_messages") or []
    return build_case({**fields, "trace": {"steps": steps, "user_messages": users, "output": final}})


register_format(Format("multivon", read=read_lines, adapt=adapt, prepare=lambda ds: Options.model_validate(ds.options), options=Options))
