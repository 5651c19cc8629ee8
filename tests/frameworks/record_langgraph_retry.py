"""Record the LangGraph tool-retry traces behind `tests/test_langgraph_retry.py`, with the installed libraries.

    python tests/frameworks/record_langgraph_retry.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/langgraph-retry)

User "Weather in Tokyo, please."; the model asks for one call, `get_weather {"city": "Tokyo"}` (`call_r1`); the tool
raises `TimeoutError("weather service timed out")` the first time it runs and returns "rainy, 14 C" the next; the
model then answers "Tokyo is rainy, 14 C.". The `tools` node has `RetryPolicy(max_attempts=3)`, so LangGraph runs the
whole node again after the failure: the tool's span is written twice for the one call.

- `oi-retry`, `tl-retry`: a custom `tools` node calling `get_weather.invoke(args)` for each call
  (`RetryPolicy(retry_on=TimeoutError)`).
- `oi-retry-tools`, `tl-retry-tools`: `ToolNode([get_weather])` (`RetryPolicy(retry_on=Exception)`).
- `ml-retry-tools`: the `ToolNode` graph under `mlflow.langchain.autolog()`: `ml-retry-tools.mlflow.jsonl`
  (`Trace.to_json()` a line) and `ml-retry-tools.otlp.jsonl` (MLflow's OTLP dual export of the same spans).

Two runs that are two calls (no retry policy):

- `oi-two-asks`, `tl-two-asks`: "Weather in Tokyo twice, please."; one reply asks `get_weather {"city": "Tokyo"}`
  twice (`call_a`, `call_b`); a custom node runs them one after the other, the first raises, the error goes back
  to the model as the call's tool message (`status="error"`), the second returns.
- `oi-re-asked`, `tl-re-asked`: "Weather in Tokyo, try again if it fails."; the model asks once (`call_x1`), the tool
  raises and `ToolNode(handle_tool_errors=True)` sends the error back; the next request asks again (`call_x2`), which
  returns.

Parallel calls in a retried node: "Weather in Paris and Tokyo?"; one reply asks `get_weather` for Paris (`call_p`) and
Tokyo (`call_t`), then the model answers "Paris is sunny, 21 C; Tokyo is rainy, 14 C.". The `tools` node has
`RetryPolicy(max_attempts=4)`; a city's failing runs raise `TimeoutError("<city> timed out (attempt <n>)")`, `n`
counting that city's runs. LangGraph runs the whole node again, so a call that returned runs again too:

- `oi-parallel`, `tl-parallel`: Tokyo fails once; a custom node calling `get_weather.invoke(args)` for each call in
  turn (`RetryPolicy(retry_on=TimeoutError)`): Paris returns, Tokyo raises; then both return.
- `oi-parallel-tools`, `tl-parallel-tools`: the same with `ToolNode([get_weather])` (`RetryPolicy(retry_on=Exception)`),
  which runs both calls side by side.
- `oi-parallel-both`, `tl-parallel-both`: both cities fail once, the custom node: Paris raises (Tokyo does not run);
  Paris returns, Tokyo raises; both return.
- `oi-parallel-both-tools`, `tl-parallel-both-tools`: both fail once, `ToolNode`: both raise; both return.

`oi-` scenarios use OpenInference's `LangChainInstrumentor`, `tl-` OpenLLMetry's `LangchainInstrumentor`; each writes
`<scenario>.jsonl` (OTLP/JSON, one export a line) and `<scenario>.truth.json` (the calls as the graph's final messages
hold them, every run of the tool with its result or what it raised, and the requests answered). Each scenario runs
in its own process (instrumentors patch LangChain process-wide) against a scripted loopback server (no network).
"""

import sys
import tempfile
import warnings
from pathlib import Path
from typing import Annotated, Any, TypedDict

FRAMEWORKS = Path(__file__).resolve().parent
OUT = FRAMEWORKS.parent / "data" / "langgraph-retry"
if str(FRAMEWORKS) not in sys.path:
    sys.path.insert(0, str(FRAMEWORKS))

from common import MODEL, otel_provider, record_each_in_subprocess, write_jsonl, write_otlp, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted, call, chat  # noqa: E402

