"""Format `json-path`: any JSONL, mapped to case fields by dotted paths in the config.

For a one-off format no code is needed::

    dataset:
      path: runs.jsonl
      format: json-path
      options: {id: meta.run_id, input: question, output: answer.text,
                tool_calls: "steps.*.calls", call: {name: tool, arguments: args, result: output},
                expected_tool_calls: gold.calls}

Path syntax (full grammar in `json_path_syntax`): keys joined by dots
(`answer.text`); an integer segment indexes a list (`messages.0.content`,
`-1` is the last item; `messages[0]` too); `*` maps over a list and
flattens (`steps.*.calls` is every call of every step; items whose value is
absent or null add nothing). A filter keeps the items of a list whose
dotted field equals (`=`) or differs from (`!=`) a value and maps the rest
of the path over them like `*`: `spans[span_data.type=function].span_data.name`;
`[n]` after a filter picks its n-th match (`spans[span_data.type=generation][-1]`).
Values are JSON scalars (`1`, `true`, `null`; `"a b"` quoted) compared with
their type (`true` is not `1`, `1` is not `"1"`). A key that is absent gives
"no value" (a record without `tool_calls` made no call), as does a filter
with fewer matches than its index; a path that runs into a scalar or indexes
past a list is an `invalid_input` naming the option and the path. A path
that does not parse is a config error naming the option and the character.

Mapped case fields: `id` (default `"<file>:<line>"`; text, or an integer
read as its decimal text, `42` as `"42"`, as `native` reads one: any other
value, a boolean, a fraction, a list or an object, is the record's
`invalid_input`, as is such a call `id`), `input`, `output`,
`expected_output`, `expected_tool_calls`, `expected_passages`, `context`,
`tags`, `metadata`, `tool_calls`, `system_prompt` (text, or a list of texts: the trace's `system_prompts`,
such as `messages[role=system].content`). Each tool call object is read with `call`
(sub-paths for `id`, `name`, `arguments`, `result`, `error`; defaults are the
same names), each expected call with `expected_call` (`name`,
`arguments`). The trace is one step holding the calls in order, with
`output` as the final answer; it is present when `tool_calls`, `output` or
`system_prompt` is mapped. A call's `error` that is `true` becomes the text of its result
(or `"error"`); `false`/absent means it succeeded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, register_format
from tracejudge.stages.load import RawRecord
from tracejudge.stages.extract.common import build_case, decode_line, fail, json_type, read_lines
from tracejudge.stages.extract.json_path_check import MappingCheck
from tracejudge.stages.extract.lone_text import mended_case, record_named
from tracejudge.stages.extract.json_path_syntax import MISSING, parse_path, walk
from tracejudge.stages.extract.system_prompts import distinct_prompts

__all__ = ["Options", "adapt", "get_path"]

_MISSING = MISSING


def _check_path(value: str | None) -> str | None:
    if value is not None:
        parse_path(value)  # a PathError names the character where the expression goes wrong
    return value


class CallPaths(BaseModel):
    """Sub-paths inside one tool-call object."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = "id"
    name: str = "name"
    arguments: str | None = "arguments"
    result: str | None = "result"
    error: str | None = "error"

    @field_validator("*")
    @classmethod
    def _paths(cls, value: str | None) -> str | None:
        return _check_path(value)


class ExpectedCallPaths(BaseModel):
    """Sub-paths inside one expected-call object (a bare string item is taken as the name)."""

    model_config = ConfigDict(extra="forbid")

    name: str = "name"
    arguments: str | None = "arguments"

    @field_validator("*")
    @classmethod
    def _paths(cls, value: str | None) -> str | None:
        return _check_path(value)


