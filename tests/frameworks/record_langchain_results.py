"""Record the LangGraph traces behind `tests/test_langchain_tool_results.py`, with the installed libraries.

    python tests/frameworks/record_langchain_results.py OUTDIR [SCENARIO ...]

writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON, one export request a line) for the OpenInference,
OpenLLMetry and Langfuse scenarios, and `OUTDIR/mlflow-react.mlflow.jsonl` (`Trace.to_json()` a line) plus
`OUTDIR/mlflow-react.otlp.jsonl` (MLflow's OTLP dual export of the same spans) for MLflow. Each
scenario runs in its own subprocess (instrumentors and autolog patch LangChain process-wide) against
the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`: a fixed reply per
request; no network). Prints each scenario's answer from the framework on stderr.

Scenarios (`SCENARIOS`):

- `oi-unknown-tool`, `tl-unknown-tool`: `create_react_agent` + ToolNode(handle_tool_errors=True);
  the model calls `get_wether`, which does not exist (ToolNode answers an error ToolMessage without
  running a tool, so no tool span), and `get_weather` beside it.
- `tl-custom-node`: a custom StateGraph node that runs the tools itself with `tool.invoke(args)`
  (not ToolNode) under OpenLLMetry; `search_flights` returns JSON text, `echo_payload` returns a dict
  that looks like LangChain's callback payload (`{"output", "kwargs": {"name": "echo_payload"}}`).
- `mlflow-react`: `mlflow.langchain.autolog()` on `create_react_agent`; `get_weather` returns text,
  `lookup_order` a dict (ToolMessage content is its JSON), the unknown `get_wether`: one response.
- `langfuse-react`: the same run traced by Langfuse's LangChain `CallbackHandler` (OTLP to the fake
  server; its LangGraph node "agent" is an `agent` observation, metadata values JSON text).
"""

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any, TypedDict

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_jsonl, write_otlp  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402


def _chat(text: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": text, **({"tool_calls": list(calls)} if calls else {})}


UNKNOWN = [_chat(None, call("call_u0", "get_wether", {"city": "Paris"}), call("call_u1", "get_weather", {"city": "Paris"})),
           _chat("Paris: sunny, 21 C.")]
CUSTOM = [_chat(None, call("call_c1", "search_flights", {"origin": "JFK", "destination": "SFO"}), call("call_c2", "echo_payload", {"text": "inner"})),
          _chat("HAT170 at $320.")]
MLFLOW = [_chat(None, call("call_m1", "get_weather", {"city": "Paris"}), call("call_m2", "lookup_order", {"order_id": "#W1"}),
                call("call_m3", "get_wether", {"city": "Tokyo"})),
          _chat("Paris is sunny; #W1 shipped.")]
LOOKALIKE = {"output": "inner", "kwargs": {"name": "echo_payload"}}  # echo_payload's genuine return value


def _tools() -> dict[str, Any]:
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}[city]

    @tool
    def lookup_order(order_id: str) -> dict:
        """Look an order up."""
        return {"order_id": order_id, "status": "shipped"}

    @tool
    def search_flights(origin: str, destination: str) -> str:
        """Search flights."""
        return json.dumps([{"flight_number": "HAT170", "price": 320}])

    @tool
    def echo_payload(text: str) -> dict:
        """Return a payload."""
        return {"output": text, "kwargs": {"name": "echo_payload"}}

    return {t.name: t for t in (get_weather, lookup_order, search_flights, echo_payload)}


def _instrument(which: str, provider: Any) -> None:
    if which == "oi":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=provider)
    else:
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        LangchainInstrumentor().instrument(tracer_provider=provider)


def _react(fake: ScriptedOpenAI, names: list[str], text: str, callbacks: list[Any] | None = None) -> Any:
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import ToolNode, create_react_agent

    tools = _tools()
    model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)
    agent = create_react_agent(model, ToolNode([tools[n] for n in names], handle_tool_errors=True), prompt="Help.")
    config = {"callbacks": callbacks} if callbacks else None
    return agent.invoke({"messages": [{"role": "user", "content": text}]}, config)["messages"][-1].content


