"""MLflow Tracing (`mlflow.*.autolog`, `@mlflow.trace`, `mlflow.start_span`).

What counts: `mlflow.spanType` (a JSON string) `CHAT_MODEL` / `LLM` is a
model request, `TOOL` a tool call, `AGENT` an agent run, `CHAIN` a chain (an
anchor at the root), `RETRIEVER` a retrieval. `mlflow.spanInputs` /
`mlflow.spanOutputs` (JSON) carry the payloads: a chat model's request
(`messages`) and response (a chat completion: `choices[].message`), a tool's
keyword arguments and return value, a retriever's documents
(`page_content`, `metadata.doc_uri`, `id`). Usage from
`mlflow.chat.tokenUsage`, else the response's `usage`.

A Responses API request (`client.responses.create`) is recorded as its keyword arguments (`instructions`,
`input`: text or a list of items) and the `Response` it got (`"object": "response"`, `output` items): read
by `responses_request` and by the Responses output reader the other conventions share
(`agents_sdk.response_calls`), so a call's id is its `call_id` (what its `function_call_output` answers),
a `reasoning` item's summary is a reasoning part (the step's thought, never its output) and a `message`
item's `output_text` the reply. The response's `id` and the request's `previous_response_id` are kept
(`bodies.response_ids`), so a loop chained by either the full `input` history or `previous_response_id`
is joined into one conversation as other Responses readers' are (`stitch`).

`mlflow.langchain.autolog()` records a LangChain tool's output as it is: a
tool that LangGraph's ToolNode ran with a tool call returns a `ToolMessage`,
serialised as a plain dict (`{"content", "type": "tool", "name",
"tool_call_id", "status", …}`). Its `content` is the result (`status:
"error"` an error), when the message names the span's tool or answers the
call id the tracer recorded (`tool_call_id`, one of the callback's kwargs
it keeps as attributes); any other output is the tool's own value.

A streamed chat completion (`stream=True`) is recorded as its chunks, one
`mlflow.chunk.item.<n>` span event each (`mlflow.chunk.value`, the chunk's
JSON), and an output MLflow aggregates from them. MLflow 3 up to 3.17
aggregates the text but not the tool calls (`tool_calls: null`,
`finish_reason: "stop"`): `streamed_calls` rebuilds them from the chunks'
deltas (id, name and the argument fragments, per choice and call index), as
the client that read the stream did, so the calls keep their ids and pair with
the tool messages that answer them. MLflow 3.18 aggregates the calls too (from
every chunk, not only the 128 events a span keeps): they are read as written.

Frameworks MLflow autologs in their own shapes: `mlflow.pydantic_ai.autolog()` records a model request as pydantic-ai's
messages (`mlflow_pydantic_ai`), `mlflow.smolagents.autolog()` a tool call as `Tool.__call__`'s bound arguments and an
`AgentText` result (`mlflow_smolagents`).
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.hosted_tools import is_hosted
from tracejudge.stages.extract.otel.bodies import response_ids
from tracejudge.stages.extract.otel.conventions import mlflow_pydantic_ai, mlflow_smolagents
from tracejudge.stages.extract.otel.conventions.agents_sdk import response_calls
from tracejudge.stages.extract.otel.conventions.genai import span_error
from tracejudge.stages.extract.otel.conventions.langfuse import generation_outputs, usage_pair
from tracejudge.stages.extract.otel.conventions.mlflow_agents import sdk_error
from tracejudge.stages.extract.otel.conventions.openinference import answer_text, request_text
from tracejudge.stages.extract.otel.messages import normalise, normalise_one
from tracejudge.stages.extract.otel.payloads import documents, tool_message_result
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View, present, text_message, unjson

__all__ = ["NAME", "read", "responses_request", "streamed_calls"]

NAME = "mlflow"
_ROLES = {"CHAT_MODEL": "model", "LLM": "model", "TOOL": "tool", "AGENT": "agent", "CHAIN": "chain", "UNKNOWN": "chain", "RETRIEVER": "retrieval"}


def read(span: Span) -> View | None:
    """The MLflow reading of `span`, or `None` when it has no `mlflow.spanType`."""
    a = span.attrs
    if "mlflow.spanType" not in a:
        return None
    kind = unjson(a.get("mlflow.spanType"))
    v = View(role=_ROLES.get(str(kind).upper()))
    inputs = _payload(a.get("mlflow.spanInputs", MISSING))
    outputs = _payload(a.get("mlflow.spanOutputs", MISSING))
    v.error = span_error(span)
    if v.role == "model":
        v.inputs = _request_messages(inputs) if inputs is not MISSING else None
        if isinstance(inputs, list) and unjson(a.get("object")) == "response":
            # the Agents SDK's `Response` span under MLflow: its input items alone; the response's fields, attributes
            # of the span, name the instructions it was sent
            told = unjson(a.get("instructions"))
            if isinstance(told, str) and told and text_message("system", told) not in (v.inputs or []):
                v.inputs = [text_message("system", told), *(v.inputs or [])]
        v.outputs = _response_messages(outputs, span.events) if outputs is not MISSING else None
        v.response_id, v.previous_response_id = response_ids(a.get("mlflow.spanInputs"), a.get("mlflow.spanOutputs"), None)
        v.usage_in, v.usage_out = usage_pair(unjson(a.get("mlflow.chat.tokenUsage")))
        if v.usage_in is None and isinstance(outputs, dict):
            v.usage_in, v.usage_out = usage_pair(outputs.get("usage"))
    elif v.role == "tool":
        # (the Agents SDK's own error, as MLflow's tracing processor records it: its message and the tool's error text)
        v.error = sdk_error(span) or v.error
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
            v.agent_name = _agent_name(span)
    elif v.role == "retrieval" and outputs is not MISSING:
        v.documents = documents(outputs)
    # (`mlflow.smolagents.autolog()` records a tool call as `Tool.__call__`'s bound arguments and an `AgentText` result)
    mlflow_smolagents.adjust(span, v, inputs, outputs, outputs is not MISSING and present(outputs))
    return v


def _payload(value: Any) -> Any:
    """`mlflow.spanInputs` / `mlflow.spanOutputs` decoded. MLflow writes them as JSON, so `null` is a value that was
    not there (a tool that raised returned nothing), not the text "null", which it would write quoted."""
    return None if value == "null" else unjson(value)


def _agent_name(span: Span) -> str | None:
    """The name of the agent an AGENT span ran: a pydantic-ai agent's as pydantic-ai names it
    (`mlflow_pydantic_ai.agent_name`: never the patched method's `Agent.run`), else the one MLflow recorded of the agent
    object (`mlflow_smolagents.recorded_name`), else the span's name — but none for a smolagents agent that has no
    `name` (`mlflow_smolagents.agent_run`: its span's `ToolCallingAgent.run` names the method, `smolagents_names`), and
    none for the application's own span (`_own`). A sub-agent run inside a tool call would otherwise be labelled
    `Agent.run` in `nested_steps` and the judge's prompt, and a wrapper `@mlflow.trace(span_type="AGENT") def chat_app`
    listed as an agent named `chat_app`, the system prompt its."""
    recorded = mlflow_pydantic_ai.agent_name(span) or mlflow_smolagents.recorded_name(span)
    return recorded or (None if mlflow_smolagents.agent_run(span) or _own(span) else span.name)


def _own(span: Span) -> bool:
    """Whether an AGENT span is the application's own (`@mlflow.trace`, `mlflow.start_span`): it holds MLflow's attributes
    alone (`mlflow.spanInputs`, `mlflow.spanFunctionName`, …). An autolog's AGENT span records the agent it ran beside
    them, the agent object's fields (the Agents SDK's `handoffs` and `tools`, pydantic-ai's and smolagents' own): the
    span's name is then the agent's (the Agents SDK's `Triage`), where the application's is its function's or the name
    it gave the span, no agent's."""
    return all(key.startswith("mlflow.") for key in span.attrs)


def _request_messages(inputs: Any) -> list[dict[str, Any]] | None:
    """A model request's input messages: a Responses API request's (`responses_request`), else chat `messages`, an
    Anthropic request's `system` (text, or text blocks) their leading system message."""
    got = responses_request(inputs)
    if got is None:  # (`mlflow.pydantic_ai.autolog()` records pydantic-ai's own messages, `part_kind` parts)
        got = mlflow_pydantic_ai.request_messages(inputs)
    if got is not None:
        return got
    got = normalise(inputs)
    system = inputs.get("system") if isinstance(inputs, dict) and isinstance(inputs.get("messages"), list) else None
    told = normalise_one({"role": "system", "content": system}) if isinstance(system, (str, list)) else None
    return [told, *(got or [])] if told and told["parts"] else got


def _response_messages(outputs: Any, events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]] | None:
    """A model request's output messages: a Responses API `Response`'s items, else a chat completion's choices
    (its streamed calls rebuilt, `streamed_calls`) or a message."""
    got = response_calls(outputs)
    if got is None:
        got = mlflow_pydantic_ai.response_messages(outputs)
    return got if got is not None else generation_outputs(streamed_calls(outputs, events))


# Items of a Responses API `input` that a response gave (replayed history): read as its `output` items are.
_OUTPUT_ITEMS = ("function_call", "reasoning")


def responses_request(inputs: Any) -> list[dict[str, Any]] | None:
    """The messages of a Responses API request as MLflow records it (`client.responses.create`'s keyword arguments),
    or `None` when `inputs` is no such request (a chat request has `messages`; a Responses one `input`, no `messages`).

    `instructions` is a system message first; `input` text is one user message; an `input` list gives, per item:
    a message with a role (`{"role", "content"}`, `"type": "message"`; `input_text` parts) as that message, a
    replayed `function_call`, `reasoning`, hosted tool call (`hosted_tools`) or assistant `message` item as the
    response's output reads it (`response_calls`: the call's id is its `call_id`, so the replay matches the response
    it repeats), a `function_call_output` as a tool message answering its `call_id`. Other items (`item_reference`)
    are not messages and are left out.
    """
    if not isinstance(inputs, dict) or "messages" in inputs or "input" not in inputs:
        return None
    out: list[dict[str, Any]] = []
    if isinstance(inputs.get("instructions"), str) and inputs["instructions"]:
        out.append(text_message("system", inputs["instructions"]))
    items = inputs["input"]
    if isinstance(items, str):
        return [*out, text_message("user", items)]
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind in _OUTPUT_ITEMS or is_hosted(item) or (kind == "message" and item.get("role") == "assistant"):
            out += response_calls({"output": [item]}) or []
        elif kind == "function_call_output":
            # (read as the chat tool message it stands for: a list of content parts is its text)
            out.append(normalise_one({"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")}))
        elif isinstance(item.get("role"), str) and (msg := normalise_one(item)) is not None:
            out.append(msg)
    return out


