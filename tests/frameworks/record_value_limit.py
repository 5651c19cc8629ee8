"""Record the traces behind `tests/test_otel_value_limit.py`: agents recorded under an attribute length limit
(`OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`), which the OTel SDK applies by cutting every longer string attribute.

    python tests/frameworks/record_value_limit.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/value-limit)

writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON) and `OUTDIR/<scenario>.truth.json` (what the application sent and got:
`limit`, `user_turns`, `calls` as `[name, arguments, result]` in the order they ran, `answers`, one per turn). Each
scenario runs in a process of its own (the limit is read when the tracer provider is made) against the project's
scripted loopback OpenAI server (`record_otel_loop_faults.Scripted`; no network).

- `lg-oi-4096`: LangGraph `create_react_agent` with a `MemorySaver`, two user turns on one thread, under
  OpenInference's `LangChainInstrumentor`, limit 4096: the first turn asks `get_weather` for three cities in one reply,
  the second for one more; by the second turn the graph's state dump (the root `LangGraph` span's `output.value`) is
  past the limit.
- `lg-oi-400`: the same with shorter results under limit 400: each result fits, but the `get_weather` span's
  `output.value` (LangChain's `ToolMessage` around it, its `tool_call_id` last) is cut.
- `lg-oi-300`: the same as `lg-oi-4096` under limit 300: the results themselves are cut wherever they are recorded.
- `pai-v5-1000`, `pai-oi-1000`: one pydantic-ai run (`output_type` a model, so its answer is the output tool
  `final_result`'s call) under its own instrumentation / OpenInference's span processor over it, limit 1000: a round of
  two `get_weather` calls, a third alone, then the answer; the third request's `gen_ai.input.messages` and every
  request's `model_request_parameters` are cut.
- `pai-v5-1000-two`: the same run, then a second one on its `message_history` asking "And tomorrow in Oslo?": that
  question is in no attribute but the second run's cut `gen_ai.input.messages`.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import instrumented, otel_provider, pydantic_ai_recording, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted, call, chat  # noqa: E402

WEATHER = {"Paris": "sunny", "Tokyo": "rainy", "Lima": "foggy", "Oslo": "cold"}
LG_TURNS = ["Weather in Paris, Tokyo and Lima?", "And in Oslo?"]
PAI_TURNS = ["Weather in Paris and Tokyo, then Lima?", "And tomorrow in Oslo?"]


def _report(city: str, repeat: int = 6) -> dict[str, Any]:
    """A tool's result: long enough that a few of them pass the limit."""
    return {"city": city, "sky": WEATHER[city], "detail": f"{city}: {WEATHER[city]} all day, light wind from the west, " * repeat}


def _asked_order(call: list[Any]) -> int:
    return list(WEATHER).index(call[1]["city"])  # (every scenario asks for its cities in this order)


def _limited(limit: int) -> None:
    os.environ["OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"] = str(limit)  # (read by `SpanLimits` when the provider is made)


def _asked(body: dict[str, Any], turns: list[str]) -> tuple[int, int]:
    """(the turn the request is in, how many replies that turn already got)."""
    msgs = body["messages"]
    last = max(i for i, m in enumerate(msgs) if m["role"] == "user" and m.get("content") in turns)
    return turns.index(msgs[last]["content"]), sum(1 for m in msgs[last:] if m["role"] == "assistant")


