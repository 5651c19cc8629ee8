"""Record pydantic-ai runs that paused for approval and were resumed, and calls it did not execute, with their truth.

    python tests/frameworks/record_pydantic_ai_deferred.py OUTDIR [RECORDING ...]     (OUTDIR: tests/data/pydantic-ai-deferred)

writes `OUTDIR/<scenario>-<instrumentation>.jsonl` (OTLP/JSON, format `otel`) and `<…>.truth.json`. A real
`pydantic_ai.Agent` on `OpenAIChatModel` talks to the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`:
request n gets reply n; no network). Every run is `run_sync`, one trace each, the later ones given the earlier one's
`all_messages()` as `message_history` (one conversation). Scenarios:

- `output_with_call`: structured output (`output_type=Weather`); one reply calls `get_weather` and the output tool
  `final_result` together (the default `end_strategy`: the function call runs too);
- `output_with_call_early`: the same with `end_strategy="early"`: pydantic-ai does not run `get_weather` and writes
  "Tool not executed - a final result was already processed." in its place;
- `output_after_tool`: `get_weather`, then `final_result` in a reply of its own;
- `approve_yes` / `approve_no`: `output_type=[str, DeferredToolRequests]`; the reply says "I will cancel it." and calls
  `cancel_order_ok` (`requires_approval=True`): the run returns `DeferredToolRequests`; a second run with no prompt
  (`deferred_tool_results=DeferredToolResults(approvals={id: True | False})`) runs the tool, or sends the model
  "The tool call was denied.", and the model answers;
- `approve_paused`: only the first run of `approve_yes`: paused, never resumed;
- `approve_mixed_multiturn`: one reply calls `get_weather` and `cancel_order_ok`: the first runs, the second waits;
  resumed approved, answered; then a new prompt ("And Tokyo?") in a third run;
- `resume_with_prompt`: `approve_yes` resumed with a prompt too (`agent.run_sync("Also, be quick.", message_history=...,
  deferred_tool_results=...)`): the tool runs and the model answers.

Instrumentations: `v5`, pydantic-ai's own `Instrumentation` capability at its default data-format version (5); `oi`, the same
with openinference-instrumentation-pydantic-ai's `OpenInferenceSpanProcessor` before the exporter.

The truth is what the agent's `result.all_messages()` says after the last run: the user prompts, every response (its text,
the calls it made, with what pydantic-ai recorded as each call's return and outcome), each run's output, and the tools that
really ran.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import instrumented, pydantic_ai_recording, record_per_instrumentation, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

OUT = HERE.parent / "data" / "pydantic-ai-deferred"
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
PARIS = {"city": "Paris", "temp_c": 21, "summary": "Sunny"}


def _reply(text: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": text, **({"tool_calls": list(calls)} if calls else {})}


# scenario: (agent kind, runs, replies); a run is a prompt, or `True` / `False`: resume, approving or denying every held call
# (no prompt), or `(prompt, True | False)`: the same resume given a prompt too
SCENARIOS: dict[str, tuple[str, list[Any], list[dict[str, Any]]]] = {
    "output_with_call": ("weather", ["Weather in Paris?"],
                         [_reply(None, call("call_o1", "get_weather", {"city": "Paris"}), call("call_o2", "final_result", PARIS))]),
    "output_with_call_early": ("weather_early", ["Weather in Paris?"],
                               [_reply(None, call("call_o1", "get_weather", {"city": "Paris"}), call("call_o2", "final_result", PARIS))]),
    "output_after_tool": ("weather", ["Weather in Paris?"],
                          [_reply(None, call("call_p1", "get_weather", {"city": "Paris"})), _reply(None, call("call_p2", "final_result", PARIS))]),
    "approve_yes": ("approval", ["Cancel #W7.", True],
                    [_reply("I will cancel it.", call("call_a1", "cancel_order_ok", {"order_id": "#W7"})), _reply("Order #W7 is cancelled.")]),
    "approve_no": ("approval", ["Cancel #W7.", False],
                   [_reply("I will cancel it.", call("call_a1", "cancel_order_ok", {"order_id": "#W7"})), _reply("OK, I did not cancel #W7.")]),
    "approve_paused": ("approval", ["Cancel #W7."],
                       [_reply("I will cancel it.", call("call_a1", "cancel_order_ok", {"order_id": "#W7"}))]),
    "approve_mixed_multiturn": ("approval", ["Paris weather, and cancel #W7.", True, "And Tokyo?"],
                                [_reply(None, call("call_m1", "get_weather", {"city": "Paris"}), call("call_m2", "cancel_order_ok", {"order_id": "#W7"})),
                                 _reply("Paris is sunny; #W7 is cancelled."),
                                 _reply(None, call("call_m3", "get_weather", {"city": "Tokyo"})), _reply("Tokyo is rainy.")]),
    "resume_with_prompt": ("approval", ["Cancel #W7.", ("Also, be quick.", True)],
                           [_reply("I will cancel it.", call("call_a1", "cancel_order_ok", {"order_id": "#W7"})), _reply("Done, #W7 cancelled.")]),
}
INSTRUMENTATIONS = ("v5", "oi")


def _agent(kind: str, model: Any, provider: Any, ran: list[dict[str, Any]]) -> Any:
    from pydantic import BaseModel
    from pydantic_ai import Agent, DeferredToolRequests

    class Weather(BaseModel):
        city: str
        temp_c: int
        summary: str

    output: Any = {"weather": Weather, "weather_early": Weather, "approval": [str, DeferredToolRequests]}[kind]
    extra = {"end_strategy": "early"} if kind == "weather_early" else {}
    agent = Agent(model, output_type=output, instructions="You help.", capabilities=instrumented(provider), **extra)

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Weather in a city."""
        ran.append({"name": "get_weather", "arguments": {"city": city}, "result": WEATHER[city]})
        return WEATHER[city]

    @agent.tool_plain(requires_approval=True)
    def cancel_order_ok(order_id: str) -> str:
        """Cancel an order (needs approval)."""
        ran.append({"name": "cancel_order_ok", "arguments": {"order_id": order_id}, "result": f"cancelled {order_id}"})
        return f"cancelled {order_id}"

    return agent


