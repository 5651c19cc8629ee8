"""MLflow's OpenAI Agents SDK tracing (`mlflow.openai.autolog()`, its own `TracingProcessor`): the handoffs that did not run.

MLflow records the SDK's spans in its own types: an agent as `AGENT`, a model request as a `CHAT_MODEL` named `Response`
(the `AsyncResponses` request the OpenAI autolog records nested in it), a function tool as a `TOOL`, and a handoff as a
`CHAIN` named `Handoff` whose inputs are `{"from_agent"}` and outputs `{"to_agent"}` (null when the handoff failed),
its error the SDK's ("Multiple handoffs requested", "Invalid JSON provided"). The handoffs the SDK ignored (a second one
in a reply) or that failed are read as for its other readers (`agents_handoffs`): the call is failed, as not run or with
the handoff's error. The run's error needs nothing more: MLflow records the exception that ended the run on the trace's
root span.
"""

from __future__ import annotations

import copy

from tracejudge.stages.extract.otel.conventions.agents_handoffs import missed_handoffs
from tracejudge.stages.extract.otel.conventions.agents_sdk import mark_not_run
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View, unjson

__all__ = ["read_group", "sdk_error"]


def read_group(spans: list[Span], views: dict[str, View]) -> None:
    """Fail the calls of the handoffs an MLflow-traced Agents SDK run ignored or that failed (module docstring). In place."""
    handoffs = {s.span_id: _target(s) for s in spans if _handoff(s, views[s.span_id])}
    if not handoffs:
        return

    def kind(span: Span) -> str | None:
        if span.span_id in handoffs:
            return "handoff"
        role = views[span.span_id].role
        return role if "mlflow.spanType" in span.attrs and role in ("model", "tool", "agent") else None

    inner = {s.parent_id: views[s.span_id] for s in spans if views[s.span_id].role == "model" and views[s.span_id].outputs}

    def view(span: Span) -> View:
        """A span's view; a `Response` request's is that of the `AsyncResponses` request nested in it (the assembler reads
        the two as one request, its output messages the innermost's: the same list, `wrapped.fold_wrapped_models`); an
        agent's has the SDK's error as its export reads it (`sdk_error`)."""
        v = views[span.span_id]
        if v.role == "agent" and (said := sdk_error(span)) is not None:
            v = copy.copy(v)
            v.error = said
        return inner.get(span.span_id, v) if v.role == "model" else v

    for missed in missed_handoffs(spans, kind, view, lambda h: handoffs[h.span_id], lambda h: sdk_error(h) or views[h.span_id].error):
        mark_not_run(view(missed.model).outputs, missed.unrun)


def sdk_error(span: Span) -> str | None:
    """The Agents SDK's error on `span` (`{message, data}`) as its export reads it (`openai_agents.error_text`), from the
    exception event MLflow writes for it: the message as `exception.message`, no type, the data as JSON in
    `exception.stacktrace`. `None` for any other span."""
    # here: `openai_agents` imports langfuse, which imports openinference, which imports `agents_sdk`
    from tracejudge.stages.extract.otel.conventions.openai_agents import error_text

    for name, attrs in span.events:
        data = unjson(attrs.get("exception.stacktrace")) if name == "exception" and not attrs.get("exception.type") else None
        if isinstance(data, dict) and isinstance(attrs.get("exception.message"), str):
            return error_text({"message": attrs["exception.message"], "data": data})
    return None


def _handoff(span: Span, view: View) -> bool:
    """Whether `span` is the Agents SDK's handoff as MLflow records it: a `CHAIN` named `Handoff` from an agent."""
    inputs = unjson(span.attrs.get("mlflow.spanInputs"))
    return span.name == "Handoff" and view.role == "chain" and isinstance(inputs, dict) and "from_agent" in inputs


def _target(span: Span) -> str | None:
    outputs = unjson(span.attrs.get("mlflow.spanOutputs"))
    to = outputs.get("to_agent") if isinstance(outputs, dict) else None
    return to if isinstance(to, str) and to else None
