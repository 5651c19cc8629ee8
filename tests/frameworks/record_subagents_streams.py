"""Record the runs behind `tests/test_subagents_streams.py`, with the installed libraries.

    python tests/frameworks/record_subagents_streams.py [OUTDIR] [--only SCENARIO ...]   (OUTDIR: tests/data/subagents-streams)

Each scenario (`SCENARIOS`) runs the framework's real instrumentation against the project's fake server
answering by the request's content (`ByContent`: agents running in parallel ask in any order), in a process of
its own (instrumentors and MLflow's autolog patch libraries process-wide), and writes its exports and
`<s>.outcome.json` (what the framework returned, how many model requests it made and the tokens the server
reported for them). No network.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

FRAMEWORKS = Path(__file__).resolve().parent
OUT = FRAMEWORKS.parent / "data" / "subagents-streams"
sys.path.insert(0, str(FRAMEWORKS))

from common import MODEL, agents_recording, otel_provider, write_jsonl, write_otlp, write_outcome  # noqa: E402
from fake_openai import _chunks, _completion  # noqa: E402
from record_otel_loop_faults import Scripted, call, chat  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C", "Zürich": "bewölkt, 12 °C"}


class ByContent(Scripted):
    """`record_otel_loop_faults.Scripted` answering a chat request with `script(body)` (parallel agents ask in any
    order) and the Responses API request number n with `responses[n]`; request n, in arrival order, reports `100 + n`
    input and `10 + n` output tokens. A stream sends its usage only when `stream_options.include_usage` asks, as
    OpenAI does (`Scripted` always sends it): such a stream is `fake_openai._chunks` without its usage chunk."""

    def __init__(self, script: Callable[[dict[str, Any]], Any], responses: list[Any] | None = None) -> None:
        super().__init__(lambda body, headers: (script(body), self._usage()), responses)  # type: ignore[misc]

    def _usage(self) -> dict[str, int]:
        n, self.n = self.n, self.n + 1
        return {"prompt_tokens": 100 + n, "completion_tokens": 10 + n, "total_tokens": 110 + 2 * n}

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()  # aiohttp keeps the body: `Scripted._chat` reads it again
        if not body.get("stream") or (body.get("stream_options") or {}).get("include_usage"):
            return await super()._chat(request)
        message, usage = self.chat_script(body, request.headers)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for chunk in _chunks(_completion(message, usage, MODEL))[:-1]:
            await resp.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    def outcome(self, answer: Any) -> dict[str, Any]:
        return {"final_output": answer, "requests": self.n, "input_tokens": sum(100 + n for n in range(self.n)),
                "output_tokens": sum(10 + n for n in range(self.n))}


# --- LangGraph: a supervisor whose tool runs a researcher agent; two questions asked in parallel ---------------
SUPERVISED = "Ask the researcher about Paris and about Tokyo, then summarise."


def _supervisor_script(body: dict[str, Any]) -> dict[str, Any]:
    msgs = body["messages"]
    system = next((m["content"] for m in msgs if m["role"] == "system"), "")
    answered = any(m["role"] == "tool" for m in msgs)
    if system.startswith("Supervisor"):
        if not answered:
            return chat(None, call("call_s1", "ask_researcher", {"question": "Weather in Paris?"}),
                        call("call_s2", "ask_researcher", {"question": "Weather in Tokyo?"}))
        return chat("Paris is sunny; Tokyo is rainy.")
    city = "Paris" if "Paris" in next(m["content"] for m in msgs if m["role"] == "user") else "Tokyo"
    return chat(f"{city}: {WEATHER[city]}") if answered else chat(None, call(f"call_r_{city}", "get_weather", {"city": city}))


def supervisor(instrumentation: str, name: str, out: Path, named: bool = False) -> dict[str, Any]:
    """The supervisor run (`named`: the two agents given names, `researcher` and `supervisor`, as LangGraph's multi-agent
    docs name theirs), traced by `instrumentation`: `oi` (OpenInference), `tl` (OpenLLMetry), `mlflow`
    (`mlflow.langchain.autolog()`: `<name>.mlflow.jsonl` and its OTLP dual export `<name>.otlp.jsonl`) or `langfuse`
    (Langfuse's LangChain `CallbackHandler`: the OTLP its SDK sent, `<name>.otlp.jsonl`, and the trace as Langfuse's
    API returns it, `<name>.json` and `<name>.v2.json`, built by `langfuse_api.py`)."""
    with ByContent(_supervisor_script) as fake, _tracing(instrumentation, fake, name, out) as callbacks:
        from langchain_core.tools import tool
        from langchain_openai import ChatOpenAI
        from langgraph.prebuilt import create_react_agent

        model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)

        @tool
        def get_weather(city: str) -> str:
            """Weather in a city."""
            return WEATHER[city]

        names: Callable[[str], dict[str, str]] = lambda n: {"name": n} if named else {}  # noqa: E731
        researcher = create_react_agent(model, [get_weather], prompt="Researcher: use get_weather.", **names("researcher"))

        @tool
        def ask_researcher(question: str) -> str:
            """Ask the research agent a question."""
            return researcher.invoke({"messages": [{"role": "user", "content": question}]})["messages"][-1].content

        boss = create_react_agent(model, [ask_researcher], prompt="Supervisor: delegate to the researcher.", **names("supervisor"))
        answer = boss.invoke({"messages": [{"role": "user", "content": SUPERVISED}]}, {"callbacks": callbacks})["messages"][-1].content
    return fake.outcome(answer)


@contextmanager
def _tracing(instrumentation: str, fake: ByContent, name: str, out: Path) -> Iterator[list[Any]]:
    """`supervisor`'s tracing on, giving the callbacks its run passes (Langfuse's handler); on leaving, its files written."""
    if instrumentation == "mlflow":
        from run_mlflow import langchain_recording

        with langchain_recording(fake, out, name):
            yield []
        return
    if instrumentation == "langfuse":
        from langfuse import Langfuse
        from langfuse.langchain import CallbackHandler
        from langfuse_api import write_forms

        langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
        yield [CallbackHandler()]
        langfuse.flush()
        docs = fake.take_otlp()
        langfuse.shutdown()
        write_forms(out, name, docs)
        return
    if instrumentation == "oi":
        from openinference.instrumentation.langchain import LangChainInstrumentor as Instrumentor
    else:
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor as Instrumentor
    provider = otel_provider(fake, "supervisor")
    Instrumentor().instrument(tracer_provider=provider)
    yield []
    write_otlp(provider, fake, out / f"{name}.jsonl")
    provider.shutdown()


# --- the OpenAI Agents SDK: a handoff, then parallel calls, one of them an agent called as a tool (`as_tool`) ----
ASKED = "Wie ist das Wetter in Zürich? Übersetze es ins Englische und storniere #W999."


def _agents_chat(body: dict[str, Any]) -> dict[str, Any]:
    msgs = body.get("messages") or []
    system = next((m["content"] for m in msgs if m["role"] == "system"), "")
    tool_messages = sum(1 for m in msgs if m["role"] == "tool")
    if system.startswith("Triage"):
        return chat(None, call("call_h1", "transfer_to_wetter_agent", {}))
    if system.startswith("Translator"):
        return chat("cloudy, 12 °C")
    if tool_messages <= 1:  # only the handoff's tool message so far
        return chat("Ich prüfe das.", call("call_w1", "get_weather", {"city": "Zürich"}), call("call_c1", "cancel_order", {"order_id": "#W999"}),
                    call("call_x1", "translate", {"input": "bewölkt, 12 °C"}), call("call_p1", "get_weather", {"city": "Paris"}))
    return chat("Zürich: bewölkt, 12 °C (cloudy). Paris: sunny. #W999 konnte nicht storniert werden.")


def _as_items(msg: dict[str, Any]) -> list[dict[str, Any]]:
    """A chat reply as Responses API output items."""
    out: list[dict[str, Any]] = [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                                  "content": [{"type": "output_text", "text": msg["content"], "annotations": []}]}] if msg.get("content") else []
    return out + [{"type": "function_call", "id": "fc_" + c["id"], "call_id": c["id"], "name": c["function"]["name"],
                   "arguments": c["function"]["arguments"], "status": "completed"} for c in msg.get("tool_calls") or []]


def get_weather(city: str) -> str:
    """Weather in a city."""
    return WEATHER[city]


def cancel_order(order_id: str) -> str:
    """Cancel an order."""
    raise ValueError(f"Bestellung {order_id} nicht gefunden")


def agents(api: str, streamed: bool, name: str, out: Path) -> dict[str, Any]:
    # the Responses run asks in order: Triage, Wetter-Agent, the Translator inside its call, Wetter-Agent again
    responses = [_as_items(_agents_chat({"messages": [{"role": "system", "content": who}, *[{"role": "tool"}] * rounds]}))
                 for who, rounds in (("Triage", 0), ("Wetter", 1), ("Translator", 0), ("Wetter", 5))]
    with ByContent(_agents_chat, responses) as fake, agents_recording(fake, out, name, api):
        from agents import Agent, Runner, function_tool

        translator = Agent(name="Translator", instructions="Translator: translate to English.", model=MODEL)
        wetter = Agent(name="Wetter-Agent", instructions="Wetter: answer weather questions.", model=MODEL,
                       tools=[function_tool(get_weather, strict_mode=False), function_tool(cancel_order, strict_mode=False),
                              translator.as_tool(tool_name="translate", tool_description="Translate text to English.")])
        triage = Agent(name="Triage", instructions="Triage: route the user.", model=MODEL, handoffs=[wetter])

        async def run() -> Any:
            if not streamed:
                return (await Runner.run(triage, ASKED)).final_output
            result = Runner.run_streamed(triage, ASKED)  # the SDK asks for no usage on a stream (ModelSettings.include_usage)
            async for _ in result.stream_events():
                pass
            return result.final_output

        answer = asyncio.run(run())
    return fake.outcome(answer)


# --- MLflow: `mlflow.openai.autolog()` over a loop reading streamed chat completions -------------------------
NOTE = "Paris is sunny. " * 100  # 1,600 characters: 320 argument chunks, more than the 128 events a span keeps
STREAM_SCRIPT = {
    0: chat(None, call("call_m1", "get_weather", {"city": "Paris"}), call("call_m2", "cancel_order", {"order_id": "#W999"})),
    2: chat("Saving a note.", call("call_m3", "save_note", {"text": NOTE})),
    3: chat("Paris is sunny, 21 C; order #W999 was not found; the note is saved."),
}


def save_note(text: str) -> str:
    """Save a note."""
    return f"saved {len(text)} characters"


def mlflow_stream(name: str, out: Path) -> dict[str, Any]:
    from run_mlflow import _clean, _configure

    tool_messages = lambda body: sum(1 for m in body["messages"] if m["role"] == "tool")  # noqa: E731
    with ByContent(lambda body: STREAM_SCRIPT[tool_messages(body)]) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store)
        from mlflow.entities import SpanType
        from mlflow.tracing.provider import provider
        from openai import OpenAI

        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        tools = {f.__name__: mlflow.trace(f, name=f.__name__, span_type=SpanType.TOOL) for f in (get_weather, cancel_order, save_note)}
        params = {"get_weather": "city", "cancel_order": "order_id", "save_note": "text"}
        schemas = [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {p: {"type": "string"}}}}}
                   for n, p in params.items()]

        def ask(messages: list[dict[str, Any]]) -> dict[str, Any]:
            """One streamed request, its message put together from the chunks as a client reading the stream does."""
            text, calls = "", {}
            for chunk in client.chat.completions.create(model=MODEL, messages=messages, tools=schemas, stream=True,
                                                        stream_options={"include_usage": True}):
                for delta in [c.delta for c in chunk.choices]:
                    text += delta.content or ""
                    for part in delta.tool_calls or []:
                        got = calls.setdefault(part.index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
                        got["id"] = part.id or got["id"]
                        got["function"]["name"] += (part.function.name or "") if part.function else ""
                        got["function"]["arguments"] += (part.function.arguments or "") if part.function else ""
            return {"role": "assistant", "content": text or None, **({"tool_calls": [calls[i] for i in sorted(calls)]} if calls else {})}

        @mlflow.trace(name="agent", span_type=SpanType.AGENT)
        def agent(question: str) -> str:
            messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
            while True:
                msg = ask(messages)
                messages.append(msg)
                if not msg.get("tool_calls"):
                    return msg["content"]
                for c in msg["tool_calls"]:
                    try:
                        result = tools[c["function"]["name"]](**json.loads(c["function"]["arguments"]))
                    except Exception as exc:  # the loop tells the model, as hand-written loops do
                        result = f"Error: {exc}"
                    messages.append({"role": "tool", "tool_call_id": c["id"], "content": str(result)})

        answer = agent("Weather in Paris? Cancel #W999 and save a note.")
        trace = mlflow.get_trace(mlflow.get_last_active_trace_id())
        write_jsonl(out / f"{name}.mlflow.jsonl", [_clean(trace.to_json(), store)])
        provider.get().force_flush()
        write_jsonl(out / f"{name}.otlp.jsonl", fake.take_otlp())
        return fake.outcome(answer)


SCENARIOS: dict[str, Callable[[str, Path], dict[str, Any]]] = {
    "lg-supervisor-oi": lambda n, o: supervisor("oi", n, o),
    "lg-supervisor-tl": lambda n, o: supervisor("tl", n, o),
    "lg-named-tl": lambda n, o: supervisor("tl", n, o, named=True),
    "lg-named-oi": lambda n, o: supervisor("oi", n, o, named=True),
    "lg-named-mlflow": lambda n, o: supervisor("mlflow", n, o, named=True),
    "lg-named-lf": lambda n, o: supervisor("langfuse", n, o, named=True),
    "agents-as-tool": lambda n, o: agents("chat_completions", False, n, o),
    "agents-stream-nousage": lambda n, o: agents("chat_completions", True, n, o),
    "agents-responses": lambda n, o: agents("responses", False, n, o),
    "mlflow-stream": mlflow_stream,
}


def main() -> None:
    args = sys.argv[1:]
    out = Path(args.pop(0)) if args and not args[0].startswith("--") else OUT
    out.mkdir(parents=True, exist_ok=True)
    if args[:1] == ["--one"]:  # the child process of one scenario
        print(json.dumps(write_outcome(out, args[1], SCENARIOS[args[1]](args[1], out)), ensure_ascii=False))
        return
    for name in args[args.index("--only") + 1:] if "--only" in args else list(SCENARIOS):
        subprocess.run([sys.executable, __file__, str(out), "--one", name], check=True, env=os.environ | {"PYTHONWARNINGS": "ignore"})


if __name__ == "__main__":
    main()