def unknown_tool(which: str, out: Path) -> Any:
    with ScriptedOpenAI(UNKNOWN) as fake:
        provider = otel_provider(fake, f"{which}-unknown-tool")
        _instrument(which, provider)
        answer = _react(fake, ["get_weather"], "Weather in Paris?")
        write_otlp(provider, fake, out / f"{which}-unknown-tool.jsonl")
    return answer


def custom_node(out: Path) -> Any:
    """A model node and a tool node of our own: the tools run with `tool.invoke(args)`, their values wrapped by us."""
    with ScriptedOpenAI(CUSTOM) as fake:
        provider = otel_provider(fake, "tl-custom-node")
        _instrument("tl", provider)
        from langchain_core.messages import AnyMessage, ToolMessage
        from langchain_openai import ChatOpenAI
        from langgraph.graph import END, START, StateGraph
        from langgraph.graph.message import add_messages

        tools = {n: t for n, t in _tools().items() if n in ("search_flights", "echo_payload")}
        model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0).bind_tools(list(tools.values()))

        class State(TypedDict):  # (no `from __future__ import annotations` here: LangGraph resolves these hints at run time)
            messages: Annotated[list[AnyMessage], add_messages]

        def agent(state: State) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        def run_tools(state: State) -> dict[str, Any]:
            calls = state["messages"][-1].tool_calls
            return {"messages": [ToolMessage(content=json.dumps(v) if isinstance(v := tools[c["name"]].invoke(c["args"]), dict) else v,
                                             tool_call_id=c["id"], name=c["name"]) for c in calls]}

        g = StateGraph(State)
        g.add_node("agent", agent)
        g.add_node("tools", run_tools)
        g.add_edge(START, "agent")
        g.add_conditional_edges("agent", lambda s: "tools" if s["messages"][-1].tool_calls else END)
        g.add_edge("tools", "agent")
        answer = g.compile().invoke({"messages": [{"role": "user", "content": "Cheapest JFK to SFO flight?"}]})["messages"][-1].content
        write_otlp(provider, fake, out / "tl-custom-node.jsonl")
    return answer


def mlflow_react(out: Path) -> Any:
    """`mlflow.langchain.autolog()`; SQLite store in a temp dir, OTLP dual export to the fake server."""
    from run_mlflow import _clean

    with ScriptedOpenAI(MLFLOW) as fake, tempfile.TemporaryDirectory() as store:
        os.environ.update({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{fake.url}/v1/traces", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
                           "MLFLOW_TRACE_ENABLE_OTLP_DUAL_EXPORT": "true", "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false",
                           "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"})
        import mlflow
        from mlflow.tracing.provider import provider

        mlflow.set_tracking_uri(f"sqlite:///{store}/mlflow.db")
        mlflow.set_experiment(experiment_id=mlflow.create_experiment("langchain-tool-results", artifact_location=f"{store}/artifacts"))
        mlflow.langchain.autolog()
        answer = _react(fake, ["get_weather", "lookup_order"], "Weather in Paris, and where is order #W1?")
        trace = mlflow.get_trace(mlflow.get_last_active_trace_id())
        write_jsonl(out / "mlflow-react.mlflow.jsonl", [_clean(trace.to_json(), store)])
        provider.get().force_flush()
        write_jsonl(out / "mlflow-react.otlp.jsonl", fake.take_otlp())
    return answer


def langfuse_react(out: Path) -> Any:
    """Langfuse's LangChain `CallbackHandler` on the `mlflow-react` run; the SDK posts OTLP to the fake server."""
    with ScriptedOpenAI(MLFLOW) as fake:
        from langfuse import Langfuse
        from langfuse.langchain import CallbackHandler

        langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
        answer = _react(fake, ["get_weather", "lookup_order"], "Weather in Paris, and where is order #W1?", [CallbackHandler()])
        langfuse.flush()
        write_jsonl(out / "langfuse-react.jsonl", fake.take_otlp())
        langfuse.shutdown()
    return answer


SCENARIOS = {
    "oi-unknown-tool": lambda out: unknown_tool("oi", out),
    "tl-unknown-tool": lambda out: unknown_tool("tl", out),
    "tl-custom-node": custom_node,
    "mlflow-react": mlflow_react,
    "langfuse-react": langfuse_react,
}


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all), each in a subprocess; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, SCENARIOS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
