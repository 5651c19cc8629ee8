"""Record the Agents SDK handoffs behind `tests/test_agents_handoff_faults.py`, with the installed libraries.

    python tests/frameworks/record_agents_handoff_faults.py OUTDIR [RECORDING ...]   (OUTDIR: tests/data/agents-handoff-faults)

Each scenario (`SCENARIOS`) runs the real OpenAI Agents SDK against the project's scripted loopback server
(`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network), under OpenInference's
`OpenAIAgentsInstrumentor` and the SDK's own export at once (`common.agents_recording`), and writes
`oi-<s>.jsonl` (OTLP/JSON, format `otel`), `export-<s>.jsonl` (`{"trace", "spans"}` per trace, format
`openai-agents`) and `<s>.truth.json`: what the application saw — each function tool's run (name, arguments,
result), each handoff's `on_handoff` that the SDK invoked, the items `Runner.run` returned (every call and the
output the model was sent for it) or the exception it raised, the final output and how many requests it made.

- `two_handoffs`: the triage agent's one reply asks for two handoffs (`transfer_to_weather`, `transfer_to_news`); the
  SDK runs the first and answers the second "Multiple handoffs detected, ignoring this one."; the weather agent answers;
- `handoff_raises`: one reply calls `get_weather` (Paris) and `transfer_to_weather`, whose `on_handoff` raises
  `RuntimeError("weather desk is closed")`: the tool ran, the handoff failed, the run raised;
- `handoff_bad_args`: the same reply, the handoff taking an `input_type` and the model's arguments not JSON
  (`{"reason": 5`): `ModelBehaviorError` out of the run, the SDK marking only the handoff span ("Invalid JSON
  provided");
- `handoff_bad_args_responses`: `handoff_bad_args` with the Responses API (the SDK's default model), whose export
  keeps no request output.
- `handoff_recovered`: the `handoff_raises` reply, the handoff with a `failure_error_function` (SDK 0.25.0 on): the model is
  sent its text as the call's output, Triage stays and answers.

`mlflow-<s>` (for `two_handoffs`, `handoff_raises`, `handoff_bad_args`) runs the same scenario with the Responses API
under `mlflow.openai.autolog()` (MLflow's own Agents SDK tracing processor; `run_mlflow._configure`: a SQLite store in a
temporary folder, OTLP dual export to the fake server) and writes `mlflow-<s>.mlflow.jsonl` (`Trace.to_json()`, format
`mlflow`), `mlflow-<s>.otlp.jsonl` (the same spans over OTLP, format `otel`) and `mlflow-<s>.truth.json`. Each
recording runs in a subprocess of its own (instrumentors patch the SDK process-wide).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

FRAMEWORKS = Path(__file__).resolve().parent
OUT = FRAMEWORKS.parent / "data" / "agents-handoff-faults"
sys.path.insert(0, str(FRAMEWORKS))

from common import agents_recording, record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from record_oi_faults import MODEL, ScriptedOpenAI, call  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C"}
QUESTION = "What is the weather in Paris?"
ANSWER = "Paris is sunny, 21 C."
BAD_ARGS = {"id": "call_h1", "type": "function", "function": {"name": "transfer_to_weather", "arguments": '{"reason": 5'}}
TOOL_AND_HANDOFF = [call("call_t1", "get_weather", {"city": "Paris"}), call("call_h1", "transfer_to_weather", {})]
# scenario: (the chat replies, the API)
SCENARIOS: dict[str, tuple[list[dict[str, Any]], str]] = {
    "two_handoffs": ([{"role": "assistant", "content": None, "tool_calls": [call("call_h1", "transfer_to_weather", {}), call("call_h2", "transfer_to_news", {})]},
                      {"role": "assistant", "content": ANSWER}], "chat_completions"),
    "handoff_raises": ([{"role": "assistant", "content": None, "tool_calls": TOOL_AND_HANDOFF}], "chat_completions"),
    "handoff_bad_args": ([{"role": "assistant", "content": None, "tool_calls": [TOOL_AND_HANDOFF[0], BAD_ARGS]}], "chat_completions"),
    "handoff_bad_args_responses": ([{"role": "assistant", "content": None, "tool_calls": [TOOL_AND_HANDOFF[0], BAD_ARGS]}], "responses"),
    "handoff_recovered": ([{"role": "assistant", "content": None, "tool_calls": TOOL_AND_HANDOFF},
                           {"role": "assistant", "content": ANSWER}], "chat_completions"),
}
RECOVERED = "The weather desk could not take over: {error}"  # handoff_recovered's failure_error_function (SDK 0.25.0 on)


def _responses_output(msg: dict[str, Any]) -> list[dict[str, Any]]:
    """A chat reply as the `output` items of a Responses API response."""
    items = [{"type": "function_call", "id": f"fc_{c['id']}", "call_id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"],
              "status": "completed"} for c in msg.get("tool_calls") or []]
    if msg.get("content"):
        items.append({"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                      "content": [{"type": "output_text", "text": msg["content"], "annotations": []}]})
    return items


def _agent(name: str, ran: list[dict[str, Any]], handed: list[str]) -> Any:
    from agents import Agent, function_tool, handoff
    from pydantic import BaseModel

    def get_weather(city: str) -> str:
        """Weather in a city."""
        ran.append({"name": "get_weather", "arguments": {"city": city}, "result": WEATHER[city]})
        return WEATHER[city]

    def invoked(agent: str) -> Any:
        def on_handoff(ctx: Any) -> None:
            handed.append(agent)
            if name in ("handoff_raises", "handoff_recovered"):
                raise RuntimeError("weather desk is closed")
        return on_handoff

    class Why(BaseModel):
        reason: str

    async def noted(ctx: Any, why: Why) -> None:
        handed.append("Weather")

    tool = function_tool(get_weather, strict_mode=False)
    weather = Agent(name="Weather", instructions="Weather.", tools=[tool], model=MODEL)
    news = Agent(name="News", instructions="News.", model=MODEL)
    if name == "two_handoffs":
        return Agent(name="Triage", instructions="Route.", model=MODEL,
                     handoffs=[handoff(weather, on_handoff=invoked("Weather")), handoff(news, on_handoff=invoked("News"))])
    if name == "handoff_recovered":  # the failure goes to the model as the call's output; Triage stays and answers
        to_weather = handoff(weather, on_handoff=invoked("Weather"), failure_error_function=lambda ctx, error: RECOVERED.format(error=error))
    elif name.startswith("handoff_bad_args"):
        to_weather = handoff(weather, on_handoff=noted, input_type=Why)
    else:
        to_weather = handoff(weather, on_handoff=invoked("Weather"))
    return Agent(name="Triage", instructions="Route.", tools=[tool], handoffs=[to_weather], model=MODEL)


def _item(item: Any) -> dict[str, Any]:
    raw = item.raw_item
    raw = raw.model_dump(exclude_none=True) if hasattr(raw, "model_dump") else dict(raw)
    return {"item": type(item).__name__, **{k: raw[k] for k in ("call_id", "name", "arguments", "output") if k in raw}}


def record(name: str, out: Path) -> dict[str, Any]:
    from agents import Runner

    chat, api = SCENARIOS[name]
    replies = chat if api == "chat_completions" else [_responses_output(m) for m in chat]
    ran: list[dict[str, Any]] = []
    handed: list[str] = []
    out.mkdir(parents=True, exist_ok=True)
    with ScriptedOpenAI(replies) as fake, agents_recording(fake, out, name, api=api):
        try:
            result = asyncio.run(Runner.run(_agent(name, ran, handed), QUESTION))
            truth: dict[str, Any] = {"final_output": result.final_output, "last_agent": result.last_agent.name,
                                     "items": [_item(i) for i in result.new_items if hasattr(i, "raw_item") and type(i).__name__ != "MessageOutputItem"]}
        except Exception as exc:  # the run's own failure is the scenario
            truth = {"raised": f"{type(exc).__name__}: {exc}", "final_output": None}
        truth.update(input=QUESTION, requests=fake.n, tool_runs=ran, handoffs_invoked=handed, api=api)
    write_truth(out, name, truth)
    return truth


def record_mlflow(name: str, out: Path) -> dict[str, Any]:
    """`mlflow-<name>` (module docstring)."""
    import tempfile

    from run_mlflow import _clean, _configure

    chat, _ = SCENARIOS[name]
    ran: list[dict[str, Any]] = []
    handed: list[str] = []
    with ScriptedOpenAI([_responses_output(m) for m in chat]) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store)
        from agents import Runner, set_default_openai_client
        from mlflow.tracing.provider import provider
        from openai import AsyncOpenAI

        set_default_openai_client(AsyncOpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0), use_for_tracing=False)
        try:
            result = asyncio.run(Runner.run(_agent(name, ran, handed), QUESTION))
            truth: dict[str, Any] = {"final_output": result.final_output, "last_agent": result.last_agent.name,
                                     "items": [_item(i) for i in result.new_items if hasattr(i, "raw_item") and type(i).__name__ != "MessageOutputItem"]}
        except Exception as exc:  # the run's own failure is the scenario
            truth = {"raised": f"{type(exc).__name__}: {exc}", "final_output": None}
        truth.update(input=QUESTION, requests=fake.n, tool_runs=ran, handoffs_invoked=handed, api="responses")
        traces = sorted(mlflow.search_traces(return_type="list"), key=lambda t: t.info.request_time)
        write_jsonl(out / f"mlflow-{name}.mlflow.jsonl", [_clean(t.to_json(), store) for t in traces])
        provider.get().force_flush()
        write_jsonl(out / f"mlflow-{name}.otlp.jsonl", fake.take_otlp())
    write_truth(out, f"mlflow-{name}", truth)
    return truth


RECORDINGS = {**{n: (lambda out, n=n: record(n, out)) for n in SCENARIOS},
              **{f"mlflow-{n}": (lambda out, n=n: record_mlflow(n, out)) for n in ("two_handoffs", "handoff_raises", "handoff_bad_args", "handoff_recovered")}}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], RECORDINGS))
