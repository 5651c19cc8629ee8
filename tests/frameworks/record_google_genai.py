"""Record a Gemini function-calling loop made with google-genai under OTel's and OpenInference's google-genai
instrumentations, behind `tests/test_otel_google_genai.py`.

    python tests/frameworks/record_google_genai.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/google-genai)

The application drives `client.models.generate_content` (or `generate_content_stream`) by hand, as an agent loop does:
a system instruction, the tool `get_weather` declared, automatic function calling off; per user turn it sends the
contents so far, appends the reply's `Content`, runs each `function_call` and sends the results back as one `user`
content of `function_response` parts (`{"result": <weather>}`), until a reply makes no call. The first turn (Paris and
Tokyo) gets two parallel calls, the second (Oslo) one. The server (`fake_gemini.ScriptedGemini`, 127.0.0.1, no
network) answers `:generateContent` / `:streamGenerateContent` from a script; the API gives function calls no id.

`-afc`: the same turns through `client.chats` with the Python function as the tool, the SDK's automatic function
calling running the calls (`chat_loop`); `-afc-error`: the function raising for Oslo, which the SDK sends as
`{"error": <its message>}`. Scenarios, each in a subprocess of its own, plain and `-stream`, by hand and
`-afc`:

- `otel-span-only`, `otel-event-only`: opentelemetry-instrumentation-google-genai, which writes through
  opentelemetry-util-genai: `OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental` and
  `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY` / `EVENT_ONLY` (the messages on the span, or in a
  `gen_ai.client.inference.operation.details` log record). Its `instrumentation_dependencies()` says google-genai < 3,
  so it is instrumented with `skip_dep_check=True` (without, `instrument()` declines with a warning).
- `oi`: openinference-instrumentation-google-genai.

Each writes `<scenario>.jsonl` (the spans' and any log records' exports one a line) and `<scenario>.truth.json`
(what the application sent and got: user turns, the calls it ran with the results it sent, the answer, token usage).
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
from record_openllmetry_events import _providers, _write  # noqa: E402

MODEL = "gemini-2.5-flash"
SYSTEM = "Be brief."
TURNS = ["What is the weather in Paris and Tokyo?", "And in Oslo?"]
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C", "Oslo": "snow, -3 C"}


def _call(city: str) -> dict[str, Any]:
    return {"functionCall": {"name": "get_weather", "args": {"city": city}}}


REPLIES = [([{"text": "Checking both cities."}, _call("Paris"), _call("Tokyo")], {"prompt": 40, "output": 12}),
           ([{"text": "Paris is sunny (21 C); Tokyo is rainy (14 C)."}], {"prompt": 70, "output": 15}),
           ([_call("Oslo")], {"prompt": 95, "output": 6}),
           ([{"text": "Snow in Oslo, -3 C."}], {"prompt": 110, "output": 8})]
FAILED = "weather service unavailable for Oslo"  # what `get_weather` raises for Oslo in the `-afc-error` scenarios
REPLIES_FAILED = [*REPLIES[:3], ([{"text": "I could not get the weather in Oslo."}], {"prompt": 130, "output": 9})]
MODES = {
    "otel-span-only": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "SPAN_ONLY"},
    "otel-event-only": {"OTEL_SEMCONV_STABILITY_OPT_IN": "gen_ai_latest_experimental", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "EVENT_ONLY"},
    "oi": {},
}


def _ask(client: Any, contents: list[Any], config: Any, stream: bool) -> tuple[Any, Any]:
    """One request: (the reply's `Content`, its usage), a streamed reply's parts joined as the application joins them
    (adjacent text pieces into one part)."""
    from google.genai import types

    if not stream:
        r = client.models.generate_content(model=MODEL, contents=contents, config=config)
        return r.candidates[0].content, r.usage_metadata
    parts: list[Any] = []
    usage = None
    for chunk in client.models.generate_content_stream(model=MODEL, contents=contents, config=config):
        usage = chunk.usage_metadata or usage
        for p in chunk.candidates[0].content.parts or []:
            if p.text is not None and parts and parts[-1].text is not None:
                parts[-1] = types.Part.from_text(text=parts[-1].text + p.text)
            else:
                parts.append(p)
    return types.Content(role="model", parts=parts), usage


def loop(client: Any, stream: bool) -> dict[str, Any]:
    """The application (see the module docstring); its truth."""
    from google.genai import types

    config = types.GenerateContentConfig(
        system_instruction=SYSTEM,
        tools=[types.Tool(function_declarations=[types.FunctionDeclaration(
            name="get_weather", description="Weather in a city.",
            parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
    contents: list[Any] = []
    calls, spent, answer = [], {"input_tokens": 0, "output_tokens": 0, "requests": 0}, None
    for turn in TURNS:
        contents.append(types.Content(role="user", parts=[types.Part.from_text(text=turn)]))
        while True:
            content, usage = _ask(client, contents, config, stream)
            spent = {"input_tokens": spent["input_tokens"] + usage.prompt_token_count,
                     "output_tokens": spent["output_tokens"] + usage.candidates_token_count, "requests": spent["requests"] + 1}
            contents.append(content)
            asked = [p.function_call for p in content.parts if p.function_call]
            if not asked:
                answer = "".join(p.text for p in content.parts if p.text)
                break
            answers = []
            for fc in asked:
                response = {"result": WEATHER[fc.args["city"]]}
                calls.append({"id": fc.id, "name": fc.name, "arguments": dict(fc.args), "result": response})
                answers.append(types.Part.from_function_response(name=fc.name, response=response))
            contents.append(types.Content(role="user", parts=answers))
    return {"user_turns": TURNS, "output": answer, "calls": calls, "usage": spent}


def chat_loop(client: Any, fake: Any, stream: bool, fail: bool = False) -> dict[str, Any]:
    """The same two turns through a `client.chats` session with the Python function `get_weather` as its tool: the SDK's
    automatic function calling runs the calls and sends their results back. Its truth: the calls the function saw with
    what it returned (the SDK sends `{"result": <value>}`), the last answer, the usage the API gave (the server's: the
    application sees only its last request's). `fail`: the function raises `FAILED` for Oslo, which the SDK sends the
    model as `{"error": <its message naming the call and the exception>}`: that message is the call's result and error."""
    from google.genai import types

    calls: list[dict[str, Any]] = []

    def get_weather(city: str) -> str:
        """Weather in a city."""
        calls.append({"id": None, "name": "get_weather", "arguments": {"city": city}, "result": {"result": WEATHER.get(city)}})
        if fail and city == "Oslo":
            raise RuntimeError(FAILED)
        return WEATHER[city]

    chat = client.chats.create(model=MODEL, config=types.GenerateContentConfig(system_instruction=SYSTEM, tools=[get_weather]))
    answer = None
    for turn in TURNS:
        if stream:
            answer = "".join(c.text or "" for c in chat.send_message_stream(turn))
        else:
            answer = chat.send_message(turn).text
    spent = [fake.replies[i][1] for i in range(len(fake.bodies))]
    if fail:  # the SDK's message, as the last request sent it
        sent = [p["functionResponse"]["response"] for c in fake.bodies[-1]["contents"] for p in c["parts"] if "functionResponse" in p]
        calls[-1]["result"] = sent[-1]["error"]
    return {"user_turns": TURNS, "output": answer, "calls": calls, "usage": {
        "input_tokens": sum(u["prompt"] for u in spent), "output_tokens": sum(u["output"] for u in spent), "requests": len(spent)}}


def _instrument(mode: str, traces: Any, logs: Any) -> None:
    if mode == "oi":
        from openinference.instrumentation.google_genai import GoogleGenAIInstrumentor

        GoogleGenAIInstrumentor().instrument(tracer_provider=traces)
        return
    from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor

    GoogleGenAiSdkInstrumentor().instrument(tracer_provider=traces, logger_provider=logs, skip_dep_check=True)


def record(out: Path, mode: str, stream: bool, afc: str = "") -> Any:
    name = mode + afc + ("-stream" if stream else "")
    os.environ.update(MODES[mode])
    from google import genai
    from google.genai import types

    with ScriptedGemini(REPLIES_FAILED if afc == "-afc-error" else REPLIES) as fake:
        traces, logs = _providers(fake, "gemini-loop")
        _instrument(mode, traces, logs)
        client = genai.Client(api_key="fake-gemini-key", http_options=types.HttpOptions(base_url=fake.url))
        truth = chat_loop(client, fake, stream, afc == "-afc-error") if afc else loop(client, stream)
        _write(out, name, fake, traces, logs, logged=mode == "otel-event-only")
    write_truth(out, name, {"cases": [truth], "environment": MODES[mode]})
    return truth["output"]


SCENARIOS = {mode + afc + ("-stream" if stream else ""): (lambda out, mode=mode, stream=stream, afc=afc: record(out, mode, stream, afc))
             for mode in MODES for afc in ("", "-afc", "-afc-error") for stream in (False, True)}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(HERE.parent / "data" / "google-genai")], SCENARIOS))
