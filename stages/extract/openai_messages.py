"""Format `openai-messages`: OpenAI Chat Completions messages or Responses API items.

Framing: JSONL, one conversation per line::

    {"id": "run-7", "messages": [...], "expected_tool_calls": [...], "tags": [...]}

`messages` (or the field named by the `messages_field` option; `items` is
accepted too) is a list that may mix both OpenAI shapes:

- Chat Completions messages: `system`/`developer` (the trace's `system_prompts`), `user`,
  `assistant` (`content` and `tool_calls: [{id, type, function: {name,
  arguments}}]`, or the legacy `function_call`), `tool` (`tool_call_id`,
  `content`) and legacy `function` results;
- Responses API items: `message` (roles as above, content parts
  `input_text`/`output_text`), `reasoning` (summary text becomes the step's
  thought), `function_call` (`call_id`, `name`, `arguments`),
  `function_call_output` (`call_id`, `output`), `custom_tool_call` /
  `custom_tool_call_output` (free-text `input`, kept raw and flagged), and
  `mcp_call` (a complete call with `output` and `error`), and the hosted
  tools' items (`web_search_call`, `file_search_call`, `code_interpreter_call`,
  `image_generation_call`: calls the API ran, named and read as format `otel`
  reads them, `otel/hosted_tools.py`). Other item types are skipped.

One model response is one step: a Chat Completions assistant message, or the
run of Responses items between two inputs. Several calls in one response
stay in one step; text said together with calls is the step's `thought`,
except in a response whose calls all ran inside it (hosted tools, `mcp_call`)
and that asks for no client call: the text after its last such call is the
reply, the step's `output` (as `anthropic-messages` reads server tools).
Results pair with calls by id, by position where ids repeat or are missing
(see `pairing`). Arguments that are not a JSON object are kept raw and the
call is flagged `arguments_invalid`. Tool results holding JSON text are
decoded. A tool message with `error: true` (or a string), or `is_error:
true`, is a failed call, and so is a result that is an MCP `CallToolResult`
with `isError: true` (`common.mcp_error`); option `error_prefixes` also fails results whose
text starts with one of the prefixes (τ-bench writes `"Error: ..."`).

Other native case keys on the record (`id`, `input`, `expected_tool_calls`,
`tags`, `metadata`, ...) pass through; `id` defaults to `"<file>:<line>"`,
`input` to the first user text and `turns` to the later user texts. Every
user message is one of `trace.user_messages` (its text, or its content
parts when they hold no text or an image beside it), placed before the step that answered it.
A record-level `usage` (native shape) is kept; otherwise `usage.requests`
counts the model responses.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, register_format
from tracejudge.stages.extract.hosted_tools import hosted_parts, is_hosted
from tracejudge.stages.extract.common import build_case, case_fields, decode_line, fail, json_type, messages_of, read_lines, text_of
from tracejudge.stages.extract.lone_text import mended_case, record_named
from tracejudge.stages.extract.steps import TraceBuilder
from tracejudge.stages.extract.system_prompts import content_problem, prompt_text

__all__ = ["Options", "adapt"]


class Options(BaseModel):
    """`dataset.options` of `openai-messages`.

    `messages_field`: record key holding the message/item list.
    `error_prefixes`: result texts starting with one of these mark a failed call.
    """

    model_config = ConfigDict(extra="forbid")

    messages_field: str = "messages"
    error_prefixes: list[str] = []


def _function(tc: dict[str, Any], where: str, cid: str) -> tuple[str, Any]:
    fn = tc.get("function")
    if fn is None and "name" in tc:  # some loggers flatten {id, name, arguments}
        fn = tc
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
        fail("tool call has no function name", field=f"{where}.function.name", case_id=cid)
    return fn["name"], fn.get("arguments")


def _chat_assistant(b: TraceBuilder, msg: dict[str, Any], where: str, cid: str) -> None:
    # A message after calls the API ran inside the response (no client call yet) is that response's reply: same step.
    open_ = b.current()
    step = open_ if open_ is not None and "server_cut" in open_ and not open_.get("client") else b.response_step()
    text = text_of(msg.get("content"))
    if text:
        step["texts"].append(text)
    if isinstance(msg.get("refusal"), str) and msg["refusal"]:
        step["texts"].append(msg["refusal"])
    calls = msg.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        fail("tool_calls must be a list", field=f"{where}.tool_calls", case_id=cid)
    for j, tc in enumerate(calls or []):
        if not isinstance(tc, dict):
            fail("a tool call must be an object", field=f"{where}.tool_calls[{j}]", case_id=cid)
        name, args = _function(tc, f"{where}.tool_calls[{j}]", cid)
        b.call(step, tc.get("id"), name, args)
    legacy = msg.get("function_call")
    if isinstance(legacy, dict):
        name, args = _function({"function": legacy}, f"{where}.function_call", cid)
        b.call(step, None, name, args)


def _item(b: TraceBuilder, item: dict[str, Any], i: int, field: str, cid: str) -> None:
    where = f"{field}[{i}]"
    kind = item.get("type")
    role = item.get("role")
    if kind in (None, "message"):
        if role == "assistant":
            _chat_assistant(b, item, where, cid)
        elif role == "user":
            b.user_text(item.get("content"))
        elif role == "tool":
            b.result(item.get("tool_call_id"), item.get("content"), item.get("error") or item.get("is_error"))
        elif role == "function":
            b.result(None, item.get("content"), item.get("error") or item.get("is_error"))
        elif role in ("system", "developer"):
            if (why := content_problem(item.get("content"), "content" not in item)) is not None:
                fail(f"a {role} message's content: {why}", field=f"{where}.content", case_id=cid)
            b.system.append((None, prompt_text(item.get("content"))))
        else:
            fail(f"unknown message role {role!r}", field=f"{where}.role", case_id=cid)
    elif kind == "reasoning":
        texts = [str(s["text"]) for s in item.get("summary") or [] if isinstance(s, dict) and isinstance(s.get("text"), str)]
        if texts:
            b.open_step()["thoughts"].append("\n".join(texts))
    elif kind in ("function_call", "custom_tool_call"):
        name = item.get("name")
        if not isinstance(name, str) or not name:
            fail(f"{kind} has no name", field=f"{where}.name", case_id=cid)
        args = item.get("arguments") if kind == "function_call" else item.get("input")
        step = b.open_step()
        step["client"] = True
        b.call(step, item.get("call_id", item.get("id")), name, args)
    elif kind in ("function_call_output", "custom_tool_call_output"):
        b.result(item.get("call_id"), item.get("output"), item.get("error") or item.get("is_error"))
    elif kind == "mcp_call":
        name = item.get("name")
        if not isinstance(name, str) or not name:
            fail("mcp_call has no name", field=f"{where}.name", case_id=cid)
        step = _server_call(b)
        call = b.call(step, item.get("id"), name, item.get("arguments"), expects_result=False)
        b.set_result(call, item.get("output"), item.get("error"))
    elif is_hosted(item):
        ask, answer = hosted_parts(item)
        call = b.call(_server_call(b), ask["id"], ask["name"], ask["arguments"], expects_result=False)
        call["result"] = answer["response"]  # (as recorded: an object or list stays one, no text is decoded)
        if answer["error"]:
            call["error"] = answer["error"]
    # Items the client runs (`computer_call`, `local_shell_call`) and anything newer: skipped.


def _server_call(b: TraceBuilder) -> dict[str, Any]:
    """The step of a call the API ran inside the response, noting how much it had said before it (`_replies`)."""
    step = b.open_step()
    step["server_cut"] = len(step["texts"])
    return step


def _replies(b: TraceBuilder, trace: dict[str, Any]) -> None:
    """Make the text after the last server-run call of a response that asks for no client call its step's output."""
    changed = False
    for raw, step in zip(b.steps, trace["steps"], strict=True):
        cut = raw.get("server_cut")
        if cut is None or raw.get("client") or len(raw["texts"]) <= cut:
            continue
        step["thought"] = "\n".join([*raw["thoughts"], *raw["texts"][:cut]]) or None
        step["output"] = "\n".join(raw["texts"][cut:])
        changed = True
    if changed:
        trace["output"] = next((s["output"] for s in reversed(trace["steps"]) if s.get("output")), None)


