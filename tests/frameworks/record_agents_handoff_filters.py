"""Record OpenAI Agents SDK handoffs whose `input_filter` removes the transfer from the next agent's input, behind
`tests/test_agents_handoff_filters.py`.

    python tests/frameworks/record_agents_handoff_filters.py [OUTDIR] [--only SCENARIO ...]   (OUTDIR: tests/data/agents-handoff-filters)

Each scenario runs the real OpenAI Agents SDK against the project's scripted loopback server
(`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network): a `Triage` agent hands off to a `Weather`
agent, which calls `get_weather` and answers. It is recorded at once by OpenInference's `OpenAIAgentsInstrumentor`
(`oi-<s>.jsonl`, OTLP/JSON, format `otel`) and by the SDK's own export (`export-<s>.jsonl`, format `openai-agents`);
`<s>.truth.json` holds what the application saw: the run's `final_output` and `last_agent`, the handoffs it made
(`HandoffCallItem`/`HandoffOutputItem`: call id, tool name, the SDK's output for it, from `RunResult.new_items`, or,
when the filter removed them from there too, from the items the filter was given), the function tools that ran, and
how many model requests there were.

- `filtered`: `handoff(weather, input_filter=handoff_filters.remove_all_tools)` (chat-completions model): the Weather
  agent's request holds neither the `transfer_to_weather` call nor its output;
- `filtered_after_tool`: as `filtered`, Triage first calls `get_weather` itself (the filter removes that round too);
- `filtered_responses`: as `filtered`, with the Responses API model (the SDK's default);
- `unfiltered`: the same handoff without a filter (the transfer and its output are in the Weather agent's input).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

FRAMEWORKS = Path(__file__).resolve().parent  # tests/frameworks: the fake server and the recorders' plumbing
OUT = FRAMEWORKS.parent / "data" / "agents-handoff-filters"
sys.path.insert(0, str(FRAMEWORKS))

from common import agents_recording, record_scenarios, write_truth  # noqa: E402
from record_oi_faults import MODEL, ScriptedOpenAI, call  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
QUESTION = "What is the weather in Paris and Tokyo?"
RAN: list[dict[str, Any]] = []  # the function tools that ran, in order
FILTERED: list[Any] = []  # the run items the input filter was given (the handoff's call and output among them), before it removed them


def get_weather(city: str) -> str:
    """Weather in a city."""
    RAN.append({"name": "get_weather", "arguments": {"city": city}, "result": WEATHER[city]})
    return WEATHER[city]


def _chat(text: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": text, **({"tool_calls": list(calls)} if calls else {})}


def _fc(i: int, cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{i}", "call_id": cid, "name": name, "arguments": json.dumps(args), "status": "completed"}


def _msg(i: int, text: str) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{i}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


ANSWER = "Paris is sunny at 21 C; Tokyo is rainy at 14 C."
CHAT = [_chat(None, call("call_h1", "transfer_to_weather", {})),
        _chat(None, call("call_w1", "get_weather", {"city": "Paris"}), call("call_w2", "get_weather", {"city": "Tokyo"})),
        _chat(ANSWER)]
# scenario: (api, scripted replies, filtered)
SCENARIOS: dict[str, tuple[str, list[Any], bool]] = {
    "filtered": ("chat_completions", CHAT, True),
    "filtered_after_tool": ("chat_completions",
                            [_chat("Checking Paris first.", call("call_t1", "get_weather", {"city": "Paris"})),
                             _chat(None, call("call_h1", "transfer_to_weather", {})),
                             _chat(None, call("call_w2", "get_weather", {"city": "Tokyo"})),
                             _chat(ANSWER)], True),
    "filtered_responses": ("responses",
                           [[_fc(1, "call_h1", "transfer_to_weather", {})],
                            [_fc(2, "call_w1", "get_weather", {"city": "Paris"}), _fc(3, "call_w2", "get_weather", {"city": "Tokyo"})],
                            [_msg(4, ANSWER)]], True),
    "unfiltered": ("chat_completions", CHAT, False),
}


def _triage(filtered: bool) -> Any:
    from agents import Agent, function_tool, handoff
    from agents.extensions import handoff_filters

    def remove_all_tools(data: Any) -> Any:
        FILTERED.extend([*data.pre_handoff_items, *data.new_items])  # what the SDK made of the handoff, before the filter
        return handoff_filters.remove_all_tools(data)

    weather_tool = function_tool(get_weather, strict_mode=False)
    forecaster = Agent(name="Weather", instructions="Answer weather questions.", tools=[weather_tool], model=MODEL)
    to_weather = handoff(forecaster, input_filter=remove_all_tools) if filtered else handoff(forecaster)
    return Agent(name="Triage", instructions="Route weather questions.", tools=[weather_tool], handoffs=[to_weather], model=MODEL)


def _handoffs(items: list[Any]) -> list[dict[str, Any]]:
    """The run's handoff calls and the SDK's outputs for them, from `RunResult.new_items`."""
    from agents.items import HandoffCallItem, HandoffOutputItem

    out: list[dict[str, Any]] = []
    for item in items:
        raw = item.raw_item if isinstance(item.raw_item, dict) else item.raw_item.model_dump()
        if isinstance(item, HandoffCallItem):
            out.append({"call_id": raw.get("call_id") or raw.get("id"), "name": raw.get("name"), "from": item.agent.name})
        elif isinstance(item, HandoffOutputItem):
            match = [h for h in out if h["call_id"] == raw.get("call_id")]
            match[0].update(output=raw.get("output"), source=item.source_agent.name, target=item.target_agent.name)
    return out


def record(name: str, out: Path) -> dict[str, Any]:
    from agents import Runner

    api, replies, filtered = SCENARIOS[name]
    RAN.clear()
    FILTERED.clear()
    out.mkdir(parents=True, exist_ok=True)
    with ScriptedOpenAI(replies) as fake, agents_recording(fake, out, name, api=api):
        result = asyncio.run(Runner.run(_triage(filtered), QUESTION))
        # the handoffs the run made: in its items, unless the filter removed them from there too (then as it was given them)
        truth = {"final_output": result.final_output, "last_agent": result.last_agent.name, "requests": fake.n,
                 "handoffs": _handoffs(result.new_items) or _handoffs(FILTERED), "handoffs_in_run_items": len(_handoffs(result.new_items))}
    truth.update(question=QUESTION, tools_ran=list(RAN), input_filter="remove_all_tools" if filtered else None, api=api)
    write_truth(out, name, truth)
    return truth


if __name__ == "__main__":
    record_scenarios(record, SCENARIOS, OUT)
