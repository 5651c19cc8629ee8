"""Record the conversations behind `tests/test_conversation_groups_native.py`, with the installed libraries.

    python tests/frameworks/record_conversation_groups.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/conversation-groups)

A chat application answers two turns of one conversation, each turn a trace of its own as chat apps
write them, and between them one question outside any conversation (a lone trace), so the two turns
are not next to each other in the export. Each scenario (one a process: instrumentors patch libraries
process-wide) runs the real framework against the scripted loopback server of `record_oi_faults.py`
(request n gets reply n, `usage` prompt 100+n / completion 10+n; no network):

- `agents`: the OpenAI Agents SDK (chat completions); each turn `Runner.run` under
  `trace("Chat", group_id=THREAD)`, turn 2 sending turn 1's `to_input_list()` plus its question; the lone
  question under `trace("Chat")`. Writes `agents.jsonl` (`{"trace", "spans"}` per trace, as a processor
  keeps them on `on_trace_end`) and `agents.batch.jsonl` (the `{"data": [...]}` posts of the SDK's
  `BackendSpanExporter`, flushed after each trace).
- `langfuse`: Langfuse's `@observe` agent per turn with `propagate_attributes(session_id=THREAD)` (the
  lone one without), its OpenAI drop-in client; the OTLP it sent becomes the public API's JSON
  (`langfuse_api.py`): `langfuse.json` (`GET /api/public/traces/{id}`) and `langfuse.v2.json`
  (`GET /api/public/v2/observations?traceId=…`).
- `mlflow`: `@mlflow.trace` agent per turn under `mlflow.openai.autolog()`, the turns setting
  `mlflow.update_current_trace(metadata={"mlflow.trace.session": THREAD, "mlflow.trace.user": USER})`;
  `mlflow.jsonl` holds `Trace.to_json()` per trace.

`<scenario>.truth.json`: what the application sent and got: the conversation's key, its trace ids in
order, per turn the user text, the calls (name, arguments the model sent, result the tool returned) and
the answer, the tokens the server reported for the conversation's requests; the same for the lone trace.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

OUT = HERE.parent / "data" / "conversation-groups"
THREAD = "thread-7f3a"
USER = "user-1"
SYSTEM = "You are a helpful weather assistant."
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}

# (question, in the conversation?, replies: the calls of the first request, then the answer)
TURNS = [
    ("Is it sunny in Paris?", True, [call("call_p1", "get_weather", {"city": "Paris"})], "Yes: it is sunny in Paris, 21 C."),
    ("Say hello in French.", False, [], "Bonjour !"),
    ("And in Tokyo?", True, [call("call_t1", "get_weather", {"city": "Tokyo"})], "No, it is rainy in Tokyo, 14 C."),
]


def _replies() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for _, _, calls, answer in TURNS:
        if calls:
            out.append({"role": "assistant", "content": None, "tool_calls": calls})
        out.append({"role": "assistant", "content": answer})
    return out


def get_weather(city: str) -> str:
    """The weather in a city."""
    return WEATHER[city]


class _Truth:
    """What the application sent and got, turn by turn; tokens are those the scripted server reports for request n."""

    def __init__(self) -> None:
        self.conversation: dict[str, Any] = {"key": THREAD, "traces": [], "turns": [], "usage": {"input_tokens": 0, "output_tokens": 0}}
        self.lone: dict[str, Any] = {}

    def add(self, trace_id: str | None, grouped: bool, question: str, first: int, last: int, answer: Any) -> None:
        calls = [{"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"]),
                  "result": get_weather(**json.loads(c["function"]["arguments"]))}
                 for q, _, cs, _ in TURNS if q == question for c in cs]
        usage = {"input_tokens": sum(100 + n for n in range(first, last)), "output_tokens": sum(10 + n for n in range(first, last))}
        turn = {"user": question, "calls": calls, "answer": answer, "requests": last - first}
        if grouped:
            self.conversation["traces"].append(trace_id)
            self.conversation["turns"].append(turn)
            for k in usage:
                self.conversation["usage"][k] += usage[k]
        else:
            self.lone = {"trace": trace_id, **turn, "usage": usage}

    def write(self, out: Path, name: str) -> dict[str, Any]:
        record = {"conversation": self.conversation, "lone": self.lone}
        write_truth(out, name, record)
        return record


class _Keep:
    """A `TracingProcessor` keeping `{"trace": Trace.export(), "spans": [Span.export(), ...]}` per finished trace."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.done: list[dict[str, Any]] = []

    def on_trace_start(self, trace: Any) -> None:
        pass

    def on_trace_end(self, trace: Any) -> None:
        self.done.append({"trace": trace.export(), "spans": [s for s in self.spans if s["trace_id"] == trace.trace_id]})
        self.spans = [s for s in self.spans if s["trace_id"] != trace.trace_id]

    def on_span_start(self, span: Any) -> None:
        pass

    def on_span_end(self, span: Any) -> None:
        if (exported := span.export()) is not None:
            self.spans.append(exported)

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


