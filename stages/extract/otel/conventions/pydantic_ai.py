"""pydantic-ai's own keys, beside the GenAI ones it writes.

What counts: `tool_arguments` / `tool_response` on tool spans (instrumentation
versions before the GenAI keys); its output functions (`running output
function`, or an `execute_tool final_result` span logged as one) and output
tools named in `model_request_parameters` are the run's answer, not tool
calls; deferred tools (`pydantic_ai.tool.deferral.name`, or a function tool
of kind `unapproved` / `external`) were asked for but not run; the agent
span's `final_result` is the run's answer.

A request that calls an output tool (structured output, `output_type=` a
model) gave its answer through that call: its arguments are the answer
(`answer_texts`, compact JSON as pydantic-ai writes `final_result`; the
value under `outer_typed_dict_key` for a type it wraps, `{"response": 21}`
for `int`, a string as it is; arguments that are no JSON as written). A
later request's input shows what pydantic-ai sent back for such a call:
`Final result processed.` (or another of its status notes: a second output
call of the same reply, one whose value lost to another) when it took or
skipped the answer, anything else when it refused it (`refused_answers`):
validation errors (a list of pydantic error details, said as `loc: msg`), an
output validator's or function's `ModelRetry` message, or from 1.x on the
retry prompt text itself. A call whose response recorded no content
(`include_content=False`) cannot be told refused and counts as taken, as
does the last attempt of a run that ran out of output retries (no request
came after it: the run's error says so).
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.stages.extract.common import maybe_json
from tracejudge.stages.extract.otel.conventions.genai import messages
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View, present, unjson

__all__ = ["NAME", "read"]

NAME = "pydantic-ai"
DEFERRAL_KEY = "pydantic_ai.tool.deferral.name"
_DEFERRED_KINDS = {"unapproved": "requires_approval", "external": "external"}
_OUTPUT_FUNCTION_MSG = "running output function"
# What pydantic-ai sends back for an output call it took or skipped (`_tool_execution`'s status notes, 1.x and 2.x):
# anything else answering an output call is its refusal.
_STATUS_NOTES = ("Final result processed.", "Output tool not used", "Output not used", "Output tool processed")
_REFUSED = "output rejected: "


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
        outer = {t["name"]: t.get("outer_typed_dict_key") for t in params.get("output_tools") or [] if isinstance(t, dict) and isinstance(t.get("name"), str)}
        v.output_tools = set(outer)
        if outer:  # (only such requests: the messages are decoded again here, the GenAI reader's copy is not at hand)
            inputs, outputs = messages(span)
            v.answer_texts = _answers(outputs, outer)
            v.refused_answers = _refused(inputs, outer)
        v.deferred_tools = {
            t["name"]: _DEFERRED_KINDS[t["kind"]]
            for t in params.get("function_tools") or []
            if isinstance(t, dict) and isinstance(t.get("name"), str) and t.get("kind") in _DEFERRED_KINDS
        }
    final = a.get("final_result")
    if a.get("gen_ai.operation.name") == "invoke_agent" and isinstance(final, str) and present(final):
        v.answer = final
    return v


def _calls(msgs: list[dict[str, Any]], tools: dict[str, Any]) -> list[dict[str, Any]]:
    """The `tool_call` parts of `msgs` that call one of the output `tools` and carry a call id."""
    return [p for m in msgs for p in m.get("parts") or []
            if isinstance(p, dict) and p.get("type") == "tool_call" and p.get("name") in tools and p.get("id") is not None]


def _answers(outputs: list[dict[str, Any]], tools: dict[str, Any]) -> dict[str, str]:
    """Call id → the answer text of each output-tool call of a request's output (see module doc)."""
    out: dict[str, str] = {}
    for part in _calls(outputs, tools):
        value = unjson(part.get("arguments"))
        key = tools[part["name"]]
        if isinstance(key, str) and isinstance(value, dict) and key in value:
            value = value[key]
        if value is None or value == "":
            continue  # no arguments recorded (`include_content=False`): no answer to show
        out.setdefault(str(part["id"]), value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    return out


def _refused(inputs: list[dict[str, Any]], tools: dict[str, Any]) -> dict[str, str]:
    """Call id → `"output rejected: …"` for each output-tool call the request's input shows pydantic-ai refused.

    A response answers an output call when its id is that of an output-tool call in the same input, or
    (the call itself cut from the history by a history processor) it names an output tool.
    """
    asked = {str(p["id"]) for p in _calls(inputs, tools)}
    out: dict[str, str] = {}
    for m in inputs:
        for part in m.get("parts") or []:
            if not isinstance(part, dict) or part.get("type") != "tool_call_response" or part.get("id") is None:
                continue
            if str(part["id"]) not in asked and part.get("name") not in tools:
                continue
            said = _refusal(part.get("result", part.get("response")))  # pydantic-ai writes `result`; log events give `response`
            if said is not None:
                out.setdefault(str(part["id"]), _REFUSED + said)
    return out


def _refusal(said: Any) -> str | None:
    """What a response to an output call says when it is a refusal (`None`: a status note, or nothing recorded)."""
    said = unjson(said)
    if said is None or said == "" or (isinstance(said, str) and said.startswith(_STATUS_NOTES)):
        return None
    if isinstance(said, str):
        return said
    if isinstance(said, list) and said and all(isinstance(e, dict) and isinstance(e.get("msg"), str) for e in said):
        # pydantic's error details: where and what, one per error (the model's own values are the step's output already)
        return "; ".join(".".join(str(x) for x in e["loc"]) + ": " + e["msg"] if isinstance(e.get("loc"), list) and e["loc"] else e["msg"] for e in said)
    return json.dumps(said, ensure_ascii=False, separators=(",", ":"), default=str)
