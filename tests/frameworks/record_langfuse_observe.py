"""Record the Langfuse API traces behind `tests/test_langfuse_api_observe.py`.

    python tests/frameworks/record_langfuse_observe.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/langfuse-api-observe)

Each scenario runs the real Langfuse SDK (langfuse 5.2: it posts OTLP to the loopback fake server) in a process of its
own and writes `<scenario>.otlp.jsonl` (the OTLP the SDK sent: format `otel`), `<scenario>.json` (`GET
/api/public/traces/{id}`) and `<scenario>.v2.json` (`GET /api/public/v2/observations?traceId=…`), both built from that
OTLP by `langfuse_api.py` as Langfuse's server keeps it, and `<scenario>.truth.json` (what the application did).

- `lf-args`: an `@observe(as_type="agent")` order desk that asks no model and calls `@observe(as_type="tool")` functions
  as Python code does: positionally (`lookup_order("#W1")`), by keyword (`lookup_order(order_id="#W2")`), with no
  argument (`list_orders()`), a method mixing both (`ledger.refund("#W1", 12.5, reason="late")`: the SDK leaves `self`
  out), and `cancel_order(order_id="#W2")`, which raises (the SDK sets level ERROR and the exception as status message;
  the desk catches it); each tool takes 2 ms. Truth: each call's positional and keyword arguments as the code passed them, the arguments
  bound to the function's parameters, the result or the error, and the answer.
- `lf-manual`: the SDK's manual API (`start_as_current_observation`, v3 on) around a plain `openai` client: an `agent`
  observation holding a `generation` whose `usage_details` and `cost_details` the application sets from the response,
  one `tool` observation per call the model asked for (input the call's arguments, `metadata.tool_call_id`), of which
  `get_refund_status` fails (the application sets `level="ERROR"` and `status_message`, and sends the model an error
  text), a second generation that answers, and the agent's output. Truth: the requests, tokens and costs as set, the
  calls with their arguments, results and error, the answer.

Against the scripted loopback server of `record_oi_faults.py` (no network).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

DESK_QUESTION = "Where are my orders #W1 and #W2? Refund #W1 and cancel #W2."
MANUAL_QUESTION = "Is the refund for #W7 through, and where is parcel P-3?"
MANUAL_REPLIES = [
    {"role": "assistant", "content": None,
     "tool_calls": [call("call_m1", "get_refund_status", {"order_id": "#W7"}), call("call_m2", "track_parcel", {"parcel_id": "P-3"})]},
    {"role": "assistant", "content": "I could not reach the refund service for #W7; parcel P-3 is out for delivery."},
]
COSTS = [{"input": 0.000015, "output": 0.00006}, {"input": 0.000016, "output": 0.000066}]  # what the application priced each request at


def _files(out: Path, name: str, docs: list[dict[str, Any]], truth: dict[str, Any]) -> None:
    from langfuse_api import observations_v2, trace_with_full_details

    write_jsonl(out / f"{name}.otlp.jsonl", docs)
    write_jsonl(out / f"{name}.json", trace_with_full_details(docs))
    write_jsonl(out / f"{name}.v2.json", observations_v2(docs))
    write_truth(out, name, truth)


def args(out: Path) -> Any:
    import inspect

    from langfuse import Langfuse, observe

    ran: list[dict[str, Any]] = []

    def logged(fn: Callable[..., Any], name: str, positional: tuple[Any, ...], keyword: dict[str, Any], result: Any = None,
               error: str | None = None) -> None:
        time.sleep(0.002)  # each tool's round trip: calls in distinct milliseconds, so the order they ran is recorded
        bound = inspect.signature(fn).bind(*positional, **keyword)
        bound.apply_defaults()
        ran.append({"name": name, "positional": list(positional), "keyword": keyword,
                    "arguments": {k: v for k, v in bound.arguments.items() if k != "self"}, "result": result, "error": error})

    def lookup_order_fn(order_id: str) -> dict[str, str]:
        return {"order_id": order_id, "status": {"#W1": "delivered", "#W2": "packing"}[order_id]}

    @observe(name="lookup_order", as_type="tool")
    def lookup_order(*a: Any, **k: Any) -> dict[str, str]:
        result = lookup_order_fn(*a, **k)
        logged(lookup_order_fn, "lookup_order", a, k, result)
        return result

    @observe(name="list_orders", as_type="tool")
    def list_orders() -> list[str]:
        logged(list_orders, "list_orders", (), {}, ["#W1", "#W2"])
        return ["#W1", "#W2"]

    class Ledger:
        @observe(name="refund", as_type="tool")
        def refund(self, order_id: str, amount: float, reason: str = "damaged") -> str:
            result = f"refunded {amount} on {order_id} ({reason})"
            logged(Ledger.refund, "refund", (self, order_id, amount), {"reason": reason}, result)
            ran[-1]["positional"] = [order_id, amount]  # (as called: `self` is the method's own)
            return result

    def cancel_order_fn(order_id: str) -> str:
        raise RuntimeError(f"order {order_id} is already packed")

    @observe(name="cancel_order", as_type="tool")
    def cancel_order(*a: Any, **k: Any) -> str:
        try:
            return cancel_order_fn(*a, **k)
        except RuntimeError as exc:
            logged(cancel_order_fn, "cancel_order", a, k, error=str(exc))
            raise

    @observe(name="desk", as_type="agent")
    def desk(question: str) -> str:
        first = lookup_order("#W1")
        second = lookup_order(order_id="#W2")
        list_orders()
        refunded = Ledger().refund("#W1", 12.5, reason="late")
        try:
            cancel_order(order_id="#W2")
            cancelled = "#W2 is cancelled"
        except RuntimeError as exc:
            cancelled = f"#W2 could not be cancelled: {exc}"
        return f"#W1 is {first['status']}, #W2 is {second['status']}; {refunded}; {cancelled}."

    with ScriptedOpenAI([]) as fake:
        langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
        answer = desk(DESK_QUESTION)
        langfuse.flush()
        docs = fake.take_otlp()
        langfuse.shutdown()
    _files(out, "lf-args", docs, {"input": DESK_QUESTION, "calls": ran, "output": answer})
    return answer


def manual(out: Path) -> Any:
    from langfuse import Langfuse
    from openai import OpenAI

    tools = [{"type": "function", "function": {"name": n, "description": d, "parameters": {"type": "object", "properties": {p: {"type": "string"}},
                                                                                            "required": [p]}}}
             for n, d, p in (("get_refund_status", "Refund status of an order.", "order_id"), ("track_parcel", "Where a parcel is.", "parcel_id"))]

    def get_refund_status(order_id: str) -> str:
        raise ConnectionError("refund service unreachable")

    def track_parcel(parcel_id: str) -> str:
        return f"{parcel_id}: out for delivery"

    run = {"get_refund_status": get_refund_status, "track_parcel": track_parcel}
    ran: list[dict[str, Any]] = []
    requests: list[dict[str, Any]] = []
    with ScriptedOpenAI(MANUAL_REPLIES) as fake:
        langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        messages: list[dict[str, Any]] = [{"role": "system", "content": "You help with orders."}, {"role": "user", "content": MANUAL_QUESTION}]
        with langfuse.start_as_current_observation(as_type="agent", name="support", input=MANUAL_QUESTION) as agent:
            for n in range(2):
                with langfuse.start_as_current_observation(as_type="generation", name="chat", model=MODEL, input=list(messages),
                                                           model_parameters={"temperature": 0}) as gen:
                    resp = client.chat.completions.create(model=MODEL, messages=messages, tools=tools, temperature=0)
                    msg = resp.choices[0].message
                    usage = {"input": resp.usage.prompt_tokens, "output": resp.usage.completion_tokens}
                    gen.update(output=msg.model_dump(exclude_none=True), usage_details=usage, cost_details=COSTS[n])
                requests.append({"usage": usage, "cost": COSTS[n]})
                messages.append(msg.model_dump(exclude_none=True))
                if not msg.tool_calls:
                    break
                for tc in msg.tool_calls:
                    arguments = json.loads(tc.function.arguments)
                    with langfuse.start_as_current_observation(as_type="tool", name=tc.function.name, input=arguments,
                                                               metadata={"tool_call_id": tc.id}) as tool:
                        try:
                            result, error = run[tc.function.name](**arguments), None
                            tool.update(output=result)
                            sent = result
                        except ConnectionError as exc:
                            result, error = None, f"{type(exc).__name__}: {exc}"
                            tool.update(level="ERROR", status_message=error)
                            sent = f"Error: {error}"
                    ran.append({"id": tc.id, "name": tc.function.name, "arguments": arguments, "result": result, "error": error, "sent": sent})
                    messages.append({"role": "tool", "tool_call_id": tc.id, "content": sent})
            answer = msg.content
            agent.update(output=answer)
        langfuse.flush()
        docs = fake.take_otlp()
        langfuse.shutdown()
    truth = {"input": MANUAL_QUESTION, "requests": requests, "calls": ran, "output": answer,
             "tokens": {"input": sum(r["usage"]["input"] for r in requests), "output": sum(r["usage"]["output"] for r in requests)},
             "cost_usd": sum(v for r in requests for v in r["cost"].values())}
    _files(out, "lf-manual", docs, truth)
    return answer


SCENARIOS: dict[str, Callable[[Path], Any]] = {"lf-args": args, "lf-manual": manual}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
