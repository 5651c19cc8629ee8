"""Server tools in a model request's output: their results, the reply after them, and a lost output mended.

A server tool (Anthropic's web_search, web_fetch, code execution, tool search, the MCP connector's tools; the OpenAI
Responses API's hosted tools, `hosted_tools`) runs inside the model's response: its call and its result are parts of
the same output (`server_blocks`, `hosted_tools`), and no later request sends the result. Read as format
`anthropic-messages` (and `openai-messages`) reads the same message, so both readings of one run agree:

- a server call takes its result (and error) from the result part of its id in the same output (`same_response`),
  never from a later request's input (which replays it, but a last response has no later request);
- an output that ran a server tool and asks for no client tool call answers the user with the text after its last
  server call or result: that text is the step's output, the text before it the step's thought, with its reasoning
  (`server_reply`); an output that also asks for a client call waits for the application: all its text is thought;
- text parts are said one a line, except a run of adjacent text parts one of which is `cited` (the API cut the
  reply around its citations): those are one text, joined as cut.

Where each instrumentation leaves the blocks:

- OpenInference's Anthropic instrumentation flattens a server call as a tool call and its result block as the JSON
  text of a text content, and keeps citations only in its `metadata`; `output.value`, the response as the SDK
  returned it, has every block with its citations: read from it when it holds a server block (`anthropic_output`).
- OpenLLMetry's (opentelemetry-instrumentation-anthropic) writes no part for server blocks in a response's
  `gen_ai.output.messages`, and no citations; a later request's `gen_ai.input.messages` replays that response with
  the server blocks as they were sent. `from_history` gives a response that lost them the replay of it, found in the
  first later request whose input holds an assistant message with server blocks and the same text, reasoning and
  client calls as the response. A response no later request replays (a conversation's last) keeps no trace of
  its server calls, and the pieces of a cited reply are said one a line (the replay has no citations).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from tracejudge.stages.extract.hosted_tools import hosted_parts, is_hosted
from tracejudge.stages.extract.otel.messages import normalise_one
from tracejudge.stages.extract.otel.server_blocks import is_server_block
from tracejudge.stages.extract.otel.view import View, unjson

__all__ = ["anthropic_output", "from_history", "hosted_flattened", "hosted_output", "same_response", "server_reply"]


def _parts(messages: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The parts of the assistant messages among `messages`, in order."""
    return [p for m in messages or [] if isinstance(m, dict) and m.get("role") == "assistant" for p in m.get("parts") or [] if isinstance(p, dict)]


def _server(part: dict[str, Any]) -> bool:
    return bool(part.get("server")) and part.get("type") in ("tool_call", "tool_call_response")


def anthropic_output(raw: Any) -> list[dict[str, Any]] | None:
    """An Anthropic Messages API response body (`{"type": "message", "content": [blocks], …}`, or its JSON text) as
    output messages, when one of its blocks is a server tool's; `None` otherwise (the flattened messages are read)."""
    body = unjson(raw)
    if not (isinstance(body, dict) and body.get("type") == "message" and isinstance(body.get("content"), list)):
        return None
    if not any(isinstance(b, dict) and is_server_block(b.get("type")) for b in body["content"]):
        return None
    msg = normalise_one({"role": "assistant", "content": body["content"]})
    return [msg] if msg is not None and msg.get("parts") else None


def hosted_output(raw: Any) -> list[dict[str, Any]] | None:
    """The output messages of a Responses API response recorded whole (`output.value`: the response, the Agents SDK's list
    of them, or their JSON text) when one of its items is a hosted call; `None` otherwise (the flattened messages are
    read). OpenInference flattens a hosted item as a tool call named by its item type (`web_search_call`) with no
    result, or not at all (`code_interpreter_call`): the response says what ran and what it returned."""
    from tracejudge.stages.extract.otel.conventions.agents_sdk import response_calls  # (conventions import this module)

    body = unjson(raw)
    bodies = body if isinstance(body, list) else [body]
    if not any(is_hosted(item) for b in bodies if isinstance(b, dict) for item in b.get("output") or [] if isinstance(b.get("output"), list)):
        return None
    return response_calls(body) or None


