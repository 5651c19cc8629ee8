"""Record a LangGraph run that fans out to agent runs with `Send`, behind `tests/test_langgraph_send.py`.

    python tests/frameworks/record_langgraph_send.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/langgraph-send)

A `StateGraph` whose state holds no messages, `{"cities": list, "reports": Annotated[list, operator.add]}`, is invoked
once with `{"cities": ["Paris", "Tokyo"], "reports": []}`. A conditional edge from START sends `Send("research",
{"city": c})` for each city, so the two `research` nodes run at once; each invokes a `create_react_agent` (tool
`get_weather`) with "Weather in <city>?" and returns its answer in `reports`. The scripted model asks `get_weather` for
the city, then answers "<city> is <weather>.". A `summarise` node, which asks no model, then adds the two reports
joined ("Paris is sunny, 21 C.; Tokyo is rainy, 14 C.") to `reports`: the last value of the state `invoke` returned.

The two agents' requests overlap, so the loopback server answers each by what it was asked (`Keyed`: the request's
first user text and how many assistant messages follow it), not by arrival order.

Scenarios `<kind>-send`, `kind` as in `record_langgraph_handoff.recording`: `oi` (OpenInference), `tl` (OpenLLMetry),
each `<scenario>.jsonl` (OTLP/JSON); `lf` (Langfuse's `CallbackHandler`) `lf-send.jsonl` (the OTLP the SDK sent) and
`lf-send.api.json` (`GET /api/public/traces/{id}` as `langfuse_api.trace_with_full_details` builds it from that OTLP);
`ml` (`mlflow.langchain.autolog()`) `ml-send.mlflow.jsonl` and `ml-send.otlp.jsonl`. Each writes
`<scenario>.truth.json`, the application's own values: the input the graph was invoked with, each agent's calls (id,
name, arguments) and the tool messages that answered them, every tool run, the model's requests, and the returned
state's `reports`. Each runs in its own process (instrumentors and autolog patch LangChain process-wide).
"""

import json
import operator
import sys
from pathlib import Path
from typing import Annotated, Any, TypedDict

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import record_langgraph_handoff as handoff  # noqa: E402
from common import MODEL, record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from record_langgraph_handoff import Log, SeenOpenAI  # noqa: E402
from record_oi_faults import call  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
INVOKED = {"cities": ["Paris", "Tokyo"], "reports": []}
# what the model answers "Weather in <city>?" with, by how many replies it already gave in that conversation
TABLE = {f"Weather in {c}?": [{"role": "assistant", "content": None, "tool_calls": [call(f"call_{c[0]}", "get_weather", {"city": c})]},
                              {"role": "assistant", "content": f"{c} is {WEATHER[c]}."}] for c in WEATHER}


class Keyed(SeenOpenAI):
    """The loopback server answering a chat request by its first user text and the assistant messages after it (`TABLE`)."""

    def __init__(self, replies: list[Any]) -> None:
        super().__init__([])
        self.served: list[dict[str, Any]] = []

    def _next(self) -> tuple[int, Any]:
        raise AssertionError("Keyed answers by content")  # (never by arrival order)

    async def _chat(self, request: Any) -> Any:
        from aiohttp import web

        messages = (await request.json()).get("messages") or []
        self.sent.append(messages)
        n, self.n = self.n, self.n + 1
        asked = next(m["content"] for m in messages if m["role"] == "user")
        msg = TABLE[asked][sum(1 for m in messages if m["role"] == "assistant")]
        self.served.append(msg)
        usage = {"prompt_tokens": 100 + n, "completion_tokens": 10 + n, "total_tokens": 110 + 2 * n}
        finish = "tool_calls" if msg.get("tool_calls") else "stop"
        return web.json_response({"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1767225600, "model": MODEL,
                                  "choices": [{"index": 0, "message": msg, "finish_reason": finish, "logprobs": None}], "usage": usage})


def graph(fake: Keyed, log: Log, agents: dict[str, Any]) -> Any:
    """The fan-out graph (module docstring); each agent's final state goes into `agents` by city."""
    import warnings

    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    warnings.simplefilter("ignore")  # (create_react_agent's deprecation notice)
    from langgraph.prebuilt import create_react_agent

    class State(TypedDict):
        cities: list
        reports: Annotated[list, operator.add]

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return log.run("get_weather", {"city": city}, lambda: WEATHER[city])

    agent = create_react_agent(ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0), [get_weather])

    def research(task: dict[str, Any]) -> dict[str, Any]:
        state = agent.invoke({"messages": [{"role": "user", "content": f"Weather in {task['city']}?"}]})
        agents[task["city"]] = state
        return {"reports": [state["messages"][-1].content]}

    def summarise(state: State) -> dict[str, Any]:
        return {"reports": ["; ".join(sorted(state["reports"]))]}

    g = StateGraph(State)
    g.add_node("research", research)
    g.add_node("summarise", summarise)
    g.add_conditional_edges(START, lambda s: [Send("research", {"city": c}) for c in s["cities"]], ["research"])
    g.add_edge("research", "summarise")
    g.add_edge("summarise", END)
    return g.compile()


def send(kind: str, out: Path) -> Any:
    name = f"{kind}-send"
    log = Log()
    agents: dict[str, Any] = {}

    def run(fake: Keyed, callbacks: Any) -> Any:
        return graph(fake, log, agents).invoke(json.loads(json.dumps(INVOKED)), {"callbacks": callbacks} if callbacks else None)

    handoff.SeenOpenAI, seen = Keyed, handoff.SeenOpenAI  # (`recording` starts the server it names)
    try:
        state = handoff.recording(kind, name, out, [], run)
    finally:
        handoff.SeenOpenAI = seen
    fake = state.pop("_seen")
    if kind == "lf":
        from langfuse_api import trace_with_full_details

        docs = [json.loads(line) for line in (out / f"{name}.jsonl").read_text().splitlines() if line.strip()]
        write_jsonl(out / f"{name}.api.json", trace_with_full_details(docs))
    write_truth(out, name, {
        "invoked": INVOKED, "requests": state.pop("_requests"), "tool_runs": log.runs,
        "model_calls": [{"id": c["id"], "name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
                        for reply in fake.served for c in reply.get("tool_calls") or []],
        "agents": {city: {"asked": st["messages"][0].content,
                          "calls": [{"id": c["id"], "name": c["name"], "arguments": c["args"]} for m in st["messages"] if m.type == "ai" for c in m.tool_calls],
                          "tool_messages": [{"tool_call_id": m.tool_call_id, "name": m.name, "content": m.content, "status": m.status}
                                            for m in st["messages"] if m.type == "tool"],
                          "answer": st["messages"][-1].content} for city, st in sorted(agents.items())},
        "reports": state["reports"]})
    return state["reports"][-1]


SCENARIOS = {f"{k}-send": (lambda out, k=k: send(k, out)) for k in ("oi", "tl", "lf", "ml")}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