class Options(BaseModel):
    """`dataset.options` of `json-path`: one dotted path per case field (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = None
    input: str | None = None
    output: str | None = None
    expected_output: str | None = None
    expected_tool_calls: str | None = None
    expected_passages: str | None = None
    context: str | None = None
    tags: str | None = None
    metadata: str | None = None
    tool_calls: str | None = None
    system_prompt: str | None = None
    call: CallPaths = CallPaths()
    expected_call: ExpectedCallPaths = ExpectedCallPaths()

    @field_validator("id", "input", "output", "expected_output", "expected_tool_calls", "expected_passages", "context", "tags", "metadata", "tool_calls",
                     "system_prompt")
    @classmethod
    def _paths(cls, value: str | None) -> str | None:
        return _check_path(value)


def get_path(data: Any, path: str) -> Any:
    """The value at `path` in `data` (syntax: `json_path_syntax`); `_MISSING` when a key is absent.

    Raises `PathError` (a `ValueError`) for a path that does not parse, and
    `ValueError` when the path runs into a scalar, indexes past a list, or
    uses a non-integer key on a list.
    """
    return walk(data, parse_path(path))


def _get(data: Any, path: str | None, option: str, cid: str | None) -> Any:
    if path is None:
        return _MISSING
    try:
        return get_path(data, path)
    except ValueError as exc:
        fail(f"option {option} ({path!r}): {exc}", field=path, case_id=cid)


def _id_text(value: Any, option: str, path: str, field: str, cid: str | None) -> str:
    """An id read at `path` as the case or call id: text as it is, an integer (not a boolean) as its decimal text.

    Raises `AdapterError` naming the option for any other JSON value: `str()` made `true` the id `"True"` and `["x"]` the
    id `"['x']"`, Python's spelling, not the file's, which took the place of a record whose id is that text.
    """
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    fail(f"option {option} ({path!r}): an id is text or an integer, got {json_type(value)} ({json.dumps(value)[:80]})",
         field=field, case_id=cid)


def _calls(value: Any, paths: CallPaths, cid: str) -> list[dict[str, Any]]:
    if value is _MISSING or value is None:
        return []
    if not isinstance(value, list):
        value = [value]
    out = []
    for k, item in enumerate(value):
        got = {key: _get(item, getattr(paths, key), f"call.{key}", cid) for key in ("id", "name", "arguments", "result", "error")}
        name = got["name"]
        if not isinstance(name, str) or not name:
            fail(f"tool call {k} has no name at {paths.name!r}", field=f"tool_calls[{k}].{paths.name}", case_id=cid)
        call: dict[str, Any] = {"name": name}
        if got["id"] is not _MISSING and got["id"] is not None:
            call["id"] = _id_text(got["id"], "call.id", str(paths.id), f"tool_calls[{k}].{paths.id}", cid)
        if got["arguments"] is not _MISSING:
            call["arguments"] = got["arguments"]
        result = None if got["result"] is _MISSING else got["result"]
        call["result"] = result
        error = got["error"]
        if error is True:
            call["error"] = result if isinstance(result, str) and result else "error"
        elif isinstance(error, str) and error:
            call["error"] = error
        out.append(call)
    return out


def _expected(value: Any, paths: ExpectedCallPaths, cid: str) -> list[dict[str, Any]] | None:
    if value is _MISSING or value is None:
        return None
    if not isinstance(value, list):
        fail("expected_tool_calls must map to a list", field="expected_tool_calls", case_id=cid)
    out = []
    for k, item in enumerate(value):
        if isinstance(item, str):
            out.append({"name": item, "arguments": None})
            continue
        name = _get(item, paths.name, "expected_call.name", cid)
        if not isinstance(name, str):
            fail(f"expected call {k} has no name at {paths.name!r}", field=f"expected_tool_calls[{k}]", case_id=cid)
        args = _get(item, paths.arguments, "expected_call.arguments", cid)
        out.append({"name": name, "arguments": None if args is _MISSING else args})
    return out


def adapt(payload: Any, options: Options | None = None) -> Case:
    """Map one JSONL record to a `Case` with the configured paths.

    Raises `AdapterError` naming the option and path that could not be
    followed, or the tool call without a name.
    """
    opts = options or Options()
    record, default_id = decode_line(payload)
    cid_value = _get(record, opts.id, "id", None)
    # (Refused under no id of its own: the record's `<dataset path>:<line>`.)
    cid = default_id if cid_value is _MISSING or cid_value is None else _id_text(cid_value, "id", str(opts.id), str(opts.id), None)
    case: dict[str, Any] = {"id": cid}
    for key in ("input", "expected_output", "expected_passages", "context", "tags", "metadata"):
        value = _get(record, getattr(opts, key), key, cid)
        if value is not _MISSING and value is not None:
            case[key] = value
    expected = _expected(_get(record, opts.expected_tool_calls, "expected_tool_calls", cid), opts.expected_call, cid)
    if expected is not None:
        case["expected_tool_calls"] = expected
    if opts.tool_calls is not None or opts.output is not None or opts.system_prompt is not None:
        calls = _calls(_get(record, opts.tool_calls, "tool_calls", cid), opts.call, cid)
        output = _get(record, opts.output, "output", cid)
        output = None if output is _MISSING else output
        case["trace"] = {"steps": [{"tool_calls": calls}] if calls else [], "output": output}
        if prompts := _system(_get(record, opts.system_prompt, "system_prompt", cid), str(opts.system_prompt), cid):
            case["trace"]["system_prompts"] = prompts
    return build_case(mended_case(case, record_named(default_id, cid), fmt="json-path", sources=(record,)))


def _system(value: Any, path: str, cid: str) -> list[dict[str, Any]]:
    """The trace's `system_prompts` from what `system_prompt` maps: a text, or a list of texts (each distinct one once)."""
    if value is _MISSING or value is None:
        return []
    texts = value if isinstance(value, list) else [value]
    for k, text in enumerate(texts):
        if not isinstance(text, str):
            fail(f"option system_prompt ({path!r}): a system prompt is text, got {json_type(text)}",
                 field=path if texts is not value else f"{path}[{k}]", case_id=cid)
    return distinct_prompts((None, text) for text in texts)


def read(dataset: Any) -> Iterator[RawRecord]:
    """`read_lines`, with one warning at the end of the read per mapping that matched nothing (`json_path_check`)."""
    check = MappingCheck(Options.model_validate(dataset.options), str(dataset.path))
    for raw in read_lines(dataset):
        check.see(raw.payload.data)
        yield raw
    check.report()


register_format(Format("json-path", read=read, count=lambda ds: sum(1 for _ in read_lines(ds)), adapt=adapt, prepare=lambda ds: Options.model_validate(ds.options), options=Options))
