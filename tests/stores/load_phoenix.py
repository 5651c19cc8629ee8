"""Load agent traces into a running Phoenix: the plain OpenAI loop under OpenInference, exported over OTLP/HTTP.

`python load_phoenix.py URL PROJECT TASK...` runs each task of `tests/frameworks/tasks.py` against the
loopback fake OpenAI server inside an OpenInference AGENT span, each tool call a TOOL span, the model
requests recorded by `openinference-instrumentation-openai`, and prints `{"ids": [trace ids (hex), in order], "spans": spans exported}`.
Phoenix stores what OTLP brings it in the background, so a reader waits until it holds `spans` more spans.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frameworks"))

from fake_openai import FakeOpenAI  # noqa: E402
from run_openai_loop import client_for, run_loop  # noqa: E402
from tasks import TASKS, TOOLS  # noqa: E402


def main(url: str, project: str, tasks: list[str]) -> dict[str, Any]:
    """Run `tasks` traced into Phoenix's `project`; returns their trace ids (hex) in order and the spans exported."""
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace import SpanProcessor
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import Status, StatusCode

    provider = TracerProvider(resource=Resource.create({"service.name": "agent", "openinference.project.name": project}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    ended = []

    class Count(SpanProcessor):
        def on_end(self, span: Any) -> None:
            ended.append(span.context.span_id)

    provider.add_span_processor(Count())
    tracer = provider.get_tracer("agent")
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    fake = FakeOpenAI()
    ids = []

    def traced(name: str) -> Any:
        def call(**kwargs: Any) -> Any:
            with tracer.start_as_current_span(name, attributes={"openinference.span.kind": "TOOL", "tool.name": name,
                                                                "input.value": json.dumps(kwargs), "input.mime_type": "application/json"}) as span:
                try:
                    result = TOOLS[name](**kwargs)
                except Exception as exc:
                    span.record_exception(exc)
                    span.set_status(Status(StatusCode.ERROR, str(exc)))
                    raise
                span.set_attribute("output.value", str(result))
                return result
        return call

    try:
        for task in tasks:
            question = TASKS[task].turns[0]
            with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT", "input.value": question}) as root:
                answer = run_loop(client_for(fake), task, {n: traced(n) for n in TASKS[task].tools})[-1]
                root.set_attribute("output.value", answer)
                ids.append(format(root.get_span_context().trace_id, "032x"))
    finally:
        OpenAIInstrumentor().uninstrument()
        provider.shutdown()
        fake.close()
    return {"ids": ids, "spans": len(ended)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2], sys.argv[3:])))
