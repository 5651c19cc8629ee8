"""Format `anthropic-messages`: Anthropic Messages API conversations.

Framing: JSONL, one conversation per line::

    {"id": "run-7", "system": "...", "messages": [{"role": "user", "content": "..."},
                                                 {"role": "assistant", "content": [blocks]}, ...]}

`content` is a string or a list of blocks:

- assistant: `text`, `thinking` (the step's thought), `tool_use` (`id`,
  `name`, `input`), and the server-side `server_tool_use` / `mcp_tool_use`
  (calls too);
- user: `text` (the user's words: first one is the case `input`, later ones
  `turns`; every user message with words or other non-result blocks is one
  of `trace.user_messages`, a message of tool results alone is not), `tool_result` (`tool_use_id`, `content`, `is_error`),
  `mcp_tool_result` and the server tools' `*_tool_result` blocks (a result
  whose content is an object of type `*_error` is a failed call).

The record's `system` (text, or a list of `text` blocks, joined by newlines) is the trace's
`system_prompts`, and so is a message of role `system` (some loggers write one).

Each assistant message is one step (one model response), but for a prefill: an assistant message of text alone
that another assistant message follows is the request's last message, the words the model went on from (Anthropic's
API reads messages of one role in a row as one turn; a logger writes the request's messages, then the response). The
two are one step, the prefill before the continuation's first text (`{"city": "` + `Oslo"}`), as format `otel` reads
it (`prefill`). Calls pair with
results by `tool_use_id`, by position where ids repeat or are missing.
`is_error: true` marks a failed call, its text the error message. Results
holding JSON text are decoded. Native case keys on the record pass through
as for `openai-messages`; option `messages_field` renames `messages`.

Thought or output. A message that asks for a client `tool_use` ends with the
model waiting for the application's results: everything it says is the
step's `thought` (with its `thinking`). Server tools (`server_tool_use`:
web_search, web_fetch, code_execution, bash/text_editor code execution,
tool search; `mcp_tool_use` with the MCP connector) run inside the same
response, their `*_tool_result` / `mcp_tool_result` block right behind: the
text after the last of those blocks, in a message with no client `tool_use`,
is the reply to the user, the step's `output` (and the trace's when no later
step answers); text before them is the step's `thought`. So a step may have
both calls and output. A server call is a call of its step like any other
(`name` the tool's, `arguments` its `input`, `result` the result block's
`content`, `error` when that content is a `*_error` object: its
`error_message`, else its `error_code`; or `is_error: true`); the native
`ToolCall` has no field saying where a tool ran, so nothing marks it
server-side. A code execution that ran and exited non-zero is a result
(`return_code`, `stderr` in it), not a failed call. Text blocks follow each
other in one response where the API cut the reply around its `citations`;
a run of adjacent text blocks any of which has citations is one text, joined
as it was cut (no separator); other text blocks stay one a line.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, register_format
from tracejudge.stages.extract.common import build_case, case_fields, decode_line, fail, json_type, messages_of, read_lines
from tracejudge.stages.extract.prefill import prefill_words, prefixed
from tracejudge.stages.extract.lone_text import mended_case, record_named
from tracejudge.stages.extract.steps import TraceBuilder
from tracejudge.stages.extract.system_prompts import prompt_text

__all__ = ["SERVER_CALLS", "Options", "adapt", "is_result", "result_error"]

SERVER_CALLS = ("server_tool_use", "mcp_tool_use")  # (format `otel` reads these blocks the same way: `otel/server_blocks.py`)
_CALLS = ("tool_use", *SERVER_CALLS)


class Options(BaseModel):
    """`dataset.options` of `anthropic-messages`: `messages_field` (record key of the message list)."""

    model_config = ConfigDict(extra="forbid")

    messages_field: str = "messages"


def _blocks(content: Any, where: str, cid: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if content is None:
        return []
    if not isinstance(content, list):
        fail(f"content must be a string or a list of blocks, got {json_type(content)}", field=f"{where}.content", case_id=cid)
    out = []
    for k, block in enumerate(content):
        if isinstance(block, str):
            block = {"type": "text", "text": block}
        if not isinstance(block, dict):
            fail("a content block must be an object", field=f"{where}.content[{k}]", case_id=cid)
        out.append(block)
    return out


def _system(value: Any, cid: str) -> str | None:
    """The record's `system`: text, or a list of blocks whose `text` blocks are joined by newlines (a block's
    `cache_control` changes nothing); anything else is refused, naming the field."""
    if not isinstance(value, (str, list)):
        fail(f"system must be a string or a list of text blocks, got {json_type(value)}", field="system", case_id=cid)
    for k, block in enumerate(value if isinstance(value, list) else []):
        if not isinstance(block, (dict, str)):
            fail(f"a system block must be an object, got {json_type(block)}", field=f"system[{k}]", case_id=cid)
        if isinstance(block, dict) and block.get("type", "text") == "text" and not isinstance(block.get("text"), str):
            fail(f"a system text block's text must be a string, got {json_type(block.get('text'))}", field=f"system[{k}].text",
                 case_id=cid)
    return prompt_text(value)


def is_result(kind: Any) -> bool:
    """Whether a block `type` is a tool's result: a client `tool_result`, or a server tool's `*_tool_result` / `mcp_tool_result`."""
    return isinstance(kind, str) and (kind == "tool_result" or kind.endswith("_tool_result"))


def result_error(block: dict[str, Any]) -> Any:
    """A result block's error: `True` for `is_error: true` (its text is the message), the `error_message` (else
    `error_code`) of a `*_error` content object, else `None` (not failed)."""
    if block.get("is_error"):
        return True
    content = block.get("content")
    if isinstance(content, dict) and str(content.get("type", "")).endswith("_error"):
        said = content.get("error_message")  # tool search and the text editor may say why; every error gives a code
        return str(said if isinstance(said, str) and said else content.get("error_code") or content["type"])
    return None


def _said(blocks: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """The text of an assistant message's text blocks, as `(index of its first block, text)`.

    A run of adjacent text blocks holding citations is one reply the API cut around them: joined as cut."""
    out: list[tuple[int, str]] = []
    run: list[tuple[int, dict[str, Any]]] = []
    for k, block in [*enumerate(blocks), (len(blocks), {})]:
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            run.append((k, block))
            continue
        if any(t.get("citations") for _, t in run):
            out.append((run[0][0], "".join(t["text"] for _, t in run)))
        else:
            out.extend((j, t["text"]) for j, t in run)
        run = []
    return out


def _reply_from(blocks: list[dict[str, Any]]) -> int | None:
    """Where the reply to the user starts in an assistant message: after its last server tool block, when it ran a
    server tool and asks for no client `tool_use`; `None` otherwise (what it says is a thought, or plainly its output)."""
    kinds = [b.get("type") for b in blocks]
    if "tool_use" in kinds or not any(k in SERVER_CALLS for k in kinds):
        return None
    return max(k for k, kind in enumerate(kinds) if kind in SERVER_CALLS or is_result(kind)) + 1


def _continued(messages: list[Any], i: int) -> bool:
    """Whether the message after `messages[i]` is the assistant's too (so `messages[i]`, text alone, is a prefill)."""
    after = messages[i + 1] if i + 1 < len(messages) else None
    return isinstance(after, dict) and after.get("role") == "assistant"


