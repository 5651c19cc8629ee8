"""The name an application gave a LangGraph graph that a tool ran (`create_react_agent(..., name="researcher")`).

A supervisor's tool that invokes another graph in its body (`researcher.invoke(...)`) runs a sub-agent: its requests
sit under the tool's span, so the layout puts them inside that call (`nesting`), but OpenInference's LangChain
instrumentation, MLflow's `mlflow.langchain.autolog()` and Langfuse's LangChain `CallbackHandler` (its OTLP and the
API's JSON alike) record the graph as a chain span named after the graph and nothing else: no agent span names it, and
the graph's own agent node (named "agent" whatever the graph is called) is a step of the graph. `named_graphs` gives
the tool's view that name, which `nesting` puts on the steps made inside the call. OpenLLMetry, which records an
`invoke_agent <name>` span for the run, is read by `traceloop.delegated_agents`.

The graph's run is the span right under the tool's with a node's run right under it: a span named as the node its
metadata names (`graph_state.node_name`; LangGraph runs a node under the node's name). A graph the application did
not name is called `LangGraph` (`UNNAMED_GRAPH`), which names no agent: such a call's steps stay unnamed.
"""

from __future__ import annotations

from tracejudge.stages.extract.otel.conventions.graph_state import node_name
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["UNNAMED_GRAPH", "name_calls", "named_graphs"]

# LangGraph's name for a graph the application did not name (`CompiledStateGraph.name`): it names no agent.
UNNAMED_GRAPH = "LangGraph"


def named_graphs(spans: list[Span], views: dict[str, View]) -> None:
    """Give each tool span of `spans` that ran a named LangGraph graph that name as its `agent_name` (in `views`).

    Only a tool span without an agent name of its own whose graph runs (chain spans right under it with a node's
    run right under them; module docstring) bear one name, and not `UNNAMED_GRAPH`; any other is left as it is.
    """
    index = {s.span_id: s for s in spans}
    runs = {s.parent_id for s in spans if s.parent_id in index and node_name(s) == s.name}
    names: dict[str, set[str]] = {}
    for sid in runs:
        graph = index[sid]  # type: ignore[index]
        tool = index.get(graph.parent_id) if graph.parent_id is not None else None
        if tool is not None and views[graph.span_id].role == "chain":
            names.setdefault(tool.span_id, set()).add(graph.name)
    name_calls(names, views)


def name_calls(names: dict[str, set[str]], views: dict[str, View]) -> None:
    """Give each tool span of `names` (span id: the names of the agents or graphs that ran inside it) its one name.

    A span that has an agent name of its own, or is given several names, or only `UNNAMED_GRAPH`, is left as it is
    (the steps inside such a call read as a sub-agent's, unnamed). `views` is changed in place.
    """
    for tid, found in names.items():
        v = views[tid]
        if len(found) == 1 and v.role == "tool" and not v.agent_name and (name := next(iter(found))) and name != UNNAMED_GRAPH:
            v.agent_name = name
