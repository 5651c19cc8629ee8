"""Chat messages in any shape a tracer records them, normalised to the GenAI parts form.

Conventions copy a framework's messages into span attributes as they are:
OTel GenAI parts (`{"role", "parts"}`), OpenAI chat messages (`content`,
`tool_calls[].function`, `tool_call_id`), Anthropic content blocks
(`tool_use`, `tool_result`), LangChain messages (serialised `lc` objects,
`{"type": "human", ...}` dicts, `("user", "text")` pairs), and the Vercel AI
SDK's (`tool-call` / `tool-result` parts). `normalise` reads each message by
its own shape, so one list may even mix them. See `view` for the target form.

Anthropic server tool blocks (`server_tool_use`, `web_search_tool_result`, …) are
`tool_call` / `tool_call_response` parts marked `server` (`server_blocks`), and a
text block with `citations` a text part marked `cited`.

Reasoning (a Responses API `reasoning` item's summary, a `reasoning` content
block as OpenInference records it, an Anthropic `thinking` block, pydantic-ai's
`thinking` part) becomes a `{"type": "reasoning", "content"}` part: never a text part, so never the model's output (`output_text`), but
kept for a step's thought (`reasoning_text`). A LangChain message's
`invalid_tool_calls` (arguments that were not JSON) are `tool_call` parts
holding the raw arguments text and `"invalid"`: the error LangChain gave;
the model did ask for the call, and the raw text is kept as an invalid
argument, as the message readers keep it.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.hosted_tools import hosted_parts, is_hosted
from tracejudge.stages.extract.otel.adk_notes import adk_note
from tracejudge.stages.extract.otel.server_blocks import is_server_block, server_part
from tracejudge.stages.extract.otel.view import present, text_message, tool_call_part, tool_response_part, unjson

__all__ = ["last_user_text", "normalise", "normalise_one", "output_text", "reasoning_text", "response_output", "said_text", "text_parts", "trailing_user_texts", "user_content",
           "user_contents", "user_texts"]

_ROLES = {
    "human": "user",
    "user": "user",
    "ai": "assistant",
    "assistant": "assistant",
    "model": "assistant",
    "system": "system",
    "developer": "system",
    "tool": "tool",
    "function": "tool",
    "ipython": "tool",
    "tool-response": "tool",
    "tool_response": "tool",
}
_LC_CLASSES = {"HumanMessage": "user", "AIMessage": "assistant", "SystemMessage": "system", "ToolMessage": "tool", "FunctionMessage": "tool"}
_LC_CLASSES.update({k + "Chunk": v for k, v in list(_LC_CLASSES.items())})


def normalise(value: Any) -> list[dict[str, Any]] | None:
    """Normalise a list of messages (or JSON text of one); `None` when `value` is no message list.

    A `{"messages": [...]}` wrapper (LangGraph state, MLflow chat inputs) is
    unwrapped. Items that are not messages are skipped.
    """
    value = unjson(value)
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if not isinstance(value, list):
        return None
    out = [m for m in (normalise_one(item) for item in value) if m is not None]
    return out


def response_output(body: Any) -> list[dict[str, Any]] | None:
    """The assistant messages of an OpenAI Responses API response (`{"object": "response", "output": [items]}`), or of a
    list of them; `None` when `body` is neither.

    Its `message` items give text parts, its `function_call` items tool-call parts (`call_id`, `name`, `arguments`), its
    `reasoning` items reasoning parts (the summary texts), a hosted tool's item (`web_search_call`, …) its call and
    result parts marked `server` (`hosted_tools`), in the order of the items; other items are not messages. The
    Agents SDK records a streamed run's model output so (a list holding the response), in its own export
    (`generation.output`) and through OpenInference (`output.value`).
    """
    bodies = body if isinstance(body, list) and body and all(isinstance(b, dict) for b in body) else [body]
    if not all(isinstance(b, dict) and isinstance(b.get("output"), list) and b.get("object", "response") == "response"
               and "role" not in b for b in bodies):
        return None
    out = []
    for b in bodies:
        for item in b["output"]:
            if isinstance(item, dict) and item.get("type") == "message":
                out.append(normalise_one({"role": "assistant", "content": item.get("content")}))
            elif isinstance(item, dict) and item.get("type") == "function_call":
                out.append(normalise_one({"role": "assistant", "content": [item]}))
            elif isinstance(item, dict) and item.get("type") == "reasoning":
                out.append(_reasoning_item(item))
            elif is_hosted(item):
                out.append({"role": "assistant", "parts": hosted_parts(item)})
    return [m for m in out if m is not None]


def _reasoning_item(item: dict[str, Any]) -> dict[str, Any] | None:
    """A Responses API `reasoning` item as an assistant message of reasoning parts (`None` when it has no summary text)."""
    texts = [s["text"] for s in item.get("summary") or [] if isinstance(s, dict) and isinstance(s.get("text"), str) and s["text"]]
    return {"role": "assistant", "parts": [{"type": "reasoning", "content": t} for t in texts]} if texts else None


def normalise_one(msg: Any) -> dict[str, Any] | None:
    """Normalise one message of any known shape; `None` when it is not a message."""
    if isinstance(msg, (list, tuple)) and len(msg) == 2 and isinstance(msg[0], str):
        return text_message(_ROLES.get(msg[0], msg[0]), msg[1] if isinstance(msg[1], str) else None)
    if not isinstance(msg, dict):
        return None
    if is_hosted(msg):  # a hosted tool's item replayed in a Responses API request's input: the response's call and result
        return {"role": "assistant", "parts": hosted_parts(msg)}
    if msg.get("lc") == 1 and isinstance(msg.get("kwargs"), dict):  # langchain_core.load.dumpd
        ident = msg.get("id") or []
        role = _LC_CLASSES.get(ident[-1] if isinstance(ident, list) and ident else "", "user")
        return _chat(role, msg["kwargs"])
    if isinstance(msg.get("type"), str) and isinstance(msg.get("data"), dict) and "content" in msg["data"]:  # langchain messages_to_dict
        return _chat(_ROLES.get(msg["type"], msg["type"]), msg["data"])
    if isinstance(msg.get("parts"), list) and "role" in msg:  # already GenAI form
        parts = _written_blocks([_genai_part(p) for p in msg["parts"] if isinstance(p, dict)])
        return {"role": _ROLES.get(str(msg["role"]), str(msg["role"])), "parts": parts}
    role = msg.get("role") or msg.get("type")
    if not isinstance(role, str):
        return None
    return _chat(_ROLES.get(role, role), msg)


def _chat(role: str, msg: dict[str, Any]) -> dict[str, Any]:
    """OpenAI / LangChain / Anthropic / Vercel message fields into parts."""
    parts: list[dict[str, Any]] = []
    content = msg.get("content")
    if role == "tool":
        cid = msg.get("tool_call_id") or msg.get("toolCallId")
        if isinstance(content, list) and content and all(isinstance(c, dict) and c.get("type") in ("tool-result", "tool_result") for c in content):
            parts.extend(_block(c) for c in content)
        else:
            parts.append(tool_response_part(cid, _content_text(content) if isinstance(content, list) else content))
        return {"role": "tool", "parts": [p for p in parts if p is not None]}
    if isinstance(content, str):
        if content != "":
            parts.append({"type": "text", "content": content})
    elif isinstance(content, list):
        parts.extend(p for p in (_block(c) for c in content) if p is not None)
    # LangChain's AIMessage of a Responses API reply holds each call twice: a `function_call` block in `content` and
    # its parsed `tool_calls` entry, under the same call id; one call
    in_content = {p["id"] for p in parts if p.get("type") == "tool_call" and p.get("id") is not None}
    for tc in msg.get("tool_calls") or []:
        if not isinstance(tc, dict) or (tc.get("id") is not None and str(tc.get("id")) in in_content):
            continue
        fn = tc.get("function") if isinstance(tc.get("function"), dict) else None
        if fn is not None:  # OpenAI
            parts.append(tool_call_part(tc.get("id"), fn.get("name"), fn.get("arguments")))
        else:  # LangChain's ToolCall: {"name", "args", "id"}
            parts.append(tool_call_part(tc.get("id"), tc.get("name"), tc.get("args", tc.get("arguments"))))
    for bad in msg.get("invalid_tool_calls") or []:  # LangChain: the model's call whose arguments did not parse
        if isinstance(bad, dict) and isinstance(bad.get("name"), str) and bad["name"]:
            parts.append({**tool_call_part(bad.get("id"), bad["name"], bad.get("args")), "invalid": str(bad.get("error") or "invalid tool call")})
    fc = msg.get("function_call")
    if isinstance(fc, dict) and fc.get("name"):
        parts.append(tool_call_part(None, fc.get("name"), fc.get("arguments")))
    if any(p.get("type") == "tool_call_response" for p in parts) and role == "user":
        role = "tool" if all(p.get("type") == "tool_call_response" for p in parts) else role
    return {"role": role, "parts": parts}


_BLOCK_KINDS = ("function_call", "reasoning")  # Responses API items LangChain keeps in an AIMessage's `content`


def _written_blocks(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`parts` with each text part that is the JSON of a Responses API content block read as that block.

    OpenLLMetry's LangChain instrumentation writes every block of an `AIMessage`'s `content` that is not text as a
    text part holding the block's JSON: a `function_call` (the same call as the message's `tool_call` part of its
    `call_id`, else a call of its own) and a `reasoning` item (its summary, a reasoning part) would read as words the
    model said.
    """
    called = {p.get("id") for p in parts if p.get("type") == "tool_call"}
    out: list[dict[str, Any]] = []
    for part in parts:
        text = part.get("content") if part.get("type") == "text" else None
        block = unjson(text) if isinstance(text, str) and text.startswith("{") else None
        if not isinstance(block, dict) or block.get("type") not in _BLOCK_KINDS:
            out.append(part)
        elif block["type"] == "function_call" and isinstance(block.get("name"), str):
            if str(block.get("call_id") or block.get("id")) not in called:
                out.append(_block(block))  # type: ignore[arg-type]  (a function_call block always reads as a part)
        elif block["type"] == "reasoning":
            said = [s["text"] for s in block.get("summary") or [] if isinstance(s, dict) and isinstance(s.get("text"), str)]
            if said:
                out.append({"type": "reasoning", "content": "\n".join(said)})
        else:
            out.append(part)
    return out


