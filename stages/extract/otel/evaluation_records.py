"""Where an evaluation result written as an OTLP log record belongs: the span it evaluates.

The GenAI conventions' `gen_ai.evaluation.result` event SHOULD be parented to the span of the operation it evaluates;
an evaluator running elsewhere may only carry the reply's `gen_ai.response.id`. Its log record is placed so:

- a record naming a delivered span is that span's: the span of its trace and span id both (two traces may share a span
  id); one naming a span id and no trace, the one span of that id, unless spans of several traces carry it
  (`links.span_only_records`: warned of, read nowhere);
- a record naming a trace (and no span, or a span no file delivered) is the span of that trace whose
  `gen_ai.response.id` is the record's, else the trace's root: it is about the trace's run, whichever request it scored;
- a record naming neither is the span whose `gen_ai.response.id` is the record's, among all the traces read;
- anything else is read nowhere, and a warning names the record's file and line, once per file.

These records are kept apart from a span's message events (`Span.evaluations`, not `Span.logs`): they say nothing of
what the request was sent or answered, so they must not count as a request's recorded input (`missing_inputs`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.otel.log_records import LogEvent, LogKey

if TYPE_CHECKING:
    from tracejudge.stages.extract.otel.spans import Span

__all__ = ["EVALUATION_EVENTS", "is_evaluation", "place_evaluations"]

log = get_logger("tracejudge.extract.otel")

# the conventions' name, the name a draft's emitters used (`gen_ai.evaluation`), and the registry id some write as the name
EVALUATION_EVENTS = frozenset({"gen_ai.evaluation.result", "gen_ai.evaluation", "event.gen_ai.evaluation.result"})
_RESPONSE_ID = "gen_ai.response.id"


def is_evaluation(name: str) -> bool:
    """Whether an event (span event or log record) named `name` is an evaluation result."""
    return name in EVALUATION_EVENTS


def place_evaluations(spans: dict[str, list[Span]], logs: dict[LogKey, list[LogEvent]]) -> dict[LogKey, list[LogEvent]]:
    """Take the evaluation records out of `logs` (keyed by the `(trace id, span id)` each names, `""` for a part it does
    not name: `log_records`), in place, and return them by the `(trace id, span id)` of the span they belong to (module
    docstring). `spans` are the delivered spans by trace id; a span is its trace id and span id together, so a record
    naming a span of another trace that shares its span id is not that span's."""
    by_key = {(s.trace_id, s.span_id): s for trace in spans.values() for s in trace}
    by_response: dict[str, LogKey] = {}
    for trace in spans.values():
        for s in trace:
            rid = s.attrs.get(_RESPONSE_ID)
            if isinstance(rid, str) and rid:
                by_response.setdefault(rid, (s.trace_id, s.span_id))
    placed: dict[LogKey, list[LogEvent]] = {}
    lost: dict[str, list[LogEvent]] = {}
    for key in list(logs):
        evals = [ev for ev in logs[key] if is_evaluation(ev.name)]
        if not evals:
            continue
        logs[key] = [ev for ev in logs[key] if not is_evaluation(ev.name)]
        if key in by_key:
            placed.setdefault(key, []).extend(evals)
            continue
        for ev in evals:
            target = _target(ev, spans.get(key[0]) if key[0] else None, by_response)
            if target is None:
                lost.setdefault(ev.file, []).append(ev)
            else:
                placed.setdefault(target, []).append(ev)
    for file, left in lost.items():
        log.warning(f"otel: {file}:{left[0].line}: {len(left)} evaluation result log record(s) ({left[0].name!r}) name no span nor trace "
                    f"that a file read holds, nor a {_RESPONSE_ID} of a span read: they are not read as labels")
    return placed


def _target(ev: LogEvent, trace: list[Span] | None, by_response: dict[str, LogKey]) -> LogKey | None:
    """The `(trace id, span id)` a record that names no delivered span belongs to (module docstring), or None."""
    rid = ev.attrs.get(_RESPONSE_ID)
    if isinstance(rid, str) and rid in by_response:
        found = by_response[rid]
        if trace is None or found[0] == trace[0].trace_id:
            return found
    if not trace:
        return None
    ids = {s.span_id for s in trace}
    roots = [s for s in trace if s.parent_id is None or s.parent_id not in ids]
    root = min(roots or trace, key=lambda s: (s.start, s.span_id))
    return root.trace_id, root.span_id
