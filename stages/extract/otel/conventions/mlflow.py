"""MLflow Tracing (`mlflow.*.autolog`, `@mlflow.trace`, `mlflow.start_span`).

What counts: `mlflow.spanType` (a JSON string) `CHAT_MODEL` / `LLM` is a
model request, `TOOL` a tool call, `AGENT` an agent run, `CHAIN` a chain (an
anchor at the root), `RETRIEVER` a retrieval. `mlflow.spanInputs` /
`mlflow.spanOutputs` (JSON) carry the payloads: a chat model's request
(`messages`) and response (a chat completion: `choices[].message`), a tool's
keyword arguments and return value, a retriever's documents
(`page_content`, `metadata.doc_uri`, `id`). Usage from
`mlflow.chat.tokenUsage`, else the response's `usage`.

`mlflow.langchain.autolog()` records a LangChain tool's output as it is: a
tool that LangGraph's ToolNode ran with a tool call returns a `ToolMessage`,
serialised as a plain dict (`{"content", "type": "tool", "name",
"tool_call_id", "status", …}`). Its `content` is the result (`status:
"error"` an error), when the message names the span's tool or answers the
call id the tracer recorded (`tool_call_id`, one of the callback's kwargs
it keeps as attributes); any other output is the tool's own value.
"""

from __future__ import annotations

from tracejudge.stages.extract.otel.conventions.genai import span_error
from tracejudge.stages.extract.otel.conventions.langfuse import generation_outputs, usage_pair
from tracejudge.stages.extract.otel.conventions.openinference import answer_text, request_text
from tracejudge.stages.extract.otel.messages import normalise
from tracejudge.stages.extract.otel.payloads import documents, tool_message_result
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View, present, unjson

__all__ = ["NAME", "read"]

NAME = "mlflow"
_ROLES = {"CHAT_MODEL": "model", "LLM": "model", "TOOL": "tool", "AGENT": "agent", "CHAIN": "chain", "UNKNOWN": "chain", "RETRIEVER": "retrieval"}


def read(span: Span) -> View | None:
    """The MLflow reading of `span`, or `None` when it has no `mlflow.spanType`."""
    a = span.attrs
    if "mlflow.spanType" not in a:
        return None
    kind = unjson(a.get("mlflow.spanType"))
    v = View(role=_ROLES.get(str(kind).upper()))
    inputs = unjson(a.get("mlflow.spanInputs", MISSING))
    outputs = unjson(a.get("mlflow.spanOutputs", MISSING))
    v.error = span_error(span)
    if v.role == "model":
        v.inputs = normalise(inputs) if inputs is not MISSING else None
        v.outputs = generation_outputs(outputs) if outputs is not MISSING else None
        v.usage_in, v.usage_out = usage_pair(unjson(a.get("mlflow.chat.tokenUsage")))
        if v.usage_in is None and isinstance(outputs, dict):
            v.usage_in, v.usage_out = usage_pair(outputs.get("usage"))
    elif v.role == "tool":
        name = unjson(a.get("mlflow.spanFunctionName"))
        v.tool_name = span.name or (str(name) if present(name) else None)
        if inputs is not MISSING and present(inputs):
            v.args = inputs
        if outputs is not MISSING and present(outputs):
            cid = unjson(a.get("tool_call_id"))
            msg = tool_message_result(outputs, v.tool_name, str(cid) if isinstance(cid, (str, int)) and cid != "" else None)
            if msg is None:
                v.result = outputs
            else:
                v.result, error, v.call_id = msg
                v.error = v.error or error
    elif v.role in ("agent", "chain"):
        v.request = request_text(inputs) if present(inputs) else None
        v.answer = answer_text(outputs) if present(outputs) else None
        if v.role == "agent":
            v.agent_name = span.name
    elif v.role == "retrieval" and outputs is not MISSING:
        v.documents = documents(outputs)
    return v

