"""Record a Gemini function-calling loop made with the Vertex AI SDK (`vertexai.generative_models`, from
google-cloud-aiplatform) under OpenLLMetry's, OpenInference's and OTel's own vertexai instrumentations, behind
`tests/test_otel_vertexai.py`.

    python tests/frameworks/record_vertexai.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/vertexai)

The turns, tool, script and weather are `record_google_genai`'s: a system instruction, the tool `get_weather`, the
first turn (Paris and Tokyo) answered with two parallel calls, the second (Oslo) with one. `vertexai.init` points the
SDK's REST transport at `fake_gemini.ScriptedGemini` on 127.0.0.1 (`api_endpoint="http://127.0.0.1:PORT"`: the
transport keeps a scheme it is given) with anonymous credentials; no network. Applications, plain and `-stream`:

- `loop`: `GenerativeModel.generate_content` with the contents so far, the application running each call and sending
  the results back as one `user` content of `function_response` parts (`{"result": <weather>}`);
- `chat`: the same through `model.start_chat()`, `send_message` with the user's text, then with the responses;
- `error`: `loop` with the tool failing for Oslo, sent back as `{"error": FAILED}` (the Gemini API's failed call);
- `text`: `chat` with no tool, the two turns answered with text (what OpenLLMetry's instrumentation can record).

Instrumentations (`MODES`; OpenLLMetry's and OTel's share the distribution name `opentelemetry-instrumentation-vertexai`,
so OTel's is recorded from an environment of its own):

- `openllmetry`, `openllmetry-no-content` (`TRACELOOP_TRACE_CONTENT=false`), `openllmetry-events`
  (`use_legacy_attributes=False`: log records): opentelemetry-instrumentation-vertexai 0.62.x, `text` only: it reads
  `candidates[0].text` (streamed, each chunk's), which raises for a reply holding a function call, so the
  application's own `generate_content` raises;
- `oi`, `oi-no-content` (`OPENINFERENCE_HIDE_INPUTS` / `_OUTPUTS`): openinference-instrumentation-vertexai;
- `otel`, `otel-no-content`: opentelemetry-instrumentation-vertexai 2.x, log record events of conventions 1.28
  (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT` true / false); `otel-latest-span-only`,
  `otel-latest-event-only`: `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` with `SPAN_ONLY` / `EVENT_ONLY`;
  not streamed: it wraps `PredictionServiceClient.generate_content` only, so a streamed request makes no span.

Each writes `<mode>-<app>[-stream].jsonl` and `.truth.json`, as `record_google_genai` does.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import record_each_in_subprocess, write_truth  # noqa: E402
from fake_gemini import ScriptedGemini  # noqa: E402
from record_google_genai import FAILED, MODEL, REPLIES, REPLIES_FAILED, SYSTEM, TURNS, WEATHER  # noqa: E402
from record_openllmetry_events import _providers, _write  # noqa: E402

_LATEST = {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental"}
MODES: dict[str, dict[str, str]] = {
    "openllmetry": {},
    "openllmetry-no-content": {"TRACELOOP_TRACE_CONTENT": "false"},
    "openllmetry-events": {},
    "oi": {},
    "oi-no-content": {"OPENINFERENCE_HIDE_INPUTS": "true", "OPENINFERENCE_HIDE_OUTPUTS": "true"},
    "otel": {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
    "otel-no-content": {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "false"},
    "otel-latest-span-only": {**_LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"},
    "otel-latest-event-only": {**_LATEST, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY"},
}
LOGGED = {"openllmetry-events", "otel", "otel-latest-event-only"}  # the modes whose recordings must hold log records
APPS = ("loop", "chat", "error", "text")
TEXT_REPLIES = [REPLIES[1], REPLIES[3]]


def is_otel_contrib() -> bool:
    """Whether the installed `opentelemetry-instrumentation-vertexai` is OTel's own (2.x) rather than OpenLLMetry's."""
    from importlib.metadata import version

    return int(version("opentelemetry-instrumentation-vertexai").split(".")[0]) >= 2


def _instrument(mode: str, traces: Any, logs: Any) -> None:
    if mode.startswith("oi"):
        from openinference.instrumentation.vertexai import VertexAIInstrumentor as OIInstrumentor

        OIInstrumentor().instrument(tracer_provider=traces)
        return
    from opentelemetry.instrumentation.vertexai import VertexAIInstrumentor

    if mode.startswith("otel") != is_otel_contrib():
        raise RuntimeError(f"{mode}: the installed opentelemetry-instrumentation-vertexai is the other project's")
    if mode.startswith("otel"):
        VertexAIInstrumentor().instrument(tracer_provider=traces, logger_provider=logs)
    else:
        VertexAIInstrumentor(use_legacy_attributes=mode != "openllmetry-events").instrument(
            tracer_provider=traces, logger_provider=logs)


def _joined(responses: Any) -> tuple[Any, Any]:
    """A streamed reply's chunks as the application joins them: (its `Content`, adjacent text pieces one part; usage)."""
    from vertexai.generative_models import Content, Part

    parts: list[Any] = []
    usage = None
    for chunk in responses:
        usage = chunk.usage_metadata if chunk.usage_metadata.total_token_count else usage
        for p in chunk.candidates[0].content.parts:
            if "text" in p.to_dict() and parts and "text" in parts[-1].to_dict():
                parts[-1] = Part.from_text(parts[-1].text + p.text)
            else:  # a copy: a chat session merges later chunks into the first one's parts as they come
                parts.append(Part.from_dict(p.to_dict()))
    return Content(role="model", parts=parts), usage