def agents(out: Path) -> Any:
    import asyncio

    from agents import (Agent, Runner, add_trace_processor, function_tool, set_default_openai_api, set_default_openai_client,
                        set_trace_processors, trace)
    from agents.tracing.processors import BackendSpanExporter, BatchTraceProcessor
    from openai import AsyncOpenAI

    truth = _Truth()
    with ScriptedOpenAI(_replies()) as fake:
        set_default_openai_client(AsyncOpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0), use_for_tracing=False)
        set_default_openai_api("chat_completions")
        set_trace_processors([])  # the default processor would post to api.openai.com
        keep = _Keep()
        batch = BatchTraceProcessor(BackendSpanExporter(api_key="sk-fake-tracing", endpoint=f"{fake.base_url}/traces/ingest"))
        add_trace_processor(keep)
        add_trace_processor(batch)
        agent = Agent(name="Assistant", instructions=SYSTEM, tools=[function_tool(get_weather, strict_mode=False)], model=MODEL)

        async def chat() -> None:  # one event loop: the client's connections belong to it
            history: list[Any] = []
            for question, grouped, _, _ in TURNS:
                first = fake.n
                with trace("Chat", group_id=THREAD if grouped else None) as t:
                    sent = history + [{"role": "user", "content": question}] if grouped else question
                    result = await Runner.run(agent, sent)
                if grouped:
                    history = result.to_input_list()
                batch.force_flush()  # one post per trace: the turns' items lie apart in the stream
                truth.add(t.trace_id, grouped, question, first, fake.n, result.final_output)

        asyncio.run(chat())
        write_jsonl(out / "agents.jsonl", keep.done)
        write_jsonl(out / "agents.batch.jsonl", fake.ingested)
        batch.shutdown()
    return truth.write(out, "agents")


def langfuse(out: Path) -> Any:
    from langfuse import Langfuse, observe, propagate_attributes
    from langfuse.openai import OpenAI
    from langfuse_api import observations_v2, trace_with_full_details

    truth = _Truth()
    with ScriptedOpenAI(_replies()) as fake:
        lf = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="test")
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        weather = observe(get_weather, name="get_weather", as_type="tool")
        schema = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]

        def loop(messages: list[dict[str, Any]]) -> str:
            while True:
                msg = client.chat.completions.create(model=MODEL, messages=messages, tools=schema).choices[0].message
                messages.append(msg.model_dump(exclude_none=True))
                if not msg.tool_calls:
                    return str(msg.content)
                for tc in msg.tool_calls:
                    messages.append({"role": "tool", "tool_call_id": tc.id, "content": weather(**json.loads(tc.function.arguments))})

        app: dict[str, Any] = {}  # the chat in progress: its history and session (the lone question has none)

        @observe(name="chat", as_type="agent")
        def chat(question: str) -> str:
            app["trace_id"] = lf.get_current_trace_id()
            app["history"].append({"role": "user", "content": question})
            if app["session"] is None:
                return loop(app["history"])
            with propagate_attributes(session_id=app["session"], user_id=USER):
                return loop(app["history"])

        thread = [{"role": "system", "content": SYSTEM}]
        docs: list[dict[str, Any]] = []
        for question, grouped, _, _ in TURNS:
            first = fake.n
            app.update(history=thread if grouped else [{"role": "system", "content": SYSTEM}], session=THREAD if grouped else None)
            answer = chat(question)
            lf.flush()
            docs += fake.take_otlp()
            truth.add(app["trace_id"], grouped, question, first, fake.n, answer)
        lf.shutdown()
    write_jsonl(out / "langfuse.json", trace_with_full_details(docs))
    write_jsonl(out / "langfuse.v2.json", observations_v2(docs))
    return truth.write(out, "langfuse")


def mlflow(out: Path) -> Any:
    from run_mlflow import _clean, _configure

    truth = _Truth()
    with ScriptedOpenAI(_replies()) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store)
        from mlflow.entities import SpanType
        from openai import OpenAI

        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        weather = mlflow.trace(get_weather, name="get_weather", span_type=SpanType.TOOL)
        schema = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]

        app: dict[str, Any] = {}  # the chat in progress: its history and session (the lone question has none)

        @mlflow.trace(name="chat", span_type=SpanType.AGENT)
        def chat(question: str) -> str:
            if app["session"] is not None:
                mlflow.update_current_trace(metadata={"mlflow.trace.session": app["session"], "mlflow.trace.user": USER})
            messages = app["history"]
            messages.append({"role": "user", "content": question})
            while True:
                msg = client.chat.completions.create(model=MODEL, messages=messages, tools=schema).choices[0].message
                messages.append(msg.model_dump(exclude_none=True))
                if not msg.tool_calls:
                    return str(msg.content)
                for tc in msg.tool_calls:
                    messages.append({"role": "tool", "tool_call_id": tc.id, "content": weather(**json.loads(tc.function.arguments))})

        thread = [{"role": "system", "content": SYSTEM}]
        lines = []
        for question, grouped, _, _ in TURNS:
            first = fake.n
            app.update(history=thread if grouped else [{"role": "system", "content": SYSTEM}], session=THREAD if grouped else None)
            answer = chat(question)
            trace = mlflow.get_trace(mlflow.get_last_active_trace_id())
            lines.append(_clean(trace.to_json(), store))
            truth.add(trace.info.trace_id, grouped, question, first, fake.n, answer)
        from mlflow.tracing.provider import provider

        provider.get().force_flush()  # the dual export's OTLP copy, before the server stops (read elsewhere: not kept)
        fake.take_otlp()
    write_jsonl(out / "mlflow.jsonl", lines)
    return truth.write(out, "mlflow")


SCENARIOS = {"agents": agents, "langfuse": langfuse, "mlflow": mlflow}

if __name__ == "__main__":
    args = sys.argv[1:]
    sys.exit(record_each_in_subprocess(__file__, args if args and args[0] not in SCENARIOS else [str(OUT), *args], SCENARIOS))