WEATHER = {"Tokyo": "rainy, 14 C", "Paris": "sunny, 21 C"}
ANSWER = "Tokyo is rainy, 14 C."
PARALLEL = "Weather in Paris and Tokyo?"
PARALLEL_ANSWER = "Paris is sunny, 21 C; Tokyo is rainy, 14 C."
RETRY = "Weather in Tokyo, please."
TWO_ASKS = "Weather in Tokyo twice, please."
RE_ASKED = "Weather in Tokyo, try again if it fails."
TOKYO = {"city": "Tokyo"}


class _Count:
    requests = 0


def _usage() -> dict[str, int]:
    n = _Count.requests
    _Count.requests += 1
    return {"prompt_tokens": 100 + n, "completion_tokens": 10 + n, "total_tokens": 110 + 2 * n}


def _script(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, int]]:
    """The model: one reply per conversation and number of tool messages it has seen."""
    msgs = body["messages"]
    user = next(m["content"] for m in reversed(msgs) if m["role"] == "user")
    answered = [m for m in msgs if m["role"] == "tool"]
    if user == RETRY:
        return (chat(None, call("call_r1", "get_weather", TOKYO)) if not answered else chat(ANSWER)), _usage()
    if user == TWO_ASKS:
        return (chat(None, call("call_a", "get_weather", TOKYO), call("call_b", "get_weather", TOKYO)) if not answered else chat(ANSWER)), _usage()
    if user == PARALLEL:
        return (chat(None, call("call_p", "get_weather", {"city": "Paris"}), call("call_t", "get_weather", TOKYO))
                if not answered else chat(PARALLEL_ANSWER)), _usage()
    if user == RE_ASKED:
        if not answered:
            return chat(None, call("call_x1", "get_weather", TOKYO)), _usage()
        if len(answered) == 1:
            return chat(None, call("call_x2", "get_weather", TOKYO)), _usage()
        return chat(ANSWER), _usage()
    raise LookupError(f"unknown conversation: {user!r}")


def _instrument(kind: str, provider: Any) -> None:
    if kind == "oi":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=provider)
    else:
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        LangchainInstrumentor().instrument(tracer_provider=provider)


class _Runs:
    """Every run of the tool: its arguments and result, or what it raised; the first run raises `TimeoutError`, or
    with `fails` (`{city: how many runs fail}`) a city's first runs raise `TimeoutError("<city> timed out (attempt <n>)")`."""

    def __init__(self, fails: dict[str, int] | None = None) -> None:
        self.runs: list[dict[str, Any]] = []
        self.fails = fails

    def weather(self, city: str) -> str:
        entry: dict[str, Any] = {"name": "get_weather", "arguments": {"city": city}}
        self.runs.append(entry)
        if self.fails is not None:
            n = sum(1 for r in self.runs if r["arguments"]["city"] == city)
            if n <= self.fails.get(city, 0):
                entry["raised"] = f"TimeoutError: {city} timed out (attempt {n})"
                raise TimeoutError(f"{city} timed out (attempt {n})")
        elif len(self.runs) == 1:
            entry["raised"] = "TimeoutError: weather service timed out"
            raise TimeoutError("weather service timed out")
        entry["result"] = WEATHER[city]
        return entry["result"]


def _calls(messages: list[Any]) -> list[dict[str, Any]]:
    """The calls the final state's messages hold, with the tool message that answered each."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.type == "ai":
            out += [{"id": c["id"], "name": c["name"], "arguments": c["args"]} for c in m.tool_calls]
        if m.type == "tool":
            for o in out:
                if o["id"] == m.tool_call_id:
                    o["result"], o["status"] = m.content, getattr(m, "status", None)
    return out


def _graph(fake: Any, shape: str, runs: _Runs) -> Any:
    """The compiled graph: `agent` (the model) and `tools` (`shape`: `node` a custom node with a retry policy, `toolnode`
    a `ToolNode` with one, `sequential` a custom node catching each call's error, `handled` `ToolNode(handle_tool_errors=True)`)."""
    from langchain_core.messages import AnyMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode
    from langgraph.types import RetryPolicy

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return runs.weather(city)

    class State(TypedDict):  # (no `from __future__ import annotations` here: LangGraph resolves these hints at run time)
        messages: Annotated[list[AnyMessage], add_messages]

    model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0).bind_tools([get_weather])

    def agent(state: State) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def node(state: State) -> dict[str, Any]:
        calls = state["messages"][-1].tool_calls
        return {"messages": [ToolMessage(get_weather.invoke(c["args"]), tool_call_id=c["id"], name=c["name"]) for c in calls]}

    def sequential(state: State) -> dict[str, Any]:
        out = []
        for c in state["messages"][-1].tool_calls:
            try:
                out.append(ToolMessage(get_weather.invoke(c["args"]), tool_call_id=c["id"], name=c["name"]))
            except TimeoutError as exc:
                out.append(ToolMessage(f"Error: {exc}", tool_call_id=c["id"], name=c["name"], status="error"))
        return {"messages": out}

    g = StateGraph(State)
    g.add_node("agent", agent)
    attempts = 3 if runs.fails is None else 4
    if shape == "node":
        g.add_node("tools", node, retry_policy=RetryPolicy(max_attempts=attempts, initial_interval=0.01, retry_on=TimeoutError))
    elif shape == "toolnode":
        g.add_node("tools", ToolNode([get_weather]), retry_policy=RetryPolicy(max_attempts=attempts, initial_interval=0.01, retry_on=Exception))
    elif shape == "sequential":
        g.add_node("tools", sequential)
    else:
        g.add_node("tools", ToolNode([get_weather], handle_tool_errors=True))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", lambda s: "tools" if s["messages"][-1].tool_calls else END)
    g.add_edge("tools", "agent")
    return g.compile()


