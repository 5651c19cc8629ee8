"""Record the Agents SDK runs behind `tests/test_agents_sensitive_data.py`: tracing with `trace_include_sensitive_data=False`.

    python tests/frameworks/record_agents_sensitive_data.py [OUTDIR] [--only SCENARIO ...]

(OUTDIR: tests/data/agents-sensitive-data.) Each scenario (`SCENARIOS`) runs the real OpenAI Agents SDK (0.24.0) against
the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`: request n gets reply n, chat completions and
the Responses API alike; no network), in a subprocess of its own, under `RunConfig(trace_include_sensitive_data=False)`
(what `OPENAI_AGENTS_TRACE_INCLUDE_SENSITIVE_DATA=false` sets): the SDK then leaves every model request's input and
output and every tool's arguments and output out of its spans. It is recorded at once by OpenInference's
`OpenAIAgentsInstrumentor` (`oi-<s>.jsonl`, OTLP/JSON, format `otel`) and the SDK's own export (`export-<s>.jsonl`,
format `openai-agents`); `<s>.truth.json` is what the application got: its question, each call (id, name, arguments,
the output the SDK sent the model), the final output.
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
OUT = FRAMEWORKS.parent / "data" / "agents-sensitive-data"
sys.path.insert(0, str(FRAMEWORKS))

QUESTION = "What is the weather in Paris and Tokyo?"
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
ANSWER = "Paris is sunny at 21 C; Tokyo is rainy at 14 C."
CALLS = [("call_w1", "get_weather", {"city": "Paris"}), ("call_w2", "get_weather", {"city": "Tokyo"})]


def _chat(text: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": text, **({"tool_calls": list(calls)} if calls else {})}


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _fc(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{cid}", "call_id": cid, "name": name, "arguments": json.dumps(args), "status": "completed"}


def _msg(text: str) -> dict[str, Any]:
    return {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}


# scenario: (model API, replies)
SCENARIOS: dict[str, tuple[str, list[Any]]] = {
    # Chat Completions: two calls in one reply, then the answer
    "hidden_chat": ("chat", [_chat(None, *(_call(*c) for c in CALLS)), _chat(ANSWER)]),
    # the Responses API (the SDK's default): the same
    "hidden_responses": ("responses", [[_fc(*c) for c in CALLS], [_msg(ANSWER)]]),
}


async def _run(model: str) -> Any:
    from agents import Agent, RunConfig, Runner, function_tool

    @function_tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return WEATHER[city]

    agent = Agent(name="Assistant", instructions="Help.", tools=[get_weather], model=model)
    return await Runner.run(agent, QUESTION, run_config=RunConfig(trace_include_sensitive_data=False))


def _truth(result: Any) -> dict[str, Any]:
    items = result.new_items
    outputs = {it.raw_item["call_id"]: it.raw_item["output"] for it in items if it.type == "tool_call_output_item"}
    calls = [{"id": it.raw_item.call_id, "name": it.raw_item.name, "arguments": json.loads(it.raw_item.arguments),
              "result": outputs[it.raw_item.call_id]} for it in items if it.type == "tool_call_item"]
    return {"input": QUESTION, "calls": calls, "output": result.final_output, "trace_include_sensitive_data": False}


def record(name: str, out: Path) -> dict[str, Any]:
    from common import agents_recording, write_truth
    from record_oi_faults import ScriptedOpenAI

    api, replies = SCENARIOS[name]
    with ScriptedOpenAI(replies) as fake:
        with agents_recording(fake, out, name, "chat_completions" if api == "chat" else "responses"):
            result = asyncio.run(_run("gpt-4o-mini" if api == "chat" else "o4-mini"))
    truth = _truth(result)
    write_truth(out, name, truth)
    return truth


def main(argv: list[str]) -> int:
    out = Path(argv.pop(0)) if argv and not argv[0].startswith("--") else OUT
    names = argv[argv.index("--only") + 1:] if "--only" in argv else list(SCENARIOS)
    out.mkdir(parents=True, exist_ok=True)
    if os.environ.get("RECORD_IN_PROCESS") == "1":
        import warnings

        warnings.simplefilter("ignore")
        for name in names:
            print(name, json.dumps(record(name, out), ensure_ascii=False)[:300])
        return 0
    failed = 0
    for name in names:  # one process a scenario: an instrumentor patches the SDK process-wide
        done = subprocess.run([sys.executable, __file__, str(out), "--only", name], env={**os.environ, "RECORD_IN_PROCESS": "1"})
        failed += done.returncode != 0
    return failed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
