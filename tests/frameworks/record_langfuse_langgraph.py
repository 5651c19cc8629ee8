"""Record the Langfuse API traces of a LangGraph agent behind `tests/test_langfuse_api_langgraph.py`.

    python tests/frameworks/record_langfuse_langgraph.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/langfuse-api-langgraph)

Scenario `lf-react`: `create_react_agent` with `ToolNode([get_weather, cancel_order], handle_tool_errors=<text>)`, traced
by Langfuse's LangChain `CallbackHandler` (langfuse 5.2: the SDK posts OTLP to the fake server). The scripted model asks
`get_weather` (Paris), `cancel_order` (#W1, which raises; ToolNode answers with the handler's text, `status: "error"`)
and `get_wether` (no such tool; ToolNode answers "Error: get_wether is not a valid tool…" without running anything) in
one reply, then answers. Writes `lf-react.otlp.jsonl` (the OTLP the SDK sent), `lf-react.json` (the trace as `GET
/api/public/traces/{id}` returns it) and `lf-react.v2.json` (`GET /api/public/v2/observations?traceId=…`), both built by
`langfuse_api.py` from that OTLP as Langfuse's server keeps it (each observation's `metadata`: the SDK's
`langfuse.observation.metadata.<key>` attributes as `<key>`, JSON-decoded, beside `resourceAttributes` and `scope`; in v2
flattened to dotted paths), and `lf-react.truth.json` (`record_langgraph_handoff.record_truth`). Runs in its own process
against the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`; no network).
"""

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from record_langgraph_handoff import Log, record_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

ASK = "Weather in Paris and Tokyo? And cancel my order #W1."
HANDLED = "The order service is down; tell the user to try again later."
REPLIES = [
    {"role": "assistant", "content": None, "tool_calls": [call("call_r1", "get_weather", {"city": "Paris"}),
                                                          call("call_r2", "cancel_order", {"order_id": "#W1"}),
                                                          call("call_r3", "get_wether", {"city": "Tokyo"})]},
    {"role": "assistant", "content": "Paris is sunny (21 C); I could not check Tokyo or cancel #W1 just now."},
]


def react(out: Path) -> Any:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langfuse import Langfuse
    from langfuse.langchain import CallbackHandler
    from langfuse_api import observations_v2, trace_with_full_details
    from langgraph.prebuilt import ToolNode, create_react_agent

    log = Log()

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return log.run("get_weather", {"city": city}, lambda: {"Paris": "sunny, 21 C"}[city])

    @tool
    def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        def unreachable() -> str:
            raise ConnectionError("order service unreachable")
        return log.run("cancel_order", {"order_id": order_id}, unreachable)

    with ScriptedOpenAI(REPLIES) as fake:
        langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
        model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        agent = create_react_agent(model, ToolNode([get_weather, cancel_order], handle_tool_errors=HANDLED), prompt="Help.")
        state = agent.invoke({"messages": [{"role": "user", "content": ASK}]}, {"callbacks": [CallbackHandler()]})
        langfuse.flush()
        docs = fake.take_otlp()
        langfuse.shutdown()
        requests = fake.n
    write_jsonl(out / "lf-react.otlp.jsonl", docs)
    write_jsonl(out / "lf-react.json", trace_with_full_details(docs))
    write_jsonl(out / "lf-react.v2.json", observations_v2(docs))
    write_truth(out, "lf-react", record_truth(state, log, requests, ASK))
    return state["messages"][-1].content


SCENARIOS = {"lf-react": react}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
