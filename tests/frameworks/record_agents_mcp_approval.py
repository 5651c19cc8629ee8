"""Record the Agents SDK approval pauses of MCP tools behind `tests/test_agents_mcp_approval.py`, with the installed libraries.

    python tests/frameworks/record_agents_mcp_approval.py [OUTDIR [SCENARIO ...]]   (OUTDIR: tests/data/agents-mcp-approval)

Each scenario runs the real OpenAI Agents SDK (0.24.0; chat-completions model, not streamed) against the project's
scripted loopback server (`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network), with a real MCP server
over stdio (`record_agents_tool_outputs.py --serve-mcp`: `order_status`, `refund_order`, `order_items`) declared
`MCPServerStdio(..., require_approval={"always": {"tool_names": ["refund_order"]}})`, under OpenInference's
`OpenAIAgentsInstrumentor` and the SDK's own tracing at once, one subprocess a scenario. The model's only reply asks for
calls, and `Runner.run` returns paused (`final_output` None, `result.interruptions` the held calls):

- `mcp`: `order_status` (runs) and `refund_order` (held: the server's `require_approval`);
- `mixed`: the same and `refund`, a function tool declared `needs_approval=True` (held too).

Writes `oi-<s>.jsonl` (OTLP/JSON, format `otel`), `export-<s>.jsonl` (format `openai-agents`) and `<s>.truth.json`
(what the application saw: the interruptions, and which tools ran and returned what).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

FRAMEWORKS = Path(__file__).resolve().parent  # tests/frameworks: the fake server and the recorders' plumbing
OUT = FRAMEWORKS.parent / "data" / "agents-mcp-approval"
sys.path.insert(0, str(FRAMEWORKS))

from common import agents_recording, record_each_in_subprocess, write_truth  # noqa: E402
from record_agents_tool_outputs import _call, _chat  # noqa: E402
from record_oi_faults import ScriptedOpenAI  # noqa: E402

QUESTION = "Where is order #W1? Refund it, and refund order A12 by 30 dollars."
PREAMBLE = "Let me check and ask for the refunds."
CALLS = {"mcp": [("call_s1", "order_status", {"order_id": "#W1"}), ("call_r1", "refund_order", {"order_id": "#W1", "reason": "late"})]}
CALLS["mixed"] = [*CALLS["mcp"], ("call_f1", "refund", {"order": "A12", "amount": 30})]


def _agent(server: Any, name: str, ran: list[dict[str, Any]]) -> Any:
    from agents import Agent, function_tool

    @function_tool(needs_approval=True)
    def refund(order: str, amount: int) -> str:
        """Refund an order (needs a human's approval)."""
        ran.append({"tool": "refund", "returned": f"refunded {amount} for {order}"})
        return f"refunded {amount} for {order}"

    return Agent(name="Support", instructions="Help.", mcp_servers=[server], tools=[refund] if name == "mixed" else [], model="gpt-4o-mini")


async def _run(name: str, ran: list[dict[str, Any]]) -> dict[str, Any]:
    from agents import Runner
    from agents.mcp import MCPServerStdio

    server = MCPServerStdio(params={"command": sys.executable, "args": [str(FRAMEWORKS / "record_agents_tool_outputs.py"), "--serve-mcp"]},
                            name="orders", require_approval={"always": {"tool_names": ["refund_order"]}})
    async with server:
        result = await Runner.run(_agent(server, name, ran), QUESTION)
    outputs = [{"call_id": it.raw_item.get("call_id"), "output": it.raw_item.get("output")} for it in result.new_items if it.type == "tool_call_output_item"]
    return {"final_output": result.final_output, "outputs": outputs,
            "interruptions": [{"name": i.name, "arguments": json.loads(i.arguments or "null")} for i in result.interruptions]}


def record(name: str, out: Path) -> dict[str, Any]:
    """Record scenario `name` into `out`; returns its truth."""
    ran: list[dict[str, Any]] = []
    replies = [_chat(PREAMBLE, *(_call(*c) for c in CALLS[name]))]
    with ScriptedOpenAI(replies) as fake, agents_recording(fake, out, name):
        seen = asyncio.run(_run(name, ran))
        requests = fake.n
    truth = {**seen, "input": QUESTION, "preamble": PREAMBLE, "model_requests": requests, "returned": {r["tool"]: r["returned"] for r in ran},
             "approval_setting": {"refund_order": "MCP server orders: require_approval", "refund": "function tool: needs_approval"}}
    write_truth(out, name, truth)
    return truth


SCENARIOS = {name: (lambda out, name=name: record(name, out)) for name in ("mcp", "mixed")}


if __name__ == "__main__":
    args = sys.argv[1:] or [str(OUT)]
    sys.exit(record_each_in_subprocess(__file__, args, SCENARIOS))