def _genai_part(part: dict[str, Any]) -> dict[str, Any]:
    """A part already in GenAI form, two writers' variants read as the convention's own: pydantic-ai's `thinking`
    part (its `ThinkingPart`, whatever the provider) is a `reasoning` part, its tool response's `result` the
    convention's `response`, and a tool response holding a list of
    text content blocks (an Anthropic `tool_result` sent as blocks, as OpenLLMetry's Anthropic instrumentation
    copies it; a Responses API `function_call_output`'s `input_text` items, as OpenLLMetry's openai-agents
    instrumentation copies the Agents SDK's structured tool output) is their text, as that block list reads anywhere
    else (`_block`)."""
    kind = part.get("type")
    if kind == "thinking":
        return {**part, "type": "reasoning"}
    if is_server_block(kind):  # OpenLLMetry's Anthropic instrumentation copies a block it has no part for as it was sent
        return server_part(part)
    if kind == "tool_call_response" and "response" not in part and "result" in part:
        # pydantic-ai (its `_otel_messages.ToolCallResponsePart`) names the convention's `response` `result`: unread, a call
        # no tool span answered (an unknown tool's retry) had no result, and a tool's `ModelRetry` seemed unanswered
        part = {**part, "response": part["result"]}
    response = part.get("response")
    if (kind == "tool_call_response" and isinstance(response, list) and response
            and all(isinstance(c, dict) and c.get("type") in ("text", "input_text") and isinstance(c.get("text"), str) for c in response)):
        return {**part, "response": _content_text(response)}
    return part


