"""Record more LangGraph handoff traces, behind `tests/test_langgraph_handoff_edges.py`, with the installed libraries.

    python tests/frameworks/record_langgraph_handoff_edges.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/langgraph-handoff-edges)

The graph of `record_langgraph_handoff.py` (a parent `StateGraph(MessagesState)`, node `triage` a `create_react_agent`
subgraph, the other agents nodes asking the model once), with handoff forms its variants leave out (`variant`):

- `two-send`: triage has two "task description" handoffs of LangGraph's multi-agent docs, `transfer_to_weather` and
  `transfer_to_news`, each returning `Command(goto=[Send(agent, {**state, "messages": [task]})], graph=Command.PARENT)`;
  the model asks both in one reply, then each agent the parent graph starts answers once. `two-send-joined`: the same
  with `create_react_agent(version="v1")`, whose one ToolNode runs both calls and joins their `Send`s into one Command.
  `two-send-same`: the model asks `transfer_to_weather` twice in one reply, for Paris and for Rome.
- `bare`: triage's `transfer_to_weather` (arguments `InjectedState` only: the model sends `{}`) returns
  `Command(goto="weather", graph=Command.PARENT)`, no `update`: the model asks `lookup_user`, then the handoff, then
  weather answers from the parent graph's state (the user's question alone: the subgraph's messages never reach it).

Kinds, files and truth as `record_langgraph_handoff.py` (`recording`, `record_truth`): `oi`, `tl`, `lf` write
`<scenario>.jsonl`; `ml` writes `<scenario>.mlflow.jsonl` and `<scenario>.otlp.jsonl`; each `<scenario>.truth.json`
(with `model_calls`, `sent`, every tool run and, for a Command's `Send`s, `sends`; `answered_by`: which agents ran).
"""

import sys
from pathlib import Path
from typing import Annotated, Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, record_each_in_subprocess, write_truth  # noqa: E402
from record_langgraph_handoff import Log, record_truth, recording  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

ASK = "Weather and news for Paris, please."
ASK_SAME = "Weather in Paris and in Rome, please."
ASK_BARE = "What's the weather where I live? I am mia."
REPLIES_TWO_SEND = [
    {"role": "assistant", "content": None, "tool_calls": [call("call_w1", "transfer_to_weather", {"task_description": "Weather in Paris"}),
                                                          call("call_n1", "transfer_to_news", {"task_description": "News in Paris"})]},
    {"role": "assistant", "content": "Paris is sunny today: 21 C."},
    {"role": "assistant", "content": "Paris news: the Seine is open for swimming."},
]
REPLIES_TWO_SAME = [
    {"role": "assistant", "content": None, "tool_calls": [call("call_w1", "transfer_to_weather", {"task_description": "Weather in Paris"}),
                                                          call("call_w2", "transfer_to_weather", {"task_description": "Weather in Rome"})]},
    {"role": "assistant", "content": "It is sunny there today: 21 C."},
    {"role": "assistant", "content": "It is cloudy there today: 17 C."},
]
REPLIES_BARE = [
    {"role": "assistant", "content": None, "tool_calls": [call("call_u1", "lookup_user", {"user": "mia"})]},
    {"role": "assistant", "content": None, "tool_calls": [call("call_h1", "transfer_to_weather", {})]},
    {"role": "assistant", "content": "Where do you live? Then I can tell you the weather."},
]
VARIANTS = {"two-send": (REPLIES_TWO_SEND, ASK), "two-send-joined": (REPLIES_TWO_SEND, ASK), "two-send-same": (REPLIES_TWO_SAME, ASK_SAME),
            "bare": (REPLIES_BARE, ASK_BARE)}


def edges_graph(fake: ScriptedOpenAI, log: Log, variant: str, answered: list[str]) -> Any:
    """The parent graph of `variant` (module docstring); each agent node that runs appends its name to `answered`."""
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import InjectedState, create_react_agent
    from langgraph.types import Command, Send

    @tool
    def lookup_user(user: str) -> str:
        """Where a user lives."""
        return log.run("lookup_user", {"user": user}, lambda: "mia lives in Paris")

    def send_tool(agent: str) -> Any:
        @tool(f"transfer_to_{agent}", description=f"Hand a task to the {agent} agent.")
        def send_to(task_description: str, state: Annotated[MessagesState, InjectedState]) -> Command:
            agent_input = {**state, "messages": [{"role": "user", "content": task_description}]}
            return log.run(f"transfer_to_{agent}", {"task_description": task_description},
                           lambda: Command(goto=[Send(agent, agent_input)], graph=Command.PARENT))
        return send_to

    @tool("transfer_to_weather", description="Hand the user over to the weather agent.")
    def bare_to_weather(state: Annotated[MessagesState, InjectedState]) -> Command:
        return log.run("transfer_to_weather", {}, lambda: Command(goto="weather", graph=Command.PARENT))

    def model() -> Any:
        return ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)

    two = variant.startswith("two-send")
    tools = [send_tool("weather"), send_tool("news")] if two else [lookup_user, bare_to_weather]
    triage = create_react_agent(model(), tools, name="triage", version="v1" if variant == "two-send-joined" else "v2")
    answerer = model()

    def agent_node(name: str) -> Any:
        def node(state: MessagesState) -> dict[str, Any]:
            answered.append(name)
            return {"messages": [answerer.invoke(state["messages"])]}
        return node

    agents = ("weather", "news") if two else ("weather",)
    g = StateGraph(MessagesState)
    g.add_node("triage", triage, destinations=agents)
    for name in agents:
        g.add_node(name, agent_node(name))
    g.add_edge(START, "triage")
    return g.compile()


def edge(kind: str, out: Path, variant: str) -> Any:
    name = f"{kind}-{variant}"
    log, answered = Log(), []
    replies, ask = VARIANTS[variant]

    def run(fake: ScriptedOpenAI, callbacks: Any) -> Any:
        config = {"callbacks": callbacks} if callbacks else None
        return edges_graph(fake, log, variant, answered).invoke({"messages": [{"role": "user", "content": ask}]}, config)

    state = recording(kind, name, out, replies, run)
    truth = record_truth(state, log, state.pop("_requests"), ask, state.pop("_seen"))
    write_truth(out, name, truth | {"answered_by": answered})
    return state["messages"][-1].content


SCENARIOS = {f"{k}-{v}": (lambda out, k=k, v=v: edge(k, out, v)) for v in VARIANTS for k in ("oi", "tl", "lf", "ml")}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
