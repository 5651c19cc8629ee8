"""Record the concurrent agent runs behind `tests/test_otel_concurrent_runs.py`, with the installed libraries.

    python tests/frameworks/record_concurrent_runs.py OUTDIR [SCENARIO ...]

writes per scenario its recordings (OTLP/JSON, one export request a line; `export-*.jsonl`: the OpenAI Agents
SDK's own export, format `openai-agents`) and `<scenario>.truth.json` (what the application itself sent and got:
per run its question, calls with results, answer and token usage, in the order the runs were started). Each
scenario runs in its own subprocess (instrumentors patch libraries process-wide) against the scripted loopback
OpenAI server of `record_otel_loop_faults` (`Scripted`; no network), which answers by the run's question: a
`get_weather` call for its city, then the city's weather; each reply waits a little, so the runs overlap.
Scenarios (`SCENARIOS`):

- `agents-gather`: OpenAI Agents SDK, `with trace("eval-batch"): asyncio.gather(Runner.run(agent, "Weather in
  Paris?"), Runner.run(agent, "Weather in Tokyo?"))`, under OpenInference's `OpenAIAgentsInstrumentor` and the
  SDK's own export (`oi-agents-gather.jsonl`, `export-agents-gather.jsonl`).
- `agents-gather-same`: the same with one question asked twice (two trials of one case at once).
- `agents-sequence`: the same two questions run one after the other in one trace (`with trace("eval-batch"):` a loop
  of `await Runner.run(agent, q)`), each run's input only its own question.
- `oi-langgraph-batch`, `tl-langgraph-batch`: LangGraph `create_react_agent(...).batch([Paris, Tokyo])` inside a
  plain OTel span `eval-batch`, under openinference-instrumentation-langchain / opentelemetry-instrumentation-langchain.
- `oi-langgraph-fanout`: one LangGraph run inside `eval-batch` whose `report` node is sent once per city (`Send`,
  the nodes run at once), then a `summarise` node: one run, never split.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import operator
import sys
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from aiohttp import web

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, agents_recording, otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted, call, chat  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
CITIES = {"Paris": 0, "Tokyo": 1}
_ASKED = itertools.count(1)


def _city(text: str) -> str:
    return next(c for c in CITIES if c in text)


def _weather_reply(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, int]]:
    """A call for the asked city, then the city's weather; usage tells the city and the step apart."""
    messages = body["messages"]
    city = _city(next(m["content"] for m in reversed(messages) if m["role"] == "user"))
    step = sum(1 for m in messages if m["role"] == "assistant")
    usage = {"prompt_tokens": 100 + 10 * step + CITIES[city], "completion_tokens": 20 + step + CITIES[city]}
    usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    if messages[-1]["role"] == "tool":
        return chat(f"{city}: {messages[-1]['content']}"), usage
    if messages[-1]["role"] == "user" and "report" in messages[-1]["content"]:
        return chat(f"{city}: {WEATHER[city]}"), usage
    return chat(None, call(f"call_{city[:3]}_{next(_ASKED)}", "get_weather", {"city": city})), usage  # ids unique across runs


def _summary_reply(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, int]]:
    text = body["messages"][-1]["content"]
    if text.startswith("Summarise"):
        return chat("Both summarised."), {"prompt_tokens": 150, "completion_tokens": 5, "total_tokens": 155}
    return _weather_reply(body, headers)


class State(TypedDict):
    """The fan-out graph's state (at module level: LangGraph reads its annotations)."""

    cities: list[str]
    notes: Annotated[list[str], operator.add]
    summary: str


class Overlapping(Scripted):
    """`Scripted`, each chat reply held back a little, so that runs started at once overlap in time."""

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(0.03)
        return await super()._chat(request)


# --- the OpenAI Agents SDK: asyncio.gather of Runner.run under one trace() ----------------------------------------
def _agents_truth(question: str, result: Any) -> dict[str, Any]:
    """What `Runner.run` gave the application: its calls with results, answer and usage."""
    calls: list[dict[str, Any]] = []
    for item in result.new_items:
        raw = getattr(item, "raw_item", None)
        if item.type == "tool_call_item":
            calls.append({"id": raw.call_id, "name": raw.name, "arguments": json.loads(raw.arguments)})
        elif item.type == "tool_call_output_item":
            next(c for c in calls if c["id"] == raw["call_id"])["result"] = item.output
    usage = result.context_wrapper.usage
    return {"user_turns": [question], "output": result.final_output, "calls": calls,
            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "requests": usage.requests}}