def _content_text(content: list[Any]) -> str | None:
    texts = [c.get("text") for c in content if isinstance(c, dict) and isinstance(c.get("text"), str)]
    texts += [c for c in content if isinstance(c, str)]
    return "\n".join(texts) if texts else None


def _block(block: Any) -> dict[str, Any] | None:
    """One content block (OpenAI, Anthropic, Vercel, GenAI) as a part."""
    if isinstance(block, str):
        return {"type": "text", "content": block}
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind in ("text", "input_text", "output_text") and isinstance(block.get("text", block.get("content")), str):
        if block.get("citations"):  # a piece of a reply the API cut around its citation: joined as cut (`server_tools`)
            return {"type": "text", "content": block.get("text", block.get("content")), "cited": True}
        return {"type": "text", "content": block.get("text", block.get("content"))}
    if is_server_block(kind):  # an Anthropic server tool's call or its result, inside the response (`server_blocks`)
        return server_part(block)
    if kind in ("image_url", "input_image"):  # (Chat Completions' `{"image_url": {"url"}}`, the Responses API's `image_url` text)
        url = block.get("image_url")
        url = url.get("url") if isinstance(url, dict) else url
        return {"type": "uri", "modality": "image", "uri": url} if isinstance(url, str) and url else None
    if kind in ("reasoning", "thinking") and isinstance(block.get("text", block.get("thinking", block.get("content"))), str):
        return {"type": "reasoning", "content": block.get("text", block.get("thinking", block.get("content")))}
    if kind in ("tool_use", "tool-call", "tool_call", "function_call"):
        args = block.get("input", block.get("args", block.get("arguments")))
        # a Responses API `function_call` item's `id` is the item's (`fc_…`); its result answers its `call_id`
        cid = block.get("call_id") if kind == "function_call" and block.get("call_id") else block.get("id", block.get("toolCallId", block.get("call_id")))
        return tool_call_part(cid, block.get("name", block.get("toolName")), args)
    if kind in ("tool_result", "tool-result", "tool_call_response", "function_call_output"):
        result = block.get("content", block.get("result", block.get("output", block.get("response"))))
        if isinstance(result, list):
            result = _content_text(result) if all(isinstance(c, (dict, str)) for c in result) else result
        if isinstance(result, dict) and result.get("type") in ("text", "json") and "value" in result:  # AI SDK 5's typed output
            result = result["value"]
        part = tool_response_part(block.get("tool_use_id", block.get("toolCallId", block.get("id", block.get("call_id")))), result)
        if block.get("is_error") is True:
            part["is_error"] = True
        if isinstance(block.get("name"), str):
            # the tool it answers (a Gemini function response): without an id, it pairs with a call of that name only
            part["name"] = block["name"]
        return part
    return None


