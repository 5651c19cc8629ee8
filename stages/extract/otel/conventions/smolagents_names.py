"""The agent a smolagents run's span names: the agent's own `name`, never the method or class a span is named after.

smolagents gives an agent a `name` (`ToolCallingAgent(..., name="researcher")`): `None` for a top-level agent the
application left unnamed; a managed agent must have one (smolagents offers it to its manager's model as a tool of that
name). The two instrumentations name an agent's run differently:

- openinference-instrumentation-smolagents names the `AGENT` span `f"{agent.name or type(agent).__name__}.run"` and
  records the name nowhere else: `researcher.run`, a named manager's `manager.run`, an unnamed agent's
  `ToolCallingAgent.run` / `CodeAgent.run`. `oi_run_name` reads the name off the span's name, and none when that is one of
  smolagents' own agent classes. (An unnamed agent of a class of the application's own, `MyAgent.run`, cannot be told
  from an agent named `MyAgent`: it reads as that name.)
- `mlflow.smolagents.autolog()` names it after the patched method, `<Agent class>.run`, and records the agent's public
  attributes on it, `name` among them when it has one (`mlflow_smolagents.recorded_name`).

Listed, an unnamed agent's turn named `ToolCallingAgent.run` as its agent, and OpenInference's `manager.run` where MLflow
read `manager`. The run's span stays an agent span either way (it anchors its turn).
"""

from __future__ import annotations

__all__ = ["oi_run_name"]

# smolagents' own agent classes (`smolagents.agents`): an instance of one without a `name` gives its span the class's
_CLASSES = frozenset({"MultiStepAgent", "ToolCallingAgent", "CodeAgent"})
_RUN = ".run"


def oi_run_name(span_name: str) -> str | None:
    """The agent an OpenInference smolagents `AGENT` span named `span_name` ran (module docstring): the name before `.run`;
    `None` for one of smolagents' agent classes (an unnamed agent) or a span name not of that shape."""
    if not span_name.endswith(_RUN):
        return None
    name = span_name[: -len(_RUN)]
    return None if not name or name in _CLASSES else name
