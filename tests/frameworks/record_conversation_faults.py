"""Record the traces behind `tests/test_extract_conversation_faults.py`, with the installed libraries.

    python tests/frameworks/record_conversation_faults.py SCENARIO OUTDIR

writes the scenario's exports into OUTDIR (`SCENARIOS`), each run by the framework's real
instrumentation against a scripted loopback OpenAI server (`Scripted`: request n gets reply n; no
network). One scenario a process: instrumentors patch libraries process-wide. Prints the
framework's own outcome (JSON) on stdout.

- `oi_session`: a plain OpenAI-client tool loop under openinference-instrumentation-openai inside
  `using_session("sess-42")`, three user turns, two of them with a tool round (`session.jsonl`); and one turn
  whose request after the tool round fails (500) and is sent again by the application (`session-retry.jsonl`).
- `agents`: the OpenAI Agents SDK (chat completions) under OpenInference and its own exporter:
  `text_fatal` (a reply with text and calls, then a tool raises out of the run) and `max_turns`
  (`oi-<s>.jsonl`, `export-<s>.jsonl`).
- `langfuse`: Langfuse's `@observe` agent whose tool is interrupted (`KeyboardInterrupt`, which the
  SDK does not record) after a reply with text and calls (`langfuse.jsonl`).
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

from common import otel_provider, write_jsonl, write_otlp  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402

MODEL = "gpt-4o-mini"
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}


def call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions tool call."""
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


class Scripted(FakeOpenAI):
    """The project's fake server answering chat request number n with the assistant message `replies[n]`."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = replies
        self.n = 0
        super().__init__()

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        await request.json()
        n, self.n = self.n, self.n + 1
        msg = self.replies[n]
        if "status" in msg:  # a failed request: the server's error, as a provider sends it
            return web.json_response({"error": {"message": "boom", "type": "server_error"}}, status=msg["status"])
        usage = {"prompt_tokens": 100 + n, "completion_tokens": 10 + n, "total_tokens": 110 + 2 * n}
        finish = "tool_calls" if msg.get("tool_calls") else "stop"
        return web.json_response({"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1767225600, "model": MODEL,
                                  "choices": [{"index": 0, "message": msg, "finish_reason": finish, "logprobs": None}], "usage": usage})


def get_weather(city: str) -> str:
    """Weather in a city."""
    return WEATHER[city]


def cancel_order(order_id: str) -> str:
    """Cancel an order."""
    raise ValueError(f"order {order_id} not found")


def _loop(client: Any, turns: list[str], tools: dict[str, Any], retry: bool = False) -> list[str]:
    """The plain tool loop: per user turn, ask until a reply has no calls; returns the answers. `retry`: a request
    the server failed is sent again once, by the application (the client's own retries are off)."""
    schemas = [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}} for n in tools]
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."}]
    answers = []
    for text in turns:
        messages.append({"role": "user", "content": text})
        while True:
            try:
                msg = client.chat.completions.create(model=MODEL, messages=messages, tools=schemas).choices[0].message
            except Exception:
                if not retry:
                    raise
                msg = client.chat.completions.create(model=MODEL, messages=messages, tools=schemas).choices[0].message
            messages.append(msg.model_dump(exclude_none=True))
            if not msg.tool_calls:
                answers.append(msg.content)
                break
            for tc in msg.tool_calls:
                result = tools[tc.function.name](**json.loads(tc.function.arguments))
                messages.append({"role": "tool", "tool_call_id": tc.id, "content": result})
    return answers


SESSION = [{"role": "assistant", "content": "Let me check.", "tool_calls": [call("call_k", "get_weather", {"city": "Paris"})]},
           {"role": "assistant", "content": "Sunny in Paris."},
           {"role": "assistant", "content": "Bonjour!"},
           {"role": "assistant", "content": None, "tool_calls": [call("call_l", "get_weather", {"city": "Tokyo"})]},
           {"role": "assistant", "content": "Rainy in Tokyo."}]
SESSION_TURNS = ["Weather in Paris?", "Say hello in French.", "And Tokyo?"]


