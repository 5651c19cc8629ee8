"""The OpenAI Agents SDK's tool outputs as its three trace conventions record them: structured outputs, and its timeout.

A function tool (an MCP server's tool alike) may return the SDK's structured tool outputs: `ToolOutputText`,
`ToolOutputImage`, `ToolOutputFileContent`, the same as mappings (`{"type": "text", "text": …}`; the SDK turns an MCP
`CallToolResult`'s text content into one), or a list of them. The SDK shows the model their content (`input_text`,
`input_image`, `input_file` items; a Chat Completions tool message's content parts), and the traces keep the value the
tool returned as each writer turned it into text:

- the SDK's export (`FunctionSpanData.export()`): `str(value)`, a mapping's Python repr (`{'type': 'text', 'text':
  'shipped'}`), a model's `type='text' text='shipped'`, a list's `[ToolOutputText(type='text', text='a'), …]`;
- OpenInference: a mapping as JSON, a model's `str()`, a list as the JSON list of its items' `str()`;
- OpenLLMetry: a mapping as JSON (a model, or a list of them, it fails on: no span; the next request's input shows
  the content the model got, a list of `input_text` parts, which `messages` reads as its text).

`tool_output` reads each back as what the model was shown: the text (the texts of several, one a line, as a tool
message's text parts read anywhere), else the items as mappings of the fields they set (an image or a file among
them). Anything else is left as it is: only a value the SDK itself would take for a structured output is read so.
Python text is parsed only when its first item is one (`_may_be_outputs`, a regular expression over that item alone,
its values nested at most two deep), and items are read until one is not: a large tool output that is other data
(a long list's `repr`) costs a glance, not a parse.

A function tool given a `timeout` that ran out returns, under the default `timeout_behavior="error_as_result"` and
no `timeout_error_function`, the SDK's message `Tool '<name>' timed out after <seconds> seconds.` as its output (what
the model is shown), and the SDK records no error on its span: the call failed all the same (its body was cancelled),
and `timeout_error` says so, the message its error. A custom message (`timeout_error_function`) cannot be told apart
from an output; `timeout_behavior="raise_exception"` records the error on the span itself.

An MCP server's tool that failed answers `isError` with text, which the SDK passes on as the tool's output, recording
no error (nor the flag) on its span. The MCP Python SDK's server (`mcp` 2.x `MCPServer`; FastMCP alike) words every
such failure of a tool that raised `Error executing tool <name>` (then `: <the ToolError's text>`): `mcp_error` reads
that text, on a call of an MCP tool (the export's `mcp_data`; under OpenInference a tool an `mcp_tools` span of the
trace lists), as the call's error. Any other `isError` result (a tool returning `CallToolResult(is_error=True)` of its
own text, another server's wording) is in no trace and reads as the tool's output; OpenLLMetry records no `mcp_tools`
span, so there the call is not known to be an MCP tool's.

`read_tool_outputs` applies both to the tool spans of a group recorded by OpenInference's or OpenLLMetry's
instrumentation of the SDK; format `openai-agents` applies them as it reads a `function` span. A call whose tool span
is not in the trace (an exporter dropped it) has as its result the tool message the next request sent: when that is
the timeout message for the call's tool, `read_tool_outputs` marks it failed there too (`is_error`, under all three).
"""

from __future__ import annotations

import ast
import re
from typing import Any

from tracejudge.stages.extract.common import maybe_json, python_literal
from tracejudge.stages.extract.otel.conventions.scopeless import agents_sdk_group, agents_sdk_span, from_instrumentation
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View

__all__ = ["mcp_error", "read_tool_outputs", "timeout_error", "tool_output"]

_OI_SCOPE = "openinference.instrumentation.openai_agents"
_TL_SCOPE = "opentelemetry.instrumentation.openai_agents"
# the fields of each structured output the SDK validates a returned value against (`agents.tool`), all text or None
_FIELDS = {"text": ("text",), "image": ("image_url", "file_id", "detail"), "file": ("file_data", "file_url", "file_id", "filename")}
_MODELS = {"ToolOutputText": "text", "ToolOutputImage": "image", "ToolOutputFileContent": "file"}
# a model's str(): `field=<repr of a str, or None>` separated by single spaces
_FIELD = r"""[a-z_]+=(?:'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"|None)"""
_MODEL_STR = re.compile(rf"type=(?:'(?:text|image|file)')(?: {_FIELD})*")
_PAIR = re.compile(rf"([a-z_]+)=('(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"|None)")
_TIMEOUT = re.compile(r"Tool '(.+)' timed out after (?:\d+(?:\.\d*)?(?:e[+-]?\d+)?|inf) seconds\.")
_MCP_FAILED = re.compile(r"Error executing tool (\S+?)(?:: .*)?", re.S)  # the MCP Python SDK server's isError text
_LIMIT = 1_000_000  # longer text is never parsed as Python (an output that long is data, kept as it is)
# One structured output item in Python text: a mapping or one of the SDK's models, its values literals, or brackets
# nested at most two deep (`_may_be_outputs`); strings are skipped whole, so a bracket inside one does not count.
# (possessive: a run of plain characters is taken whole and never given back, so a match fails or succeeds in one pass)
_STR = r"'(?:[^'\\\n]++|\\.)*+'|" + r'"(?:[^"\\\n]++|\\.)*+"'
_FLAT = rf"""(?:{_STR}|[^{{}}\[\]()'"]++)*+"""
_NEST1 = rf"""(?:{_STR}|[^{{}}\[\]()'"]++|\{{{_FLAT}\}}|\[{_FLAT}\]|\({_FLAT}\))*+"""
_NEST2 = rf"""(?:{_STR}|[^{{}}\[\]()'"]++|\{{{_NEST1}\}}|\[{_NEST1}\]|\({_NEST1}\))*+"""
_TYPED = re.compile(r"""(['"])type\1\s*:\s*(['"])(?:text|image|file)\2|\(type='(?:text|image|file)'""")  # (its `type`, as a mapping or a model's repr writes it)
_FIRST_ITEM = re.compile(rf"""\[?\s*(\{{{_NEST2}\}}|(?:{'|'.join(_MODELS)})\({_NEST2}\))""")


