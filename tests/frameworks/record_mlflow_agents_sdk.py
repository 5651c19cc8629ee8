"""Record OpenAI Agents SDK runs under `mlflow.openai.autolog()`, read by `tests/test_mlflow_agents_sdk.py`.

    python tests/frameworks/record_mlflow_agents_sdk.py OUTDIR [SCENARIO ...]     (OUTDIR: tests/data/mlflow-agents-sdk)

Each scenario runs in its own subprocess (autolog patches the SDK process-wide) with the Chat Completions API against
the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network), under
MLflow's own Agents SDK tracing processor (`run_mlflow._configure`: a SQLite store in a temporary folder, OTLP dual
export to the fake server), and writes `OUTDIR/<scenario>.mlflow.jsonl` (the traces as `Trace.to_json()` writes
them), `OUTDIR/<scenario>.otlp.jsonl` (the same spans over OTLP) and `OUTDIR/<scenario>.truth.json`: what the
application saw (its input and questions, each call's arguments and the output the model was sent for it, or the
error its tool raised, the run's final output, or the exception the run raised). Scenarios (`SCENARIOS`):

- `filtered_handoffs`: Triage hands off to Billing, Billing to Refunds, each handoff with
  `input_filter=handoff_filters.remove_all_tools` (the next agent is sent no trace of the transfer); Refunds calls
  `lookup` and answers;
- `nested_history`: Triage hands off to Weather under `RunConfig(nest_handoff_history=True)` (the history goes to
  Weather summarised in one message); Weather calls `get_weather` and answers;
- `custom_failure`: `lookup` raises, its `failure_error_function` gives the model its own text; the model answers;
- `failure_none`: `lookup` raises under `failure_error_function=None`: the run raises `UserError`;
- `invalid_output_handler`: an `output_type` agent whose model answers text that is no JSON; the run's
  `error_handlers={"invalid_final_output": …}` makes the final output;
- `two_runs`: two `Runner.run`s (two agents, two questions) inside one `trace("Two tasks")`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, record_each_in_subprocess  # noqa: E402
from record_mlflow_agents import _write  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402
from run_mlflow import _configure  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C"}
QUESTION = "What is the weather in Paris?"
ORDER_Q = "Where is order bad?"
REFUND_Q = "Refund order A1?"
SECOND_Q = "Where is order A1?"
NO_ORDER = "no such order"


def _chat(text: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": text, **({"tool_calls": list(calls)} if calls else {})}


# scenario: (the chat replies, the first question)
REPLIES: dict[str, tuple[list[dict[str, Any]], str]] = {
    "filtered_handoffs": ([_chat(None, call("call_h1", "transfer_to_billing", {})), _chat(None, call("call_h2", "transfer_to_refunds", {})),
                           _chat(None, call("call_l1", "lookup", {"order": "A1"})), _chat("Order A1 shipped; no refund needed.")], REFUND_Q),
    "nested_history": ([_chat(None, call("call_h1", "transfer_to_weather", {})), _chat(None, call("call_w1", "get_weather", {"city": "Paris"})),
                        _chat("Paris is sunny, 21 C.")], QUESTION),
    "custom_failure": ([_chat(None, call("call_l1", "lookup", {"order": "bad"})), _chat("Sorry, no such order.")], ORDER_Q),
    "failure_none": ([_chat(None, call("call_l1", "lookup", {"order": "bad"}))], ORDER_Q),
    "invalid_output_handler": ([_chat(None, call("call_w1", "get_weather", {"city": "Paris"})), _chat("not json")], QUESTION),
    "two_runs": ([_chat(None, call("call_w1", "get_weather", {"city": "Paris"})), _chat("Paris is sunny."),
                  _chat(None, call("call_l1", "lookup", {"order": "A1"})), _chat("A1 shipped.")], QUESTION),
}


async def _run(name: str, ran: list[dict[str, Any]], filtered: list[Any]) -> list[Any]:
    """Run scenario `name`; its `RunResult`s, in order. `filtered` gets the items each handoff's `input_filter` took out
    (the transfer message is among them: the run's result no longer holds it)."""
    from agents import Agent, RunConfig, Runner, function_tool, handoff, trace
    from agents.extensions import handoff_filters
    from pydantic import BaseModel

    class Forecast(BaseModel):
        city: str
        summary: str

    def get_weather(city: str) -> str:
        """Weather in a city."""
        ran.append({"name": "get_weather", "arguments": {"city": city}, "result": WEATHER[city]})
        return WEATHER[city]

    def lookup(order: str) -> str:
        """Look up an order."""
        if order == "bad":
            ran.append({"name": "lookup", "arguments": {"order": order}, "error": NO_ORDER})
            raise ValueError(NO_ORDER)
        ran.append({"name": "lookup", "arguments": {"order": order}, "result": f"order {order}: shipped"})
        return f"order {order}: shipped"

    weather = function_tool(get_weather, strict_mode=False)
    orders = function_tool(lookup, strict_mode=False)
    question = REPLIES[name][1]
    def remove_all_tools(data: Any) -> Any:
        filtered.extend(data.new_items)
        return handoff_filters.remove_all_tools(data)

    if name == "filtered_handoffs":
        refunds = Agent(name="Refunds", instructions="Refunds.", tools=[orders], model=MODEL)
        billing = Agent(name="Billing", instructions="Billing.", model=MODEL, handoffs=[handoff(refunds, input_filter=remove_all_tools)])
        triage = Agent(name="Triage", instructions="Route.", model=MODEL, handoffs=[handoff(billing, input_filter=remove_all_tools)])
        return [await Runner.run(triage, question)]
    if name == "nested_history":
        triage = Agent(name="Triage", instructions="Route.", model=MODEL, handoffs=[Agent(name="Weather", instructions="Weather.", tools=[weather], model=MODEL)])
        return [await Runner.run(triage, question, run_config=RunConfig(nest_handoff_history=True))]
    if name in ("custom_failure", "failure_none"):
        failure: Any = (lambda ctx, e: f"Lookup failed: {e}") if name == "custom_failure" else None
        tool = function_tool(lookup, strict_mode=False, failure_error_function=failure)
        return [await Runner.run(Agent(name="Orders", instructions="Orders.", tools=[tool], model=MODEL), question)]
    if name == "invalid_output_handler":
        agent = Agent(name="Forecaster", instructions="Forecast.", tools=[weather], model=MODEL, output_type=Forecast)
        return [await Runner.run(agent, question, error_handlers={"invalid_final_output": lambda data: Forecast(city="?", summary="unknown")})]
    with trace("Two tasks"):  # two_runs
        first = await Runner.run(Agent(name="Weather", instructions="Weather.", tools=[weather], model=MODEL), question)
        return [first, await Runner.run(Agent(name="Orders", instructions="Orders.", tools=[orders], model=MODEL), SECOND_Q)]


def _calls(name: str, items: list[Any], ran: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every call the model made, in order: its name and arguments, and the output the run made for it (`items`: the
    run's and those a handoff's filter took out; a handoff's is the SDK's transfer message), and the error its tool raised."""
    sent = {}
    for item in items:
        raw = item.raw_item if hasattr(item, "raw_item") else None
        raw = raw.model_dump(exclude_none=True) if hasattr(raw, "model_dump") else raw
        if isinstance(raw, dict) and "output" in raw and "call_id" in raw:
            sent[raw["call_id"]] = raw["output"]
    errors = {json.dumps(r["arguments"], sort_keys=True): r["error"] for r in ran if "error" in r}
    out = []
    for reply in REPLIES[name][0]:
        for c in reply.get("tool_calls") or []:
            arguments = json.loads(c["function"]["arguments"])
            got: dict[str, Any] = {"id": c["id"], "name": c["function"]["name"], "arguments": arguments, "result": sent.get(c["id"])}
            if (error := errors.get(json.dumps(arguments, sort_keys=True))) is not None:
                got["error"] = error
            out.append(got)
    return out


def record(out: Path, name: str) -> dict[str, Any]:
    """Record scenario `name` into `out` (module docstring); returns its truth."""
    ran: list[dict[str, Any]] = []
    with ScriptedOpenAI(REPLIES[name][0]) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store)
        from agents import set_default_openai_api, set_default_openai_client
        from openai import AsyncOpenAI

        set_default_openai_client(AsyncOpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0), use_for_tracing=False)
        set_default_openai_api("chat_completions")
        questions = [REPLIES[name][1]] + ([SECOND_Q] if name == "two_runs" else [])
        truth: dict[str, Any] = {"input": questions[0], "user_turns": questions}
        filtered: list[Any] = []
        try:
            results = asyncio.run(_run(name, ran, filtered))
            final = results[-1].final_output
            # (a structured final output as the JSON text of its value)
            truth.update(output=final if isinstance(final, str) else json.dumps(final.model_dump()), last_agent=results[-1].last_agent.name)
        except Exception as exc:  # the run's own failure is the scenario
            results = []
            truth.update(output=None, raised=f"{type(exc).__name__}: {exc}")
        truth.update(calls=_calls(name, filtered + [i for r in results for i in r.new_items], ran), requests=fake.n)
        return _write(out, name, mlflow, fake, store, truth)


SCENARIOS = {n: (lambda out, n=n: record(out, n)) for n in REPLIES}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(HERE.parent / "data" / "mlflow-agents-sdk")], SCENARIOS))