def agents_gather(out: Path, name: str, questions: list[str], one_by_one: bool = False) -> Any:
    from agents import Agent, Runner, function_tool, trace

    @function_tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return WEATHER[city]

    with Overlapping(_weather_reply) as fake, agents_recording(fake, out, name):
        agent = Agent(name="Assistant", instructions="Help.", tools=[get_weather], model=MODEL)

        async def batch() -> list[Any]:
            with trace("eval-batch"):
                if one_by_one:  # a harness's loop over its dataset inside one trace: no run overlaps another
                    return [await Runner.run(agent, q) for q in questions]
                return list(await asyncio.gather(*(Runner.run(agent, q) for q in questions)))

        results = asyncio.run(batch())
    runs = [_agents_truth(q, r) for q, r in zip(questions, results)]
    write_truth(out, name, {"runs": runs})
    return [r["output"] for r in runs]


# --- LangGraph: .batch() of a ReAct agent, and one run fanning out, inside a plain span ---------------------------
def _instrument_langchain(kind: str, provider: Any) -> None:
    if kind == "oi":
        from openinference.instrumentation.langchain import LangChainInstrumentor as Instrumentor
    else:
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor as Instrumentor
    Instrumentor().instrument(tracer_provider=provider)


def _graph_truth(question: str, state: dict[str, Any]) -> dict[str, Any]:
    """What one `.batch` input's run gave the application: its calls with results, answer and usage."""
    calls, results, tokens_in, tokens_out, requests = [], {}, 0, 0, 0
    for m in state["messages"]:
        if m.type == "ai":
            calls += [{"id": c["id"], "name": c["name"], "arguments": c["args"]} for c in m.tool_calls]
            tokens_in, tokens_out, requests = tokens_in + m.usage_metadata["input_tokens"], tokens_out + m.usage_metadata["output_tokens"], requests + 1
        elif m.type == "tool":
            results[m.tool_call_id] = m.content
    return {"user_turns": [question], "output": state["messages"][-1].content, "calls": [{**c, "result": results[c["id"]]} for c in calls],
            "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out, "requests": requests}}


def langgraph_batch(out: Path, name: str, kind: str) -> Any:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        time.sleep(0.02)
        return WEATHER[city]

    questions = ["Weather in Paris?", "Weather in Tokyo?"]
    with Overlapping(_weather_reply) as fake:
        provider = otel_provider(fake, "langgraph-batch")
        _instrument_langchain(kind, provider)
        agent = create_react_agent(ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0), [get_weather])
        with provider.get_tracer("eval").start_as_current_span("eval-batch"):
            states = agent.batch([{"messages": [{"role": "user", "content": q}]} for q in questions])
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    runs = [_graph_truth(q, s) for q, s in zip(questions, states)]
    write_truth(out, name, {"runs": runs})
    return [r["output"] for r in runs]


def langgraph_fanout(out: Path, name: str, kind: str) -> Any:
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    with Overlapping(_summary_reply) as fake:
        provider = otel_provider(fake, "langgraph-fanout")
        _instrument_langchain(kind, provider)
        model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        got: list[Any] = []

        def report(state: dict[str, Any]) -> dict[str, Any]:
            got.append(model.invoke(f"Weather report for {state['city']}"))
            return {"notes": [got[-1].content]}

        def summarise(state: State) -> dict[str, Any]:
            got.append(model.invoke("Summarise: " + " | ".join(state["notes"])))
            return {"summary": got[-1].content}

        graph = StateGraph(State)
        graph.add_node("report", report)
        graph.add_node("summarise", summarise)
        graph.add_conditional_edges(START, lambda s: [Send("report", {"city": c}) for c in s["cities"]], ["report"])
        graph.add_edge("report", "summarise")
        graph.add_edge("summarise", END)
        with provider.get_tracer("eval").start_as_current_span("eval-batch"):
            state = graph.compile().invoke({"cities": ["Paris", "Tokyo"], "notes": []})
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    usage = {"input_tokens": sum(m.usage_metadata["input_tokens"] for m in got), "output_tokens": sum(m.usage_metadata["output_tokens"] for m in got),
             "requests": len(got)}
    write_truth(out, name, {"runs": [{"output": state["summary"], "notes": state["notes"], "calls": [], "usage": usage}]})
    return state["summary"]


SCENARIOS = {
    "agents-gather": lambda out: agents_gather(out, "agents-gather", ["Weather in Paris?", "Weather in Tokyo?"]),
    "agents-gather-same": lambda out: agents_gather(out, "agents-gather-same", ["Weather in Paris?", "Weather in Paris?"]),
    "agents-sequence": lambda out: agents_gather(out, "agents-sequence", ["Weather in Paris?", "Weather in Tokyo?"], one_by_one=True),
    "oi-langgraph-batch": lambda out: langgraph_batch(out, "oi-langgraph-batch", "oi"),
    "tl-langgraph-batch": lambda out: langgraph_batch(out, "tl-langgraph-batch", "tl"),
    "oi-langgraph-fanout": lambda out: langgraph_fanout(out, "oi-langgraph-fanout", "oi"),
}


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all), each in a subprocess; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, SCENARIOS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
