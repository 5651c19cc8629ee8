"""Record plain Chat Completions loops whose messages OpenLLMetry writes as GenAI events (log records), behind
`tests/test_otel_message_events.py`.

    python tests/frameworks/record_openllmetry_events.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/openllmetry-events)

opentelemetry-instrumentation-openai (OpenLLMetry) with `use_attributes=False` writes no message on its `openai.chat`
span: each message of a request is a log record of its own, the events of semantic conventions 1.27–1.36
(`gen_ai.system.message`, `gen_ai.user.message` — here its content a list of content parts —, `gen_ai.assistant.message`,
`gen_ai.tool.message`, one `gen_ai.choice` per choice), sent by the OTel SDK's log pipeline beside the spans. A
hand-written `client.chat.completions.create` tool loop (the tool `get_weather`; `choices[0].message` appended to the
history, its calls run and their results sent back) runs against a scripted loopback server (`Choices`: request n gets
the choices `REPLIES[scenario][n]`; no network). Scenarios (each in its own subprocess):

- `tl-events`: two user turns, one call each (Paris, then Tokyo), each answered. Writes `tl-events.jsonl`, the spans'
  and the log records' exports one a line as a Collector's file exporter writes both pipelines to one file, and the same
  run split as two exports given side by side, `tl-events-split/traces.jsonl` and `tl-events-split/logs.jsonl`, the
  logs as protobuf's JSON mapping writes them (ids in base64).
- `tl-events-n2`: every request with `n=2`; the first choice asks for Paris, the second for Tokyo (`call_x`, never run);
  then two answers, of which the application takes the first.
- `tl-events-stream`: the first turn of `tl-events`, streamed (`stream_options={"include_usage": True}`): the
  instrumentation writes each reply's `gen_ai.choice` once the stream is read, with no trace or span id.
- `tl-anthropic-events`, `tl-anthropic-events-stream`: `record_anthropic.py`'s Messages API loop (a reply of thinking,
  text and two parallel `tool_use` blocks, one call failing; another call; the answer) under OpenLLMetry's
  `opentelemetry-instrumentation-anthropic` with `use_attributes=False`, plain and streamed: it writes each block of a
  reply as a `gen_ai.choice` of its own (its `index` the block's), and the request's `tools` as a user message.

Each writes `<scenario>.truth.json`: what the application sent and got (its user turns, the calls it ran with their
results, the answer it took, token usage).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from fake_anthropic import ScriptedAnthropic  # noqa: E402
from fake_openai import _hex_ids  # noqa: E402
from record_anthropic import REPLIES as ANTHROPIC_REPLIES, agent_loop  # noqa: E402
from record_openai_choices import TOOLS, WEATHER, Choices, _call, _streamed  # noqa: E402


SYSTEM = "Be brief."
TURNS = ["What is the weather in Paris?", "And in Tokyo?"]
ASK_PARIS = {"role": "assistant", "content": None, "tool_calls": [_call("call_p", "Paris")]}
ASK_TOKYO = {"role": "assistant", "content": None, "tool_calls": [_call("call_t", "Tokyo")]}
REPLIES = {
    "tl-events": [[ASK_PARIS], [{"role": "assistant", "content": "Sunny in Paris, 21 C."}],
                  [ASK_TOKYO], [{"role": "assistant", "content": "Rainy in Tokyo, 14 C."}]],
    "tl-events-n2": [[ASK_PARIS, {"role": "assistant", "content": "Tokyo first.", "tool_calls": [_call("call_x", "Tokyo")]}],
                     [{"role": "assistant", "content": "Sunny in Paris, 21 C."}, {"role": "assistant", "content": "It is sunny."}]],
    "tl-events-stream": [[ASK_PARIS], [{"role": "assistant", "content": "Sunny in Paris, 21 C."}]],
}


class _LogsRoute:
    """A scripted server's OTLP/HTTP log exports at `/v1/logs`: each into `otlp` with hex ids (as the spans' exports are
    kept) and into `logs` as protobuf's JSON mapping writes it (ids in base64)."""

    logs: list[dict[str, Any]]
    otlp: list[dict[str, Any]]

    def _routes(self, app: web.Application) -> None:
        super()._routes(app)  # type: ignore[misc]
        app.router.add_post("/v1/logs", self._logs)

    async def _logs(self, request: web.Request) -> web.Response:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

        req = ExportLogsServiceRequest()
        req.ParseFromString(await request.read())
        doc = MessageToDict(req, use_integers_for_enums=True)
        self.logs.append(doc)
        self.otlp.append(_hex_ids(doc))
        return web.Response(status=200, body=b"", content_type="application/x-protobuf")


class Logged(_LogsRoute, Choices):
    """`Choices` (the OpenAI chat script) taking log exports too."""

    def __init__(self, replies: list[list[dict[str, Any]]]) -> None:
        self.logs = []
        super().__init__(replies)


