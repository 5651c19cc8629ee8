"""OpenTelemetry GenAI semantic conventions (and Google ADK's `gcp.vertex.agent.*` keys).

What counts: `gen_ai.operation.name` `chat` / `generate_content` /
`text_completion` is a model request (and so is a span with no operation name that names a model and a
provider and records usage or messages: `_unnamed_request`), `execute_tool` a tool call,
`invoke_agent` / `invoke_workflow` an agent run; ADK's `call_llm` span (no
operation name, scope or keys `gcp.vertex.agent`) is a model request too, the
wrapper of its `generate_content` span, and ADK 1.x's `invocation` root an
agent run (its `invoke_workflow`). A span that carries
`gen_ai.tool.name` without an operation is a tool call only when it is named
`running tool` or `execute_tool …` — the spans pydantic-evals counts — so a
custom span that merely mentions a tool is not counted. Messages come from
`gen_ai.input.messages` / `gen_ai.output.messages` (JSON) or, in log-event
mode, from the span's GenAI events (the details event, else a span event of any name holding those keys, and the
message events of conventions 1.27–1.36 as span events or log records: `genai_events`), else from ADK's `gcp.vertex.agent.llm_request` /
`llm_response` (Gemini `contents`, see `adk`); the system instructions (`gen_ai.system_instructions`, on the span or
its details event) lead the input as its system message (`genai_instructions`); usage from `gen_ai.usage.*`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tracejudge.core.json_kind import json_kind
from tracejudge.core.records import decode_arguments
from tracejudge.stages.extract.common import fail, maybe_json
from tracejudge.stages.extract.otel.payloads import unwrap_args, unwrap_result
from tracejudge.stages.extract.otel.messages import last_user_text, normalise, output_text
from tracejudge.stages.extract.otel.conventions.adk import ADK_PREFIX, ADK_REQUEST, ADK_RESPONSE, ADK_SCOPE, adk_messages, said, unwrap_results
from tracejudge.stages.extract.otel.conventions.langchain_errors import exception_name, tl_langchain_span
from tracejudge.stages.extract.otel.conventions.genai_events import event_messages, holds_messages
from tracejudge.stages.extract.otel.conventions.genai_gemini import gemini_messages
from tracejudge.stages.extract.otel.conventions.genai_instructions import with_instructions
from tracejudge.stages.extract.otel.conventions.genai_shapes import check_messages
from tracejudge.stages.extract.otel.conventions.openai_choices import genai_choice
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.value_limit import cut_at, cut_note, whole_items
from tracejudge.stages.extract.otel.view import ESCAPED_SURROGATE, MISSING, View, mend_surrogates, present
from tracejudge.stages.load import JSON_ERRORS

__all__ = ["NAME", "holds_messages", "messages", "read", "span_error", "typed", "usage"]

NAME = "otel-genai"
MODEL_OPS = frozenset({"chat", "generate_content", "text_completion"})
AGENT_OPS = frozenset({"invoke_agent", "invoke_workflow"})
WRAPPER_TOOLS = frozenset({"(merged tools)"})  # ADK's parallel wrapper: its children are the calls
INPUT_KEY = "gen_ai.input.messages"
ADK_ARGS, ADK_RESULT = "gcp.vertex.agent.tool_call_args", "gcp.vertex.agent.tool_response"


def read(span: Span) -> View | None:
    """The GenAI reading of `span`, or `None` when it carries no GenAI key."""
    a = span.attrs
    op = a.get("gen_ai.operation.name")
    tool_attr = a.get("gen_ai.tool.name")
    has_messages = "gen_ai.input.messages" in a or "gen_ai.output.messages" in a or bool(span.logs) or holds_messages(span)
    adk = op is None and (span.scope == ADK_SCOPE or any(k.startswith(ADK_PREFIX) for k in a))
    adk_call = adk and span.name == "call_llm"
    adk_run = adk and span.name == "invocation"  # ADK 1.x's root of one run: its agents, a transfer's too, are one turn
    if not isinstance(op, str) and not tool_attr and not has_messages and not adk_call and not adk_run and "gen_ai.usage.input_tokens" not in a \
            and not _unnamed_request(span, has_messages):
        return None
    v = View()
    if op in MODEL_OPS or adk_call or (op is None and not adk and _unnamed_request(span, has_messages)):
        v.role = "model"
    elif op == "execute_tool" or (op is None and tool_attr and (span.name == "running tool" or span.name.startswith("execute_tool"))):
        v.role = "tool"
    elif op in AGENT_OPS or adk_run:
        v.role = "agent"
    name = tool_attr if isinstance(tool_attr, str) and tool_attr else None
    if name is None and span.name.startswith("execute_tool "):
        name = span.name[len("execute_tool ") :]
    if v.role == "tool":
        if name in WRAPPER_TOOLS:
            v.role = None
        v.tool_name = name
        cid = a.get("gen_ai.tool.call.id")
        v.call_id = str(cid) if present(cid) else None
        v.span_order = v.call_id is not None
        # ADK with its own content keys off writes `{}` under both, their default: neither the call's arguments nor
        # its result (a call of no arguments that returned `{}` still reads so from the model's parts)
        keys_off = a.get(ADK_ARGS) == "{}" and a.get(ADK_RESULT) == "{}"
        raw = _first(a, ("gen_ai.tool.call.arguments",) if keys_off else ("gen_ai.tool.call.arguments", ADK_ARGS))
        if raw is not MISSING:
            args, v.args_wrapped = unwrap_args(raw)  # OpenLLMetry's LangChain records the callback payload here
            v.args = args if v.args_wrapped or isinstance(args, dict) else raw
            if isinstance(args, str) and args != raw and decode_arguments(args)[1]:
                # The JSON text of a string (`""`, `"{}"`) is a string, not an object: decoded once more it would read as
                # `{}`, where pydantic-evals' ArgumentCorrectness finds "not a JSON object". The text stays as recorded.
                v.args = raw
        result = _first(a, ("gen_ai.tool.call.result",) if keys_off else ("gen_ai.tool.call.result", ADK_RESULT))
        if result is not MISSING:
            result = maybe_json(result)
            from_adk = "gen_ai.tool.call.result" not in a or span.scope == ADK_SCOPE or any(k.startswith(ADK_PREFIX) for k in a)
            if from_adk and isinstance(result, dict) and set(result) == {"result"}:
                # ADK wraps a non-mapping return value as {"result": X}, under its own key and, since 2.x, the GenAI one
                result = result["result"]
            else:
                result, error, cid = unwrap_result(result)  # OpenLLMetry's LangChain: {"output": ToolMessage}
                v.error, v.call_id = error, v.call_id or cid
        v.result = result if present(result) else MISSING
    if v.role in ("tool", "model", "agent"):
        v.error = (tool_error(span) if v.role == "tool" else span_error(span)) or v.error
    inputs, outputs = messages(span, told=False)
    if v.role == "agent":
        v.request = last_user_text(inputs) if inputs else None
        v.answer = output_text(outputs) if outputs else None
        agent = a.get("gen_ai.agent.name")
        v.agent_name = str(agent) if present(agent) and agent != "" else None
    elif v.role == "model" or (v.role is None and (inputs or outputs)):
        # (a request for n > 1 choices: the first, the one the application went on with; a refusal part is its text)
        # the system instructions only on a request: OpenLLMetry's LangChain also writes them, as plain text, on the
        # `create_agent` span that builds the agent, which is no request and has no messages
        v.inputs, v.outputs = with_instructions(span, inputs), genai_choice(outputs, span)
        v.inputs_cut = cut_at(a.get(INPUT_KEY))  # (its first messages only: `value_tails` reads the rest from the requests beside it)
        v.inputs_whole = len(inputs)  # (the attribute's own: the instructions before them are another attribute's)
    # the names before semantic conventions 1.27 (prompt / completion tokens) when the current ones are absent
    v.usage_in = usage(span, "gen_ai.usage.input_tokens")
    v.usage_in = usage(span, "gen_ai.usage.prompt_tokens") if v.usage_in is None else v.usage_in
    v.usage_out = usage(span, "gen_ai.usage.output_tokens")
    v.usage_out = usage(span, "gen_ai.usage.completion_tokens") if v.usage_out is None else v.usage_out
    return v


_OTHER_CONVENTIONS = ("llm.", "ai.", "traceloop.", "openinference.", "langfuse.", "mlflow.")


def _unnamed_request(span: Span, has_messages: bool) -> bool:
    """Whether a span with no `gen_ai.operation.name` is a model request all the same: it names a model and a provider
    (`gen_ai.provider.name`, or the deprecated `gen_ai.system`) and records a call's usage or messages, as agentevals
    infers a chat. Model and provider alone are identity, not a call: some producers copy their resource's onto every
    span (Claude Code's spans under kagent). Spans another convention describes are left to its reader."""
    a = span.attrs
    if not isinstance(a.get("gen_ai.request.model"), str) or not (a.get("gen_ai.provider.name") or a.get("gen_ai.system")):
        return False
    if any(k.startswith(_OTHER_CONVENTIONS) for k in a):
        return False
    return has_messages or any(k.startswith("gen_ai.usage.") for k in a)


def _first(attrs: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if key in attrs and present(attrs[key]):
            return attrs[key]
    return MISSING


_CLASS_REPR = re.compile(r"<class '([A-Za-z_][\w.]*)'>")


def span_error(span: Span) -> str | None:
    """`"<error.type>: <status message>"` for a span whose status is ERROR, else `None`.

    The type comes from `error.type`, else the first `exception` event (by its class name on a span of OpenLLMetry's
    LangChain instrumentation, as its `error.type` names it: `langchain_errors`).
    """
    if not span.status_error:
        return None
    etype = span.attrs.get("error.type")
    if isinstance(etype, str) and (named := _CLASS_REPR.fullmatch(etype)):
        etype = named[1]  # OTel's openai-v2 2.4b0 writes `str(type(exc))`: `<class 'openai.InternalServerError'>`
    emsg = None
    for name, ev in span.events:
        if name == "exception":
            if not etype and isinstance(ev.get("exception.type"), str) and tl_langchain_span(span):
                etype = exception_name(ev["exception.type"])
            etype = etype or ev.get("exception.type")
            emsg = emsg or ev.get("exception.message")
    message = span.status_message or emsg
    if etype and message:
        return typed(str(etype), str(message))
    return message or (str(etype) if etype else "error")


# The value semantic conventions give `error.type` when the instrumentation names no type of its own (`error.type`,
# "_OTHER: A fallback error value to be used when the instrumentation doesn't define a custom value").
OTHER_ERROR = "_OTHER"


def tool_error(span: Span) -> str | None:
    """`span_error` of a tool span, its type `_OTHER` when neither `error.type` nor an `exception` event names one.

    A tool span whose status is ERROR failed whatever its attributes say; the text then starts with the conventions'
    fallback type, so every failed call's error reads `"<type>: <message>"` (agentevals' truth files give such a call
    `error_type: "_OTHER"`: `tests/fixtures/otlp/hand/tool_error_no_error_type.truth.json`).
    """
    error = span_error(span)
    if error is None or span.attrs.get("error.type") or any(name == "exception" and ev.get("exception.type") for name, ev in span.events):
        return error
    return OTHER_ERROR if error == "error" else typed(OTHER_ERROR, error)


def typed(etype: str, message: str) -> str:
    """`"<etype>: <message>"`, naming the type once: a message that already names it is not prefixed again.

    A status text often starts with the exception's short name while the `exception.type` attribute holds the
    qualified one (pydantic-ai: status `"UsageLimitExceeded: The next request…"`, type
    `pydantic_ai.exceptions.UsageLimitExceeded`): the short name becomes the qualified one, the rest of the text as
    it was. A message starting with the qualified name stays as it is; one that is only the type's name (short or
    qualified) is the qualified name.
    """
    short = etype.rsplit(".", 1)[-1]
    if message in (etype, short):
        return etype
    if message.startswith(f"{etype}:"):
        return message
    if message.startswith(f"{short}:"):
        return etype + message[len(short):]
    return f"{etype}: {message}"


def usage(span: Span, key: str) -> int | None:
    """An integer usage attribute of `span` (or of its log events); raises `AdapterError` when it is not one."""
    value = span.attrs.get(key)
    if value is None:
        value = next((ev.attrs[key] for ev in span.logs if ev.attrs.get(key) is not None), None)
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        fail(f"span {span.span_id}: {key} is not an integer ({value!r})", field=f"span {span.span_id}: {key}")


def _json_attr(span: Span, key: str) -> Any:
    value = span.attrs.get(key)
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except JSON_ERRORS:
            if (limit := cut_at(value)) is None:
                fail(f"span {span.span_id}: {key} is not valid JSON", field=f"span {span.span_id}: {key}")
            if key != INPUT_KEY:  # (a reply no other span holds: `value_tails` mends a request's input only)
                fail(f"{cut_note(span, key, limit)}: what it held cannot be read", field=f"span {span.span_id}: {key}")
            decoded = whole_items(value)  # the messages before the cut; `value_tails` gives the request the rest
        # (An escaped lone surrogate, an exporter cutting mid-emoji, is read as U+FFFD, as `view.unjson` reads it.)
        return mend_surrogates(decoded) if ESCAPED_SURROGATE.search(value) else decoded
    return value


def _message_list(span: Span, key: str) -> Any:
    """The decoded value of a message attribute, `None` when absent.

    The conventions define it as an array of messages; a value that decodes to anything else (null, text, a number, an
    object other than a `{"messages": [...]}` wrapper), or an item that is no message of a known shape (`genai_shapes`:
    no role, nothing said, `parts` no array, a text part's `content` neither text nor null) raises `AdapterError` naming
    the span and the field, as the instructions beside it do, rather than reading as a request that said nothing.
    """
    value = _json_attr(span, key)
    if value is None and span.attrs.get(key) is None:
        return None
    items = value.get("messages") if isinstance(value, dict) else value
    if not isinstance(items, list):
        # (`{"messages": null}` is the wrapper holding no array: "an object" alone read as the wrong kind of value)
        got = f"an object whose `messages` is {json_kind(items)}" if isinstance(value, dict) and "messages" in value else json_kind(value)
        fail(f"span {span.span_id}: {key} must be a JSON array of messages, got {got}",
             field=f"span {span.span_id}: {key}")
    check_messages(span, key, items)
    return value


def messages(span: Span, told: bool = True) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A span's input and output messages, normalised (`[]` when it recorded none), from whichever form it wrote them in.

    The system instructions (`gen_ai.system_instructions`) lead the input as its system message (`genai_instructions`;
    `told=False` leaves them out).
    Raises `AdapterError` when a message attribute is not JSON, or the instructions are malformed; an input cut at the
    attribute length limit gives the messages whole before the cut (`value_limit`), a cut output raises saying so. pydantic-ai's reader reads them again for its
    output tools (`pydantic_ai`): only on spans that name some, so other spans are decoded once.
    """
    inputs = _message_list(span, INPUT_KEY)
    outputs = _message_list(span, "gen_ai.output.messages")
    if inputs is None or outputs is None:
        log_in, log_out = event_messages(span)
        inputs = inputs if inputs is not None else log_in
        outputs = outputs if outputs is not None else log_out
    inputs, outputs = gemini_messages(span, inputs, outputs)  # OTel's google-genai instrumentation's made-up ids and chunks
    inputs, outputs = normalise(inputs) or [], normalise(outputs) or []
    if ADK_REQUEST in span.attrs or ADK_RESPONSE in span.attrs:
        # ADK's own attributes hold the request and response whatever the GenAI content mode; its
        # GenAI events then say `<elided>`: a message list with no part said nothing.
        adk_in, adk_out = adk_messages(span.attrs)
        inputs = inputs if said(inputs) else adk_in or inputs
        outputs = outputs if said(outputs) else adk_out or outputs
    if span.scope == ADK_SCOPE or any(k.startswith(ADK_PREFIX) for k in span.attrs):
        inputs = unwrap_results(inputs)
    # last: ADK's fallback above asks whether the input messages said anything, which the instructions must not answer
    return (with_instructions(span, inputs) if told else inputs), outputs
