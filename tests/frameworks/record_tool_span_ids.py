"""Record the traces behind `tests/test_tool_span_reused_ids.py`: tool SPANS whose call ids name several calls.

    python tests/frameworks/record_tool_span_ids.py OUTDIR [SCENARIO ...]

writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON, one export request a line; MLflow: `<scenario>.mlflow.jsonl`, its own
`Trace.to_json()`, and `<scenario>.otlp.jsonl`, the same spans over OTLP) and `OUTDIR/<scenario>.truth.json` (what the
application itself sent and got). Each scenario runs in its own subprocess (instrumentors and autolog patch libraries
process-wide) against the project's scripted loopback OpenAI server (`record_otel_loop_faults.Scripted`, answering
request n with the scenario's reply n; no network).

The server numbers tool calls per response, as llama.cpp and several local OpenAI-compatible servers do: the first
call of EVERY response is `call_0`, the second `call_1`. The frameworks below run the tools themselves and record a
tool span for each, so a tool span's id names a call of every round at once. `get_weather` raises
`ValueError("no weather for Zürich")` for Zürich; its other answers and `get_time`'s are fixed texts.

- `oi-lg-rounds`, `tl-lg-rounds`: LangGraph `create_react_agent` with `ToolNode(handle_tool_errors=True)` under
  openinference-instrumentation-langchain / opentelemetry-instrumentation-langchain (OpenLLMetry), one user turn, one
  call per response, each `call_0`: get_weather(Zürich) raises, get_weather(Paris), get_time() with `{}`, then the answer.
- `oi-lg-thread`, `tl-lg-thread`: the same agent with an `InMemorySaver`, three user turns on thread `th-1` (one
  trace per invoke): turn 1 asks in ONE response for `call_0`, `call_1`, `call_2` (get_weather Zürich (raises), Paris,
  Tokyo), then answers; turn 2 for `call_0`, `call_1` (get_time, get_weather Oslo), then answers; turn 3 is answered
  without tools. The `tl-` run streams (`ChatOpenAI(streaming=True)`; arguments arrive in fragments).
- `oi-smol`: smolagents `ToolCallingAgent` + `OpenAIServerModel` under openinference-instrumentation-smolagents: two
  parallel calls `call_0`, `call_1` (get_weather Paris, Tokyo), then `call_0` get_time, then `call_0`
  get_weather(Zürich) (raises; smolagents sends the model the error text, no result), then `call_0` final_answer;
  a second run on the same memory (`reset=False`) answers with `call_0` final_answer at once.
- `oi-smol-equal`: the same agent asking `call_0` get_time `{}` three rounds running, the first raising ("clock not
  ready"), the others returning 12:01 and 12:02: calls with equal arguments whose results differ, after a parallel
  `call_0`, `call_1` (get_weather Paris, Zürich (raises)).
- `mlflow-lg`: `mlflow.langchain.autolog()` on the `create_react_agent` of the `*-lg-*` runs (SQLite store in a temp
  dir, OTLP dual export to the fake server), one user turn: `call_0`, `call_1` (get_weather Zürich (raises), Paris)
  in one response, then `call_0`, `call_1` (get_time, get_weather Tokyo), then the answer.
- `langfuse-lg`: the same run traced by Langfuse's LangChain `CallbackHandler` (the SDK posts OTLP to the fake server).

Truth (`<scenario>.truth.json`): `{"user_turns", "answers", "output", "calls": [...]}`, each call in the order the
model asked for them: the id, name and arguments the model sent, `result` (LangChain: the content of the
`ToolMessage` the graph answered it with, from the messages the framework returned; smolagents: what the tool
returned, `null` when it raised), `error` (what the tool itself raised, `str(exception)`, else `null`; captured
inside the tool), and for LangChain `status` (the `ToolMessage`'s).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_jsonl, write_otlp, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted, call, chat  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C", "Oslo": "snow, -3 C"}
TIME = "12:00"
FAILS = "Zürich"  # get_weather raises for it


def _weather(city: str) -> dict[str, Any]:
    return {"city": city}


ROUNDS = (["Weather in Zürich and Paris, and the time?"], [
    chat(None, call("call_0", "get_weather", _weather("Zürich"))),
    chat(None, call("call_0", "get_weather", _weather("Paris"))),
    chat(None, call("call_0", "get_time", {})),
    chat("Paris is sunny (21 C), Zürich unknown; it is 12:00.")])
THREAD = (["Weather in Zürich, Paris and Tokyo?", "What time is it, and the weather in Oslo?", "Thanks!"], [
    chat(None, call("call_0", "get_weather", _weather("Zürich")), call("call_1", "get_weather", _weather("Paris")),
         call("call_2", "get_weather", _weather("Tokyo"))),
    chat("Paris sunny, Tokyo rainy, Zürich unknown."),
    chat(None, call("call_0", "get_time", {}), call("call_1", "get_weather", _weather("Oslo"))),
    chat("12:00, snowing in Oslo."),
    chat("You're welcome!")])
PARALLEL = (["Weather in Zürich, Paris and Tokyo, and the time?"], [
    chat(None, call("call_0", "get_weather", _weather("Zürich")), call("call_1", "get_weather", _weather("Paris"))),
    chat(None, call("call_0", "get_time", {}), call("call_1", "get_weather", _weather("Tokyo"))),
    chat("Paris sunny, Tokyo rainy, Zürich unknown; 12:00.")])
SMOL_EQUAL = (["Weather in Paris and Zürich, and the time (ask until it answers)?"], [
    chat(None, call("call_0", "get_weather", _weather("Paris")), call("call_1", "get_weather", _weather("Zürich"))),
    chat(None, call("call_0", "get_time", {})),
    chat(None, call("call_0", "get_time", {})),
    chat(None, call("call_0", "get_time", {})),
    chat(None, call("call_0", "final_answer", {"answer": "Paris sunny, Zürich unknown; 12:02."}))])
SMOL_ANSWERS = ["Paris sunny, Tokyo rainy, Zürich unknown; 12:00.", "You're welcome!"]
SMOL = (["Weather in Paris and Tokyo, the time, and Zürich?", "Thanks!"], [
    chat(None, call("call_0", "get_weather", _weather("Paris")), call("call_1", "get_weather", _weather("Tokyo"))),
    chat(None, call("call_0", "get_time", {})),
    chat(None, call("call_0", "get_weather", _weather("Zürich"))),
    chat(None, call("call_0", "final_answer", {"answer": SMOL_ANSWERS[0]})),
    chat(None, call("call_0", "final_answer", {"answer": SMOL_ANSWERS[1]}))])


def _usage(n: int) -> dict[str, int]:
    return {"prompt_tokens": 100 + n, "completion_tokens": 10 + n, "total_tokens": 110 + 2 * n}


def _served(replies: list[dict[str, Any]]) -> Any:
    """The server's script: request n gets `replies[n]` (the frameworks send one request at a time)."""
    it = iter(enumerate(replies))

    def reply(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, int]]:
        n, message = next(it)
        return message, _usage(n)

    return reply


