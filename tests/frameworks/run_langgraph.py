"""LangGraph `create_react_agent` + `ChatOpenAI` runs under OpenInference's and Traceloop's LangChain instrumentors."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from common import MODEL, otel_provider, write_otlp, write_truth
from fake_openai import FakeOpenAI
from tasks import TASKS, TOOLS, selected, truth

# ToolNode(handle_tool_errors=True) answers a raised exception with this ToolMessage (status="error");
# its default handler re-raises anything but argument errors, which would end the run. Both
# instrumentors record the exception (message "order #W999 not found") on the tool span, no output.
ERROR_RESULT = "Error: ValueError('order #W999 not found')\n Please fix your mistakes."


def run_graph(fake: FakeOpenAI, task: str) -> list[str]:
    """Run every user turn of `task` on one thread of a fresh agent; returns each turn's answer."""
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import ToolNode

    with warnings.catch_warnings():  # create_react_agent is deprecated in favour of langchain.agents, still the documented prebuilt
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake")
        tools = ToolNode([tool(TOOLS[n]) for n in TASKS[task].tools], handle_tool_errors=True)
        agent = create_react_agent(model, tools, prompt="You are a helpful assistant.", checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": f"thread-{task}"}}
    answers = []
    for text in TASKS[task].turns:
        state = agent.invoke({"messages": [{"role": "user", "content": text}]}, config)
        answers.append(state["messages"][-1].content)
    return answers


def _record(instrumentor: Any, fake: FakeOpenAI, outdir: Path) -> None:
    provider = otel_provider(fake, "langgraph-agent")
    instrumentor.instrument(tracer_provider=provider)
    try:
        for task in selected():
            answers = run_graph(fake, task)
            write_otlp(provider, fake, outdir / f"{task}.jsonl")
            write_truth(outdir, task, truth(TASKS[task], error_result=ERROR_RESULT, error="order #W999 not found", output=answers[-1]))
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def openinference(fake: FakeOpenAI, outdir: Path) -> None:
    """`openinference-langchain`: `LangChainInstrumentor` spans as OTLP/JSON."""
    from openinference.instrumentation.langchain import LangChainInstrumentor

    _record(LangChainInstrumentor(), fake, outdir)


def traceloop(fake: FakeOpenAI, outdir: Path) -> None:
    """`traceloop-langchain`: Traceloop's `LangchainInstrumentor` spans as OTLP/JSON."""
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    _record(LangchainInstrumentor(), fake, outdir)
