"""smolagents runs iterated as streams under OpenInference: what the run answered, and the error it raised.

`agent.run(task, stream=True)` returns a generator of the run's events (`ToolCall`, `ToolOutput`, `ActionOutput`,
`ActionStep`, `PlanningStep`, the model's `ChatMessageStreamDelta`s with `stream_outputs=True`), the last a
`FinalAnswerStep(output=…)` when the run answered. openinference-instrumentation-smolagents (0.1.43) wraps that
generator, and when it ends:

- the agent span's `output.value` is the `str()` of every event, joined (its monitor has none of the `steps` it looks
  for first): tens of kilobytes of step reprs, memory included. Read as it was, that text was the run's answer and
  the turn's final text. The answer is the last event's `output`: its text when it is a string, else the `repr` the
  event holds (a run not streamed records `str()` of the value too, which `smolagents_steps.answers` then makes JSON
  from the run's `final_answer` span). A stream with no `FinalAnswerStep` (the run raised, or the application stopped
  iterating) answered nothing.
- its `finally` sets the span's status OK, over the ERROR it set when the generator raised (smolagents re-raises a
  model request's failure as `AgentGenerationError`); only the `exception` event is left. That event is the run's
  error (`"<exception.type>: <exception.message>"`, as a failed agent span reads), where the span says no other.

Such a run is told by its agent span's `input.value`, `run`'s arguments with `"stream": true`.
"""

from __future__ import annotations

from tracejudge.stages.extract.common import python_literal
from tracejudge.stages.extract.otel.conventions.genai import typed
from tracejudge.stages.extract.otel.conventions.scopeless import from_instrumentation, smolagents_span
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View, unjson

__all__ = ["SCOPE", "raised", "streamed_runs"]

SCOPE = "openinference.instrumentation.smolagents"
_FINAL_STEP = "FinalAnswerStep(output="  # `str()` of the last event of a run that answered (a dataclass repr)
_MAX_TEXT = 1_000_000  # an answer's repr longer than this is not parsed as a literal


def streamed_runs(spans: list[Span], views: dict[str, View]) -> None:
    """Give each smolagents agent run iterated as a stream its answer and its error (module docstring)."""
    for span in spans:
        v = views[span.span_id]
        if v.role != "agent" or not from_instrumentation(span, SCOPE, smolagents_span) or not _streamed(span):
            continue
        v.answer = _final_output(v.answer) if isinstance(v.answer, str) else v.answer
        if v.error is None and not span.status_error:
            v.error = raised(span)


def _streamed(span: Span) -> bool:
    given = unjson(span.attrs.get("input.value"))
    return isinstance(given, dict) and given.get("stream") is True


def _final_output(text: str) -> str | None:
    """The run's answer in the joined events `text`: the `FinalAnswerStep` ending it, its output as text (None: none)."""
    if not text.endswith(")"):
        return None
    found: list[str] = []
    at = text.find(_FINAL_STEP)
    while at != -1:
        held = text[at + len(_FINAL_STEP):-1]  # (the step is the last event: what follows it is its closing parenthesis)
        value = python_literal(held, MISSING) if len(held) <= _MAX_TEXT else MISSING
        if value is not MISSING:  # (an earlier match is some event's text quoting it: what follows is no literal)
            return value if isinstance(value, str) else held
        found.append(held)
        at = text.find(_FINAL_STEP, at + 1)
    return found[-1] if found else None  # (a value with no literal repr, `AgentImage`: its repr as recorded)


def raised(span: Span) -> str | None:
    """`"<type>: <message>"` of the span's first `exception` event, if any."""
    for name, ev in span.events:
        if name == "exception":
            etype, message = ev.get("exception.type"), ev.get("exception.message")
            if isinstance(etype, str) and etype:
                return typed(etype, message) if isinstance(message, str) and message else etype
    return None