def _truth(out: Path, name: str, question: str, state: dict[str, Any], runs: _Runs) -> str:
    write_truth(out, name, {"input": question, "output": state["messages"][-1].content, "calls": _calls(state["messages"]),
                            "tool_runs": runs.runs, "requests": _Count.requests})
    return state["messages"][-1].content


def _otel(out: Path, kind: str, shape: str, name: str, question: str, fails: dict[str, int] | None = None) -> str:
    runs = _Runs(fails)
    with Scripted(_script) as fake:
        provider = otel_provider(fake, "langgraph")
        _instrument(kind, provider)
        state = _graph(fake, shape, runs).invoke({"messages": [{"role": "user", "content": question}]})
        write_otlp(provider, fake, out / f"{name}.jsonl")
    return _truth(out, name, question, state, runs)


def _mlflow(out: Path, name: str) -> str:
    """`mlflow.langchain.autolog()`; SQLite store in a temp dir, OTLP dual export to the fake server."""
    from run_mlflow import _clean, _configure

    runs = _Runs()
    with Scripted(_script) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store, autolog="langchain", experiment="langgraph-retry")
        from mlflow.tracing.provider import provider

        state = _graph(fake, "toolnode", runs).invoke({"messages": [{"role": "user", "content": RETRY}]})
        traces = mlflow.search_traces(return_type="list", order_by=["timestamp_ms ASC"])
        write_jsonl(out / f"{name}.mlflow.jsonl", [_clean(t.to_json(), store) for t in traces])
        provider.get().force_flush()
        write_jsonl(out / f"{name}.otlp.jsonl", fake.take_otlp())
    return _truth(out, name, RETRY, state, runs)


SCENARIOS = {
    **{f"{k}-retry": (lambda out, k=k: _otel(out, k, "node", f"{k}-retry", RETRY)) for k in ("oi", "tl")},
    **{f"{k}-retry-tools": (lambda out, k=k: _otel(out, k, "toolnode", f"{k}-retry-tools", RETRY)) for k in ("oi", "tl")},
    "ml-retry-tools": lambda out: _mlflow(out, "ml-retry-tools"),
    **{f"{k}-two-asks": (lambda out, k=k: _otel(out, k, "sequential", f"{k}-two-asks", TWO_ASKS)) for k in ("oi", "tl")},
    **{f"{k}-re-asked": (lambda out, k=k: _otel(out, k, "handled", f"{k}-re-asked", RE_ASKED)) for k in ("oi", "tl")},
    **{f"{k}-{name}{suffix}": (lambda out, k=k, name=name, fails=fails, shape=shape, suffix=suffix:
                               _otel(out, k, shape, f"{k}-{name}{suffix}", PARALLEL, fails))
       for k in ("oi", "tl") for name, fails in (("parallel", {"Tokyo": 1}), ("parallel-both", {"Paris": 1, "Tokyo": 1}))
       for shape, suffix in (("node", ""), ("toolnode", "-tools"))},
}

if __name__ == "__main__":
    warnings.simplefilter("ignore")
    args = sys.argv[1:]
    sys.exit(record_each_in_subprocess(__file__, [args[0] if args else str(OUT), *args[1:]], SCENARIOS))