# --- the application's tools: what they returned or raised, as they ran -----------------------------------------
RAN: list[dict[str, Any]] = []  # {"name", "arguments", "result"|"error"} per run of a tool


def get_weather_impl(city: str) -> str:
    if city == FAILS:
        RAN.append({"name": "get_weather", "arguments": {"city": city}, "error": f"no weather for {city}"})
        raise ValueError(f"no weather for {city}")
    RAN.append({"name": "get_weather", "arguments": {"city": city}, "result": WEATHER[city]})
    return WEATHER[city]


CLOCK = {"asked": 0, "ticking": False}  # `ticking`: the first get_time raises, each later one a minute later


def get_time_impl() -> str:
    if not CLOCK["ticking"]:
        RAN.append({"name": "get_time", "arguments": {}, "result": TIME})
        return TIME
    CLOCK["asked"] += 1
    if CLOCK["asked"] == 1:
        RAN.append({"name": "get_time", "arguments": {}, "error": "clock not ready"})
        raise ValueError("clock not ready")
    now = f"12:0{CLOCK['asked'] - 1}"
    RAN.append({"name": "get_time", "arguments": {}, "result": now})
    return now


def _ran(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """The first run not yet taken of tool `name` with `args` (runs with equal arguments are taken in the order they ran)."""
    at = next(i for i, r in enumerate(RAN) if r["name"] == name and r["arguments"] == args)
    return RAN.pop(at)


# --- LangGraph ---------------------------------------------------------------------------------------------------
def _langchain_tools() -> list[Any]:
    from langchain_core.tools import tool

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return get_weather_impl(city)

    @tool
    def get_time() -> str:
        """Current time."""
        return get_time_impl()

    return [get_weather, get_time]


def _react_agent(fake: Scripted, checkpointer: Any = None, streaming: bool = False) -> Any:
    from langchain_openai import ChatOpenAI

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (its deprecation notice: the prebuilt agent is what applications still run)
        from langgraph.prebuilt import ToolNode, create_react_agent

        model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0, streaming=streaming,
                           **({"stream_usage": True} if streaming else {}))
        return create_react_agent(model, ToolNode(_langchain_tools(), handle_tool_errors=True), prompt="You are helpful.",
                                  checkpointer=checkpointer)


