"""Record pydantic-ai runs paused by a tool that raised `ApprovalRequired` / `CallDeferred`, or by an external tool, and resumed.

    python tests/frameworks/record_pydantic_ai_raised_deferrals.py OUTDIR [RECORDING ...]   (OUTDIR: tests/data/pydantic-ai-raised-deferrals)

writes `OUTDIR/<scenario>-<instrumentation>.jsonl` (OTLP/JSON, format `otel`) and `<…>.truth.json`. A real `pydantic_ai.Agent`
(`output_type=[str, DeferredToolRequests]`) on `OpenAIChatModel` talks to the project's scripted loopback server
(`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network). Every run is `run_sync`, one trace each, the later one
given the earlier one's `all_messages()` as `message_history` and `deferred_tool_results` (no prompt). Tools:

- `refund(order_id)`: raises `pydantic_ai.exceptions.ApprovalRequired` unless `ctx.tool_call_approved`, then refunds;
- `lookup_ticket(ticket)`: raises `CallDeferred` (the application answers it itself);
- `send_email(to, body)`: an `ExternalToolset` tool (pydantic-ai never runs it: the application does);
- `cancel_order_ok(order_id)`: `requires_approval=True`; `get_weather(city)`: a plain tool.

Scenarios (`SCENARIOS`): `<tool>_paused` (only the run that paused), `<tool>_yes` / `<tool>_denied` (resumed approving, or
denying with `ToolDenied(DENIAL)`), `deferred_result` / `external_result` (resumed with the value the application computed),
and `mixed`: one reply calls `get_weather`, `refund`, `lookup_ticket` and `send_email`; resumed with the refund denied and the
two others answered (`mixed_paused`: only the run that paused).

Instrumentations: `v5`, pydantic-ai's own instrumentation (`Agent.instrument_all(InstrumentationSettings(...))`, data-format
version 5, the default); `oi`, the same with openinference-instrumentation-pydantic-ai's `OpenInferenceSpanProcessor`.

The truth is what the agent's `result.all_messages()` says after the last run (as `record_pydantic_ai_deferred._truth`: the
user prompts, every response with its calls and what pydantic-ai recorded as each call's return and outcome, each run's
output, the tools that really ran), plus each paused run's `DeferredToolRequests` and what the resume sent.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import pydantic_ai_recording, record_per_instrumentation, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402
from record_pydantic_ai_deferred import _output, _reply, _truth  # noqa: E402
from pydantic_ai import RunContext  # noqa: E402  (at module level: the tools' annotations are read from the module's names)

OUT = HERE.parent / "data" / "pydantic-ai-raised-deferrals"
DENIAL = "Refunds over 100 EUR need a manager; not refunded."
TICKET = "ticket T-9: open, assigned to Ana"
EMAIL = {"status": "sent", "message_id": "m-42"}
WEATHER = {"Paris": "sunny, 21 C"}

_REFUND = call("call_r1", "refund", {"order_id": "#W7"})
_TICKET = call("call_t1", "lookup_ticket", {"ticket": "T-9"})
_EMAIL = call("call_e1", "send_email", {"to": "ana@example.com", "body": "Hi"})
_CANCEL = call("call_c1", "cancel_order_ok", {"order_id": "#W8"})
# a resume: ("approve", True | "deny") approves or denies (with `ToolDenied(DENIAL)`) every held approval; ("result", value)
# answers every held external call with `value`; "mixed": the refund denied, the ticket and the email answered
SCENARIOS: dict[str, tuple[list[Any], list[dict[str, Any]]]] = {
    "approval_raised_paused": ([None], [_reply("I will refund it.", _REFUND)]),
    "approval_raised_yes": ([("approve", True)], [_reply("I will refund it.", _REFUND), _reply("Refunded #W7.")]),
    "approval_raised_denied": ([("approve", "deny")], [_reply("I will refund it.", _REFUND), _reply("I could not refund #W7.")]),
    "deferred_paused": ([None], [_reply("Let me look.", _TICKET)]),
    "deferred_result": ([("result", TICKET)], [_reply("Let me look.", _TICKET), _reply("T-9 is open, with Ana.")]),
    "external_paused": ([None], [_reply(None, _EMAIL)]),
    "external_result": ([("result", EMAIL)], [_reply(None, _EMAIL), _reply("Email sent (m-42).")]),
    "approval_denied_custom": ([("approve", "deny")], [_reply("I will cancel it.", _CANCEL), _reply("I did not cancel #W8.")]),
    "mixed_paused": ([None], [_reply("On it.", call("call_w1", "get_weather", {"city": "Paris"}), _REFUND, _TICKET, _EMAIL)]),
    "mixed": (["mixed"], [_reply("On it.", call("call_w1", "get_weather", {"city": "Paris"}), _REFUND, _TICKET, _EMAIL),
                          _reply("Paris is sunny; T-9 is open; the email went out; no refund.")]),
}
PROMPT = "Handle my requests."
INSTRUMENTATIONS = ("v5", "oi")


def _agent(model: Any, ran: list[dict[str, Any]]) -> Any:
    from pydantic_ai import Agent, DeferredToolRequests
    from pydantic_ai.exceptions import ApprovalRequired, CallDeferred
    from pydantic_ai.tools import ToolDefinition
    from pydantic_ai.toolsets import ExternalToolset

    email = ToolDefinition(name="send_email", description="Send an email (the application sends it).",
                           parameters_json_schema={"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
                                                   "required": ["to", "body"]})
    agent = Agent(model, output_type=[str, DeferredToolRequests], instructions="You help.", toolsets=[ExternalToolset([email])])

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Weather in a city."""
        ran.append({"name": "get_weather", "arguments": {"city": city}, "result": WEATHER[city]})
        return WEATHER[city]

    @agent.tool
    def refund(ctx: RunContext[None], order_id: str) -> str:
        """Refund an order (asks for approval)."""
        if not ctx.tool_call_approved:
            raise ApprovalRequired(metadata={"reason": "refund"})
        ran.append({"name": "refund", "arguments": {"order_id": order_id}, "result": f"refunded {order_id}"})
        return f"refunded {order_id}"

    @agent.tool_plain
    def lookup_ticket(ticket: str) -> str:
        """Look a ticket up (the application answers)."""
        raise CallDeferred(metadata={"queue": "support"})

    @agent.tool_plain(requires_approval=True)
    def cancel_order_ok(order_id: str) -> str:
        """Cancel an order (needs approval)."""
        ran.append({"name": "cancel_order_ok", "arguments": {"order_id": order_id}, "result": f"cancelled {order_id}"})
        return f"cancelled {order_id}"

    return agent


