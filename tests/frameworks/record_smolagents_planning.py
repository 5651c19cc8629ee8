"""Record the traces behind `tests/test_extract_smolagents_planning.py`, with the installed libraries.

    python tests/frameworks/record_smolagents_planning.py OUTDIR [SCENARIO ...]

Every scenario runs in a subprocess of its own (an instrumentor patches a library once per process)
against the scripted loopback OpenAI server of `record_oi_faults` (`ScriptedOpenAI`: request n gets
`replies[n]` and usage `100 + n` / `10 + n` tokens; no network). Each writes `<scenario>.truth.json`
(what the application sent and got: the user's request, the answer it got, each call's result as the
tool returned it, the plans the model wrote, the tokens and requests the server served, the request
bodies) and its recordings:

- `planning-tool`: a smolagents `ToolCallingAgent` with `planning_interval=1` plans, calls `get_weather`,
  plans again, answers with `final_answer`; `<scenario>.oi.jsonl` is its OpenInference spans (OTLP/JSON),
  `<scenario>.memory.jsonl` the same run's `agent.memory.get_full_steps()`.
- `planning-code`: the same with a `CodeAgent` (its code calls `get_weather`, then `final_answer`).
- `empty-smolagents`: a `ToolCallingAgent` calls `get_weather` and `log_event` in one message; `log_event`
  returns `""`. smolagents answers both with one observation message, so only the TOOL span holds each
  call's own result. OpenInference and memory.
- `hidden-smolagents`: that run under OpenInference with `TraceConfig(hide_inputs=True, hide_outputs=True)`:
  the tool's output is not recorded (`__REDACTED__`), nor the messages that carried it.
- `empty-agents`: the OpenAI Agents SDK (chat completions) with a function tool returning `""`, under
  openinference-instrumentation-openai-agents (`.oi.jsonl`) and the SDK's own trace export (`.export.jsonl`).
- `empty-openai-oi` / `empty-openai-tl`: a plain OpenAI chat-completions loop whose `log_event` returns `""`,
  under openinference-instrumentation-openai / opentelemetry-instrumentation-openai (`<scenario>.jsonl`).

A scenario name ending in `-unset` (`empty-agents-unset`, …) records the same run with the OTLP exporter
writing an empty string attribute as an empty `AnyValue` (no `stringValue`), as the OpenTelemetry Java SDK
does (open-telemetry/opentelemetry-java#8184; the proto calls an unset AnyValue "empty"): the OTLP/JSON then
holds `"value": {}` where the Python SDK writes `{"stringValue": ""}`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, agents_recording, otel_provider, record_each_in_subprocess, write_jsonl, write_otlp, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

USER = "What is the weather in Paris?"
WEATHER = "sunny, 21 C"
ANSWER = "Paris is sunny, 21 C."
PLANS = ["1. Call get_weather for Paris.\n2. Give the answer.", "1. get_weather said sunny, 21 C.\n2. Answer with it."]
CODE = ["Thought: I need the weather.\n<code>\nweather = get_weather(city=\"Paris\")\nprint(weather)\n</code>",
        f"Thought: I have it.\n<code>\nfinal_answer(\"{ANSWER}\")\n</code>"]
LOG_USER = "Log that I asked, then say done."
LOGGED = "Done: logged."


class _Recording(ScriptedOpenAI):
    """`ScriptedOpenAI` keeping every chat request body it answered (`chats`), for the truth file."""

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        self.chats.append(await request.json())  # (aiohttp keeps the body: the parent reads it again)
        return await super()._chat(request)

    def served(self) -> dict[str, int]:
        """The tokens and requests the server answered, as `ScriptedOpenAI` counts them."""
        return {"input_tokens": sum(100 + n for n in range(self.n)), "output_tokens": sum(10 + n for n in range(self.n)), "requests": self.n}


def _smolagents_tools() -> dict[str, Any]:
    from smolagents import tool

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city.

        Args:
            city: the city
        """
        return WEATHER

    @tool
    def log_event(event: str) -> str:
        """Log an event; returns nothing.

        Args:
            event: what happened
        """
        return ""

    return {"get_weather": get_weather, "log_event": log_event}