def text_parts(message: Any) -> list[str]:
    """The text parts of a normalised message, placeholders left out."""
    if not isinstance(message, dict):
        return []
    return [p["content"] for p in message.get("parts") or [] if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("content"), str) and present(p["content"])]


def user_texts(messages: list[dict[str, Any]]) -> list[str]:
    """The text of every user message, in order (messages with no text left out, and so are Google ADK's notes on
    another agent's turn, which ADK writes as user messages: `adk_notes`)."""
    out = []
    for msg in messages:
        if msg.get("role") == "user":
            texts = text_parts(msg)
            if texts and not adk_note(texts):
                out.append("\n".join(texts))
    return out


def user_content(message: dict[str, Any]) -> str | list[dict[str, Any]] | None:
    """What a normalised user message said: its text; for a message with images (a photo sent alone, or beside the words
    about it), its text and images in order as OpenAI content blocks (`{"type": "text", "text": …}`, `{"type":
    "image_url", "image_url": {"url": …}}`, a data URL for an inline image), as format `openai-messages` keeps such a
    message's content; `None` for neither, and for a Google ADK note (`adk_notes`)."""
    texts = text_parts(message)
    if texts and adk_note(texts):
        return None
    blocks: list[dict[str, Any]] = []
    for part in message.get("parts") or []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "text" and isinstance(part.get("content"), str) and present(part["content"]):
            blocks.append({"type": "text", "text": part["content"]})
        elif (url := _image_url(part)) is not None:
            blocks.append({"type": "image_url", "image_url": {"url": url}})
    if len(blocks) > len(texts):  # (an image among them)
        return blocks
    return "\n".join(texts) if texts else None


