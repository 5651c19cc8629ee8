"""Log records of an OTLP/JSON export as `LogEvent`s, each keyed by the span it names: `(trace id, span id)`.

A span is its trace id and span id together: two traces may hold spans of one span id (an id generator seeded alike,
a test's fixed ids), so a record naming both joins only the span of that trace. A key's part the record does not name
is `""`: `(trace, "")` for a record naming only its trace, `("", span)` for one naming only its span, `UNTRACED` for
a GenAI event naming neither (`links` places each).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.otel.fields import SPAN_ID, TRACE_ID, id_not_text, nanos, otlp_id
from tracejudge.stages.extract.otel.values import any_value, attributes

__all__ = ["UNTRACED", "LogEvent", "LogKey", "log_event"]

log = get_logger("tracejudge.extract.otel")

LogKey = tuple[str, str]  # (trace id, span id), `""` for what the record does not name
UNTRACED: LogKey = ("", "")


@dataclass(slots=True)
class LogEvent:
    """A log record (GenAI event) attached to a span: `name`, decoded `body` and `attrs`, time in ns; `file` and `line`
    where the record was read (`""`, 0 for an event made up from a span's own events)."""

    name: str
    body: Any
    attrs: dict[str, Any]
    time: int
    file: str = ""
    line: int = 0
    problem: str | None = None  # what of the record did not decode (`log_event`)


def log_event(rec: Any, where: str, file: str, line: int) -> tuple[LogKey, LogEvent] | None:
    """The log record `rec` (at `where` in the export) as `((trace id, span id), event)` (module docstring); `None` for a
    record outside any trace that is no GenAI event, which has nothing to attach to. What does not decode is named with
    file, line and field: a record that is no object is left out; an attribute is read without; an id that is no text
    (`spanId: 99`) is read as not named, so the record goes where one naming the rest goes; a body or time that does
    not decode is the event's `problem`, which its conversation reports when it reads the event
    (`conventions.genai_events`): its message, or where it stands, is unknown."""
    if not isinstance(rec, dict):
        log.warning(f"otel: {file}:{line}: {where} is not a log record (an object), got {type(rec).__name__}: it is left out")
        return None
    bad: list[str] = []
    held = rec.get("attributes")
    if not isinstance(held, (list, dict, type(None))):  # (read as they were, a text's characters: none, with nothing said)
        log.warning(f"otel: {file}:{line}: {where}.attributes must be a list of {{key, value}} or an object, got "
                    f"{type(held).__name__}: the record is read without them")
        held = None
    attrs = attributes(held, None, bad)
    # the event name's field, else the attribute older SDKs (`event.name`) or Python's logging bridge (`otel.event.name`) set
    name = str(rec.get("eventName") or attrs.get("event.name") or attrs.get("otel.event.name") or "")
    ids, wrong = {}, []
    for field, size, what in (("traceId", TRACE_ID, "trace"), ("spanId", SPAN_ID, "span")):
        # (`str()` of a number was its id: a span no file holds, so the record quietly went to its trace's root)
        said = id_not_text(field, rec.get(field))
        ids[field] = "" if said else otlp_id(rec.get(field), size)
        wrong += [f"{said}: the record is read as naming no {what}"] if said else []
    trace_id, span_id = ids["traceId"], ids["spanId"]
    if not (span_id or trace_id or name.startswith("gen_ai.")):
        return None
    for said in wrong:
        log.warning(f"otel: {file}:{line}: {where} ({name or 'no event name'}): {said}")
    if bad:
        log.warning(f"otel: {file}:{line}: {where} ({name or 'no event name'}): attribute {'; '.join(bad)} does not decode, "
                    "so the record is read without it")
    body, problem, when = None, None, 0
    try:
        body = any_value(rec.get("body"))
    except (TypeError, ValueError, AttributeError) as exc:
        problem = f"{where}.body does not decode ({exc})"
    raw_time = rec.get("timeUnixNano") or rec.get("observedTimeUnixNano")
    try:
        when = nanos(raw_time)
    except (TypeError, ValueError):
        problem = problem or f"{where}.timeUnixNano is not a time ({raw_time!r}), so where the event stands is unknown"
    return (trace_id, span_id), LogEvent(name, body, attrs, when, file, line, problem)
