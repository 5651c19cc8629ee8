"""Record the LangGraph human-in-the-loop traces behind `tests/test_langgraph_interrupt.py`, with the installed libraries.

    python tests/frameworks/record_langgraph_interrupt.py [OUTDIR] [--only SCENARIO ...]   (OUTDIR: tests/data/langgraph-interrupt)

Each scenario runs one small graph on one thread (`MemorySaver` checkpointer, thread `thread-dates`):
`graph.invoke({"messages": [user]})` runs until the graph pauses at `interrupt("Which date do you want?")`,
then `graph.invoke(Command(resume="June 3"))` on the same thread finishes it. Two graph shapes:

- `ask-date` (a node asks): `agent` (the model) → `tools` (ToolNode: `search_flights`) → `ask_date`, a node
  whose `interrupt(QUESTION)` returns the human's answer, added to the state as a `HumanMessage` (LangGraph's
  documented human node) → `agent`, which answers with the date.
- `tool-asks` (a tool asks): `create_react_agent`-like loop whose `book_flight` tool calls `interrupt(QUESTION)`
  itself; on resume ToolNode runs the tool again from its start and the answer becomes the tool's result.

Scenarios: `oi-ask-date`, `oi-tool-asks` (OpenInference's `LangChainInstrumentor`), `tl-ask-date` (OpenLLMetry's
`LangchainInstrumentor`), `langfuse-ask-date` (Langfuse's `CallbackHandler`, OTLP to the fake server), each writing
`<scenario>.jsonl` (OTLP/JSON, one export a line); `mlflow-ask-date` (`mlflow.langchain.autolog()`) writes
`mlflow-ask-date.mlflow.jsonl` (`Trace.to_json()` a line, one trace per invoke) and `mlflow-ask-date.otlp.jsonl`
(MLflow's OTLP dual export of the same spans). Every scenario writes `<scenario>.outcome.json`: the interrupt the
first invoke returned and the answer of the second. Each runs in its own process (instrumentors patch LangChain
process-wide) against the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`: request n gets
reply n; no network).
"""

import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Annotated, Any, TypedDict

FRAMEWORKS = Path(__file__).resolve().parent
OUT = FRAMEWORKS.parent / "data" / "langgraph-interrupt"
if str(FRAMEWORKS) not in sys.path:
    sys.path.insert(0, str(FRAMEWORKS))

from common import MODEL, otel_provider, record_scenarios, write_jsonl, write_otlp, write_outcome  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

QUESTION = "Which date do you want?"
ANSWER = "June 3"
REQUEST = "Book me the cheapest JFK to SFO flight."
THREAD = "thread-dates"
FLIGHTS = [{"flight": "HAT170", "date": "June 3", "price": 320}, {"flight": "HAT200", "date": "June 5", "price": 280}]
FINAL = "Booked HAT170 on June 3 for $320."


def _chat(text: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": text, **({"tool_calls": list(calls)} if calls else {})}


SEARCH = _chat(None, call("call_s1", "search_flights", {"origin": "JFK", "destination": "SFO"}))
REPLIES = {
    "ask-date": [SEARCH, _chat(FINAL)],
    "tool-asks": [SEARCH, _chat(None, call("call_b1", "book_flight", {"flight": "HAT170"})), _chat(FINAL)],
}


def _graph(fake: ScriptedOpenAI, shape: str) -> Any:
    """The compiled graph of `shape` (see the module docstring), with a `MemorySaver` checkpointer."""
    from langchain_core.messages import AnyMessage, HumanMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import MemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode
    from langgraph.types import interrupt

    @tool
    def search_flights(origin: str, destination: str) -> str:
        """Search flights between two airports."""
        return json.dumps(FLIGHTS)

    @tool
    def book_flight(flight: str) -> str:
        """Book a flight; asks the traveller for the date."""
        date = interrupt(QUESTION)
        return f"booked {flight} on {date}"

    tools = [search_flights] if shape == "ask-date" else [search_flights, book_flight]
    model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0).bind_tools(tools)

    class State(TypedDict):  # (no `from __future__ import annotations` here: LangGraph resolves these hints at run time)
        messages: Annotated[list[AnyMessage], add_messages]

    def agent(state: State) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    def ask_date(state: State) -> dict[str, Any]:
        return {"messages": [HumanMessage(content=interrupt(QUESTION))]}

    g = StateGraph(State)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode(tools))
    g.add_edge(START, "agent")
    g.add_conditional_edges("agent", lambda s: "tools" if s["messages"][-1].tool_calls else END)
    if shape == "ask-date":
        g.add_node("ask_date", ask_date)
        g.add_edge("tools", "ask_date")
        g.add_edge("ask_date", "agent")
    else:
        g.add_edge("tools", "agent")
    return g.compile(checkpointer=MemorySaver())


