"""pydantic-ai's own keys, beside the GenAI ones it writes.

What counts: `tool_arguments` / `tool_response` on tool spans (instrumentation
versions before the GenAI keys); its output functions (`running output
function`, or an `execute_tool final_result` span logged as one) and output
tools named in `model_request_parameters` are the run's answer, not tool
calls; deferred tools (`pydantic_ai.tool.deferral.name`, or a function tool
of kind `unapproved` / `external`) were asked for but not run; the agent
span's `final_result` is the run's answer.
"""

from __future__ import annotations

from tracejudge.stages.extract.common import maybe_json
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View, present

__all__ = ["NAME", "read"]

NAME = "pydantic-ai"
DEFERRAL_KEY = "pydantic_ai.tool.deferral.name"
_DEFERRED_KINDS = {"unapproved": "requires_approval", "external": "external"}
_OUTPUT_FUNCTION_MSG = "running output function"


def read(span: Span) -> View | None:
    """The pydantic-ai reading of `span`, or `None` when it carries none of its keys."""
    a = span.attrs
    msg = a.get("logfire.msg")
    output_fn = (isinstance(msg, str) and msg.startswith(_OUTPUT_FUNCTION_MSG)) or span.name.startswith(_OUTPUT_FUNCTION_MSG)
    keys = ("tool_arguments", "tool_response", DEFERRAL_KEY, "model_request_parameters", "final_result")
    if not output_fn and not any(k in a for k in keys):
        return None
    v = View()
    if output_fn:
        v.answer_tool = True
        cid = a.get("gen_ai.tool.call.id")
        v.call_id = str(cid) if present(cid) else None
    if present(a.get("tool_arguments")):
        v.args = a["tool_arguments"]
    if present(a.get("tool_response")):
        v.result = maybe_json(a["tool_response"])
    deferral = a.get(DEFERRAL_KEY)
    if present(deferral) and deferral != "":
        v.deferral = str(deferral)
    params = maybe_json(a.get("model_request_parameters"))
    if isinstance(params, dict):
        v.output_tools = {t["name"] for t in params.get("output_tools") or [] if isinstance(t, dict) and isinstance(t.get("name"), str)}
        v.deferred_tools = {
            t["name"]: _DEFERRED_KINDS[t["kind"]]
            for t in params.get("function_tools") or []
            if isinstance(t, dict) and isinstance(t.get("name"), str) and t.get("kind") in _DEFERRED_KINDS
        }
    final = a.get("final_result")
    if a.get("gen_ai.operation.name") == "invoke_agent" and isinstance(final, str) and present(final):
        v.answer = final
    return v