def tool_output(value: Any) -> Any:
    """`value` (a tool's output as a trace recorded it) as what the model was shown when it is the SDK's structured
    output: its text, or its items as mappings; else `value` unchanged (module docstring)."""
    parsed = _parsed(value) if isinstance(value, str) else value
    items = parsed if isinstance(parsed, list) else [parsed]
    got = []
    for i in items:
        item = _item(i)
        if item is None:
            return value  # (the first item that is none ends the look: a long list of data is not read through)
        got.append(item)
    if not got:
        return value
    if all(g["type"] == "text" for g in got):
        return "\n".join(g["text"] for g in got)
    return got


def timeout_error(name: Any, output: Any) -> str | None:
    """The SDK's timeout message when `output` is the one it gives a call of tool `name` that ran out of time, else None."""
    found = _TIMEOUT.fullmatch(output) if isinstance(output, str) and len(output) < 2_000 else None
    if found is None or not isinstance(name, str) or not name:
        return None
    said = found.group(1)
    return output if said == name or name.endswith("." + said) else None  # (a namespaced tool's span may name its namespace)


def mcp_error(name: Any, output: Any) -> str | None:
    """`output` when it is the MCP Python SDK server's text for a call of its tool `name` that failed (`isError`), else
    None (module docstring: only for a tool known to be an MCP server's)."""
    found = _MCP_FAILED.fullmatch(output) if isinstance(output, str) and len(output) < _LIMIT else None
    if found is None or not isinstance(name, str) or not name:
        return None
    said = found.group(1)
    return output if said == name or name.endswith("." + said) or name.endswith("__" + said) else None


def _mcp_tools(spans: list[Span], loose: bool) -> set[str]:
    """The tools the `mcp_tools` spans of OpenInference's Agents instrumentation list (`output.value`, a JSON list)."""
    names: set[str] = set()
    for span in spans:
        listed = maybe_json(span.attrs.get("output.value")) if span.name == "mcp_tools" and _agents_scope(span, loose) else None
        if isinstance(listed, list):
            names.update(n for n in listed if isinstance(n, str))
    return names


def read_tool_outputs(spans: list[Span], views: dict[str, View]) -> None:
    """Read the tool spans of `spans` (a group) that OpenInference's or OpenLLMetry's instrumentation of the Agents SDK
    recorded: a structured output as what the model was shown (`tool_output`), a timed-out call's message as its error
    too (`timeout_error`); and in the Agents SDK's model requests (all three of its conventions: the export's reader is
    `openai-agents`), a tool message that is such a message `is_error` (module docstring). In place; running it twice
    changes nothing more."""
    loose = agents_sdk_group(spans)  # (spans read without their scope: the Agents SDK's group, `scopeless`)
    mcp: set[str] | None = None
    for span in spans:
        v = views[span.span_id]
        if v.role != "tool" or not _agents_tool(span, loose):
            continue
        if v.result is not MISSING:
            v.result = tool_output(v.result)
        v.error = v.error or timeout_error(v.tool_name, v.result)
        if not v.error and isinstance(v.result, str) and v.result.startswith("Error executing tool "):
            mcp = _mcp_tools(spans, loose) if mcp is None else mcp
            # an MCP server's failed tool: its `isError` text, passed on as the output with no error recorded
            v.error = mcp_error(v.tool_name, v.result) if v.tool_name in mcp else None
    models = [v for span in spans if (v := views[span.span_id]).role == "model" and (_agents_scope(span, loose) or "openai-agents" in v.conventions)]
    if not any(isinstance(p.get("response"), str) and "timed out after" in p["response"]
               for v in models for m in v.inputs or [] for p in _parts(m, "tool_call_response")):
        return  # (the cheap test first)
    # the tool each call id named, wherever a request asked for it or replayed it (OpenLLMetry replays a Responses API
    # call under its item id, `fc_…`, its output under the call id: the request that asked has the call id)
    names: dict[str, set[str]] = {}
    for v in models:
        for m in [*(v.inputs or []), *(v.outputs or [])]:
            for p in _parts(m, "tool_call"):
                if p.get("id") is not None and isinstance(p.get("name"), str):
                    names.setdefault(str(p["id"]), set()).add(p["name"])
    for v in models:
        if v.inputs:
            v.inputs = _timed_out_replies(v.inputs, names)


