"""Traces of format `openai-agents` without a `group_id` joined into one conversation by what their requests replay.

Each `Runner.run` is a trace of its own. A chat application that keeps its history itself rather than under one
`trace(group_id=…)` (a `session`, `result.to_input_list()` sent with the next question) runs every turn as a new
trace, and nothing in the trace says which conversation it belongs to, but its first model request replays the
conversation so far: the previous turn's last request, its input and its reply. That is what format `otel` joins
OpenInference's recording of the same program by (`otel.stitch`), and the same rules join these traces, so both
recordings of one program read as the same cases: exact replays (call ids included), a system prompt re-rendered
per turn (a timestamp), a trimmed history; several conversations that fit leave the trace apart, with `stitch`'s
warning.

Only a Chat Completions model's `generation` spans record their messages. A Responses API request (`response`
span, the SDK's default) is exported without its input and without the `previous_response_id` it was chained with,
so traces of such requests are never joined: nothing in the recording links them. A trace is a candidate when one
of its `generation` spans recorded input; it is held (on a spool: `conversation_groups.Holder`) until the file is
read, with only its first and last such request and an agent span in memory, so memory grows by two requests a trace.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tracejudge.stages.extract.conversation_groups import Conversation, Holder, Refused
from tracejudge.stages.extract.otel.native import nanos, native_span
from tracejudge.stages.extract.otel.spans import Group, Span
from tracejudge.stages.extract.otel.stitch import stitch
from tracejudge.stages.load import RawRecord, loads

__all__ = ["Replayed"]


class Replayed:
    """The traces without a conversation key that may go on one another (`hold`), joined when the file is read (`records`)."""

    def __init__(self) -> None:
        self.holder = Holder("trace.id")
        self.groups: dict[str, Group] = {}  # by trace id

    def close(self) -> None:
        """Free the spool."""
        self.holder.close()

    def hold(self, record: RawRecord, trace_id: str, data: bytes) -> Refused | None | bool:
        """Hold `record` (one readable trace, `data` its JSON text) when a request of it recorded its input.

        Returns `False` when it is no candidate (the caller yields it now), else what `Holder.hold` returns (`None`: held).
        Another trace under an id held already is held apart, joined to nothing, and comes out after it: a case
        of its own under the same id, which the run reports as a duplicate id, as when it was read as it came.
        """
        light = _light(trace_id, record.payload["spans"])
        if light is None:
            return False
        if trace_id in self.groups:
            apart = f"{trace_id}@{record.file}:{record.line}"
            return self.holder.hold(apart, apart, None, record.file, record.line, data)
        refused = self.holder.hold(trace_id, trace_id, light.spans[0].start, record.file, record.line, data)
        if refused is None:
            self.groups[trace_id] = light
        return refused

    def records(self) -> Iterator[RawRecord]:
        """Each held trace as a record of its own (its payload as read), or, joined, a `Conversation` of its traces in turn order.

        A conversation's key is its first trace's id, which is its case id, as format `otel` names a joined one.
        """
        for joined in stitch(sorted(self.groups.values(), key=lambda g: g.spans[0].start)):
            for later in joined.traces[1:]:
                self.holder.join(later, joined.traces[0])
        for record in self.holder.conversations():
            conversation = record.payload
            if isinstance(conversation, Conversation) and len(conversation.traces) == 1:
                yield RawRecord(record.file, record.line, loads(conversation.traces[0]))
            else:
                yield record


def _light(trace_id: str, spans: list[Any]) -> Group | None:
    """The trace's first and last `generation` spans that recorded input (not those of an agent called as a tool), and its
    first agent span (a request alone in a trace would read as one recorded twice: `otel.duplicates`), as `otel` spans;
    `None` when no such request."""
    kinds = {s.get("id"): (s["span_data"]["type"], s.get("parent_id")) for s in spans if isinstance(s, dict) and s.get("id")}
    asked = [s for s in spans if isinstance(s, dict) and s["span_data"]["type"] == "generation" and s["span_data"].get("input")
             and not _in_call(s.get("parent_id"), kinds)]
    agent = next((s for s in spans if isinstance(s, dict) and s["span_data"]["type"] == "agent"), None)
    if not asked or agent is None:
        return None
    asked.sort(key=lambda s: nanos(s.get("started_at")) or 0)
    out = [_span(trace_id, s) for s in (asked[0], asked[-1]) if s is asked[0] or len(asked) > 1]
    return Group(key=trace_id, key_attr=None, traces=[trace_id], spans=[*out, _span(trace_id, agent)])


def _in_call(parent: Any, kinds: dict[Any, tuple[str, Any]]) -> bool:
    """Whether a span under `parent` ran inside a tool call (an agent called as a tool): its requests are that call's."""
    seen = set()
    while parent in kinds and parent not in seen:
        seen.add(parent)
        kind, parent = kinds[parent]
        if kind == "function":
            return True
    return False


def _span(trace_id: str, span: dict[str, Any]) -> Span:
    start = nanos(span.get("started_at")) or 0
    # (only what a replay is told by: not the request's settings and tool list, held for every trace till the file ends)
    data = {k: span["span_data"].get(k) for k in ("type", "name", "input", "output")}
    # (no parent: each request is a top-level one to `stitch`, whatever the run around it)
    return native_span(trace_id, span.get("id") or f"#{id(span)}", None, data["type"], start, nanos(span.get("ended_at")) or start,
                       {"openai_agents.span_data": data, "openai_agents.error": span.get("error")})
