"""Record the Agents SDK runs behind `tests/test_agents_tool_outputs.py`: tools that return the SDK's structured outputs.

    python tests/frameworks/record_agents_tool_outputs.py [OUTDIR] [--only SCENARIO ...] [--openllmetry]

(OUTDIR: tests/data/agents-tool-outputs.) Each scenario (`SCENARIOS`) runs the real OpenAI Agents SDK (0.24.0) against
the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`: request n gets reply n, chat completions and
the Responses API alike; no network), in a subprocess of its own. Without `--openllmetry` it is recorded at once by
OpenInference's `OpenAIAgentsInstrumentor` (`oi-<s>.jsonl`, OTLP/JSON, format `otel`) and the SDK's own export
(`export-<s>.jsonl`, format `openai-agents`), and `<s>.truth.json` is written from what the application got: its
question, each call (name, arguments, and the result the SDK sent the model: the text of its `input_text` items,
else the items the tool returned; no error: the SDK raised none; an MCP call's `server_is_error`, the server's
`isError`, which no trace keeps), the final output. With `--openllmetry` the same runs are recorded by OpenLLMetry's
`opentelemetry-instrumentation-openai-agents` alone (`tl-<s>.jsonl`; recorded with 0.62.4), the final output checked
against the truth; that instrumentation is not among the test requirements (install it in a separate environment).

The MCP scenarios run a real MCP server (`mcp` 2.x, `MCPServer`) on this machine: this script with `--serve-mcp`
(stdio, or streamable HTTP on 127.0.0.1 with `--serve-mcp PORT`). Its tools: `order_status` (text), `refund_order`
(raises: the server answers `isError` with its text, which the SDK passes on as the output), `order_items` (a dict:
the server's JSON text). The SDK turns an MCP tool's text content into `{"type": "text", "text": …}`, a structured
output, as it does for a function tool returning `ToolOutputText`, a dict of that shape, or a list of them.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

FRAMEWORKS = Path(__file__).resolve().parent
OUT = FRAMEWORKS.parent / "data" / "agents-tool-outputs"
sys.path.insert(0, str(FRAMEWORKS))

QUESTION = {"mcp_stdio": "Where is order #W1, what is in it? Refund it.", "mcp_http": "Where is order #W1 and what is in it?",
            "function_outputs": "Take notes on cats.", "function_outputs_responses": "Take notes on cats."}
PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
ORDERS = {"#W1": "shipped", "#W2": "processing"}


def _chat(text: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": text, **({"tool_calls": list(calls)} if calls else {})}


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _fc(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{cid}", "call_id": cid, "name": name, "arguments": json.dumps(args), "status": "completed"}


def _msg(text: str) -> dict[str, Any]:
    return {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}


NOTES = [("c1", "note_text", {"topic": "cats"}), ("c2", "note_dict", {"topic": "cats"}), ("c3", "note_list", {"topic": "cats"}),
         ("c4", "chart", {"topic": "cats"}), ("c5", "plain_dict", {"topic": "cats"})]
# scenario: (model API, replies)
SCENARIOS: dict[str, tuple[str, list[Any]]] = {
    # MCP over stdio, Chat Completions: three calls in one reply (one the server fails), then the answer
    "mcp_stdio": ("chat", [_chat(None, _call("call_m1", "order_status", {"order_id": "#W1"}), _call("call_m2", "order_items", {"order_id": "#W1"}),
                                 _call("call_m3", "refund_order", {"order_id": "#W1", "reason": "late"})),
                           _chat("Order #W1 has shipped (2 x A1, 1 x B7); it cannot be refunded.")]),
    # MCP over streamable HTTP, the Responses API (the SDK's default): the export keeps no request text, only the tools'
    "mcp_http": ("responses", [[_fc("call_h1", "order_status", {"order_id": "#W1"}), _fc("call_h2", "order_items", {"order_id": "#W1"})],
                               [_msg("Order #W1 has shipped: 2 x A1, 1 x B7.")]]),
    # function tools returning ToolOutputText, a dict of its shape, two texts, a text and an image, and a plain dict
    "function_outputs": ("chat", [_chat(None, *(_call(*c) for c in NOTES)), _chat("Noted.")]),
    "function_outputs_responses": ("responses", [[_fc(*c) for c in NOTES], [_msg("Noted.")]]),
}


# --- the MCP server (this script with --serve-mcp) ------------------------------------------------------------------
def serve_mcp(port: int | None) -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("orders")

    @server.tool()
    def order_status(order_id: str) -> str:
        """The status of an order."""
        return ORDERS[order_id]

    @server.tool()
    def refund_order(order_id: str, reason: str) -> str:
        """Refund an order."""
        raise ValueError(f"order {order_id} is past its refund window")

    @server.tool()
    def order_items(order_id: str) -> dict:
        """The items of an order."""
        return {"order_id": order_id, "items": [{"sku": "A1", "qty": 2}, {"sku": "B7", "qty": 1}]}

    if port is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=port)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the runs --------------------------------------------------------------------------------------------------------
def _function_tools() -> list[Any]:
    from agents import ToolOutputImage, ToolOutputText, function_tool

    @function_tool
    def note_text(topic: str) -> Any:
        """A note."""
        return ToolOutputText(text=f"note about {topic}")

    @function_tool
    def note_dict(topic: str) -> dict:
        """A note, as a mapping of ToolOutputText's shape."""
        return {"type": "text", "text": f"dict note about {topic}"}

    @function_tool
    def note_list(topic: str) -> list:
        """Two notes."""
        return [ToolOutputText(text=f"first note about {topic}"), ToolOutputText(text="second note")]

    @function_tool
    def chart(topic: str) -> list:
        """A chart and its caption."""
        return [ToolOutputText(text=f"chart of {topic}"), ToolOutputImage(image_url=PNG)]

    @function_tool
    def plain_dict(topic: str) -> dict:
        """A plain mapping (no structured output: the model gets its str())."""
        return {"topic": topic, "n": 3}

    return [note_text, note_dict, note_list, chart, plain_dict]


