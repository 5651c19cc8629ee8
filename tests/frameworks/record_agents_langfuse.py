"""Record OpenAI Agents SDK runs exported through Langfuse's SDK, as Langfuse documents tracing the Agents SDK, with their truth.

    python tests/frameworks/record_agents_langfuse.py [OUTDIR [SCENARIO ...]]   (OUTDIR: tests/data/agents-langfuse)

Langfuse's way for the Agents SDK: a `Langfuse()` client (its span processor on the global tracer provider, posting
OTLP/HTTP to `<base_url>/api/public/otel/v1/traces`) and openinference-instrumentation-openai-agents'
`OpenAIAgentsInstrumentor().instrument()` writing the spans. Here `base_url` is the project's scripted loopback server
(`record_oi_faults.ScriptedOpenAI`: request n gets reply n, Chat Completions; no network), which also answers the model.
Each scenario runs in a process of its own (the instrumentor patches the SDK process-wide) and writes `lf-<s>.jsonl`
(the OTLP/JSON Langfuse's SDK exported, format `otel`) and `<s>.truth.json`, from what `Runner.run` returned: the
question, every call with the output the SDK sent the model (`new_items`), the agents that acted in order, the output.

- `single`: one agent (`Assistant`) calls `get_weather` (Paris), then answers;
- `handoff`: `Triage` hands off to `Weather`, which calls `get_weather` for Paris and for Atlantis in one reply (the
  second raises: the SDK's default failure function sends the model its error text), then answers.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

FRAMEWORKS = Path(__file__).resolve().parent
OUT = FRAMEWORKS.parent / "data" / "agents-langfuse"
sys.path.insert(0, str(FRAMEWORKS))

from common import MODEL, calls_reply, record_each_in_subprocess, text_reply, write_jsonl, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402
from run_agents import ERROR_RESULT, OI_ERROR  # noqa: E402

QUESTION = "What is the weather in Paris and in Atlantis?"
WEATHER = {"Paris": "sunny, 21 C"}
REPLIES = {
    "single": [calls_reply(call("call_p", "get_weather", {"city": "Paris"})), text_reply("Paris is sunny, 21 C.")],
    "handoff": [calls_reply(call("call_h", "transfer_to_weather", {})),
                calls_reply(call("call_p", "get_weather", {"city": "Paris"}), call("call_a", "get_weather", {"city": "Atlantis"})),
                text_reply("Paris is sunny, 21 C; I found no weather for Atlantis.")],
}


def get_weather(city: str) -> str:
    """Weather in a city."""
    if city not in WEATHER:
        raise ValueError(f"no such city: {city}")
    return WEATHER[city]


def _truth(result: Any) -> dict[str, Any]:
    """What the application got: the calls with what the SDK sent the model for each, the agents in order, the output."""
    import json

    from agents import HandoffCallItem, HandoffOutputItem, ToolCallItem, ToolCallOutputItem

    outputs = {i.raw_item["call_id"]: i.output for i in result.new_items if isinstance(i, ToolCallOutputItem)}
    calls = []
    agents = [result.new_items[0].agent.name] if result.new_items else []
    for item in result.new_items:
        if isinstance(item, ToolCallItem):
            raw = item.raw_item
            calls.append({"name": raw.name, "arguments": json.loads(raw.arguments), "result": outputs[raw.call_id]})
        elif isinstance(item, HandoffCallItem):
            calls.append({"name": item.raw_item.name, "arguments": json.loads(item.raw_item.arguments or "{}")})
        elif isinstance(item, HandoffOutputItem):
            agents.append(item.target_agent.name)
    for c in calls:  # a failed call: the SDK's default failure text went to the model, its trace says why (redacted)
        if c.get("result") == ERROR_RESULT:
            c["error"] = OI_ERROR
    return {"input": QUESTION, "user_turns": [QUESTION], "calls": calls, "agents": agents, "output": result.final_output,
            "last_agent": result.last_agent.name}


def record(out: Path, name: str) -> Any:
    with ScriptedOpenAI(REPLIES[name]) as fake:
        from langfuse import Langfuse

        langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
        from agents import Agent, Runner, function_tool, set_default_openai_api, set_default_openai_client, set_trace_processors
        from openai import AsyncOpenAI
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        OpenAIAgentsInstrumentor().instrument()  # (the global provider: Langfuse's)
        set_default_openai_client(AsyncOpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0), use_for_tracing=False)
        set_default_openai_api("chat_completions")
        tool = function_tool(get_weather)
        if name == "single":
            agent = Agent(name="Assistant", instructions="Answer with the weather tool.", tools=[tool], model=MODEL)
        else:
            weather = Agent(name="Weather", instructions="Answer with the weather tool.", tools=[tool], model=MODEL)
            agent = Agent(name="Triage", instructions="Hand weather questions to Weather.", handoffs=[weather], model=MODEL)
        result = asyncio.run(Runner.run(agent, QUESTION))
        langfuse.flush()
        write_jsonl(out / f"lf-{name}.jsonl", fake.take_otlp())
        langfuse.shutdown()
        set_trace_processors([])
    truth = _truth(result)
    write_truth(out, name, truth)
    return truth


RECORDINGS = {name: (lambda out, n=name: record(out, n)) for name in REPLIES}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], RECORDINGS))
