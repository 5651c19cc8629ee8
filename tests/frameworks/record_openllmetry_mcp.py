"""Record a plain OpenAI chat loop running its tools on an MCP server, under OpenLLMetry, behind `tests/test_openllmetry_mcp.py`.

    python tests/frameworks/record_openllmetry_mcp.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/openllmetry-mcp)

Needs `mcp` 1.x and `opentelemetry-instrumentation-mcp` (recorded with mcp 1.30.0 and 0.62.4), which are not among the
test requirements: `instrument()` fails on `mcp` 2.x (its hooks name `mcp.shared.session` and
`mcp.client.streamable_http.streamablehttp_client`, which 2.x no longer has). Install them in a
separate environment (`python -m venv --system-site-packages`, then `pip install "mcp<2" opentelemetry-instrumentation-mcp`).

The application: an `AsyncOpenAI` chat loop (no span around it) whose tools are an MCP server's (`ClientSession` over
stdio, `list_tools` turned into the request's `tools`), each call run with `session.call_tool(name, arguments)` and the
text of the result's content sent back as the tool message, until a reply calls none. Recorded by
opentelemetry-instrumentation-openai and opentelemetry-instrumentation-mcp into one provider, against a scripted
loopback OpenAI server (`record_otel_loop_faults.Scripted`; no network). The MCP server is this script with
`--serve-mcp` (mcp 1.x `FastMCP`, stdio): `order_status` (text), `refund_order` (raises: the server answers `isError`
with `Error executing tool refund_order: …`), `order_count` (no arguments).

Writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON, format `otel`) and `OUTDIR/<scenario>.truth.json`: what the application
sent and got (its question, each call with the result text it sent back and the server's `isError`, the answer, usage).

- `tl-mcp-stdio`: one reply asks for the three tools at once; the refund fails; then the answer.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "data" / "openllmetry-mcp"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

ORDERS = {"#W1": "shipped on 2026-01-02"}
QUESTION = "Where is order #W1? Refund it, and tell me how many orders I have."
REPLIES = [
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_s", "type": "function", "function": {"name": "order_status", "arguments": json.dumps({"order_id": "#W1"})}},
        {"id": "call_r", "type": "function", "function": {"name": "refund_order", "arguments": json.dumps({"order_id": "#W1", "reason": "late"})}},
        {"id": "call_n", "type": "function", "function": {"name": "order_count", "arguments": "{}"}}]},
    {"role": "assistant", "content": "Order #W1 shipped on 2026-01-02. The refund failed: it is past its refund window. You have 3 orders."},
]
USAGE = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


def serve_mcp() -> None:
    from mcp.server.fastmcp import FastMCP

    server = FastMCP("orders")

    @server.tool()
    def order_status(order_id: str) -> str:
        """The status of an order."""
        return ORDERS[order_id]

    @server.tool()
    def refund_order(order_id: str, reason: str) -> str:
        """Refund an order."""
        raise ValueError(f"order {order_id} is past its refund window")

    @server.tool()
    def order_count() -> str:
        """How many orders the customer has."""
        return "3"

    server.run("stdio")


async def _loop(client: Any) -> dict[str, Any]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=[__file__, "--serve-mcp"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = [{"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.inputSchema}}
                 for t in (await session.list_tools()).tools]
        messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
        calls, spent = [], {"input_tokens": 0, "output_tokens": 0, "requests": 0}
        while True:
            r = await client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
            spent = {"input_tokens": spent["input_tokens"] + r.usage.prompt_tokens, "output_tokens": spent["output_tokens"] + r.usage.completion_tokens,
                     "requests": spent["requests"] + 1}
            message = r.choices[0].message.model_dump(exclude_none=True)
            messages.append(message)
            if not message.get("tool_calls"):
                return {"user_turns": [QUESTION], "output": message.get("content"), "calls": calls, "usage": spent}
            for c in message["tool_calls"]:
                args = json.loads(c["function"]["arguments"])
                done = await session.call_tool(c["function"]["name"], args)
                text = "\n".join(part.text for part in done.content if getattr(part, "type", None) == "text")
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": text})
                calls.append({"id": c["id"], "name": c["function"]["name"], "arguments": args, "result": text, "is_error": done.isError})


def record(out: Path, name: str) -> Any:
    from openai import AsyncOpenAI
    from opentelemetry.instrumentation.mcp import McpInstrumentor

    from common import otel_provider, write_otlp, write_truth
    from record_otel_loop_faults import Scripted, _openai_instrumentor

    replies = iter(REPLIES)
    with Scripted(lambda body, headers: (next(replies), USAGE)) as fake:
        provider = otel_provider(fake, "mcp-loop")
        _openai_instrumentor("tl").instrument(tracer_provider=provider)
        McpInstrumentor().instrument(tracer_provider=provider)
        truth = asyncio.run(_loop(AsyncOpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)))
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": [truth]})
    return truth["output"]


SCENARIOS = {"tl-mcp-stdio": lambda out: record(out, "tl-mcp-stdio")}

if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve-mcp"]:
        serve_mcp()
        sys.exit(0)
    from common import record_each_in_subprocess

    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], SCENARIOS))