def _smolagents(out: Path, name: str, replies: list[Any], make: Callable[[Any, dict[str, Any]], Any], user: str,
                calls: list[dict[str, Any]], config: Any = None) -> Any:
    """Run one smolagents agent under OpenInference; write its spans, its memory and the truth."""
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import OpenAIServerModel

    with _Recording(replies) as fake:
        provider = otel_provider(fake, "smolagents-planning")
        SmolagentsInstrumentor().instrument(tracer_provider=provider, **({"config": config} if config is not None else {}))
        try:
            agent = make(OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake"), _smolagents_tools())
            answer = agent.run(user)
            write_otlp(provider, fake, out / f"{name}.oi.jsonl")
            write_jsonl(out / f"{name}.memory.jsonl", [agent.memory.get_full_steps()])
        finally:
            SmolagentsInstrumentor().uninstrument()
            provider.shutdown()
        plans = [r["content"] for r in replies if isinstance(r.get("content"), str) and r["content"] in PLANS]
        write_truth(out, name, {"input": user, "output": answer, "user_turns": [user], "calls": calls, "plans": plans,
                                "usage": fake.served(), "sent": fake.chats})
    return answer


def planning_tool(out: Path) -> Any:
    from smolagents import ToolCallingAgent

    replies = [{"role": "assistant", "content": PLANS[0]},
               {"role": "assistant", "content": None, "tool_calls": [call("call_1", "get_weather", {"city": "Paris"})]},
               {"role": "assistant", "content": PLANS[1]},
               {"role": "assistant", "content": None, "tool_calls": [call("call_2", "final_answer", {"answer": ANSWER})]}]
    return _smolagents(out, "planning-tool", replies,
                       lambda model, tools: ToolCallingAgent(tools=[tools["get_weather"]], model=model, planning_interval=1, max_steps=4, verbosity_level=0),
                       USER, [{"name": "get_weather", "arguments": {"city": "Paris"}, "result": WEATHER, "error": None}])


def planning_code(out: Path) -> Any:
    from smolagents import CodeAgent

    replies = [{"role": "assistant", "content": PLANS[0]}, {"role": "assistant", "content": CODE[0]},
               {"role": "assistant", "content": PLANS[1]}, {"role": "assistant", "content": CODE[1]}]
    code = 'weather = get_weather(city="Paris")\nprint(weather)'
    return _smolagents(out, "planning-code", replies,
                       lambda model, tools: CodeAgent(tools=[tools["get_weather"]], model=model, planning_interval=1, max_steps=4, verbosity_level=0),
                       USER, [{"name": "python_interpreter", "arguments": {"code": code}}])


_LOG_REPLIES = [{"role": "assistant", "content": None, "tool_calls": [call("call_a", "get_weather", {"city": "Paris"}),
                                                                      call("call_b", "log_event", {"event": "weather asked"})]},
                {"role": "assistant", "content": None, "tool_calls": [call("call_c", "final_answer", {"answer": LOGGED})]}]
_LOG_CALLS = [{"name": "get_weather", "arguments": {"city": "Paris"}, "result": WEATHER, "error": None},
              {"name": "log_event", "arguments": {"event": "weather asked"}, "result": "", "error": None}]


def _log_agent(model: Any, tools: dict[str, Any]) -> Any:
    from smolagents import ToolCallingAgent

    return ToolCallingAgent(tools=[tools["get_weather"], tools["log_event"]], model=model, max_steps=3, verbosity_level=0)


def empty_smolagents(out: Path, name: str = "empty-smolagents") -> Any:
    return _smolagents(out, name, _LOG_REPLIES, _log_agent, LOG_USER, _LOG_CALLS)


def hidden_smolagents(out: Path) -> Any:
    from openinference.instrumentation import TraceConfig

    return _smolagents(out, "hidden-smolagents", _LOG_REPLIES, _log_agent, LOG_USER, _LOG_CALLS, TraceConfig(hide_inputs=True, hide_outputs=True))


def log_event(event: str) -> str:
    """Log an event; returns nothing."""
    return ""


def empty_agents(out: Path, name: str = "empty-agents") -> Any:
    """The OpenAI Agents SDK on chat completions, its `log_event` tool returning `""`: OpenInference and the SDK's own export."""
    import asyncio

    from agents import Agent, Runner, function_tool

    replies = [{"role": "assistant", "content": None, "tool_calls": [call("call_1", "log_event", {"event": "weather asked"})]},
               {"role": "assistant", "content": LOGGED}]
    with _Recording(replies) as fake:
        with agents_recording(fake, out, name, files=("{}.oi.jsonl", "{}.export.jsonl")):
            agent = Agent(name="Assistant", instructions="Help.", tools=[function_tool(log_event)], model=MODEL)
            answer = asyncio.run(Runner.run(agent, LOG_USER)).final_output
        write_truth(out, name, {"input": LOG_USER, "output": answer, "user_turns": [LOG_USER], "calls": _LOG_CALLS[1:],
                                "usage": fake.served(), "sent": fake.chats})
    return answer


def _openai_loop(out: Path, name: str, instrumentor: Any) -> Any:
    """A chat-completions loop whose one tool, `log_event`, returns `""`; the model then answers in text."""
    from openai import OpenAI

    replies = [{"role": "assistant", "content": None, "tool_calls": [call("call_1", "log_event", {"event": "weather asked"})]},
               {"role": "assistant", "content": LOGGED}]
    tools: list[Any] = [{"type": "function", "function": {"name": "log_event", "description": "Log an event; returns nothing.",
                                               "parameters": {"type": "object", "properties": {"event": {"type": "string"}}, "required": ["event"]}}}]
    with _Recording(replies) as fake:
        provider = otel_provider(fake, "openai-loop")
        instrumentor.instrument(tracer_provider=provider)
        try:
            client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
            messages: list[Any] = [{"role": "user", "content": LOG_USER}]
            while True:
                msg = client.chat.completions.create(model=MODEL, messages=messages, tools=tools).choices[0].message
                messages.append(msg.model_dump(exclude_none=True))
                if not msg.tool_calls:
                    break
                messages += [{"role": "tool", "tool_call_id": c.id, "content": ""} for c in msg.tool_calls]  # log_event returned ""
            write_otlp(provider, fake, out / f"{name}.jsonl")
        finally:
            instrumentor.uninstrument()
            provider.shutdown()
        write_truth(out, name, {"input": LOG_USER, "output": msg.content, "user_turns": [LOG_USER], "calls": _LOG_CALLS[1:],
                                "usage": fake.served(), "sent": fake.chats})
    return msg.content


def empty_openai_oi(out: Path, name: str = "empty-openai-oi") -> Any:
    from openinference.instrumentation.openai import OpenAIInstrumentor

    return _openai_loop(out, name, OpenAIInstrumentor())


def empty_openai_tl(out: Path, name: str = "empty-openai-tl") -> Any:
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    return _openai_loop(out, name, OpenAIInstrumentor())


def _unset_empty_strings() -> None:
    """Make this process's OTLP exporter write `""` as an empty `AnyValue`, as the OpenTelemetry Java SDK does."""
    from opentelemetry.exporter.otlp.proto.common import _internal
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue

    encode = _internal._encode_value  # (looked up by name at each call, arrays' items too)
    _internal._encode_value = lambda value, *rest: AnyValue() if isinstance(value, str) and value == "" else encode(value, *rest)


def _named(record: Callable[[Path, str], Any], name: str, unset: bool = False) -> Callable[[Path], Any]:
    """`record` as a scenario writing `<name>.*`, its empty strings exported as empty `AnyValue`s when `unset`."""
    def run(out: Path) -> Any:
        if unset:
            _unset_empty_strings()
        return record(out, name)

    return run


# the runs of a tool returning "": each is recorded as the Python SDK exports it, and as `<name>-unset`
EMPTY: dict[str, Callable[[Path, str], Any]] = {
    "empty-smolagents": empty_smolagents,
    "empty-agents": empty_agents,
    "empty-openai-oi": empty_openai_oi,
    "empty-openai-tl": empty_openai_tl,
}
SCENARIOS: dict[str, Callable[[Path], Any]] = {
    "planning-tool": planning_tool,
    "planning-code": planning_code,
    "hidden-smolagents": hidden_smolagents,
    **{name: _named(record, name) for name, record in EMPTY.items()},
    **{f"{name}-unset": _named(record, f"{name}-unset", unset=True) for name, record in EMPTY.items()},
}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
