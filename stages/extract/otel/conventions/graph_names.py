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
`invoke_agent <name>` spans are agent spans already, and listed so). OpenLLMetry writes those agent spans for a graph
nobody named too, `invoke_agent LangGraph` and the `LangGraph.workflow` span (`gen_ai.agent.name` `LangGraph`,
`gen_ai.provider.name` `langgraph`): that default name is no agent's, so `named_graphs` takes it off their views, and the
graph names no agent of its turn, as under the other three instrumentations.

A plain LangChain runnable a tool runs in its body (`(prompt | model).with_config(run_name="summarizer").invoke(...)`) is
a sub-step of the call as a graph is: all four instrumentations record it as one chain span right under the tool's,
named by the run name (OpenLLMetry's `execute_task summarizer`, whose `traceloop.entity.name` is that name), with its model
request under it, and nothing else. `named_graphs` names the call (one that names no agent of its own: a smolagents
managed agent's call holds that agent's steps) and lists the agent after it as it does a graph's,
when the span holds a model request (a parser or prompt run alone made no step to label) and the name is one the
application gave: LangChain names a runnable nobody named after its class (`RunnableSequence`, `RunnableParallel<…>`,
`RunnableLambda`: `default_name`), which names no agent, as `UNNAMED_GRAPH` names none. An OpenAI Agents SDK agent called
as a tool (`as_tool`) looks the same under openinference-instrumentation-openai-agents: the nested run's own span, a
`CHAIN` named after the trace's workflow (`Agent workflow`), right under the call's, its agent's requests under it. That
span is no runnable and names no agent (its agent span inside does, as format `openai-agents` lists it): a chain of that
instrumentation (`scopeless.agents_sdk_span` without a scope) is never read as one.
"""

from __future__ import annotations

import re

from tracejudge.stages.extract.otel.conventions.graph_state import node_name
from tracejudge.stages.extract.otel.conventions.scopeless import OI_AGENTS, agents_sdk_group, agents_sdk_span, from_instrumentation
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["UNNAMED_GRAPH", "default_name", "name_calls", "named_graphs"]

# LangGraph's name for a graph the application did not name (`CompiledStateGraph.name`): it names no agent.
UNNAMED_GRAPH = "LangGraph"
# LangChain's name for a runnable nobody named (`Runnable.get_name()`: its class, `RunnableParallel<a,b>` with its keys)
_CLASS_NAME = re.compile(r"Runnable[A-Za-z]*(<.*>)?")


def default_name(name: str) -> bool:
    """Whether `name` is one LangGraph or LangChain gives a graph or runnable nobody named (it names no agent)."""
    return name == UNNAMED_GRAPH or _CLASS_NAME.fullmatch(name) is not None


def named_graphs(spans: list[Span], views: dict[str, View]) -> None:
    """Name the agents of `spans` that only a chain span names (module docstring), in `views`.

    A named graph's run (chain spans with a node's run right under them) and a named runnable's run right under a tool
    span, holding a model request, get their name as `agent_name`; a tool span right above one of them is given that
    name by `name_calls`' rule. A name LangGraph or LangChain gives by default (`default_name`) names nothing.
    """
    _unnamed_graph_agents(spans, views)
    index = {s.span_id: s for s in spans}
    # (a node's own span holds spans of its node too, one named as the node among them: `generate_structured_response`)
    runs = {s.parent_id for s in spans if s.parent_id in index and node_name(s) == s.name != node_name(index[s.parent_id])}
    children: dict[str, list[Span]] = {}
    for s in spans:
        if s.parent_id is not None:
            children.setdefault(s.parent_id, []).append(s)
    names: dict[str, set[str]] = {}
    sdk = agents_sdk_group(spans)  # (asked once for the group: a span without a scope is the Agents SDK's only in such a group)
    for graph in spans:
        view = views[graph.span_id]
        if view.role != "chain" or (graph.span_id not in runs and not _runnable_in_tool(graph, index, children, views)):
            continue
        if from_instrumentation(graph, OI_AGENTS, lambda s: sdk and agents_sdk_span(s)):
            continue  # (an Agents SDK run's own span under an `as_tool` call: no runnable, module docstring)
        name = _run_name(graph)
        tool = index.get(graph.parent_id) if graph.parent_id is not None else None
        if tool is not None:
            names.setdefault(tool.span_id, set()).add(name)
        if not default_name(name) and not view.agent_name:
            view.agent_name = name
    name_calls(names, views)


def _unnamed_graph_agents(spans: list[Span], views: dict[str, View]) -> None:
    """Take LangGraph's default graph name off the agent spans OpenLLMetry writes for a graph nobody named (module docstring)."""
    for span in spans:
        view = views[span.span_id]
        # (the provider says the span is a LangGraph graph's, whichever instrumentation scope wrote it or whether it was kept)
        if view.role == "agent" and view.agent_name and default_name(view.agent_name) and span.attrs.get("gen_ai.provider.name") == "langgraph":
            view.agent_name = None


def _run_name(span: Span) -> str:
    """The name LangChain ran `span`'s runnable under: the span's name, or OpenLLMetry's `traceloop.entity.name` (its span
    name is `execute_task <name>`)."""
    entity = span.attrs.get("traceloop.entity.name")
    return entity if isinstance(entity, str) and entity else span.name


def _runnable_in_tool(span: Span, index: dict[str, Span], children: dict[str, list[Span]], views: dict[str, View]) -> bool:
    """Whether chain span `span` is right under a tool span that names no agent and holds a model request (module docstring)."""
    parent = index.get(span.parent_id) if span.parent_id is not None else None
    if parent is None or views[parent.span_id].role != "tool" or views[parent.span_id].agent_name:
        return False  # (a call that names the agent it ran holds that agent's steps: a smolagents managed agent's `Step 1`)
    todo, seen = list(children.get(span.span_id, ())), {span.span_id}
    while todo:
        s = todo.pop()
        if s.span_id in seen:
            continue  # (a loop of parents in a hostile export: each span once)
        seen.add(s.span_id)
        if views[s.span_id].role == "model":
            return True
        todo.extend(children.get(s.span_id, ()))
    return False


def name_calls(names: dict[str, set[str]], views: dict[str, View]) -> None:
    """Give each tool span of `names` (span id: the names of the agents or graphs that ran inside it) its one name.

    A span that has an agent name of its own, or is given several names, or only a default one (`default_name`), is left as it is
    (the steps inside such a call read as a sub-agent's, unnamed). `views` is changed in place.
    """
    for tid, found in names.items():
        v = views[tid]
        if len(found) == 1 and v.role == "tool" and not v.agent_name and (name := next(iter(found))) and not default_name(name):
            v.agent_name = name