def said_text(said: str | list[dict[str, Any]] | None) -> str | None:
    """The text of what `user_content` read (its text blocks joined by newlines, as `user_texts` joins them), else `None`."""
    if not isinstance(said, list):
        return said
    texts = [b["text"] for b in said if b.get("type") == "text"]
    return "\n".join(texts) if texts else None


def _image_url(part: dict[str, Any]) -> str | None:
    """The URL of a GenAI image part (`uri`; `blob`, base64 content, as a data URL), else `None`."""
    if part.get("modality") != "image":
        return None
    if part.get("type") == "uri" and isinstance(part.get("uri"), str) and part["uri"]:
        return str(part["uri"])
    if part.get("type") == "blob" and isinstance(part.get("content"), str) and part["content"]:
        return f"data:{part.get('mime_type') or 'image'};base64,{part['content']}"
    return None


def user_contents(messages: list[dict[str, Any]]) -> list[str | list[dict[str, Any]]]:
    """`user_content` of every user message that said something, in order: `user_texts` with the image-only messages."""
    return [said for m in messages if m.get("role") == "user" and (said := user_content(m)) is not None]


def last_user_text(messages: list[dict[str, Any]]) -> str | None:
    """The text of the last user message that has text, or `None`."""
    texts = user_texts(messages)
    return texts[-1] if texts else None


def trailing_user_texts(messages: list[dict[str, Any]]) -> list[str | list[dict[str, Any]]]:
    """What the user messages a request added since the model last spoke said (`user_content`): those after its last
    assistant or tool message (or user message of tool results alone), in order; `[]` when it ends on such a message.

    An app may send several user messages in a row (context, a photo, then the question): each is a user message of that
    turn, as format `openai-messages` reads the same conversation, an image-only one as its images. System messages
    between them are passed over; messages with neither text nor image and Google ADK's notes on another agent's turn
    are left out.
    """
    out: list[str | list[dict[str, Any]]] = []
    for msg in reversed(messages):
        role = msg.get("role")
        if role == "system":
            continue
        parts = [p for p in msg.get("parts") or [] if isinstance(p, dict)]
        if role != "user" or any(p.get("type") == "tool_call_response" for p in parts):
            break
        if (said := user_content(msg)) is not None:
            out.append(said)
    return out[::-1]


def output_text(messages: list[dict[str, Any]]) -> str | None:
    """The joined text parts of a model's output messages, or `None` (reasoning parts are not output)."""
    texts = [t for m in messages for t in text_parts(m)]
    return "\n".join(texts) if texts else None


def reasoning_text(messages: list[dict[str, Any]]) -> str | None:
    """The joined reasoning parts of a model's output messages (a step's thought), or `None`.

    OpenLLMetry writes a Responses API reasoning summary as the JSON text of its list of parts
    (`[{"text": …, "type": "summary_text"}]`): that list is read as its texts, one a line.
    """
    texts = [_summary_text(p["content"]) for m in messages for p in m.get("parts") or []
             if isinstance(p, dict) and p.get("type") == "reasoning" and isinstance(p.get("content"), str) and present(p["content"]) and p["content"]]
    return "\n".join(texts) if texts else None


def _summary_text(content: str) -> str:
    """`content`, or the texts of the Responses API summary parts it holds as JSON text (`reasoning_text`)."""
    if not content.startswith("[{"):
        return content
    parts = unjson(content)
    if (isinstance(parts, list) and parts and all(isinstance(x, dict) and isinstance(x.get("text"), str) and
                                                  str(x.get("type", "")).endswith("_text") for x in parts)):
        return "\n".join(x["text"] for x in parts)
    return content