def langgraph(out: Path, name: str, limit: int, repeat: int) -> dict[str, Any]:
    _limited(limit)
    truth: dict[str, Any] = {"limit": limit, "user_turns": LG_TURNS, "calls": [], "answers": []}

    def reply(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, int]]:
        turn, step = _asked(body, LG_TURNS)
        usage = {"prompt_tokens": 100 + len(body["messages"]), "completion_tokens": 10, "total_tokens": 110 + len(body["messages"])}
        cities = [["Paris", "Tokyo", "Lima"], ["Oslo"]][turn]
        if step == 0:
            return chat(None, *(call(f"c_{c.lower()}", "get_weather", {"city": c}) for c in cities)), usage
        return chat("; ".join(f"{c} is {WEATHER[c]}" for c in cities) + "."), usage

    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import MemorySaver
    from langgraph.prebuilt import create_react_agent
    from openinference.instrumentation.langchain import LangChainInstrumentor

    @tool
    def get_weather(city: str) -> dict:
        """Weather of a city."""
        result = _report(city, repeat)
        truth["calls"].append(["get_weather", {"city": city}, result])
        return result

    fake = Scripted(reply)
    provider = otel_provider(fake, "langgraph")
    LangChainInstrumentor().instrument(tracer_provider=provider)
    with fake:
        model = ChatOpenAI(model="gpt-4o-mini", base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        agent = create_react_agent(model, [get_weather], prompt="You are a weather helper.", checkpointer=MemorySaver())
        for question in LG_TURNS:
            state = agent.invoke({"messages": [("user", question)]}, {"configurable": {"thread_id": "thread-1"}})
            truth["answers"].append(state["messages"][-1].content)
        write_otlp(provider, fake, out / f"{name}.jsonl")
    truth["calls"].sort(key=_asked_order)  # (a reply's calls run side by side: in the order the model asked them)
    provider.shutdown()
    write_truth(out, name, truth)
    return truth


def pydantic_ai(out: Path, name: str, oi: bool, runs: int) -> dict[str, Any]:
    _limited(1000)
    truth: dict[str, Any] = {"limit": 1000, "user_turns": PAI_TURNS[:runs], "calls": [], "answers": []}

    def reply(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, int]]:
        turn, step = _asked(body, PAI_TURNS)
        usage = {"prompt_tokens": 100 + len(body["messages"]), "completion_tokens": 10, "total_tokens": 110 + len(body["messages"])}
        rounds = [[["Paris", "Tokyo"], ["Lima"]], [["Oslo"]]][turn]
        if step < len(rounds):
            return chat(None, *(call(f"c_{c.lower()}", "get_weather", {"city": c}) for c in rounds[step])), usage
        cities = [c for r in rounds for c in r]
        answer = {"summary": ", ".join(f"{c} {WEATHER[c]}" for c in cities), "cities": cities}
        return chat(None, call(f"c_out{turn}", "final_result", answer)), usage

    async def main(model: Any, provider: Any) -> None:
        from pydantic import BaseModel
        from pydantic_ai import Agent

        class Report(BaseModel):
            summary: str
            cities: list[str]

        agent = Agent(model, output_type=Report, instructions="You are a weather helper.", capabilities=instrumented(provider))

        @agent.tool_plain
        def get_weather(city: str) -> dict:
            """Weather of a city."""
            result = _report(city)
            truth["calls"].append(["get_weather", {"city": city}, result])
            return result

        history = None
        for question in PAI_TURNS[:runs]:
            done = await agent.run(question, message_history=history)
            truth["answers"].append(done.output.model_dump())
            history = done.all_messages()

    with pydantic_ai_recording(Scripted(reply), out / f"{name}.jsonl", oi=oi) as (model, provider):
        asyncio.run(main(model, provider))
    truth["calls"].sort(key=_asked_order)
    write_truth(out, name, truth)
    return truth


SCENARIOS = {
    "lg-oi-4096": lambda out: langgraph(out, "lg-oi-4096", 4096, 6),
    "lg-oi-400": lambda out: langgraph(out, "lg-oi-400", 400, 4),
    "lg-oi-300": lambda out: langgraph(out, "lg-oi-300", 300, 6),
    "pai-v5-1000": lambda out: pydantic_ai(out, "pai-v5-1000", oi=False, runs=1),
    "pai-oi-1000": lambda out: pydantic_ai(out, "pai-oi-1000", oi=True, runs=1),
    "pai-v5-1000-two": lambda out: pydantic_ai(out, "pai-v5-1000-two", oi=False, runs=2),
}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
