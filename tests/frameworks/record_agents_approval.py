"""Record the Agents SDK approval pauses behind `tests/test_agents_approval.py`, with the installed libraries.

    python tests/frameworks/record_agents_approval.py [OUTDIR [SCENARIO ...]]   (OUTDIR: tests/data/agents-approval)

Each scenario runs the real OpenAI Agents SDK (chat-completions model, not streamed) against the project's scripted
loopback server (`record_agents_faults.Streaming`: request n gets reply n; no network), under OpenInference's
`OpenAIAgentsInstrumentor` and the SDK's own tracing at once, one subprocess a scenario. The agent has `refund`, a
function tool declared `needs_approval=True`; the model's first reply says "Let me issue that refund." and asks for
`refund(order="A12", amount=30)`:

- `paused`: `Runner.run` stops before running the call: `final_output` None, `result.interruptions` the call;
- `approved`: the same, then the app approves (`state = result.to_state(); state.approve(...)`) and resumes with
  `Runner.run(agent, state)`: the tool runs and the model answers "Refunded 30 for A12.";
- `rejected`: the same with `state.reject(...)`: the tool does not run, the SDK tells the model so, and the model
  answers "The refund was not approved.".

The pause and the resume each run under `trace("Refunds", group_id="thread-1")`, as a chat app keeps one
conversation. Writes `<s>.oi.jsonl` (OTLP/JSON, format `otel`), `<s>.export.jsonl` (format `openai-agents`:
`{"trace", "spans"}` a trace) and `<s>.truth.json` (what the application saw: the interruptions, which tools ran and
returned what, the message the model got back for a rejected call, each run's `final_output`).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

FRAMEWORKS = Path(__file__).resolve().parent  # tests/frameworks: the fake server and the recorders' plumbing
OUT = FRAMEWORKS.parent / "data" / "agents-approval"
sys.path.insert(0, str(FRAMEWORKS))

from common import agents_recording, record_each_in_subprocess, write_truth  # noqa: E402
from record_agents_faults import Streaming, _chat  # noqa: E402
from record_oi_faults import MODEL, call  # noqa: E402

QUESTION = "Please refund order A12, 30 dollars."
PREAMBLE = "Let me issue that refund."
ASK = _chat(PREAMBLE, call("call_r1", "refund", {"order": "A12", "amount": 30}))
ANSWERS = {"approved": "Refunded 30 for A12.", "rejected": "The refund was not approved."}
GROUP = "thread-1"


class _Keeping(Streaming):
    """`Streaming` keeping each chat request's body (`bodies`): what the model was sent back for a decided call."""

    bodies: list[dict[str, Any]]

    async def _chat(self, request: Any) -> Any:
        self.__dict__.setdefault("bodies", []).append(await request.json())
        return await super()._chat(request)


def _agent(ran: list[dict[str, Any]]) -> Any:
    """The agent, its tool noting in `ran` what it did."""
    from agents import Agent, function_tool

    @function_tool(needs_approval=True)
    def refund(order: str, amount: int) -> str:
        """Refund an order (needs a human's approval)."""
        ran.append({"tool": "refund", "returned": f"refunded {amount} for {order}"})
        return f"refunded {amount} for {order}"

    return Agent(name="Support", instructions="Help.", tools=[refund], model=MODEL)


async def _run(name: str, agent: Any) -> dict[str, Any]:
    """Run until the pause, then (unless `paused`) decide and resume; what the app saw of each run."""
    from agents import Runner, trace

    with trace("Refunds", group_id=GROUP):
        first = await Runner.run(agent, QUESTION)
    seen: dict[str, Any] = {"final_output": first.final_output,
                            "interruptions": [{"name": i.name, "arguments": json.loads(i.arguments or "null")} for i in first.interruptions]}
    if name == "paused":
        return {"runs": [seen]}
    state = first.to_state()
    for item in first.interruptions:
        state.approve(item) if name == "approved" else state.reject(item)
    with trace("Refunds", group_id=GROUP):
        second = await Runner.run(agent, state)
    return {"runs": [seen, {"final_output": second.final_output, "interruptions": len(second.interruptions)}]}


def record(name: str, out: Path) -> dict[str, Any]:
    """Record scenario `name` into `out`; returns its truth."""
    ran: list[dict[str, Any]] = []
    replies = [ASK] if name == "paused" else [ASK, _chat(ANSWERS[name])]
    with _Keeping(list(replies)) as fake, agents_recording(fake, out, name, files=("{}.oi.jsonl", "{}.export.jsonl")):
        seen = asyncio.run(_run(name, _agent(ran)))
        requests = fake.n
        bodies = list(getattr(fake, "bodies", []))
    truth = {**seen, "input": QUESTION, "preamble": PREAMBLE, "model_requests": requests, "group_id": GROUP,
             "returned": {r["tool"]: r["returned"] for r in ran}}
    if bodies:
        truth["tool_messages"] = [m for m in bodies[-1].get("messages", []) if m.get("role") == "tool"]
    write_truth(out, name, truth)
    return truth


SCENARIOS = {name: (lambda out, name=name: record(name, out)) for name in ("paused", "approved", "rejected")}


if __name__ == "__main__":
    args = sys.argv[1:] or [str(OUT)]
    sys.exit(record_each_in_subprocess(__file__, args, SCENARIOS))