def _run(fake: ScriptedOpenAI, shape: str, callbacks: list[Any] | None = None) -> dict[str, Any]:
    """Invoke until the interrupt, resume with `ANSWER`; what each invoke returned."""
    from langgraph.types import Command

    graph = _graph(fake, shape)
    config: dict[str, Any] = {"configurable": {"thread_id": THREAD}, **({"callbacks": callbacks} if callbacks else {})}
    paused = graph.invoke({"messages": [{"role": "user", "content": REQUEST}]}, config)
    done = graph.invoke(Command(resume=ANSWER), config)
    return {"interrupts": [i.value for i in paused.get("__interrupt__", [])], "answer": done["messages"][-1].content}


def _otel(name: str, shape: str, which: str, out: Path) -> dict[str, Any]:
    with ScriptedOpenAI(REPLIES[shape]) as fake:
        provider = otel_provider(fake, name)
        if which == "oi":
            from openinference.instrumentation.langchain import LangChainInstrumentor

            LangChainInstrumentor().instrument(tracer_provider=provider)
        else:
            from opentelemetry.instrumentation.langchain import LangchainInstrumentor

            LangchainInstrumentor().instrument(tracer_provider=provider)
        outcome = _run(fake, shape)
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    return outcome


def _langfuse(name: str, out: Path) -> dict[str, Any]:
    with ScriptedOpenAI(REPLIES["ask-date"]) as fake:
        from langfuse import Langfuse
        from langfuse.langchain import CallbackHandler

        langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
        outcome = _run(fake, "ask-date", [CallbackHandler()])
        langfuse.flush()
        write_jsonl(out / f"{name}.jsonl", fake.take_otlp())
        langfuse.shutdown()
    return outcome


def _mlflow(name: str, out: Path) -> dict[str, Any]:
    """`mlflow.langchain.autolog()`; SQLite store in a temp dir, OTLP dual export to the fake server."""
    from run_mlflow import _clean

    with ScriptedOpenAI(REPLIES["ask-date"]) as fake, tempfile.TemporaryDirectory() as store:
        os.environ.update({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{fake.url}/v1/traces", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
                           "MLFLOW_TRACE_ENABLE_OTLP_DUAL_EXPORT": "true", "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false",
                           "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"})
        import mlflow
        from mlflow.tracing.provider import provider

        mlflow.set_tracking_uri(f"sqlite:///{store}/mlflow.db")
        experiment = mlflow.create_experiment("langgraph-interrupt", artifact_location=f"{store}/artifacts")
        mlflow.set_experiment(experiment_id=experiment)
        mlflow.langchain.autolog()
        outcome = _run(fake, "ask-date")
        traces = mlflow.search_traces(locations=[experiment], return_type="list", order_by=["timestamp_ms ASC"])
        write_jsonl(out / f"{name}.mlflow.jsonl", [_clean(t.to_json(), store) for t in traces])
        provider.get().force_flush()
        write_jsonl(out / f"{name}.otlp.jsonl", fake.take_otlp())
    return outcome


SCENARIOS = {
    "oi-ask-date": lambda out: _otel("oi-ask-date", "ask-date", "oi", out),
    "oi-tool-asks": lambda out: _otel("oi-tool-asks", "tool-asks", "oi", out),
    "tl-ask-date": lambda out: _otel("tl-ask-date", "ask-date", "tl", out),
    "langfuse-ask-date": lambda out: _langfuse("langfuse-ask-date", out),
    "mlflow-ask-date": lambda out: _mlflow("mlflow-ask-date", out),
}


def record(name: str, out: Path) -> dict[str, Any]:
    """Record `name` in a process of its own (LangChain instrumentation is process-wide); its outcome."""
    if os.environ.get("RECORD_IN_PROCESS") == "1":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return write_outcome(out, name, SCENARIOS[name](out))
    subprocess.run([sys.executable, __file__, str(out), "--only", name], env={**os.environ, "RECORD_IN_PROCESS": "1"}, check=True,
                   stdout=subprocess.DEVNULL)
    return json.loads((out / f"{name}.outcome.json").read_text())


if __name__ == "__main__":
    record_scenarios(record, SCENARIOS, OUT)