def adapt(payload: Any, options: Options | None = None) -> Case:
    """Turn one JSONL record into a `Case` (see the module docstring).

    Raises `AdapterError` naming the field (`messages[3].tool_calls[0].function.name`)
    when the message list is missing or a message cannot be read.
    """
    opts = options or Options()
    record, default_id = decode_line(payload)
    fields = case_fields(record, default_id)
    cid = str(fields["id"])
    field = opts.messages_field
    if field == "messages" and record.get("messages") is None and "items" in record:
        field = "items"
    messages = messages_of(record, field, cid)
    b = TraceBuilder(opts.error_prefixes)
    for i, item in enumerate(messages):
        if not isinstance(item, dict):
            fail(f"expected a message object, got {json_type(item)}", field=f"{field}[{i}]", case_id=cid)
        _item(b, item, i, field, cid)
    trace = b.trace()
    _replies(b, trace)
    if isinstance(record.get("usage"), dict):
        trace["usage"] = record["usage"]
    if b.unpaired:
        fields.setdefault("metadata", {})
        fields["metadata"] = {**fields["metadata"], "unpaired_results": b.unpaired}
    body = {**b.case_defaults(), **fields, "trace": trace}
    return build_case(mended_case(body, record_named(default_id, cid), fmt="openai-messages", sources=(record,)))


register_format(Format("openai-messages", read=read_lines, adapt=adapt, prepare=lambda ds: Options.model_validate(ds.options), options=Options))
