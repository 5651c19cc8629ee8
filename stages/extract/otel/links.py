"""How the spans of one trace hang together: parent loops, lost parents, log records that name no span."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.otel.log_records import UNTRACED, LogEvent, LogKey

if TYPE_CHECKING:  # spans.py calls this module: the type only
    from tracejudge.stages.extract.otel.spans import Span

__all__ = ["UNTRACED", "adopt_orphans", "break_cycles", "lone_request", "span_only_records", "stand_in_parents", "unplaced_spans",
           "untraced_records"]
_MODEL_OPS = ("chat", "generate_content", "text_completion")


def _is_request(span: Span) -> bool:
    """Whether `span` is a model request: its `gen_ai.operation.name`, or OpenLLMetry's `llm.request.type`, which its
    vertexai instrumentation (0.62) writes alone."""
    return span.attrs.get("gen_ai.operation.name") in _MODEL_OPS or span.attrs.get("llm.request.type") in ("chat", "completion")

log = get_logger("tracejudge.extract.otel")


def break_cycles(spans: list[Span]) -> None:
    """Make each span of one trace that closes a parent loop a root, in place.

    A span that names itself as parent is a root; in a longer loop the member
    that started first (ties: the lowest span id) becomes the root, so the
    result does not hang on the order spans arrived in (agentevals breaks
    them so). Left looping, every span of the loop had a model ancestor or no
    root, and its requests vanished from the case.
    """
    index = {s.span_id: s for s in spans}
    for span in spans:
        if span.parent_id == span.span_id:
            span.parent_id = None
    done: set[str] = set()
    for start in spans:
        path: list[Span] = []
        at: dict[str, int] = {}
        node: Span | None = start
        while node is not None and node.span_id not in done:
            if node.span_id in at:
                loop = path[at[node.span_id]:]
                min(loop, key=lambda s: (s.start, s.span_id)).parent_id = None
                break
            at[node.span_id] = len(path)
            path.append(node)
            node = index.get(node.parent_id or "")
        done.update(s.span_id for s in path)


def lone_request(spans: list[Span]) -> Span | None:
    """The one model request of a trace, which owns the trace's log records that name no span.

    OpenAI's v2 instrumentation can emit its GenAI events with the trace but
    no span id; with one request in the trace they can only be its (agentevals
    reads them so), with several they stay unplaced (`None`).
    """
    found = [s for s in spans if _is_request(s)]
    return found[0] if len(found) == 1 else None


def untraced_records(spans: dict[str, list[Span]], logs: dict[LogKey, list[LogEvent]]) -> None:
    """Give each GenAI log record that names no trace nor span (`logs[UNTRACED]`) to the model request it was written
    in, in place: the one model request span whose time holds the record's (of nested ones, the innermost). OpenLLMetry
    0.62 writes records outside the request's span context: its Anthropic and vertexai instrumentations all of them,
    its openai one a streamed reply's choice, once the stream is read. A record no one request holds so (requests at the same time, or
    no time) is read nowhere, and a warning names its file and line, once per file.
    """
    events = logs.pop(UNTRACED, [])
    if not events:
        return
    # a sweep over time: requests by start, records by time, the requests running at a record's time kept at hand (a few,
    # as many as ran at once), so that a file of thousands of requests is not scanned once per record
    requests = sorted((s for trace in spans.values() for s in trace if _is_request(s)),
                      key=lambda s: s.start)
    running: list[Span] = []
    lost: dict[str, list[LogEvent]] = {}
    nxt = 0
    for event in sorted(events, key=lambda e: e.time):
        while nxt < len(requests) and requests[nxt].start <= event.time:
            running.append(requests[nxt])
            nxt += 1
        running = [s for s in running if s.end >= event.time]
        found = running if event.time else []
        if found and all(_holds(outer, found[-1], spans[found[-1].trace_id]) for outer in found[:-1]):
            logs.setdefault((found[-1].trace_id, found[-1].span_id), []).append(event)
        else:
            lost.setdefault(event.file, []).append(event)
    for file, left in lost.items():
        log.warning(f"otel: {file}:{left[0].line}: {len(left)} GenAI event log record(s) (the first {left[0].name!r}) name no trace "
                    "nor span, and no one model request was running at the time of each: they are not read")


def _holds(outer: Span, inner: Span, trace: list[Span]) -> bool:
    """Whether `outer` is an ancestor of `inner` in `trace` (a framework's model span around the client's request)."""
    if outer.trace_id != inner.trace_id:
        return False
    parents = {s.span_id: s.parent_id for s in trace}
    at, seen = inner.parent_id, set()
    while at and at not in seen:
        if at == outer.span_id:
            return True
        seen.add(at)
        at = parents.get(at)
    return False


def span_only_records(spans: dict[str, list[Span]], logs: dict[LogKey, list[LogEvent]]) -> None:
    """Give the log records that name a span and no trace (`logs[("", span id)]`) the trace of the one delivered span of
    that id, in place: they move to `logs[(trace id, span id)]`. A span id that spans of several traces carry names none
    of them for sure (two traces' spans may share an id, which is why a record naming both joins only its trace's): its
    records are read nowhere, and a warning names their file, line and span, once per file. Records of a span id no
    file delivered stay where they are (`unplaced_spans`, `evaluation_records` read them).
    """
    keys = [k for k in logs if not k[0] and k[1]]
    if not keys:
        return
    traces_of: dict[str, set[str]] = {}
    for trace_id, trace in spans.items():
        for span in trace:
            traces_of.setdefault(span.span_id, set()).add(trace_id)
    lost: dict[str, list[tuple[LogEvent, str, int]]] = {}
    for key in keys:
        held = traces_of.get(key[1], set())
        if len(held) == 1:
            logs.setdefault((next(iter(held)), key[1]), []).extend(logs.pop(key))
        elif held:
            for event in logs.pop(key):
                lost.setdefault(event.file, []).append((event, key[1], len(held)))
    for file, events in lost.items():
        first, span_id, n = events[0]
        log.warning(f"otel: {file}:{first.line}: {len(events)} log record(s) (the first {first.name!r}, of span {span_id}) name a span "
                    f"and no trace, and {n} traces read hold a span of that id: they are not read. Give each record its traceId")


def unplaced_spans(spans: dict[str, list[Span]], logs: dict[LogKey, list[LogEvent]]) -> None:
    """Give the log records naming a span no file delivered to their trace, in place: `logs[(trace id, span id)]` moves to
    `logs[(trace id, "")]`, where a record naming no span is (`lone_request` places it), as agentevals groups a record by
    its span, else by its trace. `spans` are the delivered spans by trace id. Records of GenAI events whose trace was not
    delivered either, or that name no trace, are read nowhere: a warning names their file, line and span, once per file.
    """
    known = {(s.trace_id, s.span_id) for trace in spans.values() for s in trace}
    lost: dict[str, list[tuple[LogEvent, LogKey]]] = {}
    for key in [k for k in logs if k[1] and k not in known]:
        if key[0] in spans:
            logs.setdefault((key[0], ""), []).extend(logs.pop(key))
            continue
        for event in logs[key]:
            if event.name.startswith("gen_ai."):
                lost.setdefault(event.file, []).append((event, key))
    for file, events in lost.items():
        first, (trace_id, span_id) = events[0]
        log.warning(f"otel: {file}:{first.line}: {len(events)} GenAI event log record(s) (the first {first.name!r}, of span {span_id}) "
                    f"name a span {'and a trace ' if trace_id else '(and no trace) '}that no file read holds: they are not read. "
                    "Give the traces export beside the logs one")


def adopt_orphans(spans: list[Span]) -> None:
    """Hang each span of one trace whose parent is not in it (lost on export) from the trace's root, in place.

    Left a root of its own, a lost span's model requests started a turn apart from the root's, and its
    chain's arguments became a user message the user never sent (a LangGraph node's input, a smolagents
    step's repr). Only a trace with exactly one root is changed: with none (the root not exported yet) or
    several, which span a lost one belonged under cannot be told, and the spans stay roots.
    """
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if not s.parent_id]
    if len(roots) != 1:
        return
    for span in spans:
        if span.parent_id and span.parent_id not in ids:
            span.parent_id = roots[0].span_id


def stand_in_parents(spans: list[Span]) -> list[Span]:
    """Stand-ins for the lost parents of one trace that several of its spans name (new spans, to add to the trace).

    When the trace's root itself was lost (an exporter dropped that batch), `adopt_orphans` has no root to
    hang the others from, and each top span left began a turn of its own: LangGraph's graph nodes (`agent`,
    `tools`) under a lost `LangGraph` span became user turns ('tool_call_with_context', the question again).
    Spans that name the same missing parent were that parent's children, so they are hung from one stand-in
    of it (in place: their `parent_id` becomes the stand-in's, `<lost id>@<trace id>`): a span with no attributes (no convention reads a role in it), `stand_in` set, spanning
    its children's times, and the file and line of the first of them. Edge cases: a parent only one span names
    gets none (that span stays the root, as a workflow under a web request the export never held does); a
    trace whose one root `adopt_orphans` used has no missing parent left; a stand-in's own parent is unknown,
    so two lost parents of one trace give two stand-ins, each a root.
    """
    ids = {s.span_id for s in spans}
    children: dict[str, list[Span]] = {}
    for span in spans:
        if span.parent_id and span.parent_id not in ids:
            children.setdefault(span.parent_id, []).append(span)
    out = []
    for parent_id, kids in children.items():
        if len(kids) < 2:
            continue
        first = min(kids, key=lambda s: (s.start, s.span_id))
        # (the trace's id in it: a conversation joins traces, and two of them may name one lost id, as a remote caller's span)
        made = f"{parent_id}@{first.trace_id}"
        for kid in kids:
            kid.parent_id = made
        out.append(replace(first, span_id=made, parent_id=None, name="", kind=0, start=first.start, end=max(s.end for s in kids),
                           attrs={}, status_error=False, status_message=None, events=[], problem=None, logs=[], copies_differ=False,
                           scope=None, stand_in=True))
    return out
