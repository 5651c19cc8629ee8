"""Record the OpenInference / Traceloop traces behind `tests/test_extract_oi_faults.py`, with the installed libraries.

    python tests/frameworks/record_oi_faults.py SCENARIO OUT.jsonl

writes the OTLP/JSON export of one scenario (`SCENARIOS`), each run by the framework's real
instrumentation against a scripted loopback OpenAI server (`ScriptedOpenAI`: a fixed reply per request,
chat completions and the Responses API alike; no network). One scenario a process: instrumentors
patch libraries process-wide. Prints the framework's own answer (JSON) on stdout.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

from aiohttp import web

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import otel_provider, write_otlp  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402

MODEL = "gpt-4o-mini"


def call(cid: str, name: str, args: Any) -> dict[str, Any]:
    """A chat-completions tool call; `args` a mapping, or raw text sent as it is (not JSON, say)."""
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}


class ScriptedOpenAI(FakeOpenAI):
    """The project's fake server answering request number n with `replies[n]`, on `/v1/chat/completions` and `/v1/responses`.

    A chat reply is an assistant message; a Responses reply is the list of its `output` items, or
    `{"status", "incomplete_details", "output"}` for a response that did not complete.
    """

    def __init__(self, replies: list[Any]) -> None:
        self.replies = replies
        self.n = 0
        super().__init__()

    def _routes(self, app: web.Application) -> None:
        super()._routes(app)
        app.router.add_post("/v1/responses", self._responses)

    def _next(self) -> tuple[int, Any]:
        n, self.n = self.n, self.n + 1
        return n, self.replies[n]

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        await request.json()
        n, msg = self._next()
        usage = {"prompt_tokens": 100 + n, "completion_tokens": 10 + n, "total_tokens": 110 + 2 * n}
        finish = "tool_calls" if msg.get("tool_calls") else "stop"
        return web.json_response({"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1767225600, "model": MODEL,
                                  "choices": [{"index": 0, "message": msg, "finish_reason": finish, "logprobs": None}], "usage": usage})

    async def _responses(self, request: web.Request) -> web.Response:
        body = await request.json()
        n, output = self._next()
        ended = output if isinstance(output, dict) else {"status": "completed", "incomplete_details": None, "output": output}
        output = ended["output"]
        usage = {"input_tokens": 100 + n, "output_tokens": 10 + n, "total_tokens": 110 + 2 * n,
                 "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 5}}
        return web.json_response({"id": f"resp_{n}", "object": "response", "created_at": 1767225600, "status": ended["status"], "model": body.get("model"),
                                  "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "usage": usage, "error": None,
                                  "incomplete_details": ended["incomplete_details"], "instructions": body.get("instructions"), "metadata": {}, "temperature": 1.0,
                                  "top_p": 1.0, "text": {"format": {"type": "text"}}})


# --- the Responses API with reasoning: a summary before the calls, another before the answer ---------------
REASONED = [
    [{"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Need both cities; call the tool twice."}]},
     {"type": "function_call", "id": "fc_1", "call_id": "call_r1", "name": "get_weather", "arguments": '{"city": "Paris"}', "status": "completed"},
     {"type": "function_call", "id": "fc_2", "call_id": "call_r2", "name": "get_weather", "arguments": '{"city": "Tokyo"}', "status": "completed"}],
    [{"type": "reasoning", "id": "rs_2", "summary": [{"type": "summary_text", "text": "Both results in; summarise."}]},
     {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
      "content": [{"type": "output_text", "text": "Paris is sunny; Tokyo is rainy.", "annotations": []}]}],
]
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}


def get_weather(city: str) -> str:
    """Weather in a city."""
    return WEATHER[city]


def cancel_order(order_id: str) -> str:
    """Cancel an order."""
    raise ValueError(f"order {order_id} not found")


def responses_loop(fake: ScriptedOpenAI, provider: Any, traceloop: bool = False) -> Any:
    """A plain `client.responses.create` loop under openinference-instrumentation-openai (or, `traceloop`,
    opentelemetry-instrumentation-openai)."""
    from openai import OpenAI

    if traceloop:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    else:
        from openinference.instrumentation.openai import OpenAIInstrumentor
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    items: list[Any] = [{"role": "user", "content": "Weather in Paris and Tokyo?"}]
    first = client.responses.create(model="o4-mini", input=items, tools=tools)
    items += [o.model_dump(exclude_none=True) for o in first.output]
    items += [{"type": "function_call_output", "call_id": o.call_id, "output": WEATHER[json.loads(o.arguments)["city"]]}
              for o in first.output if o.type == "function_call"]
    return client.responses.create(model="o4-mini", input=items, tools=tools).output_text


def agents_responses(fake: ScriptedOpenAI, provider: Any) -> Any:
    """The OpenAI Agents SDK with its default Responses model under openinference-instrumentation-openai-agents."""
    import asyncio

    from agents import Agent, Runner, function_tool, set_default_openai_client, set_trace_processors
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    set_default_openai_client(AsyncOpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0), use_for_tracing=False)
    set_trace_processors([])
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)
    agent = Agent(name="Assistant", instructions="Help.", tools=[function_tool(get_weather, strict_mode=False)], model="o4-mini")
    return asyncio.run(Runner.run(agent, "Weather in Paris and Tokyo?")).final_output


def _langgraph(fake: ScriptedOpenAI, provider: Any, instrumentor: Any, text: str, handle_errors: bool) -> Any:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import ToolNode, create_react_agent

    instrumentor.instrument(tracer_provider=provider)
    model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)
    agent = create_react_agent(model, ToolNode([tool(get_weather), tool(cancel_order)], handle_tool_errors=handle_errors), prompt="You are helpful.")
    try:
        return agent.invoke({"messages": [{"role": "user", "content": text}]})["messages"][-1].content
    except ValueError as exc:
        return f"{type(exc).__name__}: {exc}"


def _oi_langchain() -> Any:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    return LangChainInstrumentor()


def _tl_langchain() -> Any:
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    return LangchainInstrumentor()


# Chat completions whose messages carry `reasoning_content` (llama.cpp's, vLLM's, DeepSeek's reasoning parsers).
CHAT_REASONED = [{"role": "assistant", "content": None, "reasoning_content": "The user wants Paris weather; call the tool.",
                  "tool_calls": [call("call_9", "get_weather", {"city": "Paris"})]},
                 {"role": "assistant", "content": "Sunny, 21 C.", "reasoning_content": "Tool said sunny."}]


def chat_loop(fake: ScriptedOpenAI, provider: Any) -> Any:
    """A plain chat-completions tool loop under openinference-instrumentation-openai."""
    from openai import OpenAI
    from openinference.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().instrument(tracer_provider=provider)
    client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
    messages: list[Any] = [{"role": "user", "content": "Paris weather please"}]
    while True:
        msg = client.chat.completions.create(model=MODEL, messages=messages, tools=tools).choices[0].message
        messages.append(msg.model_dump(exclude_none=True))
        if not msg.tool_calls:
            return msg.content
        messages += [{"role": "tool", "tool_call_id": c.id, "content": WEATHER[json.loads(c.function.arguments)["city"]]} for c in msg.tool_calls]


BAD_ARGS = [{"role": "assistant", "content": None, "tool_calls": [call("call_8", "get_weather", '{"city": "Par')]}]
RAISES = [{"role": "assistant", "content": None, "tool_calls": [call("call_5", "cancel_order", {"order_id": "#W5"})]}]


def _smolagents(fake: ScriptedOpenAI, provider: Any, managed: bool) -> Any:
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    def get_weather(city: str) -> str:  # smolagents reads the docstring's Args: section
        """Weather in a city.

        Args:
            city: the city
        """
        return WEATHER[city]

    SmolagentsInstrumentor().instrument(tracer_provider=provider)
    model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake")
    if managed:
        sub = ToolCallingAgent(tools=[tool(get_weather)], model=model, name="weather_agent", description="Finds weather.", max_steps=3, verbosity_level=0)
        agent = ToolCallingAgent(tools=[], model=model, managed_agents=[sub], max_steps=3, verbosity_level=0)
        return agent.run("Ask the weather_agent for the Paris weather.")
    agent = ToolCallingAgent(tools=[tool(get_weather)], model=model, max_steps=2, verbosity_level=0)
    return agent.run("Keep checking the weather in Paris.")


MANAGED = [
    {"role": "assistant", "content": None, "tool_calls": [call("call_1", "weather_agent", {"task": "Find the weather in Paris", "additional_args": None})]},
    {"role": "assistant", "content": None, "tool_calls": [call("call_2", "get_weather", {"city": "Paris"})]},
    {"role": "assistant", "content": None, "tool_calls": [call("call_3", "final_answer", {"answer": "Paris: sunny, 21 C"})]},
    {"role": "assistant", "content": None, "tool_calls": [call("call_4", "final_answer", {"answer": "The weather agent reports Paris is sunny, 21 C."})]},
]
MAX_STEPS = [
    {"role": "assistant", "content": None, "tool_calls": [call("call_5", "get_weather", {"city": "Paris"})]},
    {"role": "assistant", "content": None, "tool_calls": [call("call_6", "get_weather", {"city": "Paris"})]},
    {"role": "assistant", "content": "Final: Paris is sunny."},  # the request smolagents makes when the steps run out
]

# scenario -> (replies, run(fake, provider) -> the framework's answer)
SCENARIOS: dict[str, tuple[list[Any], Any]] = {
    "oi-responses-loop": (REASONED, responses_loop),
    "tl-responses-loop": (REASONED, lambda f, p: responses_loop(f, p, traceloop=True)),
    "oi-chat-reasoning": (CHAT_REASONED, chat_loop),
    "oi-agents-responses": (REASONED, agents_responses),
    "oi-langgraph-raises": (RAISES, lambda f, p: _langgraph(f, p, _oi_langchain(), "Cancel order #W5", False)),
    "oi-langgraph-bad-args": (BAD_ARGS, lambda f, p: _langgraph(f, p, _oi_langchain(), "Weather in Paris?", True)),
    "tl-langgraph-bad-args": (BAD_ARGS, lambda f, p: _langgraph(f, p, _tl_langchain(), "Weather in Paris?", True)),
    "oi-smolagents-managed": (MANAGED, lambda f, p: _smolagents(f, p, True)),
    "oi-smolagents-max-steps": (MAX_STEPS, lambda f, p: _smolagents(f, p, False)),
}


def main(scenario: str, out: Path) -> None:
    """Record `scenario` into `out`; print the framework's answer as JSON."""
    warnings.simplefilter("ignore")
    replies, run = SCENARIOS[scenario]
    with ScriptedOpenAI(replies) as fake:
        provider = otel_provider(fake, "oi-faults")
        answer = run(fake, provider)
        write_otlp(provider, fake, out)
        provider.shutdown()
    print(json.dumps({"answer": answer}, default=str))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
