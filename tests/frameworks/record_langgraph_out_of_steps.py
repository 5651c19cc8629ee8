"""Record LangGraph runs that ran out of steps (`recursion_limit`), with their truth.

    python tests/frameworks/record_langgraph_out_of_steps.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/langgraph-out-of-steps)

User "Weather in Paris, Tokyo, Oslo and Rome?"; the model asks `get_weather` for Paris (`call_1`), then Tokyo (`call_2`),
then Oslo and Rome in one reply (`call_3`, `call_4`), then would answer. Against the project's scripted loopback server
(`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network):

- `oi-react`, `tl-react`: `create_react_agent(model, [get_weather])` invoked with `{"recursion_limit": 6}`: after two tool
  rounds too few steps are left, so the agent node drops the third reply and returns "Sorry, need more steps to process
  this request." (the last message of the state `invoke` returns; nothing is raised); Oslo and Rome never run;
- `oi-graph`, `tl-graph`: a graph of its own (`agent` node calling the model with the tools bound, `ToolNode`,
  `tools_condition`) invoked with `{"recursion_limit": 5}`: LangGraph raises `GraphRecursionError` after the third reply,
  before its calls run.

`oi-` is OpenInference's `LangChainInstrumentor`, `tl-` OpenLLMetry's `LangchainInstrumentor`. Each writes
`<scenario>.jsonl` (OTLP/JSON, one export a line) and `<scenario>.truth.json`: every call the model asked for (the replies
the server gave), every run of the tool with its result (the tool's own log), the state's messages (none when the graph
raised), its last message's content (`answer`), what `invoke` raised and how many requests the server answered. Each
scenario runs in a process of its own (instrumentors patch LangChain process-wide).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, calls_reply, otel_provider, record_each_in_subprocess, text_reply, write_otlp, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

OUT = HERE.parent / "data" / "langgraph-out-of-steps"
QUESTION = "Weather in Paris, Tokyo, Oslo and Rome?"
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C", "Oslo": "snow, -2 C", "Rome": "sunny, 25 C"}
REPLIES = [calls_reply(call("call_1", "get_weather", {"city": "Paris"})), calls_reply(call("call_2", "get_weather", {"city": "Tokyo"})),
           calls_reply(call("call_3", "get_weather", {"city": "Oslo"}), call("call_4", "get_weather", {"city": "Rome"})),
           text_reply("Paris sunny, Tokyo rainy, Oslo snowy, Rome sunny.")]
LIMITS = {"react": 6, "graph": 5}


def _instrument(kind: str, provider: Any) -> None:
    if kind == "oi":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=provider)
    else:
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        LangchainInstrumentor().instrument(tracer_provider=provider)


def _graph(shape: str, model: Any, ran: list[dict[str, Any]]) -> Any:
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, create_react_agent, tools_condition

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        ran.append({"name": "get_weather", "arguments": {"city": city}, "result": WEATHER[city]})
        return WEATHER[city]

    if shape == "react":
        return create_react_agent(model, [get_weather])
    bound = model.bind_tools([get_weather])
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [bound.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode([get_weather]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile()


def run_graph(fake: ScriptedOpenAI, shape: str, ran: list[dict[str, Any]], config: dict[str, Any]) -> tuple[Any, str | None]:
    """Invoke the graph of `shape` (`ChatOpenAI` on `fake`) on the question with `config` and its `recursion_limit`; (the
    state `invoke` returned or None, what it raised or None)."""
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)
    try:
        return _graph(shape, model, ran).invoke({"messages": [{"role": "user", "content": QUESTION}]}, {**config, "recursion_limit": LIMITS[shape]}), None
    except Exception as exc:  # noqa: BLE001 (what the application saw is the truth)
        return None, f"{type(exc).__name__}: {exc}"


def write_run_truth(out: Path, name: str, state: Any, raised: str | None, ran: list[dict[str, Any]], requests: int) -> Any:
    """Write `<name>.truth.json` (module doc) of a run that got the first `requests` replies; returns its answer, or what it raised."""
    asked = [{"id": c["id"], "name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
             for r in REPLIES[:requests] for c in r.get("tool_calls") or []]
    messages = None if state is None else [{"type": m.type, "content": m.content, "tool_calls": [c["id"] for c in getattr(m, "tool_calls", [])],
                                            "tool_call_id": getattr(m, "tool_call_id", None)} for m in state["messages"]]
    write_truth(out, name, {"question": QUESTION, "asked": asked, "tool_runs": ran, "messages": messages,
                            "answer": messages[-1]["content"] if messages else None, "raised": raised, "requests": requests})
    return messages[-1]["content"] if messages else raised


def record(out: Path, name: str) -> Any:
    """Run scenario `name` (`<oi|tl>-<react|graph>`, see the module doc); write its recording and truth."""
    kind, shape = name.split("-", 1)
    ran: list[dict[str, Any]] = []
    with ScriptedOpenAI(REPLIES) as fake:
        provider = otel_provider(fake, "langgraph")
        _instrument(kind, provider)
        state, raised = run_graph(fake, shape, ran, {})
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
        requests = fake.n
    return write_run_truth(out, name, state, raised, ran, requests)


SCENARIOS = {f"{k}-{s}": (lambda out, n=f"{k}-{s}": record(out, n)) for s in LIMITS for k in ("oi", "tl")}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], SCENARIOS))
