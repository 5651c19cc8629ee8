"""The rest of a model request's input messages that the attribute length limit cut off (`value_limit`).

A framework that writes a request's whole history as one JSON attribute (`gen_ai.input.messages`: pydantic-ai, and
OpenInference's span processor over it) loses, past `OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`, the END of it: the latest
messages, the ones this request added. The GenAI reader keeps the messages decoded whole before the cut
(`View.inputs_cut` set); the rest is what the requests beside it show of the same conversation:

- a later request of the group whose input was recorded whole and replays this one's input, then its reply: that
  input up to the reply is this request's input;
- else the request before it in the same run (same parent span), when its reply asked for tool calls and this
  request's first messages agree with its input and reply: this request is that tool round's next one, its input
  that request's input, its reply, and the results of those calls as the tool spans recorded them (in the shape
  the conversation's own results take), nothing the user said being sent inside one run's tool loop.

A request neither holds — the first request of a run, which sent a user message no other span records — makes
its conversation one `invalid_input` saying the text was cut at N characters by the limit, never a conversation
read without that message (`View.unreadable`, raised by `adapt`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracejudge.stages.extract.otel.conventions import group_views
from tracejudge.stages.extract.otel.replays import message_key
from tracejudge.stages.extract.otel.spans import Group, Span
from tracejudge.stages.extract.otel.value_limit import cut_note
from tracejudge.stages.extract.otel.view import MISSING, View, tool_response_part

__all__ = ["mend_tails"]

_KEY = "gen_ai.input.messages"


def mend_tails(group: Group) -> None:
    """Give each model request of `group` whose input messages were cut at the length limit the rest of them (module
    docstring); one nothing beside it holds gets the `AdapterError` its conversation is refused with. Nothing when
    no request's input was cut."""
    from tracejudge.stages.extract.errors import AdapterError

    views = group_views(group)
    requests = sorted(((s, v) for s in group.spans if (v := views[s.span_id]).role == "model"), key=lambda r: (r[0].start, r[0].span_id))
    if not any(v.inputs_cut for _, v in requests):
        return
    results = {v.call_id: v.result for v in views.values() if v.role == "tool" and v.call_id and v.result is not MISSING}
    whole: list[tuple[Span, View]] = []  # requests whose input is known in full, in start order
    for i, (span, view) in enumerate(requests):
        if not view.inputs_cut:
            whole.append((span, view))
            continue
        later = [v for _, v in requests[i + 1 :] if not v.inputs_cut]
        found = _from_later(view, later)
        if found is None:
            found = _from_earlier(span, view, whole, results)
        if found is None:
            view.unreadable = AdapterError(
                f"{cut_note(span, _KEY, view.inputs_cut)}: {_whole(view.inputs_whole or 0)}, and no other span holds "
                f"the rest (no later request replays it, and it does not go on from a tool round of the request before it) "
                f"({Path(span.file).name} line {span.line})", field=f"span {span.span_id}: {_KEY}")
            continue
        view.inputs = found
        whole.append((span, view))


def _whole(n: int) -> str:
    """What is left of a cut input, in words true of every count (the system instructions beside it are not counted)."""
    if n == 0:
        return "none of its messages is whole"
    return "its first message is whole" if n == 1 else f"its first {n} messages are whole"


def _keys(messages: list[dict[str, Any]]) -> list[Any]:
    """The messages' replay keys, a message of tool results only as one key per result: frameworks group a round's
    results in one message (pydantic-ai, as `user`) or send one each (`tool`), and a rebuilt round must match either."""
    out: list[Any] = []
    for m in messages:
        parts = m.get("parts") or []
        if parts and all(p.get("type") == "tool_call_response" for p in parts):
            out.extend(("r", p.get("id")) for p in parts)
        else:
            out.append(message_key(m))
    return out


def _starts(messages: list[dict[str, Any]], head: list[dict[str, Any]]) -> bool:
    keys, want = _keys(messages), _keys(head)
    return keys[: len(want)] == want


def _from_later(view: View, later: list[View]) -> list[dict[str, Any]] | None:
    """This request's input as the first later whole request replays it: up to the reply this request got."""
    if not view.outputs:
        return None
    reply = message_key(view.outputs[0])
    have = len(view.inputs or [])
    for other in later:
        inputs = other.inputs or []
        if not _starts(inputs, view.inputs or []):
            continue
        at = next((k for k in range(have, len(inputs)) if message_key(inputs[k]) == reply), None)
        if at is not None:
            return inputs[:at]
    return None


def _from_earlier(span: Span, view: View, whole: list[tuple[Span, View]], results: dict[str, Any]) -> list[dict[str, Any]] | None:
    """This request's input as the next round of the request before it in the same run: its input, its reply, the
    results of the calls the reply asked for (those this request's own first messages hold, the rest from the tool
    spans); `None` when that request asked for no call, a call has no recorded result, or the messages disagree."""
    prior = next((v for s, v in reversed(whole) if s.parent_id == span.parent_id), None)
    if prior is None or not prior.outputs:
        return None
    asked = [p for m in prior.outputs for p in m.get("parts") or [] if p.get("type") == "tool_call" and p.get("id")]
    if not asked or any(p["name"] in prior.output_tools for p in asked):
        return None
    base = [*(prior.inputs or []), *prior.outputs]
    own = view.inputs or []
    if not (_starts(base, own) if len(_keys(own)) <= len(_keys(base)) else _starts(own, base)):
        return None
    head = own if len(_keys(own)) > len(_keys(base)) else base
    answered = {str(p.get("id")) for m in head[len(base):] for p in m.get("parts") or [] if p.get("type") == "tool_call_response"}
    missing = [p for p in asked if str(p["id"]) not in answered]
    if any(str(p["id"]) not in results for p in missing):
        return None
    parts = [{**tool_response_part(p["id"], results[str(p["id"])]), "name": p.get("name")} for p in missing]
    return [*head, *_shaped(parts, prior.inputs or [])]


def _shaped(parts: list[dict[str, Any]], history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Result parts as the conversation's own results are sent: in one message of the role an earlier round's took
    (pydantic-ai's `user`), else one `tool` message each."""
    if not parts:
        return []
    earlier = next((m for m in reversed(history) if any(p.get("type") == "tool_call_response" for p in m.get("parts") or [])), None)
    if earlier is not None and len(earlier.get("parts") or []) > 1:
        return [{"role": earlier.get("role") or "tool", "parts": parts}]
    role = earlier.get("role") if earlier is not None else "tool"
    return [{"role": role or "tool", "parts": [p]} for p in parts]