def _output(value: Any) -> Any:
    """A run's output: a model as pydantic dumps it (compact JSON), the calls a `DeferredToolRequests` held, text as it is."""
    if hasattr(value, "approvals"):
        return {"deferred": {"approvals": [c.tool_call_id for c in value.approvals], "calls": [c.tool_call_id for c in value.calls]}}
    return value if isinstance(value, str) else value.model_dump_json()


def _truth(messages: list[dict[str, Any]], outputs: list[Any], ran: list[dict[str, Any]]) -> dict[str, Any]:
    """What `all_messages()` (as JSON) says: the user prompts, each response with its calls and what each call returned."""
    prompts: list[str] = []
    responses: list[dict[str, Any]] = []
    returns: dict[str, dict[str, Any]] = {}
    for m in messages:
        if m["kind"] == "response":
            responses.append({"text": "".join(p["content"] for p in m["parts"] if p["part_kind"] == "text") or None,
                              "calls": [{"id": p["tool_call_id"], "name": p["tool_name"], "arguments": json.loads(p["args"]) if isinstance(p["args"], str) else p["args"]}
                                        for p in m["parts"] if p["part_kind"] == "tool-call"]})
            continue
        for p in m["parts"]:
            if p["part_kind"] == "user-prompt":
                prompts.append(p["content"])
            elif p["part_kind"] == "tool-return":
                returns[p["tool_call_id"]] = {"content": p["content"], "outcome": p.get("outcome")}
    for r in responses:
        for c in r["calls"]:
            c["returned"] = returns.get(c["id"])
    return {"input": prompts[0], "user_turns": prompts, "responses": responses, "outputs": outputs,
            "output": outputs[-1] if isinstance(outputs[-1], str) else None, "tools_ran": ran}  # (a paused run returned no answer)


def record(out: Path, scenario: str, inst: str) -> Any:
    """Run `scenario` under instrumentation `inst` (see the module doc); write the recording and its truth."""
    from pydantic_ai import DeferredToolResults

    kind, runs, replies = SCENARIOS[scenario]
    name = f"{scenario}-{inst}"
    ran: list[dict[str, Any]] = []
    server = ScriptedOpenAI(replies)
    with pydantic_ai_recording(server, out / f"{name}.jsonl", oi=inst == "oi") as (model, provider):
        agent = _agent(kind, model, provider, ran)
        history, outputs, result = None, [], None
        for run in runs:
            prompt, run = run if isinstance(run, tuple) else (None, run)
            if isinstance(run, bool):  # resume: every held call approved (True) or denied (False), with `prompt` (None: none)
                held = result.output  # type: ignore[union-attr]
                result = agent.run_sync(prompt, message_history=history,
                                        deferred_tool_results=DeferredToolResults(approvals={c.tool_call_id: run for c in held.approvals}))
            else:
                result = agent.run_sync(run, message_history=history)
            history = result.all_messages()
            outputs.append(_output(result.output))
    assert server.n == len(replies), (name, server.n)
    write_truth(out, name, _truth(json.loads(result.all_messages_json()), outputs, ran))  # type: ignore[union-attr]
    return outputs


if __name__ == "__main__":
    sys.exit(record_per_instrumentation(__file__, sys.argv[1:], OUT, record, SCENARIOS, INSTRUMENTATIONS))
