"""Record the LangGraph handoff traces behind `tests/test_langgraph_handoff.py`, with the installed libraries.

    python tests/frameworks/record_langgraph_handoff.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/langgraph-handoff)

Two agents are nodes of a parent `StateGraph(MessagesState)`, as in LangGraph's multi-agent docs: `triage`, a
`create_react_agent` subgraph, and `weather`, a node asking the model once. Triage's tool `transfer_to_weather`
(arguments `InjectedState` and `InjectedToolCallId` only: the model sends `{}`) returns `Command(goto="weather",
graph=Command.PARENT, update={"messages": state["messages"] + [reply]})`, `reply` being the docs' plain dict
`{"role": "tool", "content": "Successfully transferred to weather", "name": …, "tool_call_id": …}`. The scripted
model: triage asks `lookup_user` (the user's city), then `transfer_to_weather`; weather answers. So the handoff's
update holds the history (with `lookup_user`'s `ToolMessage`) and its own reply, and LangGraph raises `ParentCommand`
through the triage subgraph's spans to reach the parent graph.

Two more forms (`variant`): `send`, the "task description" handoff of the same docs, whose tool
`transfer_to_weather(task_description, state)` returns `Command(goto=[Send("weather", {**state, "messages": [{"role":
"user", "content": task_description}]})], graph=Command.PARENT)`: no message answers the call, and the weather agent
starts from the task alone (the model: `lookup_user`, then `transfer_to_weather` with a task, then the answer); and
`parallel`, the first handoff asked for in the same reply as `lookup_user` (the model: both calls at once, then the
answer): the handoff's update (the history as the tool saw it, plus its reply) is all the parent graph gets, so
`lookup_user`'s `ToolMessage` reaches no model; and `send-parallel`, the task-description handoff asked for in the
same reply as `lookup_user`.

Scenarios (`<kind>-<variant>`, variants `handoff`, `send`, `parallel`, `send-parallel`): `oi` (OpenInference's
`LangChainInstrumentor`) and `tl` (OpenLLMetry's `LangchainInstrumentor`) write `<scenario>.jsonl` (OTLP/JSON); `lf` (Langfuse's `CallbackHandler`, OTLP to the fake
server) writes `<scenario>.jsonl`; `ml` (`mlflow.langchain.autolog()`) writes `<scenario>.mlflow.jsonl`
(`Trace.to_json()`) and `<scenario>.otlp.jsonl` (MLflow's OTLP dual export). Each writes `<scenario>.truth.json`:
what the application sent and got (`record_truth`). Each runs in its own process (instrumentors and autolog patch
LangChain process-wide) against the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`: request n
gets reply n; no network).
"""

import json
import sys
from pathlib import Path
from typing import Annotated, Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_jsonl, write_otlp, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

ASK = "What's the weather where I live? I am mia."
REPLIES = [
    {"role": "assistant", "content": None, "tool_calls": [call("call_u1", "lookup_user", {"user": "mia"})]},
    {"role": "assistant", "content": None, "tool_calls": [call("call_h1", "transfer_to_weather", {})]},
    {"role": "assistant", "content": "Mia, Paris is sunny today: 21 C."},
]
REPLIES_SEND = [
    {"role": "assistant", "content": None, "tool_calls": [call("call_u1", "lookup_user", {"user": "mia"})]},
    {"role": "assistant", "content": None, "tool_calls": [call("call_h1", "transfer_to_weather", {"task_description": "Weather in Paris for Mia"})]},
    {"role": "assistant", "content": "Mia, Paris is sunny today: 21 C."},
]
REPLIES_PARALLEL = [
    {"role": "assistant", "content": None, "tool_calls": [call("call_u1", "lookup_user", {"user": "mia"}), call("call_h1", "transfer_to_weather", {})]},
    {"role": "assistant", "content": "Mia, Paris is sunny today: 21 C."},
]
REPLIES_SEND_PARALLEL = [
    {"role": "assistant", "content": None,
     "tool_calls": [call("call_u1", "lookup_user", {"user": "mia"}), call("call_h1", "transfer_to_weather", {"task_description": "Weather for Mia"})]},
    {"role": "assistant", "content": "Mia, Paris is sunny today: 21 C."},
]
VARIANTS = {"handoff": REPLIES, "send": REPLIES_SEND, "parallel": REPLIES_PARALLEL, "send-parallel": REPLIES_SEND_PARALLEL}


