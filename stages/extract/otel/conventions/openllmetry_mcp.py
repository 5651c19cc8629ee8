"""OpenLLMetry's MCP client instrumentation (`opentelemetry-instrumentation-mcp`): a `tools/call` as a tool span.

The instrumentation (0.62.4, on `mcp` 1.x: it patches `mcp.shared.session.BaseSession.send_request`) writes each
`ClientSession.call_tool(name, arguments)` as a span `<name>.tool` of kind `tool` (scope
`opentelemetry.instrumentation.mcp.instrumentation`) whose payloads are its own wrappers, not the call's:

- `traceloop.entity.input`: `{"tool_name": <name>, "arguments": {…}}`: the arguments are the call's, the name beside them;
- `traceloop.entity.output`: `{"result": <the text of the result's first content item>}`, with `"is_error": true` when
  the server answered `isError` (a tool that raised: the MCP Python SDK server says `Error executing tool <name>: …`);
  the span's status is then ERROR, its description that text, and `error.type` the instrumentation's label `tool_error`.

Read as they were, the call had the wrapper as its arguments (no model's call matched them, so a plain loop's MCP
call, a trace of its own, joined no conversation: `strays`) and `{"result": …, "is_error": true}` as its result, and a
failed call's error was `tool_error: <text>`. `mcp_call` reads the call's arguments, its result text, and a failed
call's error as that text, as the Agents SDK reader reads the same server's failure (`agents_outputs.mcp_error`).
A span read without its scope (from a Phoenix server) is told by its name and that input wrapper (`_marked`).
"""

from __future__ import annotations

from tracejudge.stages.extract.otel.conventions.scopeless import from_instrumentation
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View, unjson

__all__ = ["SCOPE", "mcp_call"]

SCOPE = "opentelemetry.instrumentation.mcp"


def mcp_call(span: Span, v: View) -> None:
    """Give `v` (the OpenLLMetry reading of tool span `span`) the arguments, result and error its MCP wrappers hold,
    when `span` is the MCP instrumentation's `tools/call` (module docstring); in place, nothing otherwise."""
    a = span.attrs
    asked = unjson(a.get("traceloop.entity.input"))
    if not from_instrumentation(span, SCOPE, lambda s: _marked(s, asked, v.tool_name)):
        return
    if isinstance(asked, dict) and asked.get("tool_name") == v.tool_name and set(asked) <= {"tool_name", "arguments"}:
        args = asked.get("arguments")
        v.args, v.args_wrapped = ({} if args is None else args), False  # (`call_tool(name)`: sent with no arguments)
    got = unjson(a.get("traceloop.entity.output"))
    if isinstance(got, dict) and set(got) <= {"result", "is_error"} and got:
        v.result = got["result"] if "result" in got else MISSING
        if got.get("is_error") is True:  # the server's `isError`: its text is the failure (the status says the same)
            said = got.get("result")
            v.error = said if isinstance(said, str) and said else span.status_message or "tool_error"


def _marked(span: Span, asked: object, name: str | None) -> bool:
    """Whether a span without a scope (read back from Phoenix) is the MCP instrumentation's `tools/call`: named
    `<tool>.tool`, its input the wrapper only it writes, `{"tool_name": <tool>, "arguments": …}` (OpenLLMetry's own
    `@tool` writes `{"args": …, "kwargs": …}`)."""
    return (bool(name) and span.name == f"{name}.tool" and isinstance(asked, dict) and asked.get("tool_name") == name
            and set(asked) <= {"tool_name", "arguments"})
