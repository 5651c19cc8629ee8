"""OpenInference (Arize Phoenix's instrumentations: OpenAI, LangChain, smolagents, OpenAI Agents, …).

What counts: `openinference.span.kind` `LLM` is a model request, `TOOL` a
tool call, `AGENT` an agent run (except a LangGraph node, whose `metadata`
names `langgraph_node`: LangGraph's `agent` node is a step of the graph),
`CHAIN` a workflow or graph node (a turn anchor only at the trace root; a graph node's input, the graph's
state, is never the user's request: a node left at the top by a lost root takes it from its model request), `RETRIEVER` a retrieval; other kinds
(EMBEDDING, RERANKER, GUARDRAIL, EVALUATOR) are noise, and so is the OpenAI Agents SDK's handoff span, which
OpenInference records as a `TOOL` named `handoff to <agent>` without `tool.name` (its input the agent handing off):
the handoff the model asked for is its `transfer_to_<agent>` tool call, counted once, as format `openai-agents` counts it. Messages come from
the flattened `llm.input_messages.{i}.message.*` / `llm.output_messages.*`
(with `tool_calls.{j}.tool_call.{id,function.name,function.arguments}`,
`tool_call_id`, `contents.{k}.message_content.text`; a content of type
`reasoning`, a Responses API reasoning summary, is a reasoning part, not
text; read by index: a span that lost its first attributes to the limit per span keeps its first messages aside,
cut, and its input starts at its first whole one, `dropped.front_cut`), else from `input.value` / `output.value` when they hold a
request/response body. A LangChain model's `invalid_tool_calls` (arguments
that were not JSON), which only `output.value` keeps, are added to its
output as calls with their raw arguments text. smolagents' replayed memory
is read as the model got it (`smolagents_inputs`), a smolagents tool's arguments as its call gave them (`smolagents_args`); a smolagents planning request's
text is the plan, a thought (`smolagents_plans`).
A tool's arguments and result are `input.value` / `output.value`,
unwrapped from framework payloads (see `payloads`; an `output.value` the length limit cut, LangChain's `ToolMessage`
with its `tool_call_id`, is none: the result is the tool message of the request that replays it); an `output.value` written with no value (an empty
`AnyValue`: how the OTel Java SDK, among others, exports `""`) is the result `""`, while one not written
(the tool never returned, or the instrumentation hid it: `__REDACTED__`) is no result; an ERROR status is its
error, `"<type>: <message>"` of its `exception` event when it has one (the
LangChain instrumentation's status description is the exception's repr
followed by its traceback). Agent and root chain spans give the user's
request and the final answer from `input.value` / `output.value` (never from one the attribute length limit cut:
`value_limit`).
Retrieved passages come from `retrieval.documents.{i}.document.*` (an id or score found only in
`document.metadata`, as LangChain's retrievers record them, is kept), a retriever's question from its
`input.value`, usage from `llm.token_count.*`. A tool message whose text was `""` is that text (the
flattening drops empty strings; `input.value` has it), and a Responses API request's response id and
`previous_response_id` come from its bodies (`bodies`), as do an Anthropic `tool_result`'s `is_error` and the text
of a result sent as content blocks, which the Anthropic instrumentation's flattening loses. A response that ran an
Anthropic server tool (web search, …) is read from `output.value`, the flattening's contents of a replayed one in their
order, server calls and results among them (`server_tools`, `server_blocks`).
An OpenAI Agents SDK group is also read as a whole by `stop_answers` (in `agents_sdk`): a run that ended at
a tool call (`stop_on_first_tool`, `StopAtTools`) has that tool's output as its answer, and a run that ended
in an error only its `turn` span holds (a tool the agent does not have, a tripped input guardrail) has that
error as its agent's. A call recorded without its arguments (the instrumentation drops `"{}"`) takes them from
`output.value`: a chat completion, the Agents SDK's list of chat messages, or a Responses API response.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.bodies import anthropic_results, fill_tool_texts, response_ids
from tracejudge.stages.extract.otel.conventions.agents_sdk import handoff_span, response_calls, stop_answers
from tracejudge.stages.extract.otel.conventions.genai import span_error, typed
from tracejudge.stages.extract.otel.conventions.genai_gemini import gemini_failures, is_gemini
from tracejudge.stages.extract.otel.conventions.graph_state import state_answer
from tracejudge.stages.extract.otel.conventions.langchain_errors import exception_name, oi_langchain_span
from tracejudge.stages.extract.otel.conventions.openai_choices import chat_reasoning, oi_choice
from tracejudge.stages.extract.otel.conventions.openinference_retrievals import passage, question
from tracejudge.stages.extract.otel.conventions.scopeless import from_instrumentation, smolagents_span
from tracejudge.stages.extract.otel.conventions.smolagents_args import call_args
from tracejudge.stages.extract.otel.conventions.smolagents_inputs import SCOPE, memory_inputs
from tracejudge.stages.extract.otel.conventions.smolagents_names import oi_run_name
from tracejudge.stages.extract.otel.dropped import front_cut, indexed
from tracejudge.stages.extract.otel.messages import last_user_text, normalise, normalise_one, output_text
from tracejudge.stages.extract.otel.payloads import unwrap_args, unwrap_result
from tracejudge.stages.extract.otel.server_blocks import flattened_blocks
from tracejudge.stages.extract.otel.server_tools import anthropic_output, hosted_flattened, hosted_output
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.value_limit import cut_at
from tracejudge.stages.extract.otel.view import MISSING, View, as_int, nested, present, unjson

__all__ = ["NAME", "read", "request_text", "answer_text", "stop_answers"]

NAME = "openinference"
_ROLES = {"LLM": "model", "TOOL": "tool", "AGENT": "agent", "CHAIN": "chain", "RETRIEVER": "retrieval"}


def read(span: Span) -> View | None:
    """The OpenInference reading of `span`, or `None` when it has no `openinference.span.kind`."""
    a = span.attrs
    kind = a.get("openinference.span.kind")
    if not isinstance(kind, str):
        return None
    v = View(role=_ROLES.get(kind.upper()))
    if v.role == "tool" and handoff_span(span):
        return View(role=None)
    node = v.role in ("agent", "chain") and _graph_node(a.get("metadata"))
    if node:
        v.role = "chain"  # a LangGraph node named "agent" is a step of the graph, not an agent run
    if v.role == "model":
        v.inputs = memory_inputs(_messages(a, "llm.input_messages", span, v), span)
        v.outputs = _messages(a, "llm.output_messages")
        if v.inputs is None:
            body = unjson(a.get("input.value"))
            v.inputs = normalise(body) if isinstance(body, (dict, list)) else None
        else:
            fill_tool_texts(v.inputs, a.get("input.value"))  # a tool's "" result, which the flattening left out
            hosted_flattened(v.inputs, a.get("input.value"))  # a response's hosted calls replayed, as the response reads
            anthropic_results(v.inputs, a.get("input.value"))  # a tool_result's is_error and block list, which it flattened away
            v.inputs = gemini_failures(v.inputs) if is_gemini(span) else v.inputs  # a function response `{"error": …}`
        v.response_id, v.previous_response_id = response_ids(a.get("input.value"), a.get("output.value"), a.get("llm.invocation_parameters"))
        # a response that ran a server tool (Anthropic's, blocks and citations whole) or a hosted one (OpenAI's Responses API)
        served = anthropic_output(a.get("output.value")) or hosted_output(a.get("output.value"))
        if served is not None:
            v.outputs = served
        elif v.outputs is None:
            v.outputs = _response_messages(unjson(a.get("output.value")))
        else:
            hosted_flattened(v.outputs, a.get("output.value"))  # (`output.value` cut at the limit, or not recorded)
            _fill_arguments(v.outputs, a.get("output.value"))
            _add_invalid_calls(v.outputs, a.get("output.value"))
            chat_reasoning(v.outputs, a.get("output.value"))
        v.outputs = oi_choice(v.outputs, a.get("output.value"), a.get("llm.invocation_parameters"))  # n > 1 choices: the first; a refusal
        v.usage_in = as_int(a.get("llm.token_count.prompt"))
        v.usage_out = as_int(a.get("llm.token_count.completion"))
        v.error = _error(span)
    elif v.role == "tool":
        name = a.get("tool.name")
        v.tool_name = name if isinstance(name, str) and name else span.name
        cid = a.get("tool_call.id", a.get("tool.id"))
        v.call_id = str(cid) if present(cid) else None
        if present(a.get("input.value")):
            v.args, v.args_wrapped = unwrap_args(a["input.value"])
            if from_instrumentation(span, SCOPE, smolagents_span) and (called := call_args(span)) is not MISSING:
                v.args = called  # (`Tool.__call__`'s bound arguments, positional ones named: `smolagents_args`)
        if present(a.get("output.value")) and cut_at(a["output.value"]) is None:  # (one the length limit cut, its call id
            # lost with it: the history's copy). JSON text is decoded whole where the span says it is JSON; else only an
            # object's or array's is (`unwrap_result`): a tool that returned the text "42" returned text.
            raw = unjson(a["output.value"]) if a.get("output.mime_type") == "application/json" else a["output.value"]
            v.result, v.error, cid = unwrap_result(raw, call_id=v.call_id)
            v.call_id = v.call_id or cid
        elif "output.value" in a and a["output.value"] is None:
            v.result = ""  # written, as an empty AnyValue: the tool returned "" (an SDK never sets a None attribute)
        v.error = _error(span) or v.error
    elif v.role in ("agent", "chain"):
        # A graph node's input is the graph's state (the `tools` node's `{"__type": "tool_call_with_context", …}`), not what
        # the user asked: read only when the node is the top of what was exported, and then the model's request says it.
        v.request = None if node else request_text(a.get("input.value"))
        v.answer = answer_text(a.get("output.value"))
        agent = a.get("agent.name") or (span.name if v.role == "agent" else None)
        v.agent_name = str(agent) if present(agent) and agent != "" else None
        if v.role == "agent" and from_instrumentation(span, SCOPE, smolagents_span):
            v.agent_name = oi_run_name(span.name)  # (the span is named `<name or class>.run`: `smolagents_names`)
        v.error = _error(span)
    elif v.role == "retrieval":
        docs = nested(a, "retrieval.documents")
        if isinstance(docs, list):
            v.documents = [passage(d) for d in docs if isinstance(d, dict) and isinstance(d.get("document"), dict)]
        v.query = question(a.get("input.value"))
    return v


def _graph_node(metadata: Any) -> bool:
    meta = unjson(metadata)
    return isinstance(meta, dict) and "langgraph_node" in meta and "langgraph_step" in meta


def _messages(attrs: dict[str, Any], prefix: str, span: Span | None = None, cut: View | None = None) -> list[dict[str, Any]] | None:
    """The messages flattened under `prefix`, by index; with `cut` (a request's input), the ones a span that lost its
    first attributes kept whole, their start and the partial ones before them set on `cut` (`dropped.front_cut`)."""
    found = indexed(nested(attrs, prefix))
    if found is None:
        return None
    if cut is None or span is None:
        return _read_messages([x for _, x in found])
    cut.input_start, partial, whole = front_cut(found, span.dropped_attributes > 0, _has_role)
    cut.partial_inputs = _read_messages(partial, partial=True) or None
    return _read_messages(whole)


def _has_role(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("message"), dict) and bool(item["message"].get("role"))


def _content_block(content: Any) -> dict[str, Any] | None:
    """One of a message's flattened `contents` as an OpenAI content block: its text (or reasoning), or its image
    (`message_content.type` `image`, the URL at `message_content.image.image.url`, a data URL for an inline one)."""
    said = content.get("message_content") if isinstance(content, dict) else None
    if not isinstance(said, dict):
        return None
    if isinstance(said.get("text"), str):
        return {"type": "reasoning" if said.get("type") == "reasoning" else "text", "text": said["text"]}
    image = said.get("image") if said.get("type") == "image" else None
    url = image.get("image", {}).get("url") if isinstance(image, dict) and isinstance(image.get("image"), dict) else None
    return {"type": "image_url", "image_url": {"url": url}} if isinstance(url, str) and url else None


def _read_messages(items: list[Any], partial: bool = False) -> list[dict[str, Any]]:
    """Flattened messages as normalised ones; a `partial` message (its role evicted) is a tool message when it names the call
    it answers, an assistant's when it asks for calls, else of no known role (`None`)."""
    out = []
    for item in items:
        msg = item.get("message") if isinstance(item, dict) else None
        if not isinstance(msg, dict):
            continue
        role = "tool" if msg.get("tool_call_id") is not None else "assistant" if msg.get("tool_calls") else "unknown"
        openai: dict[str, Any] = {"role": msg.get("role") or (role if partial else "assistant")}
        contents = msg.get("contents")
        served = flattened_blocks(contents) if isinstance(contents, list) and not isinstance(msg.get("content"), str) else None
        if isinstance(msg.get("content"), str):
            openai["content"] = msg["content"]
        elif served is not None:  # an Anthropic response that ran a server tool: its blocks in order, calls among them
            openai["content"] = served
        elif isinstance(contents, list):
            openai["content"] = [block for c in contents if (block := _content_block(c)) is not None]
        calls = []
        for tc in [] if served is not None else msg.get("tool_calls") or []:  # (`served` has them, as `contents` do)
            call = tc.get("tool_call") if isinstance(tc, dict) else None
            if isinstance(call, dict):
                fn = call.get("function") if isinstance(call.get("function"), dict) else {}
                calls.append({"id": call.get("id"), "function": {"name": fn.get("name"), "arguments": fn.get("arguments")}})
        if calls:
            openai["tool_calls"] = calls
        if msg.get("tool_call_id") is not None:
            openai["tool_call_id"] = msg["tool_call_id"]
        one = normalise_one(openai)
        if one is not None:
            out.append({**one, "role": None} if one["role"] == "unknown" and partial else one)
    return out


def _fill_arguments(outputs: list[dict[str, Any]], raw: Any) -> None:
    """Give tool-call parts recorded without `function.arguments` those of the same call (by id) in `output.value`.

    openinference-instrumentation-smolagents 0.1.11 wrote only each call's id and name as
    attributes; the arguments are in `output.value`, the message as JSON. openinference-instrumentation-openai-agents
    (2.6) writes no `function.arguments` attribute for the arguments `"{}"` (a handoff's `transfer_to_<agent>`):
    they are in `output.value`, the list of the model's chat messages; openinference-instrumentation-langchain
    neither (a LangGraph tool called with no arguments): they are the `args` `{}` of the AIMessage's call in its
    `LLMResult`, and the call has empty arguments, not missing ones. A part whose id or name `output.value` does
    not hold stays without arguments (`arguments_missing`).
    """
    parts = [p for m in outputs for p in m.get("parts") or [] if p.get("type") == "tool_call" and p.get("arguments") is None and p.get("id") is not None]
    if not parts:
        return
    body = unjson(raw)
    if isinstance(body, list):  # the Agents SDK's output: chat messages, or the Responses API response a streamed run got
        recorded = response_calls(body) or normalise(body)
    elif isinstance(body, dict) and isinstance(body.get("generations"), list):  # LangChain's `LLMResult`: the AIMessage's `tool_calls`
        recorded = normalise(_generation_messages(body))
    else:
        recorded = _response_messages(body) if isinstance(body, dict) and ("choices" in body or "output" in body) else (
            normalise([body]) if isinstance(body, dict) else None)
    by_id = {str(p["id"]): p for m in recorded or [] for p in m.get("parts") or [] if p.get("type") == "tool_call" and p.get("id") is not None}
    for part in parts:
        found = by_id.get(str(part["id"]))
        if found is not None and found.get("name") == part.get("name"):
            part["arguments"] = found.get("arguments")


def _error(span: Span) -> str | None:
    """The span's error: `"<type>: <message>"` of its first `exception` event when it has one, else `span_error`.

    The LangChain instrumentation describes an ERROR status with the exception's `repr()` and its whole
    traceback (`ValueError('x')Traceback …`); the event holds the exception's own type and message. A LangChain span's
    type is named by its class name alone (`langchain_errors`).
    A span whose status is not ERROR has no error, whatever events it holds.
    """
    error = span_error(span)
    if error is None:
        return None
    for name, ev in span.events:
        if name == "exception":
            etype, message = ev.get("exception.type"), ev.get("exception.message")
            if isinstance(etype, str) and etype and isinstance(message, str) and message:
                # (LangChain's exception by its class name, as OpenLLMetry and MLflow record it: `langchain_errors`)
                return typed(exception_name(etype) if oi_langchain_span(span) else etype, message)
            break
    return error


def _add_invalid_calls(outputs: list[dict[str, Any]], raw: Any) -> None:
    """Add to `outputs` the LangChain `invalid_tool_calls` that only `output.value` (an `LLMResult`) recorded.

    The instrumentation flattens a message's parsed `tool_calls` only; a call whose arguments were not
    JSON is in the result's message alone. A call already among `outputs` (same id) is not added twice.
    """
    body = unjson(raw)
    msgs = _generation_messages(body)
    if not msgs:
        return
    bad = [p for m in normalise(msgs) or [] for p in m.get("parts") or [] if p.get("type") == "tool_call" and "invalid" in p]
    have = {p.get("id") for m in outputs for p in m.get("parts") or [] if p.get("type") == "tool_call"}
    new = [p for p in bad if p.get("id") is None or p["id"] not in have]
    if not new:
        return
    target = next((m for m in reversed(outputs) if m.get("role") == "assistant"), None)
    if target is None:
        outputs.append(target := {"role": "assistant", "parts": []})
    target["parts"] = [*(target.get("parts") or []), *new]


def _generation_messages(body: Any) -> list[dict[str, Any]]:
    """The messages of a LangChain `LLMResult` (`{"generations": [[{"message": …}, …], …]}`) as recorded; `[]` for anything else."""
    gens = body.get("generations") if isinstance(body, dict) else None
    if not isinstance(gens, list):
        return []
    return [g["message"] for batch in gens if isinstance(batch, list) for g in batch if isinstance(g, dict) and isinstance(g.get("message"), dict)]


def _response_messages(body: Any) -> list[dict[str, Any]] | None:
    """Output messages from a chat completion / Responses body recorded as `output.value`."""
    if isinstance(body, dict):
        choices = body.get("choices")
        if isinstance(choices, list):
            msgs = [c.get("message") for c in choices if isinstance(c, dict) and isinstance(c.get("message"), dict)]
            return normalise(msgs)
    return response_calls(body)


# Most question-like first: when no model request says which argument was asked (a run with no model span),
# the first candidate is the input, and `run(question=..., task="sequence")` was asked the question, not the label.
_REQUEST_KEYS = ("question", "query", "prompt", "user_input", "input", "message", "messages", "task")
_TOOL_NODE_INPUT = "tool_call_with_context"  # the `__type` LangGraph marks a `Send` to its ToolNode with


def request_text(value: Any) -> str | list[str] | None:
    """The user's request out of an agent or chain input.

    Plain text or a message list (its last user text) give a `str`. A
    mapping of a function's arguments gives its candidate strings, the
    well-known keys first, most question-like first (`question`, `query`,
    `prompt`, `user_input`, `input`, `message(s)`, then `task`): the
    assembler picks the one the model was asked (an agent called as
    `run(task="…", session="…")` records every argument), else the first; LangGraph's
    ToolNode input (`{"__type": "tool_call_with_context", …}`, a `Send`) none.
    """
    if cut_at(value) is not None:
        return None  # (a JSON body the length limit cut: the model's request says it)
    decoded = unjson(value)
    if isinstance(decoded, str):
        return decoded if present(decoded) and decoded else None
    msgs = normalise(decoded)
    if msgs:
        return last_user_text(msgs)
    if isinstance(decoded, dict):
        if decoded.get("__type") == _TOOL_NODE_INPUT:
            return None  # (LangGraph's own input to its ToolNode, a `Send` of one call with the state: nobody's words)
        out: list[str] = []
        for key in _REQUEST_KEYS:
            got = decoded.get(key)
            inner = got if isinstance(got, str) else request_text(got) if isinstance(got, (list, dict)) else None
            for text in [inner] if isinstance(inner, str) else inner or []:
                if text and text not in out:
                    out.append(text)
        out += [v for k, v in decoded.items() if isinstance(v, str) and v and present(v) and v not in out and k != "__type"]
        return out or None
    return None


def answer_text(value: Any) -> str | None:
    """The final answer out of an agent or chain output: text, a message list (its last assistant text), or a wrapper.

    A LangGraph state (`{"messages": [...], …}`) that ended on a structured response or a `return_direct`
    tool's message answers with that (`graph_state`).
    """
    if cut_at(value) is not None:
        return None  # (a graph's state dump the length limit cut: its answer is its last model reply's)
    decoded = unjson(value)
    ended = state_answer(decoded)
    if ended is not MISSING:
        return ended
    if isinstance(decoded, str):
        return decoded if present(decoded) and decoded else None
    msgs = normalise(decoded)
    if msgs:
        for msg in reversed(msgs):
            if msg.get("role") == "assistant":
                text = output_text([msg])
                if text:
                    return text
                if any(p.get("type") == "tool_call" for p in msg.get("parts") or []):
                    return None
        return None
    if isinstance(decoded, dict):
        for key in ("output", "final_output", "answer", "result", "content", "text"):
            got = decoded.get(key)
            if isinstance(got, str) and got:
                return got
    return None