def oi_session(out: Path) -> Any:
    from openai import OpenAI
    from openinference.instrumentation import using_session
    from openinference.instrumentation.openai import OpenAIInstrumentor

    with Scripted(SESSION) as fake:
        provider = otel_provider(fake, "session-loop")
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        with using_session("sess-42"):
            answers = _loop(client, SESSION_TURNS, {"get_weather": get_weather})
        write_otlp(provider, fake, out / "session.jsonl")
        # The same loop in another session, its request after the tool round failing once and sent again by the app.
        fake.replies, fake.n = [SESSION[0], {"status": 500}, SESSION[1]], 0
        with using_session("sess-retry"):
            answers += _loop(client, SESSION_TURNS[:1], {"get_weather": get_weather}, retry=True)
        write_otlp(provider, fake, out / "session-retry.jsonl")
    return answers


AGENTS = {
    "text_fatal": [{"role": "assistant", "content": "Sure, checking Paris and cancelling #W7 now.",
                    "tool_calls": [call("call_c1", "get_weather", {"city": "Paris"}), call("call_c2", "cancel_order", {"order_id": "#W7"})]}],
    "max_turns": [{"role": "assistant", "content": None, "tool_calls": [call("call_x1", "get_weather", {"city": "Paris"})]},
                  {"role": "assistant", "content": None, "tool_calls": [call("call_x2", "get_weather", {"city": "Tokyo"})]}],
}


class _Export:
    """A trace processor keeping the Agents SDK's own export (`Trace.export()` and its spans), one record a trace."""

    def __init__(self) -> None:
        self.spans: list[dict[str, Any]] = []
        self.done: list[dict[str, Any]] = []

    def on_trace_start(self, trace: Any) -> None:
        pass

    def on_trace_end(self, trace: Any) -> None:
        mine = [s for s in self.spans if s["trace_id"] == trace.trace_id]
        self.done.append({"trace": trace.export(), "spans": mine})

    def on_span_start(self, span: Any) -> None:
        pass

    def on_span_end(self, span: Any) -> None:
        if (e := span.export()) is not None:
            self.spans.append(e)

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


def agents(out: Path) -> Any:
    import asyncio

    from agents import Agent, Runner, add_trace_processor, function_tool, set_default_openai_api, set_default_openai_client, set_trace_processors
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    outcome = {}
    for name, replies in AGENTS.items():
        with Scripted(replies) as fake:
            set_default_openai_client(AsyncOpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0), use_for_tracing=False)
            set_default_openai_api("chat_completions")
            set_trace_processors([])
            provider = otel_provider(fake, "agents")
            OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
            export = _Export()
            add_trace_processor(export)  # after instrument(), which replaces the processor list
            tools = [function_tool(get_weather, strict_mode=False), function_tool(cancel_order, strict_mode=False, failure_error_function=None)]
            agent = Agent(name="Assistant", instructions="Help.", tools=tools, model=MODEL)
            try:
                outcome[name] = asyncio.run(Runner.run(agent, "Weather in Paris, then cancel order #W7.", max_turns=2)).final_output
            except Exception as exc:  # the run's own failure is the scenario
                outcome[name] = f"{type(exc).__name__}: {exc}"
            write_otlp(provider, fake, out / f"oi-{name}.jsonl")
            write_jsonl(out / f"export-{name}.jsonl", export.done)
            OpenAIAgentsInstrumentor().uninstrument()
    return outcome


def langfuse(out: Path) -> Any:
    from langfuse import Langfuse, observe
    from langfuse.openai import OpenAI

    replies = [{"role": "assistant", "content": "Let me check both cities.",
                "tool_calls": [call("call_a", "get_weather", {"city": "Paris"}), call("call_b", "get_weather", {"city": "Tokyo"})]}]
    with Scripted(replies) as fake:
        lf = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="test")
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)

        @observe(name="get_weather", as_type="tool")
        def weather(city: str) -> str:
            if city == "Tokyo":
                raise KeyboardInterrupt("cancelled")  # a BaseException: the SDK ends the span without output or error
            return WEATHER[city]

        @observe(name="agent", as_type="agent")
        def agent(question: str) -> Any:
            return _loop(client, [question], {"get_weather": weather})

        try:
            outcome = agent("Compare the weather in Paris and Tokyo.")
        except KeyboardInterrupt as exc:
            outcome = f"KeyboardInterrupt: {exc}"
        lf.flush()
        write_jsonl(out / "langfuse.jsonl", fake.take_otlp())
        lf.shutdown()
    return outcome


SCENARIOS = {"oi_session": oi_session, "agents": agents, "langfuse": langfuse}

if __name__ == "__main__":
    target = Path(sys.argv[2])
    target.mkdir(parents=True, exist_ok=True)
    print(json.dumps(SCENARIOS[sys.argv[1]](target), default=str))