def hosted_flattened(messages: list[dict[str, Any]] | None, raw: Any) -> None:
    """Make the tool calls OpenInference flattened from hosted items (a part named by the item's type, `web_search_call`)
    the call and result parts `hosted_tools` makes of the item, in place.

    `raw` is the span's `input.value` or `output.value` (a request's keyword arguments, a response, the Agents SDK's
    list of them, or their JSON text, cut or not): the item of the part's id there gives the arguments and result; a
    part whose item is not there (the text was cut at the attribute limit, or not recorded) keeps the arguments it has,
    with no result. So a request's replay of a response reads as the response itself did (`hosted_output`), and a
    conversation whose history holds a hosted call still chains.
    """
    if not messages:
        return
    body = unjson(raw)
    bodies = body if isinstance(body, list) else [body]
    items = {str(i["id"]): i for b in bodies if isinstance(b, dict) for key in ("input", "output") if isinstance(b.get(key), list)
             for i in b[key] if is_hosted(i) and i.get("id") not in (None, "")}
    for m in messages:
        parts = m.get("parts")
        if not isinstance(parts, list) or not any(_flattened_hosted(p) for p in parts):
            continue
        # The flattening keeps no order between a message's text and its calls, and the API gives a hosted call before
        # the text that reports on it: the hosted parts go first, so the text after them reads as the reply (`server_reply`).
        out: list[dict[str, Any]] = []
        rest = [p for p in parts if not _flattened_hosted(p)]
        for p in parts:
            if not _flattened_hosted(p):
                continue
            item = items.get(str(p.get("id")))
            if item is None or item.get("type") != p["name"]:
                args = unjson(p.get("arguments"))
                item = {"type": p["name"], "id": p.get("id"), **({"action": args} if p["name"] == "web_search_call" and isinstance(args, dict) else
                                                                 args if isinstance(args, dict) else {})}
            out += hosted_parts(item)
        m["parts"] = out + rest


def _flattened_hosted(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "tool_call" and not part.get("server") and is_hosted({"type": part.get("name")})


def same_response(outputs: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """The server result parts of an output, by the id of the call they answer (the first one for an id said twice)."""
    out: dict[str, dict[str, Any]] = {}
    for p in _parts(outputs):
        if p.get("type") == "tool_call_response" and p.get("server") and p.get("id") is not None:
            out.setdefault(str(p["id"]), p)
    return out


def server_reply(outputs: list[dict[str, Any]] | None) -> tuple[str | None, str | None] | None:
    """`(text before, reply)` of an output that ran a server tool and asks for no client call; `None` for any other.

    Either may be `None` (no text there). The output is read as one message when a reader split it in several.
    """
    parts = _parts(outputs)
    calls = [p for p in parts if p.get("type") == "tool_call"]
    if not any(p.get("server") for p in calls) or any(not p.get("server") for p in calls):
        return None
    cut = max(k for k, p in enumerate(parts) if _server(p)) + 1
    said = _said(parts)
    before = [t for k, t in said if k < cut]
    reply = [t for k, t in said if k >= cut]
    return ("\n".join(before) if before else None), ("\n".join(reply) if reply else None)


def _said(parts: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """The text parts as `(index of the first, text)`: a run of adjacent ones holding a `cited` one joined as cut.

    (Format `anthropic-messages`' `_said`, on parts.)"""
    out: list[tuple[int, str]] = []
    run: list[tuple[int, dict[str, Any]]] = []
    for k, part in [*enumerate(parts), (len(parts), {})]:
        if part.get("type") == "text" and isinstance(part.get("content"), str):
            run.append((k, part))
            continue
        if any(p.get("cited") for _, p in run):
            out.append((run[0][0], "".join(p["content"] for _, p in run)))
        else:
            out.extend((j, p["content"]) for j, p in run)
        run = []
    return out


def _signature(parts: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What a response and its replay share: text and reasoning, and client calls by id and name (no server part)."""
    out: list[tuple[Any, ...]] = []
    for p in parts:
        kind = p.get("type")
        if kind in ("text", "reasoning"):
            out.append((kind, p.get("content")))
        elif kind == "tool_call" and not p.get("server"):
            out.append((kind, p.get("id"), p.get("name")))
    return out


def from_history(models: list[Any], views: dict[str, View], key: Callable[[Any], str] = lambda s: s.span_id) -> None:
    """Give each model request (`models`, in the order they were asked) whose output holds no server part the replay
    of that output a later request's input holds with its server parts (see the module docstring), in place.

    The replay is the last assistant message of the first later input that holds one with server parts and the same
    `_signature` as the output; an output with no text, reasoning or call (nothing to know it by) is left as it is.
    """
    for i, m in enumerate(models):
        v = views[key(m)]
        parts = _parts(v.outputs)
        wanted = _signature(parts)
        if not wanted or any(_server(p) for p in parts):
            continue
        for later in models[i + 1:]:
            found = [msg for msg in views[key(later)].inputs or [] if msg.get("role") == "assistant"
                     and any(_server(p) for p in msg.get("parts") or []) and _signature(msg.get("parts") or []) == wanted]
            if found:
                v.outputs = [copy.deepcopy(found[-1])]
                break