async def _run(name: str, model: str) -> Any:
    from agents import Agent, Runner
    from agents.mcp import MCPServerStdio, MCPServerStreamableHttp

    if not name.startswith("mcp_"):
        return await Runner.run(Agent(name="Assistant", instructions="Help.", tools=_function_tools(), model=model), QUESTION[name])
    proc = None
    if name == "mcp_stdio":
        server: Any = MCPServerStdio(params={"command": sys.executable, "args": [__file__, "--serve-mcp"]}, name="orders",
                                     custom_data_extractor=_server_said)
    else:
        port = _free_port()
        proc = subprocess.Popen([sys.executable, __file__, "--serve-mcp", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        server = MCPServerStreamableHttp(params={"url": f"http://127.0.0.1:{port}/mcp"}, name="orders", custom_data_extractor=_server_said)
    try:
        async with server:
            agent = Agent(name="Assistant", instructions="Help.", mcp_servers=[server], model=model)
            return await Runner.run(agent, QUESTION[name])
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()


def _server_said(ctx: Any) -> dict[str, Any]:
    """What the MCP server answered beside the content (kept on the run's output item, not traced): its `isError`."""
    return {"server_is_error": bool(ctx.is_error)}


def _shown(output: Any, returned: Any) -> Any:
    """What the SDK sent the model as a call's output (`raw_item["output"]`): its text when all its items are text
    (one a line), else the structured items the tool returned, as mappings of the fields they set; text as it is."""
    if isinstance(output, str):
        return output
    if all(i.get("type") == "input_text" for i in output):
        return "\n".join(i["text"] for i in output)
    items = returned if isinstance(returned, list) else [returned]
    return [i.model_dump(exclude_none=True) if hasattr(i, "model_dump") else dict(i) for i in items]


def _truth(name: str, result: Any) -> dict[str, Any]:
    items = result.new_items
    outputs = {it.raw_item["call_id"]: it for it in items if it.type == "tool_call_output_item"}
    calls = []
    for it in items:
        if it.type == "tool_call_item":
            got = outputs[it.raw_item.call_id]
            calls.append({"id": it.raw_item.call_id, "name": it.raw_item.name, "arguments": json.loads(it.raw_item.arguments),
                          "result": _shown(got.raw_item["output"], got.output), "error": None, **(getattr(got, "custom_data", None) or {})})
    return {"input": QUESTION[name], "user_turns": [QUESTION[name]], "calls": calls, "output": result.final_output}


def record(name: str, out: Path, openllmetry: bool) -> dict[str, Any]:
    from common import agents_recording, otel_provider, write_otlp, write_truth
    from record_oi_faults import ScriptedOpenAI

    api, replies = SCENARIOS[name]
    model = "gpt-4o-mini" if api == "chat" else "o4-mini"
    api_name = "chat_completions" if api == "chat" else "responses"
    with ScriptedOpenAI(replies) as fake:
        if not openllmetry:
            with agents_recording(fake, out, name, api_name):
                result = asyncio.run(_run(name, model))
            truth = _truth(name, result)
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
            result = asyncio.run(_run(name, model))
            write_otlp(provider, fake, out / f"tl-{name}.jsonl")
        finally:
            provider.shutdown()
        truth = json.loads((out / f"{name}.truth.json").read_text())
        if truth != _truth(name, result):
            raise SystemExit(f"{name}: the OpenLLMetry run differs from the recorded truth")
        return truth


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve-mcp"]:
        serve_mcp(int(argv[1]) if len(argv) > 1 else None)
        return 0
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