def adapt(payload: Any, options: Options | None = None) -> Case:
    """Turn one JSONL record into a `Case` (see the module docstring).

    Raises `AdapterError` naming the field (`messages[2].content[1].name`)
    for a missing message list, an unknown role or a tool_use without name.
    """
    opts = options or Options()
    record, default_id = decode_line(payload)
    fields = case_fields(record, default_id)
    cid = str(fields["id"])
    field = opts.messages_field
    messages = messages_of(record, field, cid)
    b = TraceBuilder()
    if record.get("system") is not None:
        b.system.append((None, _system(record["system"], cid)))
    replies: dict[int, str] = {}  # step index -> the reply that followed its server tools
    words: str | None = None  # a prefill, waiting for the response that continued it
    for i, msg in enumerate(messages):
        where = f"{field}[{i}]"
        if not isinstance(msg, dict):
            fail(f"expected a message object, got {json_type(msg)}", field=where, case_id=cid)
        role = msg.get("role")
        blocks = _blocks(msg.get("content"), where, cid)
        if role == "assistant" and words is not None:
            blocks, words = prefixed(blocks, words, "text"), None
        if role == "assistant" and _continued(messages, i) and (said := prefill_words(blocks, "text")) is not None:
            words = said
            continue
        if role == "assistant":
            step = b.new_step()
            cut, spoken = _reply_from(blocks), _said(blocks)
            reply = [text for k, text in spoken if cut is not None and k >= cut]
            step["texts"].extend(text for k, text in spoken if cut is None or k < cut)
            if reply:
                replies[len(b.steps) - 1] = "\n".join(reply)
            for k, block in enumerate(blocks):
                kind = block.get("type")
                if kind == "thinking" and isinstance(block.get("thinking"), str):
                    step["thoughts"].append(block["thinking"])
                elif kind in _CALLS:
                    name = block.get("name")
                    if not isinstance(name, str) or not name:
                        fail(f"{kind} block has no name", field=f"{where}.content[{k}].name", case_id=cid)
                    b.call(step, block.get("id"), name, block.get("input"))
                elif is_result(kind):  # server tools answer inside the assistant turn
                    b.result(block.get("tool_use_id"), block.get("content"), result_error(block))
            b.close_step()
        elif role == "user":
            texts, said = [], []
            for block in blocks:
                kind = block.get("type")
                if is_result(kind):
                    b.result(block.get("tool_use_id"), block.get("content"), result_error(block))
                    continue
                said.append(block)
                if kind == "text" and isinstance(block.get("text"), str):
                    texts.append(block["text"])
            # A message of tool results alone is the tools' answer, not a user turn.
            if texts:
                b.user_text("\n".join(texts))
            elif said:
                b.user_text(said)
        elif role == "system":
            b.system.append((None, prompt_text(msg.get("content"))))
        else:
            fail(f"unknown message role {role!r}", field=f"{where}.role", case_id=cid)
    trace = b.trace()
    if replies:
        for k, text in replies.items():
            trace["steps"][k]["output"] = text
        trace["output"] = next((s["output"] for s in reversed(trace["steps"]) if s.get("output")), None)
    if isinstance(record.get("usage"), dict):
        trace["usage"] = record["usage"]
    if b.unpaired:
        fields["metadata"] = {**fields.get("metadata", {}), "unpaired_results": b.unpaired}
    body = {**b.case_defaults(), **fields, "trace": trace}
    return build_case(mended_case(body, record_named(default_id, cid), fmt="anthropic-messages", sources=(record,)))


register_format(Format("anthropic-messages", read=read_lines, adapt=adapt, prepare=lambda ds: Options.model_validate(ds.options), options=Options))
