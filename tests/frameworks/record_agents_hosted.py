"""Record OpenAI Agents SDK runs whose model used the Responses API's hosted tools, behind `tests/test_hosted_tools.py`.

    python tests/frameworks/record_agents_hosted.py OUTDIR [SCENARIO ...]

Each scenario runs a real `agents.Agent` (the Responses API model, the SDK's default) with hosted tools
(`WebSearchTool`, `FileSearchTool`, `CodeInterpreterTool`, `HostedMCPTool`) and, where named, a function tool,
against the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`; no network), whose replies hold
the hosted tools' items as the API returns them. It writes `OUTDIR/oi-<scenario>.jsonl` (OpenInference's
`OpenAIAgentsInstrumentor`, OTLP/JSON), `OUTDIR/export-<scenario>.jsonl` (the SDK's own trace export) and
`OUTDIR/<scenario>.truth.json`: the run's `final_output`, the function tools that ran, and the scripted replies (what
the hosted tools did: no function span or later request records it).

- `web_search`: one response, a `web_search_call` then the answer;
- `web_search_failed`: as `web_search`, the search's `status` `failed`;
- `file_search`: a `file_search_call` with its `results`, then the answer;
- `code_interpreter`: a `code_interpreter_call` with its `outputs` (logs), then the answer;
- `mcp`: an `mcp_call` of a remote MCP server (`HostedMCPTool`), its output, then the answer;
- `mixed`: a web search and a function call in one response, the answer in the next;
- `then_tool`: a search, a preamble and a function call; then a second search and the answer.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import agents_recording, record_each_in_subprocess  # noqa: E402
from record_oi_faults import ScriptedOpenAI  # noqa: E402

MODEL = "gpt-4o-mini"
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
RAN: list[dict[str, Any]] = []  # the function tools that ran, in order


def get_weather(city: str) -> str:
    """Weather in a city."""
    RAN.append({"name": "get_weather", "arguments": {"city": city}, "result": WEATHER[city]})
    return WEATHER[city]


def message(text: str, i: int = 1) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{i}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def function_call(cid: str, city: str, i: int) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{i}", "call_id": cid, "name": "get_weather", "arguments": json.dumps({"city": city}),
            "status": "completed"}


def web_search(i: int, query: str, status: str = "completed") -> dict[str, Any]:
    return {"type": "web_search_call", "id": f"ws_{i}", "status": status, "action": {"type": "search", "query": query}}


def scenario(name: str) -> tuple[list[Any], list[list[dict[str, Any]]], str]:
    """(tools, scripted replies, question) of scenario `name`."""
    from agents import CodeInterpreterTool, FileSearchTool, HostedMCPTool, WebSearchTool, function_tool

    weather = function_tool(get_weather, strict_mode=False)
    if name in ("web_search", "web_search_failed"):
        status = "failed" if name == "web_search_failed" else "completed"
        return [WebSearchTool()], [[web_search(1, "weather Paris today", status), message("Per the web, Paris is sunny today.")]], "Is it sunny in Paris today?"
    if name == "file_search":
        found = [{"file_id": "file_1", "filename": "policy.md", "score": 0.92, "text": "Refunds are paid within 5 days.", "attributes": {}}]
        item = {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["refund policy"], "results": found}
        return [FileSearchTool(vector_store_ids=["vs_1"])], [[item, message("Refunds take 5 days.")]], "What is the refund policy?"
    if name == "code_interpreter":
        item = {"type": "code_interpreter_call", "id": "ci_1", "status": "completed", "code": "print(6*7)", "container_id": "cntr_1",
                "outputs": [{"type": "logs", "logs": "42"}]}
        tool = CodeInterpreterTool(tool_config={"type": "code_interpreter", "container": {"type": "auto"}})
        return [tool], [[item, message("6 times 7 is 42.")]], "What is 6*7?"
    if name == "mcp":
        item = {"type": "mcp_call", "id": "mcp_1", "status": "completed", "server_label": "docs", "name": "search_docs",
                "arguments": json.dumps({"query": "refunds"}), "output": "Refunds are paid within 5 days.", "error": None}
        tool = HostedMCPTool(tool_config={"type": "mcp", "server_label": "docs", "server_url": "https://docs.example/mcp", "require_approval": "never"})
        return [tool], [[item, message("Refunds take 5 days.")]], "How long do refunds take?"
    if name == "mixed":
        return ([WebSearchTool(), weather], [[web_search(1, "Tokyo weather"), function_call("call_w1", "Paris", 2)],
                                             [message("Paris is sunny; the web says Tokyo is rainy.")]], "Paris and Tokyo weather?")
    if name == "then_tool":
        return ([WebSearchTool(), weather],
                [[web_search(1, "Paris weather"), message("Searching done; checking Tokyo.", 1), function_call("call_w2", "Tokyo", 2)],
                 [web_search(3, "Tokyo forecast"), message("Paris is sunny; Tokyo is rainy.", 4)]], "Paris and Tokyo weather?")
    raise KeyError(name)


NAMES = ("web_search", "web_search_failed", "file_search", "code_interpreter", "mcp", "mixed", "then_tool")


def record(out: Path, name: str) -> dict[str, Any]:
    from agents import Agent, Runner

    tools, replies, question = scenario(name)
    agent = Agent(name="Assistant", instructions="Help.", tools=tools, model=MODEL)
    with ScriptedOpenAI(replies) as fake, agents_recording(fake, out, name, api="responses"):
        truth: dict[str, Any] = {"final_output": asyncio.run(Runner.run(agent, question)).final_output, "requests": fake.n}
    truth.update(question=question, tools_ran=RAN, replies=replies)
    (out / f"{name}.truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True) + "\n")
    return truth


SCENARIOS = {name: (lambda out, name=name: record(out, name)) for name in NAMES}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
