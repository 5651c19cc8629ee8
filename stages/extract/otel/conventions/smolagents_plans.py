"""smolagents' planning requests under OpenInference: the plan is the agent's thought, not something it said.

An agent given `planning_interval` asks its model for a plan before the first step and every `planning_interval`
steps after (`MultiStepAgent._generate_planning_step`). openinference-instrumentation-smolagents (0.1.43) records
that request as any other `LLM` span, directly under the run's `AGENT` span (not under a `Step n` span), the plan
as the text of its output message. Read as it stands, the plan was a step's output: an intermediate text shown
to a judge as said to the user, and the run's answer when no agent span recorded one.

smolagents keeps the plan in memory as a `PlanningStep`, which format `smolagents` reads as a model request
whose thought is the plan (`smolagents_memory`). Here the same request is read the same way: its output text
becomes a reasoning part (`otel.turns` makes that the step's thought, never its output); its tokens and the
request itself still count, as every model request's do.

A planning request is recognised by what smolagents sends, not by its wording (the prompt templates can be
changed): the stop sequence `<end_plan>`, which every smolagents version that plans passes with that request
and no other, in the request's recorded arguments (`input.value`: `{"messages": …, "stop_sequences": […], …}`).
smolagents before 1.12 first asked for the facts in a request of its own, with no stop sequence: that request
is not recognised here (its memory step keeps the facts beside the plan, `facts`).
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.conventions.scopeless import from_instrumentation, smolagents_span
from tracejudge.stages.extract.otel.conventions.smolagents_inputs import SCOPE
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View, unjson

__all__ = ["END_PLAN", "plans"]

END_PLAN = "<end_plan>"


def plans(spans: list[Span], views: dict[str, View]) -> None:
    """Turn the output text of each smolagents planning request among `spans` into reasoning, in `views`.

    `views` maps span id to the span's merged `View`; a planning request's view keeps its role, usage and
    error, and its output messages' `text` parts become `reasoning` parts (tool calls, which a plan never
    has, would stay). Other spans are left as they are.
    """
    for span in spans:
        v = views.get(span.span_id)
        if v is None or v.role != "model" or not v.outputs or not from_instrumentation(span, SCOPE, smolagents_span) or not _planning(span.attrs.get("input.value")):
            continue
        v.outputs = [_as_reasoning(m) for m in v.outputs]


def _planning(raw: Any) -> bool:
    """Whether a request's recorded arguments ask the model to stop at `<end_plan>` (smolagents' planning request)."""
    if not isinstance(raw, str) or END_PLAN not in raw:
        return False
    args = unjson(raw)
    stops = args.get("stop_sequences") if isinstance(args, dict) else None
    return isinstance(stops, list) and END_PLAN in stops


def _as_reasoning(message: dict[str, Any]) -> dict[str, Any]:
    parts = message.get("parts")
    if message.get("role") != "assistant" or not isinstance(parts, list):
        return message
    return {**message, "parts": [{"type": "reasoning", "content": p.get("content")} if isinstance(p, dict) and p.get("type") == "text" else p
                                 for p in parts]}
