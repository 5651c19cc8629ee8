"""One reader per span convention; `read_span` merges what they say into one `View`.

Readers run in this order and the first to state a fact wins (a span may
carry several conventions at once: OpenLLMetry writes GenAI keys too, and
pydantic-ai adds its own to the GenAI ones). Each reader is a pure function
`read(span) -> View | None` returning `None` when the span carries none of
its keys.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tracejudge.stages.extract.otel.conventions import (genai, langfuse, langgraph, mlflow, mlflow_smolagents, openai_agents, openinference, openllmetry_agents,
                                                        pydantic_ai, smolagents, traceloop, vercel)
from tracejudge.stages.extract.otel.conventions.agents_nested import nested_run_errors
from tracejudge.stages.extract.otel.conventions.anthropic_prefill import join_prefills
from tracejudge.stages.extract.otel.conventions.agents_outputs import read_tool_outputs
from tracejudge.stages.extract.otel.conventions.agents_workflows import unname_workflows
from tracejudge.stages.extract.otel.conventions.graph_names import named_graphs
from tracejudge.stages.extract.otel.conventions.mlflow_agents import read_group as mlflow_agents_group
from tracejudge.stages.extract.otel.conventions.pydantic_ai_attempts import attempts
from tracejudge.stages.extract.otel.conventions.pydantic_ai_capabilities import capability_data
from tracejudge.stages.extract.otel.conventions.pydantic_ai_cut import cut_output_tools
from tracejudge.stages.extract.otel.conventions.pydantic_ai_deferred import read_deferrals
from tracejudge.stages.extract.otel.conventions.pydantic_ai_returns import tool_returns
from tracejudge.stages.extract.otel.payloads import failed_tool_messages
from tracejudge.stages.extract.otel.spans import Group, Span
from tracejudge.stages.extract.otel.view import View, merge

__all__ = ["NAMES", "READERS", "group_views", "read_span"]

READERS: list[tuple[str, Callable[[Span], View | None]]] = [
    (genai.NAME, genai.read),
    (pydantic_ai.NAME, pydantic_ai.read),
    (openinference.NAME, openinference.read),
    (traceloop.NAME, traceloop.read),
    (vercel.NAME, vercel.read),
    (langfuse.NAME, langfuse.read),
    (mlflow.NAME, mlflow.read),
    (openai_agents.NAME, openai_agents.read),
]
NAMES = [name for name, _ in READERS]


def read_span(span: Span) -> View:
    """Everything the known conventions say about `span` (an empty `View` for a span none recognises).

    A reader's `AdapterError` (a usage count that is no number) is kept on the view, `View.unreadable`, not raised:
    views are read while the conversations are grouped and stitched, where an error would stop the whole read, every
    other conversation with it; `adapt` raises it for the span's own conversation, one `invalid_input`."""
    from tracejudge.stages.extract.errors import AdapterError

    out = View()
    for name, reader in READERS:
        try:
            got = reader(span)
        except AdapterError as exc:  # (the conversation's result is filed under its first span: say where this one is)
            return View(unreadable=AdapterError(f"{exc} ({Path(span.file).name} line {span.line})", field=exc.field))
        if got is not None:
            merge(out, got, name)
    return out


def group_views(group: Group) -> dict[str, View]:
    """The `View` of every span of `group` by span id, read on first use and kept on the group."""
    if group.views is None:
        group.views = {s.span_id: read_span(s) for s in group.spans}
        join_prefills(group.spans, group.views)  # (Anthropic's answer to a prefilled request: the prefill, then what the model added)
        langfuse.promote_tool_spans(group.spans, group.views)  # needs the model requests of the whole group
        smolagents.managed_agent_calls(group.spans, group.views)  # (likewise: a managed agent's run is the call that ran it)
        mlflow_smolagents.managed_calls(group.spans, group.views)  # (the same under MLflow's smolagents autolog)
        # LangChain, whichever instrumentation recorded it: invalid calls sit on the chain spans above; a ToolNode's
        # error answer (an unknown tool) only in a chain's output; OpenLLMetry's tool results inside the callback's payload.
        traceloop.invalid_calls(group.spans, group.views)
        traceloop.callback_results(group.spans, group.views)
        traceloop.delegated_agents(group.spans, group.views)  # (a LangGraph agent a tool ran: named beside its steps)
        named_graphs(group.spans, group.views)  # (the same, under the instrumentations that name it only as its chain span)
        failed_tool_messages(group.spans, group.views)
        tool_returns(group.spans, group.views)  # pydantic-ai's ToolReturn: its return value the result, its content not the user's
        capability_data(group.spans, group.views)  # (likewise the data a tool or capability enqueued, framed in its tag: 2.78 on)
        attempts(group.spans, group.views)  # (its request attempts sent again: their tokens the request's, not the request: 2.78 on)
        cut_output_tools(group.spans, group.views)  # (its output tools when the length limit cut the request's parameters)
        pydantic_ai.retry_feedback(group.spans, group.views)  # its feedback on a refused text answer: the framework's words, not the user's
        read_deferrals(group.spans, group.views)  # pydantic-ai's paused and resumed runs, its calls not run: after the feedback is set apart
        read_tool_outputs(group.spans, group.views)  # the Agents SDK's structured tool outputs, its timeouts (before the stops read them)
        openinference.stop_answers(group.spans, group.views)  # (an Agents SDK run that ended at a tool: its output)
        nested_run_errors(group.spans, group.views)  # (an agent called as a tool that failed: its run's error, not the SDK's redacted text)
        mlflow_agents_group(group.spans, group.views)  # (the Agents SDK under MLflow: its ignored and failed handoffs)
        unname_workflows(group.spans, group.views)  # (the Agents SDK's trace span, MLflow's `AgentRunner.run`: no agents)
        # (OpenLLMetry's Agents SDK spans: the calls a Chat Completions request's replay shows, errors read as the export's,
        # a handoff an `input_filter` hid: its reply)
        openllmetry_agents.read_group(group.spans, group.views)
        langgraph.read_pauses(group.spans, group.views)  # last: a pause is no error, whatever a pass above made of its status
    return group.views
