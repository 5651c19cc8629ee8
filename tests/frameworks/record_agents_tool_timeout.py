"""Record the Agents SDK runs behind `tests/test_agents_tool_timeout.py`: a function tool that runs out of its `timeout`.

    python tests/frameworks/record_agents_tool_timeout.py [OUTDIR] [--only SCENARIO ...] [--openllmetry]

(OUTDIR: tests/data/agents-tool-timeout.) Each scenario (`SCENARIOS`) runs the real OpenAI Agents SDK (0.24.0) against
the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network), in a
subprocess of its own. Without `--openllmetry` it is recorded at once by OpenInference's `OpenAIAgentsInstrumentor`
(`oi-<s>.jsonl`, format `otel`) and the SDK's own export (`export-<s>.jsonl`, format `openai-agents`); with it, by
OpenLLMetry's `opentelemetry-instrumentation-openai-agents` alone (`tl-<s>.jsonl`, recorded with 0.62.4; not among
the test requirements), the outcome checked against the truth.

`lookup_order` is `function_tool(timeout=0.3)` and sleeps 5 s: the SDK cancels it. `<s>.truth.json` is what the
application saw: for each call its arguments, the output the SDK sent the model, and as its error the SDK's timeout
message when the tool's body was cancelled (the tool notes it) — under the default `timeout_behavior=
"error_as_result"` the SDK sends that message as the output, raises nothing and records no error; the run's
`final_output`, or what `Runner.run` raised.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

FRAMEWORKS = Path(__file__).resolve().parent
OUT = FRAMEWORKS.parent / "data" / "agents-tool-timeout"
sys.path.insert(0, str(FRAMEWORKS))

QUESTION = "Where is order #W1, and what is the weather in Paris?"
TIMEOUT = 0.3


def _chat(text: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": text, **({"tool_calls": list(calls)} if calls else {})}


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _fc(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{cid}", "call_id": cid, "name": name, "arguments": json.dumps(args), "status": "completed"}


def _msg(text: str) -> dict[str, Any]:
    return {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}


CALLS = [("call_t1", "lookup_order", {"order_id": "#W1"}), ("call_t2", "get_weather", {"city": "Paris"})]
ANSWER = "The order lookup timed out; Paris is sunny, 21 C."
# scenario: (model API, agent's tool_use_behavior, the timeout's behaviour, replies)
SCENARIOS: dict[str, tuple[str, str, str, list[Any]]] = {
    # the lookup times out beside a call that answers; the model is sent the SDK's message and answers
    "timeout_chat": ("chat", "run_llm_again", "error_as_result", [_chat(None, *(_call(*c) for c in CALLS)), _chat(ANSWER)]),
    "timeout_responses": ("responses", "run_llm_again", "error_as_result", [[_fc(*c) for c in CALLS], [_msg(ANSWER)]]),
    # stop_on_first_tool: the SDK's timeout message, the first call's output, is the run's final output
    "timeout_stop": ("chat", "stop_on_first_tool", "error_as_result", [_chat("Looking it up.", _call(*CALLS[0]))]),
    # timeout_behavior="raise_exception": the run raises ToolTimeoutError (the SDK records the error on the span)
    "timeout_raise": ("chat", "run_llm_again", "raise_exception", [_chat(None, _call(*CALLS[0]))]),
}


async def _run(name: str, model: str, cancelled: list[str]) -> Any:
    from agents import Agent, Runner, function_tool

    _, behaviour, on_timeout, _ = SCENARIOS[name]

    @function_tool(timeout=TIMEOUT, timeout_behavior=on_timeout)  # type: ignore[arg-type]
    async def lookup_order(order_id: str) -> str:
        """Look up an order in the slow back office."""
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append("lookup_order")  # the application's own record that the call never finished
            raise
        return "shipped"

    @function_tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return "sunny, 21 C"

    agent = Agent(name="Assistant", instructions="Help.", tools=[lookup_order, get_weather], model=model, tool_use_behavior=behaviour)  # type: ignore[arg-type]
    return await Runner.run(agent, QUESTION)


def _truth(name: str, run: Any, cancelled: list[str]) -> dict[str, Any]:
    from agents.tool import default_tool_timeout_error_message

    if isinstance(run, Exception):
        return {"input": QUESTION, "raised": f"{type(run).__name__}: {run}", "cancelled": cancelled}
    items = run.new_items
    outputs = {it.raw_item["call_id"]: it.raw_item["output"] for it in items if it.type == "tool_call_output_item"}
    calls = [{"id": it.raw_item.call_id, "name": it.raw_item.name, "arguments": json.loads(it.raw_item.arguments),
              "result": outputs[it.raw_item.call_id],
              "error": default_tool_timeout_error_message(tool_name=it.raw_item.name, timeout_seconds=TIMEOUT) if it.raw_item.name in cancelled else None}
             for it in items if it.type == "tool_call_item"]
    return {"input": QUESTION, "user_turns": [QUESTION], "calls": calls, "output": run.final_output, "cancelled": cancelled}


def _go(name: str, model: str) -> tuple[Any, list[str]]:
    cancelled: list[str] = []
    try:
        return asyncio.run(_run(name, model, cancelled)), cancelled
    except Exception as exc:  # the run's own failure is the scenario (`timeout_raise`)
        return exc, cancelled


def record(name: str, out: Path, openllmetry: bool) -> dict[str, Any]:
    from common import agents_recording, otel_provider, write_otlp, write_truth
    from record_oi_faults import ScriptedOpenAI

    api, _, _, replies = SCENARIOS[name]
    model = "gpt-4o-mini" if api == "chat" else "o4-mini"
    api_name = "chat_completions" if api == "chat" else "responses"
    with ScriptedOpenAI(replies) as fake:
        if not openllmetry:
            with agents_recording(fake, out, name, api_name):
                run, cancelled = _go(name, model)
            truth = _truth(name, run, cancelled)
            write_truth(out, name, truth)
            return truth
        from agents import set_default_openai_api, set_default_openai_client
        from openai import AsyncOpenAI
        from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        set_default_openai_client(AsyncOpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0), use_for_tracing=False)
        set_default_openai_api(api_name)
        provider = otel_provider(fake, "agents-tl")
        OpenAIAgentsInstrumentor(replace_existing_processors=True).instrument(tracer_provider=provider)
        try:
            run, cancelled = _go(name, model)
            write_otlp(provider, fake, out / f"tl-{name}.jsonl")
        finally:
            provider.shutdown()
        truth = json.loads((out / f"{name}.truth.json").read_text())
        if truth != _truth(name, run, cancelled):
            raise SystemExit(f"{name}: the OpenLLMetry run differs from the recorded truth")
        return truth


def main(argv: list[str]) -> int:
    openllmetry = "--openllmetry" in argv
    args = [a for a in argv if a != "--openllmetry"]
    out = Path(args.pop(0)) if args and not args[0].startswith("--") else OUT
    names = args[args.index("--only") + 1:] if "--only" in args else list(SCENARIOS)
    out.mkdir(parents=True, exist_ok=True)
    if os.environ.get("RECORD_IN_PROCESS") == "1":
        import warnings

        warnings.simplefilter("ignore")
        for name in names:
            print(name, json.dumps(record(name, out, openllmetry), ensure_ascii=False)[:300])
        return 0
    failed = 0
    for name in names:  # one process a scenario: an instrumentor patches the SDK process-wide
        done = subprocess.run([sys.executable, __file__, str(out), "--only", name, *(["--openllmetry"] if openllmetry else [])],
                              env={**os.environ, "RECORD_IN_PROCESS": "1"})
        failed += done.returncode != 0
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
