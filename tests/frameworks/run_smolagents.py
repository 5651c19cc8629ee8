"""smolagents `ToolCallingAgent` + `OpenAIServerModel` runs: its own memory export, and OpenInference spans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from common import MODEL, otel_provider, write_jsonl, write_otlp, write_truth
from fake_openai import FakeOpenAI
from tasks import TASKS, TOOLS, selected, truth

# smolagents logs a failed call as an AgentToolExecutionError on the step and sends the model this text
# (no tool result); see README.
ERROR_TEXT = ("Error executing tool 'cancel_order' with arguments {'order_id': '#W999'}: ValueError: order #W999 not found\n"
              "Please try again or use another tool")


def _agent(fake: FakeOpenAI, task: str) -> Any:
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake")
    tools = [tool(TOOLS[n]) for n in TASKS[task].tools]
    return ToolCallingAgent(tools=tools, model=model, max_steps=4, verbosity_level=0)


def _run(agent: Any, task: str) -> list[Any]:
    """Run every user turn of `task`; returns the answers."""
    return [agent.run(text, reset=turn == 0) for turn, text in enumerate(TASKS[task].turns)]


def _truth(task: str, answers: list[Any], error: str = ERROR_TEXT) -> dict[str, Any]:
    return truth(TASKS[task], error_result=None, error=error, output=str(answers[-1]))


def memory(fake: FakeOpenAI, outdir: Path) -> None:
    """`smolagents-memory`: `agent.memory.get_full_steps()` after each run, one JSON line per run, as `{"id", "steps"}`."""
    for task in selected():
        agent = _agent(fake, task)
        runs = []
        for turn, text in enumerate(TASKS[task].turns):
            answer = agent.run(text, reset=turn == 0)
            runs.append({"id": f"{task}-{turn}", "steps": agent.memory.get_full_steps()})
        # one line per conversation: with reset=False the memory after the last turn holds every turn's steps
        write_jsonl(outdir / f"{task}.jsonl", runs[-1:])
        write_truth(outdir, task, _truth(task, [answer]))


def openinference(fake: FakeOpenAI, outdir: Path) -> None:
    """`openinference-smolagents`: `SmolagentsInstrumentor` spans as OTLP/JSON."""
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor

    provider = otel_provider(fake, "smolagents-agent")
    SmolagentsInstrumentor().instrument(tracer_provider=provider)
    try:
        for task in selected():
            answers = _run(_agent(fake, task), task)
            write_otlp(provider, fake, outdir / f"{task}.jsonl")
            # the TOOL span's exception event; the Step span holds ERROR_TEXT as its own exception
            write_truth(outdir, task, _truth(task, answers, "order #W999 not found"))
    finally:
        SmolagentsInstrumentor().uninstrument()
        provider.shutdown()
