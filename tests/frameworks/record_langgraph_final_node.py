"""Record LangGraph runs whose last node is no model request, behind `tests/test_langgraph_final_node.py`.

    python tests/frameworks/record_langgraph_final_node.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/langgraph-final-node)

Asked "Weather in Paris and Tokyo?", the model asks `get_weather` for both cities in one reply, then answers "Paris is
sunny; Tokyo is rainy."; after it a node `sign` that asks no model adds `AIMessage(<that answer> + " -- WeatherBot")`,
which is the last message of the state `invoke` returns: what the graph answered. Two graph shapes:

- `flat`: a `StateGraph(MessagesState)` of nodes `agent` (the model, tools bound), `tools` (`ToolNode`) and `sign`
  (`tools_condition` sends the answer to `sign`);
- `subgraph`: a `create_react_agent` is the parent graph's node `research`, followed by `sign`.

Scenarios `<oi|tl>-sign-<shape>`: OpenInference's `LangChainInstrumentor` / OpenLLMetry's `LangchainInstrumentor`,
each writing `<scenario>.jsonl` (OTLP/JSON) and `<scenario>.truth.json` (`record_langgraph_handoff.record_truth`), in a
process of its own against the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`; no network).
"""

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, record_each_in_subprocess, write_truth  # noqa: E402
from record_langgraph_handoff import Log, record_truth, recording  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

ASK = "Weather in Paris and Tokyo?"
REPLIES = [
    {"role": "assistant", "content": None, "tool_calls": [call("call_p", "get_weather", {"city": "Paris"}), call("call_t", "get_weather", {"city": "Tokyo"})]},
    {"role": "assistant", "content": "Paris is sunny; Tokyo is rainy."},
]


def graph(fake: ScriptedOpenAI, log: Log, shape: str) -> Any:
    """The compiled graph of `shape` (module docstring)."""
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, create_react_agent, tools_condition

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return log.run("get_weather", {"city": city}, lambda: {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}[city])

    def sign(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(state["messages"][-1].content + " -- WeatherBot")]}

    model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)
    g = StateGraph(MessagesState)
    g.add_node("sign", sign)
    g.add_edge("sign", END)
    if shape == "flat":
        bound = model.bind_tools([get_weather])
        g.add_node("agent", lambda state: {"messages": [bound.invoke(state["messages"])]})
        g.add_node("tools", ToolNode([get_weather]))
        g.add_edge(START, "agent")
        g.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: "sign"})
        g.add_edge("tools", "agent")
    else:
        g.add_node("research", create_react_agent(model, [get_weather]))
        g.add_edge(START, "research")
        g.add_edge("research", "sign")
    return g.compile()


def signed(kind: str, shape: str, out: Path) -> Any:
    name = f"{kind}-sign-{shape}"
    log = Log()

    def run(fake: ScriptedOpenAI, callbacks: Any) -> Any:
        return graph(fake, log, shape).invoke({"messages": [{"role": "user", "content": ASK}]})

    state = recording(kind, name, out, REPLIES, run)
    write_truth(out, name, record_truth(state, log, state.pop("_requests"), ASK))
    return state["messages"][-1].content


SCENARIOS = {f"{k}-sign-{s}": (lambda out, k=k, s=s: signed(k, s, out)) for s in ("flat", "subgraph") for k in ("oi", "tl")}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
