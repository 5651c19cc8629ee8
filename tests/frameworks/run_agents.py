"""OpenAI Agents SDK runs (chat-completions API): its own trace export, and OpenInference spans."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from common import MODEL, otel_provider, write_jsonl, write_otlp, write_truth
from fake_openai import FakeOpenAI
from tasks import TASKS, TOOLS, selected, truth


def _default_error_result() -> str:
    """The text the SDK's default `failure_error_function` sends the model as a failed tool's output.

    Asked of the installed SDK, not written down: 0.25.0 dropped the " Please try again." that 0.24.0 ends it with.
    The function span gets `error: {"message": "Error running tool (non-fatal)", "data": {...}}` in both.
    """
    from agents import default_tool_error_function

    return default_tool_error_function(None, RuntimeError("not shown to the model"))  # type: ignore[arg-type]


ERROR_RESULT = _default_error_result()
EXPORT_ERROR = "Error running tool (non-fatal)"  # the function span's error.message (data.error is redacted)
# The TOOL span's status is `<message>: <data as a Python repr>`, read as the export's `<message>: <data.error>`.
OI_ERROR = "Error running tool (non-fatal): Tool execution failed. Error details are redacted."


class Collector:
    """A `TracingProcessor` keeping `{"trace": Trace.export(), "spans": [Span.export(), ...]}` per finished trace."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.done: list[dict[str, Any]] = []

    def on_trace_start(self, trace: Any) -> None:
        pass

    def on_trace_end(self, trace: Any) -> None:
        mine = [s for s in self.spans if s["trace_id"] == trace.trace_id]
        self.spans = [s for s in self.spans if s["trace_id"] != trace.trace_id]
        self.done.append({"trace": trace.export(), "spans": mine})

    def on_span_start(self, span: Any) -> None:
        pass

    def on_span_end(self, span: Any) -> None:
        if (exported := span.export()) is not None:
            self.spans.append(exported)

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


def _setup(fake: FakeOpenAI) -> None:
    """Point the SDK at the fake server and use chat completions (`set_default_openai_api`, the documented switch)."""
    from agents import set_default_openai_api, set_default_openai_client, set_trace_processors
    from openai import AsyncOpenAI

    set_default_openai_client(AsyncOpenAI(base_url=fake.base_url, api_key="sk-fake"), use_for_tracing=False)
    set_default_openai_api("chat_completions")
    set_trace_processors([])  # the default processor would post to api.openai.com


def _run(task: str) -> str:
    """Run every user turn of `task` (a multi-turn conversation as one trace, as the SDK's docs show); returns the last answer."""
    from agents import Agent, Runner, function_tool, trace

    tools = [function_tool(TOOLS[n], strict_mode=False) for n in TASKS[task].tools]
    agent = Agent(name="Assistant", instructions="You are a helpful assistant.", tools=tools, model=MODEL)
    turns = TASKS[task].turns
    if len(turns) == 1:
        return str(Runner.run_sync(agent, turns[0]).final_output)
    with trace("Conversation", group_id=f"thread-{task}"):
        items: list[Any] = []
        for text in turns:
            result = Runner.run_sync(agent, items + [{"role": "user", "content": text}])
            items = result.to_input_list()
    return str(result.final_output)


def export(fake: FakeOpenAI, outdir: Path) -> None:
    """`openai-agents-export`: `<task>.jsonl` as `{"trace", "spans"}` per trace; `<task>.batch.jsonl` as the exporter's `{"data": [...]}` posts."""
    from agents import add_trace_processor
    from agents.tracing.processors import BackendSpanExporter, BatchTraceProcessor

    _setup(fake)
    collector = Collector()
    batch = BatchTraceProcessor(BackendSpanExporter(api_key="sk-fake-tracing", endpoint=f"{fake.base_url}/traces/ingest"))
    add_trace_processor(collector)
    add_trace_processor(batch)
    for task in selected():
        answer = _run(task)
        batch.force_flush()
        write_jsonl(outdir / f"{task}.jsonl", collector.done)
        write_jsonl(outdir / f"{task}.batch.jsonl", fake.ingested)
        collector.done, fake.ingested[:] = [], []
        write_truth(outdir, task, truth(TASKS[task], error_result=ERROR_RESULT, error=EXPORT_ERROR, output=answer))
    batch.shutdown()


def openinference(fake: FakeOpenAI, outdir: Path) -> None:
    """`openinference-openai-agents`: `OpenAIAgentsInstrumentor` spans as OTLP/JSON."""
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    _setup(fake)
    provider = otel_provider(fake, "openai-agents")
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    try:
        for task in selected():
            answer = _run(task)
            write_otlp(provider, fake, outdir / f"{task}.jsonl")
            write_truth(outdir, task, truth(TASKS[task], error_result=ERROR_RESULT, error=OI_ERROR, output=answer))
    finally:
        OpenAIAgentsInstrumentor().uninstrument()
        provider.shutdown()
