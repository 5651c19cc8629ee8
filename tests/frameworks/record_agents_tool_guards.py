"""Record the Agents SDK runs behind `tests/test_agents_tool_guards.py`: tools that failed or did not run, content hidden.

    python tests/frameworks/record_agents_tool_guards.py [OUTDIR [SCENARIO ...]]   (OUTDIR: tests/data/agents-tool-guards)

Each scenario runs the real OpenAI Agents SDK (0.24.0; chat-completions model, not streamed) against the project's
scripted loopback server (`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network), under OpenInference's
`OpenAIAgentsInstrumentor` and the SDK's own export at once, one subprocess a scenario, and writes `oi-<s>.jsonl`
(OTLP/JSON, format `otel`), `export-<s>.jsonl` (format `openai-agents`) and `<s>.truth.json` (what the application saw:
each call, the output the SDK sent the model, whether the tool's body ran, an MCP server's `isError`; the final output):

- `mcp_errors`: a real MCP server over stdio (this script with `--serve-mcp`, `mcp` 2.x `MCPServer`): `order_status`
  (text), `refund_order` (raises `ToolError`: the server answers `isError` with `Error executing tool refund_order: <its
  text>`), `cancel_order` (returns a `CallToolResult(is_error=True)` of its own text);
- `tool_guardrail`: a function tool with a `tool_input_guardrail` that returns `reject_content(...)` for one city: that
  call's body never runs, the model is sent the guardrail's message as its output;
- `provider_error`: the provider answers the first request HTTP 500 (the client does not retry): `Runner.run` raises
  `InternalServerError` with no request answered;
- `hide_inputs`: one call and the answer, OpenInference configured with `OPENINFERENCE_HIDE_INPUTS=true` (the SDK's
  `trace_include_sensitive_data` left on): what that setting leaves in the spans, beside `agents-sensitive-data`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

FRAMEWORKS = Path(__file__).resolve().parent
OUT = FRAMEWORKS.parent / "data" / "agents-tool-guards"
sys.path.insert(0, str(FRAMEWORKS))

QUESTION = {"mcp_errors": "Where is order #W1? Refund it, or else cancel it.", "tool_guardrail": "Weather in Paris and Tokyo?",
            "hide_inputs": "Weather in Paris?", "provider_error": "Weather in Paris?"}
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
REJECTED = "Weather lookups for Tokyo are not allowed."


def _chat(text: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": text, **({"tool_calls": list(calls)} if calls else {})}


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


REPLIES: dict[str, list[Any]] = {
    "mcp_errors": [_chat(None, _call("call_e1", "order_status", {"order_id": "#W1"}), _call("call_e2", "refund_order", {"order_id": "#W1"}),
                         _call("call_e3", "cancel_order", {"order_id": "#W1"})),
                   _chat("Order #W1 has shipped; it can be neither refunded nor cancelled.")],
    "tool_guardrail": [_chat("Checking both.", _call("call_g1", "get_weather", {"city": "Paris"}), _call("call_g2", "get_weather", {"city": "Tokyo"})),
                       _chat("Paris is sunny, 21 C; I cannot look up Tokyo.")],
    "hide_inputs": [_chat(None, _call("call_h1", "get_weather", {"city": "Paris"})), _chat("Paris is sunny, 21 C.")],
    "provider_error": [None],  # (HTTP 500: `Failing`)
}


# --- the MCP server (this script with --serve-mcp) ------------------------------------------------------------------
def serve_mcp() -> None:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import CallToolResult, TextContent

    server = MCPServer("orders")

    @server.tool()
    def order_status(order_id: str) -> str:
        """The status of an order."""
        return "shipped"

    @server.tool()
    def refund_order(order_id: str) -> str:
        """Refund an order."""
        raise ToolError(f"order {order_id} is past its refund window")

    @server.tool()
    def cancel_order(order_id: str):  # type: ignore[no-untyped-def]  (no annotation: the server would evaluate it here)
        """Cancel an order."""
        return CallToolResult(content=[TextContent(type="text", text=f"cannot cancel: order {order_id} has shipped")], is_error=True)

    server.run("stdio")


# --- the runs --------------------------------------------------------------------------------------------------------
async def _run(name: str, ran: list[dict[str, Any]]) -> Any:
    from agents import Agent, Runner, ToolGuardrailFunctionOutput, function_tool, tool_input_guardrail
    from agents.mcp import MCPServerStdio

    if name == "mcp_errors":
        server = MCPServerStdio(params={"command": sys.executable, "args": [__file__, "--serve-mcp"]}, name="orders",
                                custom_data_extractor=lambda ctx: {"server_is_error": bool(ctx.is_error)})
        async with server:
            return await Runner.run(Agent(name="Support", instructions="Help.", mcp_servers=[server], model="gpt-4o-mini"), QUESTION[name])

    @tool_input_guardrail
    def no_tokyo(data: Any) -> ToolGuardrailFunctionOutput:
        args = json.loads(data.context.tool_arguments or "{}")
        return ToolGuardrailFunctionOutput.reject_content(REJECTED) if args.get("city") == "Tokyo" else ToolGuardrailFunctionOutput.allow()

    def get_weather(city: str) -> str:
        """Weather in a city."""
        ran.append({"name": "get_weather", "arguments": {"city": city}})
        return WEATHER[city]

    guards = [no_tokyo] if name == "tool_guardrail" else None
    tool = function_tool(get_weather, tool_input_guardrails=guards)
    return await Runner.run(Agent(name="Assistant", instructions="Help.", tools=[tool], model="gpt-4o-mini"), QUESTION[name])


def _truth(name: str, result: Any, ran: list[dict[str, Any]]) -> dict[str, Any]:
    outputs = {it.raw_item["call_id"]: it for it in result.new_items if it.type == "tool_call_output_item"}
    calls = []
    for it in result.new_items:
        if it.type != "tool_call_item":
            continue
        got = outputs[it.raw_item.call_id]
        sent = got.raw_item["output"]
        if not isinstance(sent, str):  # input_text items (an MCP tool's text): their text, one a line
            sent = "\n".join(i["text"] for i in sent)
        args = json.loads(it.raw_item.arguments)
        call = {"id": it.raw_item.call_id, "name": it.raw_item.name, "arguments": args, "sent_to_model": sent}
        if name == "mcp_errors":
            call.update(getattr(got, "custom_data", None) or {})
        else:
            call["body_ran"] = {"name": it.raw_item.name, "arguments": args} in ran
        calls.append(call)
    guardrails = [{"guardrail": r.guardrail.get_name(), "behavior": dict(r.output.behavior)} for r in result.tool_input_guardrail_results]
    return {"input": QUESTION[name], "calls": calls, "output": result.final_output, "tool_input_guardrail_results": guardrails}


def _failing() -> Any:
    """`ScriptedOpenAI` answering a `None` reply with HTTP 500 (a provider error), counted as a request."""
    from aiohttp import web
    from record_oi_faults import ScriptedOpenAI

    class Failing(ScriptedOpenAI):
        async def _chat(self, request: web.Request) -> web.StreamResponse:
            if self.replies[self.n] is None:
                self.n += 1
                return web.json_response({"error": {"message": "The server had an error", "type": "server_error"}}, status=500)
            return await super()._chat(request)

    return Failing


def record(name: str, out: Path) -> dict[str, Any]:
    from common import agents_recording, write_truth

    if name == "hide_inputs":
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"  # read by the instrumentor's TraceConfig when it is made
    ran: list[dict[str, Any]] = []
    with _failing()(REPLIES[name]) as fake:
        with agents_recording(fake, out, name):
            try:
                result = asyncio.run(_run(name, ran))
            except Exception as exc:  # the run's own failure is the scenario
                result = exc
        requests = fake.n
    if isinstance(result, Exception):
        truth = {"input": QUESTION.get(name), "raised": f"{type(result).__name__}: {result}", "model_requests": requests, "answered_requests": 0}
        write_truth(out, name, truth)
        return truth
    truth = {**_truth(name, result, ran), "model_requests": requests}
    if name == "hide_inputs":
        truth["openinference_hide_inputs"] = True
    write_truth(out, name, truth)
    return truth


SCENARIOS = {name: (lambda out, name=name: record(name, out)) for name in REPLIES}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve-mcp"]:
        serve_mcp()
        sys.exit(0)
    from common import record_each_in_subprocess

    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], SCENARIOS))