def _graph_truth(turns: list[str], answers: list[str], messages: list[Any]) -> dict[str, Any]:
    """Each call the graph's AI messages asked for, with the ToolMessage of that round that answered it."""
    calls: list[dict[str, Any]] = []
    for i, m in enumerate(messages):
        if m.type != "ai" or not m.tool_calls:
            continue
        answered = []
        for t in messages[i + 1:]:
            if t.type != "tool":
                break
            answered.append(t)
        for c in m.tool_calls:
            (msg,) = [t for t in answered if t.tool_call_id == c["id"]]  # unique within its round
            ran = _ran(c["name"], c["args"])
            calls.append({"id": c["id"], "name": c["name"], "arguments": c["args"], "result": msg.content, "status": msg.status,
                          "error": ran.get("error")})
    return {"user_turns": turns, "answers": answers, "output": answers[-1], "calls": calls}


def _instrumentor(kind: str) -> Any:
    if kind == "oi":
        from openinference.instrumentation.langchain import LangChainInstrumentor
        return LangChainInstrumentor()
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor
    return LangchainInstrumentor()


def langgraph(out: Path, name: str, kind: str, script: tuple[list[str], list[dict[str, Any]]], thread: bool = False, streaming: bool = False) -> Any:
    """`script` run by `create_react_agent` under instrumentation `kind` (`oi`, `tl`); `thread`: checkpointed, one invoke a turn."""
    from langgraph.checkpoint.memory import InMemorySaver

    turns, replies = script
    with Scripted(_served(replies)) as fake:
        provider = otel_provider(fake, "tool-span-ids")
        _instrumentor(kind).instrument(tracer_provider=provider)
        agent = _react_agent(fake, InMemorySaver() if thread else None, streaming)
        config = {"configurable": {"thread_id": "th-1"}} if thread else None
        answers, state = [], None
        for text in turns:
            state = agent.invoke({"messages": [{"role": "user", "content": text}]}, config)
            answers.append(state["messages"][-1].content)
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, _graph_truth(turns, answers, state["messages"]))
    return answers[-1]


def mlflow_langgraph(out: Path, name: str) -> Any:
    """`mlflow.langchain.autolog()` on the `PARALLEL` script; SQLite store in a temp dir, OTLP dual export to the fake server."""
    from run_mlflow import _clean

    turns, replies = PARALLEL
    with Scripted(_served(replies)) as fake, tempfile.TemporaryDirectory() as store:
        os.environ.update({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{fake.url}/v1/traces", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
                           "MLFLOW_TRACE_ENABLE_OTLP_DUAL_EXPORT": "true", "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false",
                           "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true",
                           "MLFLOW_MODEL_CATALOG_URI": ""})  # costs from the bundled catalog, not fetched (no network)
        import mlflow
        from mlflow.tracing.provider import provider

        mlflow.set_tracking_uri(f"sqlite:///{store}/mlflow.db")
        mlflow.set_experiment(experiment_id=mlflow.create_experiment("tool-span-ids", artifact_location=f"{store}/artifacts"))
        mlflow.langchain.autolog()
        state = _react_agent(fake).invoke({"messages": [{"role": "user", "content": turns[0]}]})
        trace = mlflow.get_trace(mlflow.get_last_active_trace_id())
        write_jsonl(out / f"{name}.mlflow.jsonl", [_clean(trace.to_json(), store)])
        provider.get().force_flush()
        write_jsonl(out / f"{name}.otlp.jsonl", fake.take_otlp())
    answers = [state["messages"][-1].content]
    write_truth(out, name, _graph_truth(turns, answers, state["messages"]))
    return answers[-1]


