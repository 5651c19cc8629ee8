"""Evaluation results recorded with a trace (`gen_ai.evaluation.result`) as the case's labels, for `judge.labels.fields`.

Source: the OpenTelemetry GenAI semantic conventions' event `gen_ai.evaluation.result` (docs/gen-ai/gen-ai-events.md):
`gen_ai.evaluation.name` (required), `gen_ai.evaluation.score.value` (a double), `gen_ai.evaluation.score.label`
(low-cardinality text: `pass`, `relevant`), `gen_ai.evaluation.explanation`, `gen_ai.response.id` (the reply evaluated)
and `error.type` (the evaluation failed). It is read as a span event (named so, or by its `event.name` attribute, as
drafts wrote it; `gen_ai.evaluation` too, a draft emitter's name) and as an OTLP log record (`eventName`, `event.name`,
its fields among the attributes or in a body object), placed on its span by `evaluation_records`.

Each result is one label of the case (`store_labels`): its number when it has `score.value`, else its `score.label`
text; with both, the number is the label and the text is kept in its details (`score_label`), beside the
`explanation`, so a threshold on the number reads it the same whatever words an evaluator uses. The conventions do not
say who evaluated (no attribute says a person did), so every result is `metadata.other_labels.<name>`, source
`evaluator`, read only by a `judge.labels.fields` that names it. Several results of one name in a case (one per turn
or reply) are shaped as Langfuse's repeated scores are: one value when they agree, else the list of values, oldest
first, which `judge.labels.fields` names as a conflict. A result with `error.type` is no verdict and no label; one
without a name, or whose score value is not a number, or with neither value nor label, is left out with a warning
naming its file, line, span and field; the case's other labels read on.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.otel.evaluation_records import is_evaluation
from tracejudge.stages.extract.otel.spans import Group, LogEvent, Span
from tracejudge.stages.extract.store_labels import StoreLabel, label_metadata

__all__ = ["SOURCE", "evaluation_labels"]

log = get_logger("tracejudge.extract.otel")

SOURCE = "evaluator"  # (`store_labels`: any source but `human` keeps a label among `other_labels`)
_NAME, _VALUE, _LABEL = "gen_ai.evaluation.name", "gen_ai.evaluation.score.value", "gen_ai.evaluation.score.label"
_EXPLANATION = "gen_ai.evaluation.explanation"


def evaluation_labels(group: Group) -> dict[str, Any]:
    """The `store_labels` metadata (`other_labels`, `other_label_sources`, `other_label_details`) of the evaluation
    results recorded on `group`'s spans, as span events and log records; `{}` when there are none. Raises nothing: a
    result that does not read is warned about and left out (module docstring)."""
    found: list[StoreLabel] = []
    for span in group.spans:
        as_events: Counter[tuple[Any, ...]] = Counter()
        for i, (name, attrs) in enumerate(span.events):
            if is_evaluation(name) or is_evaluation(str(attrs.get("event.name") or "")):
                where = f"{span.file}:{span.line}: span {span.span_id}: span event {name!r}"
                # span events keep no time here: the span's start, then their order, orders them
                if (got := _label(attrs, where, f"{span.start:020d}.{i:06d}", span)) is not None:
                    found.append(got)
                    as_events[_same(got)] += 1
        for ev in span.evaluations:
            where = f"{ev.file or span.file}:{ev.line or span.line}: log record {ev.name!r} of span {span.span_id}"
            if (got := _label(_record_fields(ev), where, f"{ev.time:020d}", span)) is not None:
                # An emitter that writes each result both ways (a span event and its log record) made one verdict
                # count twice: a record repeating one of its span's events is that result, read once.
                if as_events[_same(got)] > 0:
                    as_events[_same(got)] -= 1
                    continue
                found.append(got)
    return label_metadata(found)


def _same(label: StoreLabel) -> tuple[Any, ...]:
    """What makes two recordings of one result the same result: its name, value and details (span, text label,
    explanation, response id), not when or how it was written."""
    return (label.name, label.value, label.details)


def _record_fields(ev: LogEvent) -> dict[str, Any]:
    """A log record's evaluation fields: its attributes, else those its body object holds (a producer that writes the
    event's fields as its body, as message events are written)."""
    if isinstance(ev.body, dict):
        return {**ev.body, **ev.attrs}
    return ev.attrs


def _label(attrs: dict[str, Any], where: str, when: str, span: Span) -> StoreLabel | None:
    """One result's label, or None (warned about, unless it is a failed evaluation's: module docstring)."""
    name = attrs.get(_NAME)
    if not isinstance(name, str) or not name.strip():
        return _skip(where, _NAME, "is missing" if name is None else f"must be text, got {name!r}")
    if attrs.get("error.type") not in (None, ""):
        return None  # the evaluation failed: no verdict to agree with
    value, text = attrs.get(_VALUE), attrs.get(_LABEL)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)):
        return _skip(where, _VALUE, f"must be a number, got {value!r}", name)
    if text is not None and (not isinstance(text, str) or not text.strip()):
        if value is None:
            return _skip(where, _LABEL, f"must be text, got {text!r}", name)
        text = None
    if value is None and text is None:
        return _skip(where, f"{_VALUE} / {_LABEL}", "are both missing: the result holds no score", name)
    details: dict[str, Any] = {"span_id": span.span_id}
    if value is not None and text is not None:
        details["score_label"] = text
    explanation = attrs.get(_EXPLANATION)
    if isinstance(explanation, str) and explanation:
        details["explanation"] = explanation
    rid = attrs.get("gen_ai.response.id")
    if isinstance(rid, str) and rid:
        details["response_id"] = rid
    kept = float(value) if value is not None else text
    return StoreLabel(name, kept, SOURCE, when, tuple(details.items()))


def _skip(where: str, field: str, why: str, name: str | None = None) -> None:
    """Warn that one evaluation result is not read (`where`: `<file>:<line>: <span and event>`); returns None."""
    of = f" ({name!r})" if name else ""
    log.warning(f"otel: {where}{of}: {field} {why}: this evaluation result is not read as a label")
    return None