class LoggedAnthropic(_LogsRoute, ScriptedAnthropic):
    """`ScriptedAnthropic` (the Messages API script) taking log exports too."""

    def __init__(self, replies: list[Any]) -> None:
        self.logs = []
        super().__init__(replies)


def loop(client: Any, turns: list[str], n: int, stream: bool = False, parts: bool = True) -> dict[str, Any]:
    """The application: per user turn (its content a list of content parts when `parts`, else the text), ask, run the
    calls of `choices[0]`, send the results back, until a reply asks for none; its truth (user turns, calls, the last
    answer, usage)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    calls, spent, answer = [], {"input_tokens": 0, "output_tokens": 0, "requests": 0}, None
    for turn in turns:
        messages.append({"role": "user", "content": [{"type": "text", "text": turn}] if parts else turn})
        while True:
            if stream:
                msg, usage = _streamed(client, messages)
            else:
                r = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, **({"n": n} if n > 1 else {}))
                msg, usage = r.choices[0].message.model_dump(exclude_none=True), r.usage
            spent = {"input_tokens": spent["input_tokens"] + usage.prompt_tokens,
                     "output_tokens": spent["output_tokens"] + usage.completion_tokens, "requests": spent["requests"] + 1}
            messages.append(msg)
            if not msg.get("tool_calls"):
                answer = msg.get("content")
                break
            for c in msg["tool_calls"]:
                args = json.loads(c["function"]["arguments"])
                calls.append({"id": c["id"], "name": c["function"]["name"], "arguments": args, "result": WEATHER[args["city"]]})
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": WEATHER[args["city"]]})
    return {"user_turns": turns, "output": answer, "calls": calls, "usage": spent}


def _providers(fake: Any, service: str) -> tuple[Any, Any]:
    """A TracerProvider and a LoggerProvider exporting OTLP/HTTP protobuf to `fake`, as an application sets up both."""
    from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": service})
    traces = TracerProvider(resource=resource)
    traces.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{fake.url}/v1/traces")))
    logs = LoggerProvider(resource=resource)
    logs.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{fake.url}/v1/logs")))
    return traces, logs


def _write(out: Path, name: str, fake: Any, traces: Any, logs: Any, logged: bool = True) -> list[dict[str, Any]]:
    """Flush both pipelines and write what `fake` received to `out/<name>.jsonl` (spans' and records' exports one a line);
    `logged`: log records must have come (a recording made to hold them that holds none is no recording)."""
    traces.force_flush()
    logs.force_flush()
    docs = fake.take_otlp()
    if logged and not any("resourceLogs" in d for d in docs):
        raise RuntimeError(f"{name}: no log records were exported")
    write_jsonl(out / f"{name}.jsonl", docs)
    traces.shutdown()
    logs.shutdown()
    return docs


def record(out: Path, name: str) -> Any:
    from openai import OpenAI
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    with Logged(REPLIES[name]) as fake:
        traces, logs = _providers(fake, "openai-loop")
        OpenAIInstrumentor(use_attributes=False).instrument(tracer_provider=traces, logger_provider=logs)
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        truth = loop(client, TURNS if name == "tl-events" else TURNS[:1], 2 if name.endswith("-n2") else 1, name.endswith("-stream"))
        docs = _write(out, name, fake, traces, logs)
        if name == "tl-events":
            write_jsonl(out / f"{name}-split" / "traces.jsonl", [d for d in docs if "resourceSpans" in d])
            write_jsonl(out / f"{name}-split" / "logs.jsonl", fake.logs)
    write_truth(out, name, {"cases": [truth]})
    return truth["output"]


def record_anthropic(out: Path, name: str) -> Any:
    """`record_anthropic.agent_loop` (thinking, two parallel calls, one failed, a third call, the answer) under
    OpenLLMetry's Anthropic instrumentation writing events; its truth in the shape the OpenAI loops' has."""
    import anthropic
    from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor

    with LoggedAnthropic(ANTHROPIC_REPLIES) as fake:
        traces, logs = _providers(fake, "anthropic-loop")
        AnthropicInstrumentor(use_attributes=False).instrument(tracer_provider=traces, logger_provider=logs)
        client = anthropic.Anthropic(base_url=fake.url, api_key="sk-ant-fake", max_retries=0)
        run = agent_loop(client, stream=name.endswith("-stream"))
        _write(out, name, fake, traces, logs)
    truth = {"user_turns": run["user_turns"], "output": run["output"], "usage": {k: run["usage"][k] for k in ("input_tokens", "output_tokens", "requests")},
             "calls": [{k: c[k] for k in ("id", "name", "arguments", "result")} for c in run["calls"]]}
    write_truth(out, name, {"cases": [truth]})
    return truth["output"]


SCENARIOS = {name: (lambda out, name=name: record(out, name)) for name in REPLIES}
SCENARIOS |= {name: (lambda out, name=name: record_anthropic(out, name)) for name in ("tl-anthropic-events", "tl-anthropic-events-stream")}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(HERE.parent / "data" / "openllmetry-events")], SCENARIOS))