def streamed_calls(outputs: Any, events: list[tuple[str, dict[str, Any]]]) -> Any:
    """`outputs` (a chat completion) with each choice's tool calls rebuilt from the stream's chunk events when it has none.

    A span keeps at most 128 events (OpenTelemetry's limit, which MLflow's spans inherit) and drops the oldest:
    a long stream keeps only its last chunks. So the chunks are used only when they run on without a gap to the
    stream's end (a chunk with a `finish_reason`), and a call only when its first chunk (the one naming it) is
    among them; a call whose start was dropped stays as the tool span recorded it. Anything else (no chunk
    events, a choice that has its calls, chunks that are not chat completion chunks) is returned as it is.
    """
    if not isinstance(outputs, dict) or not isinstance(outputs.get("choices"), list) or not events:
        return outputs
    numbered = sorted((n, attrs) for name, attrs in events if (n := _item(name)) is not None)
    if not numbered or any(b[0] != a[0] + 1 for a, b in zip(numbered, numbered[1:])):
        return outputs
    calls: dict[int, dict[int, dict[str, Any]]] = {}
    ended = False
    for _, attrs in numbered:
        chunk = unjson(attrs.get("mlflow.chunk.value"))
        if not isinstance(chunk, dict) or not isinstance(chunk.get("choices"), list):
            continue
        for choice in chunk["choices"]:
            if not isinstance(choice, dict):
                continue
            ended = ended or choice.get("finish_reason") is not None
            delta = choice.get("delta")
            for part in (delta.get("tool_calls") if isinstance(delta, dict) else None) or []:
                if isinstance(part, dict):
                    _add_fragment(calls.setdefault(_index(choice.get("index")), {}), part)
    if not calls or not ended:
        return outputs
    choices = []
    for i, choice in enumerate(outputs["choices"]):
        message = choice.get("message") if isinstance(choice, dict) else None
        got = [c for _, c in sorted(calls.get(_index(choice.get("index"), i), {}).items()) if c["name"]] if isinstance(choice, dict) else []
        if isinstance(message, dict) and not message.get("tool_calls") and got:
            built = [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}} for c in got]
            choice = {**choice, "message": {**message, "tool_calls": built}}
        choices.append(choice)
    return {**outputs, "choices": choices}


def _item(name: str) -> int | None:
    """The chunk number of an `mlflow.chunk.item.<n>` event, else `None`."""
    head, _, n = name.rpartition(".")
    return int(n) if head == "mlflow.chunk.item" and n.isdigit() else None


def _index(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _add_fragment(calls: dict[int, dict[str, Any]], part: dict[str, Any]) -> None:
    """One chunk's delta of a tool call: the first chunk of a call names it (id, name), the rest add argument text.

    A fragment of a call whose first chunk was not seen leaves it nameless (and so unused).
    """
    call = calls.setdefault(_index(part.get("index"), len(calls)), {"id": None, "name": "", "arguments": ""})
    if isinstance(part.get("id"), str) and part["id"]:
        call["id"] = part["id"]
    function = part["function"] if isinstance(part.get("function"), dict) else {}
    if isinstance(function.get("name"), str):
        call["name"] += function["name"]
    if isinstance(function.get("arguments"), str):
        call["arguments"] += function["arguments"]
