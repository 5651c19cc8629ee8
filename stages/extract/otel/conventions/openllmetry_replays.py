"""OpenLLMetry's OpenAI Agents SDK instrumentation: a Chat Completions request's reply, read off the next request's replay.

The instrumentation (0.62.4) records a request's output off a Responses API response only: a Chat Completions model's
request (the SDK's `generation` span) keeps its input alone, and a tool that returned one of the SDK's structured
outputs (`ToolOutputText`, a list of them: pydantic models it cannot serialise) gets no tool span. Such a call would be
lost, though the SDK sends the model its whole history each request: the next request's input replays the request's
messages, then its reply (the assistant message with its text and calls: ids, names, arguments), then the tools'
outputs (tool messages answering those ids), which the assembler already pairs with the calls by id.

`replayed_replies` gives each such request the reply its next request replays, when that reply called tools. The next
request is the next one of the same agent span (the instrumentation parents requests on their agent's span), else,
for an agent's last request, the next one of the trace (the agent a handoff passed the run to), and it must replay the
request's own messages whole (system messages aside: each agent has its own); anything else (a handoff whose
`input_filter` removed the calls, a sub-agent run in a tool's body, a second run of the trace) gives nothing. A
reply that called no tool (a final answer a later turn replays) is not taken. Tool spans still pair with the calls
by name and arguments (`openllmetry_agents.calls_of`): a call that has one reads as before, with the id the replay
gave it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from tracejudge.stages.extract.otel.replays import bare, message_key
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["FROM_REPLAY", "replayed_replies"]

FROM_REPLAY = "openllmetry_agents.from_replay"  # on a part of a request's output read off the next request's replay


def replayed_replies(requests: list[Span], views: dict[str, View], blank: Callable[[Span, View], bool]) -> None:
    """Give each request of `requests` (this instrumentation's model requests of a group) that `blank` says recorded no
    output the reply with calls the next request's input replays (module docstring). In place, once: parts so read carry
    `FROM_REPLAY` (`blank` may leave them out: they are no output the request recorded)."""
    asked = sorted(requests, key=lambda s: (s.trace_id, s.start, s.span_id))
    for i, span in enumerate(asked):
        v = views[span.span_id]
        if not blank(span, v) or any(p.get(FROM_REPLAY) for m in v.outputs or [] for p in m.get("parts") or [] if isinstance(p, dict)):
            continue  # (recorded, or read already)
        later = [s for s in asked[i + 1:] if s.trace_id == span.trace_id]
        following = next((s for s in later if s.parent_id == span.parent_id), None) or (later[0] if later else None)
        reply = _replayed(v.inputs or [], views[following.span_id].inputs or []) if following is not None else None
        if reply is not None:
            v.outputs = [reply, *(v.outputs or [])]


def _replayed(seen: list[dict[str, Any]], inputs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The reply `inputs` holds right after replaying all of `seen` (system messages aside), when it calls a tool; a copy
    whose parts are marked `FROM_REPLAY`, its empty texts left out. `None` otherwise.

    The SDK's Chat Completions converter adds a reply's calls to the assistant message before them when that one called
    none (a history ending in the assistant's text, as a handoff's `input_filter` leaves it): the reply is then what
    that message has past `seen`'s last one.
    """
    said, got = [message_key(m) for m in bare(seen)], bare(inputs)
    n = len(said)
    if not n or len(got) < n or [message_key(m) for m in got[:n - 1]] != said[:-1]:
        return None
    if message_key(got[n - 1]) == said[-1]:
        reply = got[n] if len(got) > n else {}
        parts = _said(reply) if reply.get("role") == "assistant" else []
    else:  # the reply's calls merged into the assistant message `seen` ended with
        last, merged = bare(seen)[-1], got[n - 1]
        before, after = _said(last), _said(merged)
        grown = last.get("role") == merged.get("role") == "assistant" and len(after) > len(before)
        parts = after[len(before):] if grown and message_key({"role": "assistant", "parts": after[:len(before)]}) == said[-1] else []
        if any(p.get("type") == "tool_call" for p in before):
            parts = []  # (calls are never added to a message that has some: a tool's output came between)
    if not any(p.get("type") == "tool_call" for p in parts):
        return None
    return {"role": "assistant", "parts": [{**copy.deepcopy(p), FROM_REPLAY: True} for p in parts]}


def _said(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts of `message`, empty texts left out (no part of what was said: `replays.message_key` skips them too)."""
    return [p for p in message.get("parts") or [] if isinstance(p, dict) and not (p.get("type") == "text" and p.get("content") in (None, ""))]
