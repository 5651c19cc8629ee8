"""MLflow's OpenAI Agents SDK tracing (`mlflow.openai.autolog()`, its own `TracingProcessor`), read as the SDK's export is.

MLflow records the SDK's spans in its own types: an agent as `AGENT`, a model request as a `CHAT_MODEL` named `Response`
(the `AsyncResponses` request the OpenAI autolog records nested in it), a function tool as a `TOOL`, a turn as a `CHAIN`
named `Unknown` (its span data has no name), and a handoff as a `CHAIN` named `Handoff` whose inputs are
`{"from_agent"}` and outputs `{"to_agent"}` (null when the handoff failed), its error the SDK's ("Multiple handoffs
requested", "Invalid JSON provided"); an SDK error's data goes in the `exception` event (`sdk_error`). `Runner.run`
itself is an `AGENT` span named `AgentRunner.run` around it all, with the run's input and final output; under the SDK's
own `trace("x")` (an `AGENT` span of that name) each run's spans sit beside it instead (`sdk_trace`).
Read as for the SDK's other readers: a turn's error that ended the run is its agent's (`run_errors`); a handoff whose
transfer an `input_filter` kept from the next agent has the SDK's reply as its result (`handoff_results`); the handoffs
the SDK ignored (a second one in a reply) or that failed are failed calls, as not run or with the handoff's error
(`agents_handoffs`); a final output the runner recorded as an object no model request said (an error handler's) is
the run's answer. The run's error needs nothing more: MLflow records the exception that ended the run on the trace's
root span.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable

from tracejudge.stages.extract.common import maybe_json
from tracejudge.stages.extract.otel.conventions.agents_handoffs import missed_handoffs
from tracejudge.stages.extract.otel.conventions.agents_sdk import give_handoff_results, mark_not_run
from tracejudge.stages.extract.otel.messages import output_text
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View, unjson

# MLflow's autolog of the runner (`Runner.run`, `Runner.run_streamed`): an AGENT span holding the run's input and final output
_RUNNERS = ("AgentRunner.run", "AgentRunner.run_streamed")
_HOPS = 10_000  # a parent chain longer than this is a cycle in a hostile export

__all__ = ["read_group", "runner", "sdk_error", "sdk_trace"]


def read_group(spans: list[Span], views: dict[str, View]) -> None:
    """Read an MLflow-traced Agents SDK group as the SDK's other readers do (module docstring). In place; running it
    twice changes nothing more."""
    handoffs = {s.span_id: _target(s) for s in spans if _handoff(s, views[s.span_id])}
    turns = {s.span_id for s in spans if _turn(s, views)}
    if not handoffs and not turns:
        return
    # here: `openai_agents` imports langfuse, which imports openinference, which imports `agents_sdk`
    from tracejudge.stages.extract.otel.conventions.openai_agents import handoff_results, run_errors

    def kind(span: Span) -> str | None:
        if span.span_id in handoffs:
            return "handoff"
        if span.span_id in turns:
            return "turn"
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

    for agent, error in run_errors(spans, kind, view):  # a failed turn that ended its run (final output not valid JSON)
        views[agent.span_id].error = error
    for model, name, output in handoff_results(spans, kind, view, lambda h: handoffs[h.span_id]):
        # (a transfer an `input_filter` or `nest_handoff_history` took out of the next agent's input: the SDK's reply)
        give_handoff_results(view(model).outputs, {name: json.loads(output)})
    for missed in missed_handoffs(spans, kind, view, lambda h: handoffs[h.span_id], lambda h: sdk_error(h) or views[h.span_id].error):
        mark_not_run(view(missed.model).outputs, missed.unrun)
    _structured_answers(spans, views, kind, view)


def _turn(span: Span, views: dict[str, View]) -> bool:
    """Whether `span` is the SDK's turn span as MLflow records it: its span data has no name, so MLflow names the
    `CHAIN` `Unknown` (a `custom_span` has the name it was given)."""
    return span.name == "Unknown" and views[span.span_id].role == "chain" and "mlflow.spanType" in span.attrs


def _below(span: Span, top: Span, index: dict[str, Span]) -> bool:
    """Whether `top` is an ancestor of `span`."""
    node, hops = index.get(span.parent_id or ""), 0
    while node is not None and hops < _HOPS:
        if node is top:
            return True
        node = index.get(node.parent_id or "") if node.parent_id != node.span_id else None
        hops += 1
    return False


def _structured_answers(spans: list[Span], views: dict[str, View], kind: Callable[[Span], str | None], view: Callable[[Span], View]) -> None:
    """The final output of a run whose `Runner.run` span (`AgentRunner.run`, MLflow's autolog of the runner) recorded
    it as an object, not text: an `output_type` value an error handler (`error_handlers`) made, which no model request
    said. JSON text, as a model's structured answer is; left alone when the run's last request said that value."""
    index = {s.span_id: s for s in spans}
    for runner in spans:
        v = views[runner.span_id]
        if runner.name not in _RUNNERS or v.role != "agent" or v.answer is not None:
            continue
        outputs = unjson(runner.attrs.get("mlflow.spanOutputs"))
        if not isinstance(outputs, (dict, list)):
            continue
        said = [m for m in spans if kind(m) == "model" and _below(m, runner, index)]
        last = max(said, key=lambda s: (s.start, s.span_id)) if said else None
        text = output_text(view(last).outputs or []) if last is not None else None
        if text is None or maybe_json(text) != outputs:
            v.answer = json.dumps(outputs, ensure_ascii=False)


def runner(span: Span) -> bool:
    """Whether `span` is MLflow's autolog of the SDK's runner (`Runner.run`, `Runner.run_streamed`): an `AGENT` span named
    `AgentRunner.run` / `AgentRunner.run_streamed`, around the run's agents (or beside them, `sdk_trace`)."""
    return span.name in _RUNNERS and unjson(span.attrs.get("mlflow.spanType")) == "AGENT"


def sdk_trace(span: Span, children: list[Span]) -> bool:
    """Whether `span` is the span MLflow writes for the SDK's own `trace("x")` around runs: an `AGENT` with the input
    `""` (it has none) holding `AgentRunner.run` spans (`children` are its children). Each run's spans are then its
    siblings, the SDK's `Agent workflow` span beside MLflow's span of `Runner.run`."""
    return unjson(span.attrs.get("mlflow.spanType")) == "AGENT" and unjson(span.attrs.get("mlflow.spanInputs")) == "" \
        and any(c.name in _RUNNERS for c in children)


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
