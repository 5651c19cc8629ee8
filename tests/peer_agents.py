"""Real pydantic-ai agent runs under the OpenTelemetry SDK, exported as OTLP/JSON.

Each scenario runs a `pydantic_ai.Agent` with a scripted `FunctionModel` (no
network) and returns the finished spans as one OTLP/JSON export document, the
shape an OTLP/JSON file exporter writes. Imported only when the `peers` extra
is installed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from pydantic import BaseModel
from pydantic_ai.capabilities.instrumentation import Instrumentation
from pydantic_ai import Agent, ApprovalRequired, DeferredToolRequests, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

__all__ = ["SCENARIOS", "record"]


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [_value(x) for x in v]}}
    return {"stringValue": str(v)}


def _otlp_span(span: ReadableSpan) -> dict[str, Any]:
    ctx = span.context
    out: dict[str, Any] = {
        "traceId": f"{ctx.trace_id:032x}",
        "spanId": f"{ctx.span_id:016x}",
        "name": span.name,
        "kind": span.kind.value + 1,  # OTLP numbers SPAN_KIND_INTERNAL as 1
        "startTimeUnixNano": str(span.start_time),
        "endTimeUnixNano": str(span.end_time),
        "attributes": [{"key": k, "value": _value(v)} for k, v in (span.attributes or {}).items()],
        "events": [{"name": e.name, "timeUnixNano": str(e.timestamp), "attributes": [{"key": k, "value": _value(v)} for k, v in (e.attributes or {}).items()]} for e in span.events],
        "status": {"code": {StatusCode.UNSET: 0, StatusCode.OK: 1, StatusCode.ERROR: 2}[span.status.status_code], **({"message": span.status.description} if span.status.description else {})},
    }
    if span.parent is not None:
        out["parentSpanId"] = f"{span.parent.span_id:016x}"
    return out


def export(spans: list[ReadableSpan]) -> dict[str, Any]:
    """OTLP/JSON `ExportTraceServiceRequest` of `spans` (hex ids, string nanoseconds)."""
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "peer-agent"}}]}, "scopeSpans": [{"scope": {"name": "pydantic-ai"}, "spans": [_otlp_span(s) for s in spans]}]}]}


def _script(*responses: list[Any]) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    """A model that answers request n with `responses[n]` (parts), then plain text."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        n = sum(1 for m in messages if isinstance(m, ModelResponse))
        parts = responses[n] if n < len(responses) else [TextPart("done")]
        return ModelResponse(parts=list(parts))

    return model


def _tools(agent: Agent[Any, Any]) -> None:
    @agent.tool_plain
    def search(query: str) -> str:
        return f"results for {query}"

    @agent.tool_plain(requires_approval=True)
    def delete_account(user_id: str) -> str:
        return "deleted"

    @agent.tool
    def refund(ctx: RunContext[None], order_id: str, amount: float) -> str:
        if not ctx.tool_call_approved:
            raise ApprovalRequired()
        return "refunded"


class Answer(BaseModel):
    city: str
    temp_c: int


def _report(city: str, temp_c: int) -> str:
    return f"{city}: {temp_c}C"


def record(run: Callable[[InstrumentationSettings, Any], None], *, version: int = 5, include_content: bool = True) -> tuple[dict[str, Any], list[ReadableSpan]]:
    """Run `run(settings, tracer)` under a fresh tracer provider; return the OTLP/JSON export and the SDK's spans."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = InstrumentationSettings(tracer_provider=provider, version=version, include_content=include_content)  # type: ignore[arg-type]
    run(settings, provider.get_tracer("harness"))
    provider.shutdown()
    spans = list(exporter.get_finished_spans())
    return export(spans), spans


def _weather(settings: InstrumentationSettings, output_type: Any) -> None:
    agent = Agent(
        FunctionModel(_script([ToolCallPart("search", {"query": "paris"})], [ToolCallPart("final_result", {"city": "Paris", "temp_c": 21})])),
        output_type=output_type,
        capabilities=[Instrumentation(settings=settings)],
    )
    _tools(agent)
    agent.run_sync("weather in Paris?")


def output_function(settings: InstrumentationSettings, tracer: Any) -> None:
    """search, then the output function `final_result` (an `execute_tool` span that is not a tool call)."""
    _weather(settings, _report)


def output_tool(settings: InstrumentationSettings, tracer: Any) -> None:
    """search, then structured output through the output tool `final_result` (no span)."""
    _weather(settings, Answer)


def deferred(settings: InstrumentationSettings, tracer: Any) -> None:
    """One response emits [search, delete_account (requires_approval), refund (raises ApprovalRequired)]."""
    agent = Agent(
        FunctionModel(
            _script(
                [
                    ToolCallPart("search", {"query": "account 7"}),
                    ToolCallPart("delete_account", {"user_id": "u7"}),
                    ToolCallPart("refund", {"order_id": "o1", "amount": 5.0}),
                ]
            )
        ),
        output_type=[str, DeferredToolRequests],
        capabilities=[Instrumentation(settings=settings)],
    )
    _tools(agent)
    agent.run_sync("close account 7 and refund o1")


def unknown_tool(settings: InstrumentationSettings, tracer: Any) -> None:
    """One response emits [search, lookup_order]; `lookup_order` is not a tool, so it runs no span (a retry prompt answers it)."""
    agent = Agent(
        FunctionModel(_script([ToolCallPart("search", {"query": "order 9"}), ToolCallPart("lookup_order", {"order_id": "9"})])),
        capabilities=[Instrumentation(settings=settings)],
    )
    _tools(agent)
    agent.run_sync("where is order 9?")


def no_content(settings: InstrumentationSettings, tracer: Any) -> None:
    """search with content capture off: the arguments are not recorded anywhere."""
    agent = Agent(FunctionModel(_script([ToolCallPart("search", {"query": "secret"})])), capabilities=[Instrumentation(settings=settings)])
    _tools(agent)
    agent.run_sync("look up the secret")


def batch(settings: InstrumentationSettings, tracer: Any, runs: int = 4) -> None:
    """`runs` agent runs under one parent span (a web request or an evaluation harness)."""
    agent = Agent(FunctionModel(_script([ToolCallPart("search", {"query": "q"})], [ToolCallPart("search", {"query": "r"})])), capabilities=[Instrumentation(settings=settings)])
    _tools(agent)
    with tracer.start_as_current_span("evaluate dataset"):
        for i in range(runs):
            agent.run_sync(f"question {i}")


SCENARIOS = {"output_function": output_function, "output_tool": output_tool, "deferred": deferred, "no_content": no_content, "unknown_tool": unknown_tool, "batch": batch}


if __name__ == "__main__":  # print one scenario's spans, to inspect what the instrumentation writes
    import sys

    name, version = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 5
    doc, _ = record(SCENARIOS[name], version=version, include_content=name != "no_content")
    for s in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        print(s["name"], s["spanId"], s.get("parentSpanId"), json.dumps({a["key"]: next(iter(a["value"].values())) for a in s["attributes"]})[:1500])