def _timed_out_replies(inputs: list[dict[str, Any]], names: dict[str, set[str]]) -> list[dict[str, Any]]:
    """`inputs` (a request's messages) with each tool message that is the SDK's timeout message for the call it
    answers (`names`: the tools each call id named) marked `is_error`: the call failed (module docstring)."""
    out = []
    for m in inputs:
        hit = [id(p) for p in _parts(m, "tool_call_response") if p.get("id") is not None and not p.get("is_error")
               and any(timeout_error(n, p.get("response")) for n in names.get(str(p["id"]), ()))]
        # (copies: a message list may be shared with another view)
        out.append({**m, "parts": [{**p, "is_error": True} if id(p) in hit else p for p in m["parts"]]} if hit else m)
    return out


def _parts(msg: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    parts = msg.get("parts")
    return [p for p in parts if isinstance(p, dict) and p.get("type") == kind] if isinstance(parts, list) else []


def _agents_scope(span: Span, loose: bool = False) -> bool:
    """Whether `span` comes from OpenInference's or OpenLLMetry's instrumentation of the Agents SDK (its scope; without
    one, OpenInference's as it writes its spans, in a group `loose` says is its: `scopeless.agents_sdk_group`)."""
    return from_instrumentation(span, lambda sc: any(sc == s or sc.startswith(s + ".") for s in (_OI_SCOPE, _TL_SCOPE)),
                                lambda s: loose and agents_sdk_span(s))


def _agents_tool(span: Span, loose: bool = False) -> bool:
    """Whether `span` is a tool span of the Agents SDK's OpenInference or OpenLLMetry instrumentation (without a scope,
    OpenInference's as it writes its spans, in a group `loose` says is its: `scopeless.agents_sdk_group`)."""
    if from_instrumentation(span, lambda sc: sc == _OI_SCOPE or sc.startswith(_OI_SCOPE + "."), lambda s: loose and agents_sdk_span(s)):
        return True
    # here: openllmetry_agents imports agents_sdk and openai_agents, which import this module
    from tracejudge.stages.extract.otel.conventions.openllmetry_agents import own

    return own(span, "tool")


def _parsed(text: str) -> Any:
    """`text` as the value it writes: JSON, a Python repr of mappings, lists and the SDK's models, or a model's `str()`."""
    text = text.strip()
    if len(text) > _LIMIT or not text:
        return None
    if text[0] in "{[":
        decoded = maybe_json(text)
        if decoded is not text:
            return decoded
        if not _may_be_outputs(text):
            return None
        try:
            node = ast.parse(text, mode="eval").body
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return None
        got = _node(node)
        return None if got is MISSING else got
    return _model_str(text)


def _may_be_outputs(text: str) -> bool:
    """Whether Python text (a mapping or a list) starts with a structured output item (`_FIRST_ITEM`), read as one.

    Parsing the whole text takes time in proportion to its length however little of it is an output: a tool that
    returned a long list (`['a', 'b', …]`, a megabyte of it) is refused here at its first item, which alone is parsed.
    """
    found = _FIRST_ITEM.match(text)
    if found is None or _TYPED.search(found.group(1)) is None:
        return False
    try:
        node = ast.parse(found.group(1), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    got = _node(node)
    return got is not MISSING and _item(got) is not None


def _node(node: ast.AST) -> Any:
    """A parsed Python repr as its value: literals, lists, and calls of the SDK's output models with keyword literals
    (a model's repr) as mappings; `MISSING` for anything else. Nothing is evaluated."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _MODELS and not node.args:
        fields = {k.arg: python_literal(k.value, MISSING) for k in node.keywords}
        return MISSING if None in fields or MISSING in fields.values() else {"type": _MODELS[node.func.id], **fields}
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_node(e) for e in node.elts]
        return MISSING if any(i is MISSING for i in items) else items
    return python_literal(node, MISSING)


def _model_str(text: str) -> dict[str, Any] | None:
    """The fields of one of the SDK's output models' `str()` (`type='text' text='…'`), else None."""
    if not _MODEL_STR.fullmatch(text):
        return None
    return {k: python_literal(v) for k, v in _PAIR.findall(text)}


def _item(value: Any) -> dict[str, Any] | None:
    """One structured output item as the SDK would take it, as a mapping of the fields it sets; None when it is none."""
    if isinstance(value, str):
        value = _model_str(value.strip()) if len(value) < _LIMIT else None
    if not isinstance(value, dict) or not isinstance(value.get("type"), str) or value["type"] not in _FIELDS:
        return None
    fields = _FIELDS[value["type"]]
    item = {"type": value["type"], **{k: value[k] for k in fields if value.get(k) is not None}}
    if any(not isinstance(item[k], str) for k in fields if k in item) or len(item) == 1:
        return None  # (a text needs its text, an image or a file one of its sources)
    return item