class Log:
    """What each tool was called with and returned, in call order (the application's own record)."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []

    def run(self, name: str, args: dict[str, Any], fn: Any) -> Any:
        entry: dict[str, Any] = {"name": name, "arguments": args}
        self.runs.append(entry)
        try:
            value = fn()
        except Exception as exc:
            entry["raised"] = f"{type(exc).__name__}: {exc}"
            raise
        entry["result"] = value if isinstance(value, (str, int, float, bool, list, dict, type(None))) else repr(value)
        goto = getattr(value, "goto", None)
        if isinstance(goto, list) and goto and all(hasattr(g, "node") and hasattr(g, "arg") for g in goto):
            entry["sends"] = [{"node": g.node, "arg": g.arg} for g in goto]  # a Command's `Send`s: where it went, with what
        return value


def handoff_graph(fake: ScriptedOpenAI, log: Log, variant: str = "handoff") -> Any:
    """The parent graph of the two agents, its handoff tool of form `variant` (module docstring)."""
    from langchain_core.tools import InjectedToolCallId, tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import InjectedState, create_react_agent
    from langgraph.types import Command, Send

    @tool
    def lookup_user(user: str) -> str:
        """Where a user lives."""
        return log.run("lookup_user", {"user": user}, lambda: "mia lives in Paris")

    @tool("transfer_to_weather", description="Hand the user over to the weather agent.")
    def transfer_to_weather(state: Annotated[MessagesState, InjectedState], tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        reply = {"role": "tool", "content": "Successfully transferred to weather", "name": "transfer_to_weather", "tool_call_id": tool_call_id}
        return log.run("transfer_to_weather", {}, lambda: Command(goto="weather", graph=Command.PARENT, update={"messages": state["messages"] + [reply]}))

    @tool("transfer_to_weather", description="Hand a task to the weather agent.")
    def send_to_weather(task_description: str, state: Annotated[MessagesState, InjectedState]) -> Command:
        agent_input = {**state, "messages": [{"role": "user", "content": task_description}]}
        return log.run("transfer_to_weather", {"task_description": task_description},
                       lambda: Command(goto=[Send("weather", agent_input)], graph=Command.PARENT))

    def model() -> Any:
        return ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)

    triage = create_react_agent(model(), [lookup_user, send_to_weather if variant.startswith("send") else transfer_to_weather], name="triage")
    answerer = model()

    def weather(state: MessagesState) -> dict[str, Any]:
        return {"messages": [answerer.invoke(state["messages"])]}

    g = StateGraph(MessagesState)
    g.add_node("triage", triage, destinations=("weather",))
    g.add_node("weather", weather)
    g.add_edge(START, "triage")
    return g.compile()


def record_truth(state: dict[str, Any], log: Log, requests: int, asked: str, seen: "SeenOpenAI | None" = None) -> dict[str, Any]:
    """The truth of one run from the graph's final state: the calls the model asked for (id, name, arguments, in order),
    the tool messages that answered them (`status` as LangChain set it), every tool run, the last message, the requests;
    with `seen`, what each request sent (`sent`: its messages' roles, texts, calls and the calls they answer) and every
    call the model asked for (`model_calls`: also those of an agent whose messages the final state does not hold)."""
    msgs = state["messages"]
    truth = {"asked": asked, "requests": requests, "tool_runs": log.runs,
             "calls": [{"id": c["id"], "name": c["name"], "arguments": c["args"]} for m in msgs if m.type == "ai" for c in m.tool_calls],
             "tool_messages": [{"tool_call_id": m.tool_call_id, "name": m.name, "content": m.content, "status": m.status} for m in msgs if m.type == "tool"],
             "last_message": {"type": msgs[-1].type, "content": msgs[-1].content}}
    if seen is not None:
        truth["sent"] = [[{k: m[k] for k in ("role", "content", "tool_call_id") if m.get(k) is not None}
                          | ({"tool_calls": [c["id"] for c in m["tool_calls"]]} if m.get("tool_calls") else {}) for m in body] for body in seen.sent]
        truth["model_calls"] = [{"id": c["id"], "name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
                                for reply in seen.replies[:seen.n] for c in reply.get("tool_calls") or []]
    return truth


class SeenOpenAI(ScriptedOpenAI):
    """`ScriptedOpenAI` keeping the messages of each Chat Completions request (`sent`): what each model was shown."""

    def __init__(self, replies: list[Any]) -> None:
        self.sent: list[list[dict[str, Any]]] = []
        super().__init__(replies)

    async def _chat(self, request: Any) -> Any:
        self.sent.append((await request.json()).get("messages") or [])
        return await super()._chat(request)


def recording(kind: str, name: str, out: Path, replies: list[Any], run: Any) -> Any:
    """Run `run(fake, callbacks)` (-> the graph's final state) under instrumentation `kind` (`oi`, `tl`, `lf`, `ml`), writing
    the recording files of `name` into `out` (module docstring); returns the final state."""
    with SeenOpenAI(replies) as fake:
        if kind in ("oi", "tl"):
            provider = otel_provider(fake, "langgraph")
            if kind == "oi":
                from openinference.instrumentation.langchain import LangChainInstrumentor

                LangChainInstrumentor().instrument(tracer_provider=provider)
            else:
                from opentelemetry.instrumentation.langchain import LangchainInstrumentor

                LangchainInstrumentor().instrument(tracer_provider=provider)
            state = run(fake, None)
            write_otlp(provider, fake, out / f"{name}.jsonl")
            provider.shutdown()
        elif kind == "lf":
            from langfuse import Langfuse
            from langfuse.langchain import CallbackHandler

            langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
            state = run(fake, [CallbackHandler()])
            langfuse.flush()
            write_jsonl(out / f"{name}.jsonl", fake.take_otlp())
            langfuse.shutdown()
        else:
            state = _mlflow(fake, name, out, run)
        state["_requests"], state["_seen"] = fake.n, fake
    return state


def _mlflow(fake: ScriptedOpenAI, name: str, out: Path, run: Any) -> Any:
    """`mlflow.langchain.autolog()`; SQLite store in a temp dir, OTLP dual export to the fake server (`run_mlflow.langchain_recording`)."""
    from run_mlflow import langchain_recording

    with langchain_recording(fake, out, name):
        state = run(fake, None)
    return state


def handoff(kind: str, out: Path, variant: str = "handoff") -> Any:
    name = f"{kind}-{variant}"
    log = Log()

    def run(fake: ScriptedOpenAI, callbacks: Any) -> Any:
        config = {"callbacks": callbacks} if callbacks else None
        return handoff_graph(fake, log, variant).invoke({"messages": [{"role": "user", "content": ASK}]}, config)

    state = recording(kind, name, out, VARIANTS[variant], run)
    write_truth(out, name, record_truth(state, log, state.pop("_requests"), ASK, state.pop("_seen")))
    return state["messages"][-1].content


SCENARIOS = {f"{k}-{v}": (lambda out, k=k, v=v: handoff(k, out, v)) for v in VARIANTS for k in ("oi", "tl", "lf", "ml")}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