def _tool() -> Any:
    from vertexai.generative_models import FunctionDeclaration, Tool

    return Tool(function_declarations=[FunctionDeclaration(
        name="get_weather", description="Weather in a city.",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})])


def run(app: str, stream: bool) -> dict[str, Any]:
    """The application `app` (module docstring); its truth: user turns, the calls run with the responses sent, the last
    answer, token usage summed over the replies."""
    from vertexai.generative_models import Content, GenerativeModel, Part

    model = GenerativeModel(MODEL, system_instruction=SYSTEM, tools=None if app == "text" else [_tool()])
    chat = model.start_chat() if app in ("chat", "text") else None
    contents: list[Any] = []
    calls, spent, answer = [], {"input_tokens": 0, "output_tokens": 0, "requests": 0}, None
    for turn in TURNS:
        message: Any = Part.from_text(turn)
        while True:
            if chat is not None:
                r = chat.send_message(message, stream=stream)
                content, usage = _joined(r) if stream else (r.candidates[0].content, r.usage_metadata)
            else:
                contents.append(Content(role="user", parts=message if isinstance(message, list) else [message]))
                r = model.generate_content(contents, stream=stream)
                content, usage = _joined(r) if stream else (r.candidates[0].content, r.usage_metadata)
                contents.append(content)
            spent = {"input_tokens": spent["input_tokens"] + usage.prompt_token_count,
                     "output_tokens": spent["output_tokens"] + usage.candidates_token_count, "requests": spent["requests"] + 1}
            asked = [p.function_call for p in content.parts if "function_call" in p.to_dict()]
            if not asked:
                answer = "".join(p.text for p in content.parts if "text" in p.to_dict())
                break
            message = []
            for fc in asked:
                city = dict(fc.args)["city"]
                response = {"error": FAILED} if app == "error" and city == "Oslo" else {"result": WEATHER[city]}
                # a failed call's result is its error text, as `record_google_genai`'s truth has it
                calls.append({"id": None, "name": fc.name, "arguments": dict(fc.args), "result": response.get("error", response)})
                message.append(Part.from_function_response(name=fc.name, response=response))
    return {"user_turns": TURNS, "output": answer, "calls": calls, "usage": spent}


def record(out: Path, mode: str, app: str, stream: bool) -> Any:
    import google.auth.credentials
    import vertexai

    name = f"{mode}-{app}" + ("-stream" if stream else "")
    os.environ.update(MODES[mode])
    with ScriptedGemini({"error": REPLIES_FAILED, "text": TEXT_REPLIES}.get(app, REPLIES)) as fake:
        traces, logs = _providers(fake, "vertexai-loop")
        _instrument(mode, traces, logs)
        vertexai.init(project="p", location="us-central1", api_endpoint=fake.url, api_transport="rest",
                      credentials=google.auth.credentials.AnonymousCredentials())
        truth = run(app, stream)
        _write(out, name, fake, traces, logs, logged=mode in LOGGED)
    write_truth(out, name, {"cases": [truth], "environment": MODES[mode]})
    return truth["output"]


SCENARIOS = {f"{mode}-{app}" + ("-stream" if stream else ""):
             (lambda out, mode=mode, app=app, stream=stream: record(out, mode, app, stream))
             for mode in MODES for app in APPS for stream in (False, True) 
             if (app == "text" or not mode.startswith("openllmetry")) and not (stream and mode.startswith("otel"))}


def installed() -> list[str]:
    """The scenarios the installed instrumentation of the `opentelemetry-instrumentation-vertexai` name can record
    (OpenInference's beside either)."""
    contrib = is_otel_contrib()
    return [s for s in SCENARIOS if s.startswith("oi") or s.startswith("otel") == contrib]


if __name__ == "__main__":
    argv = sys.argv[1:] or [str(HERE.parent / "data" / "vertexai")]
    sys.exit(record_each_in_subprocess(__file__, argv if len(argv) > 1 else [*argv, *installed()], SCENARIOS))
