"""The `AGENT` spans around an OpenAI Agents SDK run that name no agent: a turn's agents are the SDK's agents only.

`metadata.otel.turns[].agents` lists the agents that acted in a turn; format `openai-agents` lists the agents of the
export's `agent` spans and nothing else. Two instrumentations write `AGENT` spans around those that no agent ran:

- openinference-instrumentation-openai-agents writes the SDK's trace as an `AGENT` span named after the trace's
  workflow: `Agent workflow` (the name `Runner.run` gives the trace it opens itself), or the name given to
  `with trace("eval-batch"):` (`scopeless.agents_sdk_trace`; exported through Langfuse's SDK, as Langfuse documents,
  that span also holds Langfuse's `langfuse.internal.is_app_root`);
- `mlflow.openai.autolog()` writes `Runner.run` / `Runner.run_streamed` as an `AGENT` span named `AgentRunner.run` /
  `AgentRunner.run_streamed` (`mlflow_agents.runner`), and the SDK's own `trace("x")` as an `AGENT` span named `x`
  (`mlflow_agents.sdk_trace`).

Listed, a run of one agent read as two ("Agent workflow" and "Assistant"), and a trace's name as an agent of its
turn. `unname_workflows` takes the name off those spans' views; they stay agent spans, so each still anchors its
run's turn and gives its input and output.
"""

from __future__ import annotations

from tracejudge.stages.extract.otel.conventions.mlflow_agents import runner, sdk_trace
from tracejudge.stages.extract.otel.conventions.scopeless import agents_sdk_group, agents_sdk_trace
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["unname_workflows"]


def unname_workflows(spans: list[Span], views: dict[str, View]) -> None:
    """Take the name off the views of the spans of `spans` that are the SDK's trace or MLflow's runner, not an agent
    (module docstring). In place; every other view, and these views' role, input and output, are left as they were."""
    named = [s for s in spans if views[s.span_id].role == "agent" and views[s.span_id].agent_name]
    if not named:
        return
    children: dict[str, list[Span]] = {}
    for s in spans:
        if s.parent_id is not None:
            children.setdefault(s.parent_id, []).append(s)
    scopeless = agents_sdk_group(spans)  # (asked once for the group, not once a span)
    for span in named:
        if runner(span) or agents_sdk_trace(span, spans, scopeless) or sdk_trace(span, children.get(span.span_id, [])):
            views[span.span_id].agent_name = None