def langfuse_langgraph(out: Path, name: str) -> Any:
    """Langfuse's LangChain `CallbackHandler` on the `PARALLEL` script; the SDK posts OTLP to the fake server."""
    turns, replies = PARALLEL
    with Scripted(_served(replies)) as fake:
        from langfuse import Langfuse
        from langfuse.langchain import CallbackHandler

        langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
        state = _react_agent(fake).invoke({"messages": [{"role": "user", "content": turns[0]}]}, {"callbacks": [CallbackHandler()]})
        langfuse.flush()
        docs = fake.take_otlp()
        if not docs:
            raise RuntimeError("Langfuse exported no spans")
        write_jsonl(out / f"{name}.jsonl", docs)
        langfuse.shutdown()
    answers = [state["messages"][-1].content]
    write_truth(out, name, _graph_truth(turns, answers, state["messages"]))
    return answers[-1]


# --- smolagents --------------------------------------------------------------------------------------------------
def smolagents_oi(out: Path, name: str, script: tuple[list[str], list[dict[str, Any]]] = SMOL) -> Any:
    """`ToolCallingAgent` under OpenInference: two runs on one memory; every call (final_answer too) is `call_0` or `call_1`."""
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool

    def get_weather(city: str) -> str:  # smolagents reads the docstring's Args: section
        """Weather in a city.

        Args:
            city: the city
        """
        return get_weather_impl(city)

    def get_time() -> str:
        """Current time."""
        return get_time_impl()

    turns, replies = script
    with Scripted(_served(replies)) as fake:
        provider = otel_provider(fake, "tool-span-ids")
        SmolagentsInstrumentor().instrument(tracer_provider=provider)
        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake")
        agent = ToolCallingAgent(tools=[tool(get_weather), tool(get_time)], model=model, max_steps=6, verbosity_level=0)
        answers = [str(agent.run(text, reset=turn == 0)) for turn, text in enumerate(turns)]
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    calls = []
    for reply in replies:  # what the model asked for, in its order; framework-internal final_answer is the output
        for c in reply.get("tool_calls") or []:
            if c["function"]["name"] == "final_answer":
                continue
            args = json.loads(c["function"]["arguments"])
            ran = _ran(c["function"]["name"], args)
            calls.append({"id": c["id"], "name": c["function"]["name"], "arguments": args, "result": ran.get("result"), "error": ran.get("error")})
    write_truth(out, name, {"user_turns": turns, "answers": answers, "output": answers[-1], "calls": calls})
    return answers[-1]


SCENARIOS = {
    "oi-lg-rounds": lambda out: langgraph(out, "oi-lg-rounds", "oi", ROUNDS),
    "tl-lg-rounds": lambda out: langgraph(out, "tl-lg-rounds", "tl", ROUNDS),
    "oi-lg-thread": lambda out: langgraph(out, "oi-lg-thread", "oi", THREAD, thread=True),
    "tl-lg-thread": lambda out: langgraph(out, "tl-lg-thread", "tl", THREAD, thread=True, streaming=True),
    "oi-smol": lambda out: smolagents_oi(out, "oi-smol"),
    "oi-smol-equal": lambda out: (CLOCK.update(ticking=True), smolagents_oi(out, "oi-smol-equal", SMOL_EQUAL))[1],
    "mlflow-lg": lambda out: mlflow_langgraph(out, "mlflow-lg"),
    "langfuse-lg": lambda out: langfuse_langgraph(out, "langfuse-lg"),
}


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all), each in a subprocess; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, SCENARIOS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