def _resume(how: Any, held: Any) -> Any:
    """The `DeferredToolResults` a resume sends for the `DeferredToolRequests` `held` (see `SCENARIOS`)."""
    from pydantic_ai import DeferredToolResults, ToolDenied

    if how == "mixed":
        return DeferredToolResults(approvals={c.tool_call_id: ToolDenied(DENIAL) for c in held.approvals},
                                   calls={c.tool_call_id: TICKET if c.tool_name == "lookup_ticket" else EMAIL for c in held.calls})
    kind, value = how
    if kind == "approve":
        return DeferredToolResults(approvals={c.tool_call_id: ToolDenied(DENIAL) if value == "deny" else value for c in held.approvals})
    return DeferredToolResults(calls={c.tool_call_id: value for c in held.calls})


def _held(value: Any) -> Any:
    """What a paused run's `DeferredToolRequests` held: each call's id, name, arguments and metadata."""
    def one(c: Any) -> dict[str, Any]:
        return {"id": c.tool_call_id, "name": c.tool_name, "arguments": c.args_as_dict(), "metadata": value.metadata.get(c.tool_call_id)}
    return {"approvals": [one(c) for c in value.approvals], "calls": [one(c) for c in value.calls]}


def record(out: Path, scenario: str, inst: str) -> Any:
    """Run `scenario` under instrumentation `inst` (see the module doc); write the recording and its truth."""
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings

    resumes, replies = SCENARIOS[scenario]
    name = f"{scenario}-{inst}"
    ran: list[dict[str, Any]] = []
    server = ScriptedOpenAI(replies)
    with pydantic_ai_recording(server, out / f"{name}.jsonl", oi=inst == "oi") as (model, provider):
        Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
        agent = _agent(model, ran)
        result = agent.run_sync(PROMPT)
        outputs, held, sent = [_output(result.output)], [_held(result.output)], []
        for how in resumes:
            if how is None:
                continue
            results = _resume(how, result.output)
            sent.append({"approvals": {k: v.message if hasattr(v, "message") else v for k, v in results.approvals.items()}, "calls": results.calls})
            result = agent.run_sync(message_history=result.all_messages(), deferred_tool_results=results)
            outputs.append(_output(result.output))
    assert server.n == len(replies), (name, server.n)
    truth = _truth(json.loads(result.all_messages_json()), outputs, ran) | {"held": held, "resumed_with": sent}
    write_truth(out, name, truth)
    return outputs


if __name__ == "__main__":
    sys.exit(record_per_instrumentation(__file__, sys.argv[1:], OUT, record, SCENARIOS, INSTRUMENTATIONS))
