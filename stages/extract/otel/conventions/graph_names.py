"""The name an application gave a LangGraph graph that a tool ran (`create_react_agent(..., name="researcher")`).

A supervisor's tool that invokes another graph in its body (`researcher.invoke(...)`) runs a sub-agent: its requests
sit under the tool's span, so the layout puts them inside that call (`nesting`), but OpenInference's LangChain
instrumentation, MLflow's `mlflow.langchain.autolog()` and Langfuse's LangChain `CallbackHandler` (its OTLP and the
API's JSON alike) record the graph as a chain span named after the graph and nothing else: no agent span names it, and
the graph's own agent node (named "agent" whatever the graph is called) is a step of the graph. `named_graphs` gives
the tool's view that name, which `nesting` puts on the steps made inside the call. OpenLLMetry, which records an
`invoke_agent <name>` span for the run, is read by `traceloop.delegated_agents`.

The graph's run is the span right under the tool's with a node's run right under it: a span named as the node its
metadata names (`graph_state.node_name`; LangGraph runs a node under the node's name), of another node than the
graph span's own (a node's span holds spans of that node, one of them often named as the node). A graph the application did
not name is called `LangGraph` (`UNNAMED_GRAPH`), which names no agent: such a call's steps stay unnamed.

Every named graph's run names an agent of its turn, the supervisor at the top as much as a researcher a tool ran: its
chain span's view gets the name as `agent_name`, which `turns` lists in `metadata.otel.turns[].agents` (OpenLLMetry's
`invoke_agent <name>` spans are agent spans already, and listed so).
"""

from __future__ import annotations

from tracejudge.stages.extract.otel.conventions.graph_state import node_name
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["UNNAMED_GRAPH", "name_calls", "named_graphs"]

# LangGraph's name for a graph the application did not name (`CompiledStateGraph.name`): it names no agent.
UNNAMED_GRAPH = "LangGraph"


def named_graphs(spans: list[Span], views: dict[str, View]) -> None:
    """Name the agents of `spans` that only a graph's chain span names (module docstring), in `views`.

    A named graph's run (a chain span with a node's run right under it) gets its name as `agent_name`; a tool span
    right above one is given that name by `name_calls`' rule. `UNNAMED_GRAPH` names nothing.
    """
    index = {s.span_id: s for s in spans}
    # (a node's own span holds spans of its node too, one named as the node among them: `generate_structured_response`)
    runs = {s.parent_id for s in spans if s.parent_id in index and node_name(s) == s.name != node_name(index[s.parent_id])}
    names: dict[str, set[str]] = {}
    for graph in spans:
        view = views[graph.span_id]
        if view.role != "chain" or graph.span_id not in runs:
            continue
        name = graph.name
        tool = index.get(graph.parent_id) if graph.parent_id is not None else None
        if tool is not None:
            names.setdefault(tool.span_id, set()).add(name)
        if name != UNNAMED_GRAPH and not view.agent_name:
            view.agent_name = name
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
