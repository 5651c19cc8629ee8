"""Record the Langfuse API traces behind `tests/test_langfuse_api_ties.py` and `tests/test_langfuse_api_threads.py`.

    python tests/frameworks/record_langfuse_api_faults.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/langfuse-api-faults)

Each scenario runs the real Langfuse SDK (langfuse 5.2: it posts OTLP to the loopback fake server) in a process of its
own and writes `<scenario>.otlp.jsonl` (the OTLP the SDK sent: format `otel`), `<scenario>.json` (`GET
/api/public/traces/{id}`, one trace per line) and `<scenario>.v2.json` (`GET /api/public/v2/observations?traceId=…`),
both built from that OTLP by `langfuse_api.py` as Langfuse's server keeps it (times in milliseconds, observations in the
server's list order), and `<scenario>.truth.json` (what the application did).

- `lf-ties`: an `@observe(as_type="agent")` order desk that asks no model: it calls `lookup_order` (returns at once),
  then `fetch_invoice` (a 4 ms call), then `send_receipt`, each `@observe(as_type="tool")`. The run starts just after a
  millisecond begins, so the agent, `lookup_order` and `fetch_invoice` start in the same millisecond, as fast code
  does; the recording kept is one where the span ids of `lookup_order` and `fetch_invoice` sort against the order they
  ran (an order by id reads them the wrong way round). Truth: the calls in the order they ran.
- `lf-thread`: `create_react_agent` with a `MemorySaver` checkpointer, traced by Langfuse's LangChain `CallbackHandler`
  (which sets no `sessionId`; it keeps LangGraph's `thread_id` as trace metadata). Invoked on thread `thread-42` ("Is it
  sunny in Paris?"), then on `thread-99` ("Say hello in French."), then on `thread-42` again ("And in Tokyo?", the
  checkpointer giving it the thread's history): three traces. Truth: per thread its turns (the user text, the calls
  with the arguments the model sent and the result, the answer), in order, with its trace ids.

Against the scripted loopback server of `record_oi_faults.py` (no network).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otlp_spans, record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from fake_openai import FakeOpenAI  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

QUESTION = "Where is my order #W1, and send me its invoice."
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
THREAD_REPLIES = [
    {"role": "assistant", "content": None, "tool_calls": [call("call_p1", "get_weather", {"city": "Paris"})]},
    {"role": "assistant", "content": "Yes: it is sunny in Paris, 21 C."},
    {"role": "assistant", "content": "Bonjour !"},
    {"role": "assistant", "content": None, "tool_calls": [call("call_t1", "get_weather", {"city": "Tokyo"})]},
    {"role": "assistant", "content": "No, it is rainy in Tokyo, 14 C."},
]
THREAD_TURNS = [("thread-42", "Is it sunny in Paris?"), ("thread-99", "Say hello in French."), ("thread-42", "And in Tokyo?")]


def _files(out: Path, name: str, docs: list[dict[str, Any]], truth: dict[str, Any]) -> None:
    from langfuse_api import observations_v2, trace_with_full_details

    write_jsonl(out / f"{name}.otlp.jsonl", docs)
    write_jsonl(out / f"{name}.json", trace_with_full_details(docs))
    write_jsonl(out / f"{name}.v2.json", observations_v2(docs))
    write_truth(out, name, truth)


def _ties_shown(docs: list[dict[str, Any]]) -> bool:
    """Whether the agent, `lookup_order` and `fetch_invoice` started in one millisecond, the two tools' ids sorting against their order."""
    spans = {s["name"]: s for _, _, s in otlp_spans(docs)}
    started = {n: int(spans[n]["startTimeUnixNano"]) // 1_000_000 for n in ("agent", "lookup_order", "fetch_invoice")}
    return len(set(started.values())) == 1 and spans["fetch_invoice"]["spanId"] < spans["lookup_order"]["spanId"]


def ties(out: Path) -> Any:
    from langfuse import Langfuse, observe

    ran: list[dict[str, Any]] = []

    def logged(name: str, args: dict[str, Any], result: Any) -> Any:
        ran.append({"name": name, "arguments": args, "result": result})
        return result

    @observe(name="lookup_order", as_type="tool")
    def lookup_order(order_id: str) -> dict[str, str]:
        return logged("lookup_order", {"order_id": order_id}, {"order_id": order_id, "status": "delivered"})

    @observe(name="fetch_invoice", as_type="tool")
    def fetch_invoice(order_id: str) -> str:
        time.sleep(0.004)  # the billing service's round trip
        return logged("fetch_invoice", {"order_id": order_id}, f"invoice INV-1 for {order_id}")

    @observe(name="send_receipt", as_type="tool")
    def send_receipt(order_id: str, invoice: str) -> str:
        return logged("send_receipt", {"order_id": order_id, "invoice": invoice}, "sent")

    @observe(name="agent", as_type="agent")
    def agent(question: str) -> str:
        order = lookup_order("#W1")
        invoice = fetch_invoice("#W1")
        send_receipt("#W1", invoice)
        return f"Order #W1 is {order['status']}; {invoice} was sent to you."

    fake = FakeOpenAI()
    with fake:
        langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
        for attempt in range(200):
            ran.clear()
            while time.time_ns() % 1_000_000 > 50_000:  # start just after a millisecond begins
                pass
            answer = agent(QUESTION)
            langfuse.flush()
            docs = fake.take_otlp()
            if _ties_shown(docs):
                break
        else:
            raise RuntimeError("no run tied its starts with the ids against the order")
        langfuse.shutdown()
    _files(out, "lf-ties", docs, {"input": QUESTION, "calls": ran, "output": answer, "attempts": attempt + 1})
    return answer


def thread(out: Path) -> Any:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langfuse import Langfuse
    from langfuse.langchain import CallbackHandler
    from langgraph.checkpoint.memory import MemorySaver
    from langgraph.prebuilt import create_react_agent

    ran: list[dict[str, Any]] = []

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        ran.append({"name": "get_weather", "arguments": {"city": city}, "result": WEATHER[city]})
        return WEATHER[city]

    threads: dict[str, dict[str, Any]] = {}
    with ScriptedOpenAI(THREAD_REPLIES) as fake:
        langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
        model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        agent = create_react_agent(model, [get_weather], checkpointer=MemorySaver(), prompt="Help.")
        docs: list[dict[str, Any]] = []
        for key, question in THREAD_TURNS:
            ran.clear()
            asked = fake.n
            handler = CallbackHandler()
            state = agent.invoke({"messages": [{"role": "user", "content": question}]},
                                 {"configurable": {"thread_id": key}, "callbacks": [handler]})
            langfuse.flush()
            docs += fake.take_otlp()
            turn = {"user": question, "calls": list(ran), "answer": state["messages"][-1].content, "requests": fake.n - asked}
            entry = threads.setdefault(key, {"thread_id": key, "traces": [], "turns": []})
            entry["traces"].append(handler.last_trace_id)
            entry["turns"].append(turn)
        langfuse.shutdown()
    _files(out, "lf-thread", docs, {"threads": list(threads.values())})
    return [t["turns"][-1]["answer"] for t in threads.values()]


SCENARIOS: dict[str, Callable[[Path], Any]] = {"lf-ties": ties, "lf-thread": thread}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
