"""Record the Agents SDK runs behind `tests/test_openai_agents_final_output.py`, with the installed libraries.

    python tests/frameworks/record_agents_stop.py [OUTDIR] [--only SCENARIO ...]   (OUTDIR: tests/data/openai-agents-stop)

Each scenario (`SCENARIOS`) runs the real OpenAI Agents SDK against the project's scripted loopback
server (`record_oi_faults.ScriptedOpenAI`: request n gets reply n, chat completions and the Responses
API alike; no network), under OpenInference's `OpenAIAgentsInstrumentor` and the SDK's own export at
once, and writes `export-<s>.jsonl` (`{"trace", "spans"}` per trace, format `openai-agents`),
`oi-<s>.jsonl` (OTLP/JSON, format `otel`) and `<s>.outcome.json` (what `Runner.run` returned as
`final_output`, or the exception it raised).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

FRAMEWORKS = Path(__file__).resolve().parent  # tests/frameworks: the fake server and the recorders' plumbing
OUT = FRAMEWORKS.parent / "data" / "openai-agents-stop"
sys.path.insert(0, str(FRAMEWORKS))

from common import agents_recording, record_scenarios, write_outcome  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}


def get_weather(city: str) -> str:
    """Weather in a city."""
    return WEATHER[city]


def convert_temperature(celsius: float, to: str) -> str:
    """Convert a Celsius temperature."""
    return f"{celsius * 9 / 5 + 32:.1f} F"


def cancel_order(order_id: str) -> str:
    """Cancel an order."""
    raise ValueError(f"order {order_id} not found")


def _chat(text: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": text, **({"tool_calls": list(calls)} if calls else {})}


def _fc(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{cid}", "call_id": cid, "name": name, "arguments": json.dumps(args), "status": "completed"}


def _msg(text: str) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{abs(hash(text)) % 10**6}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


# scenario: (api, replies, how the agents are made, max_turns)
SCENARIOS: dict[str, tuple[str, list[Any], str, int]] = {
    # stop_on_first_tool; the model writes a preamble beside its one call: final_output is the tool's output
    "stop_preamble": ("chat", [_chat("Let me look that up for you.", call("call_s1", "get_weather", {"city": "Paris"}))], "stop", 10),
    # StopAtTools(["convert_temperature"]): a first round with get_weather (the model goes on), then the stop tool
    "stop_at_tools": ("chat", [_chat("First the weather.", call("call_t1", "get_weather", {"city": "Paris"})),
                               _chat("Now converting.", call("call_t2", "convert_temperature", {"celsius": 21, "to": "F"}))], "stop_at", 10),
    # stop_on_first_tool with two calls in one reply: the first call's output is final_output
    "stop_parallel": ("chat", [_chat("Checking both cities.", call("call_p1", "get_weather", {"city": "Paris"}),
                                     call("call_p2", "get_weather", {"city": "Tokyo"}))], "stop", 10),
    # stop_on_first_tool and the tool fails: the SDK's failure text is the tool's output and final_output
    "stop_failing": ("chat", [_chat("Cancelling it now.", call("call_f1", "cancel_order", {"order_id": "#W9"}))], "stop", 10),
    # a triage agent hands off to a stop_on_first_tool agent
    "stop_handoff": ("chat", [_chat(None, call("call_h1", "transfer_to_weather", {})),
                              _chat("Checking Paris.", call("call_h2", "get_weather", {"city": "Paris"}))], "handoff", 10),
    # the SDK's default model (Responses API), stop_on_first_tool with a preamble message
    "stop_responses": ("responses", [[_msg("Let me look that up for you."), _fc("call_r1", "get_weather", {"city": "Paris"})]], "stop", 10),
    # the default Responses API, a normal run (tool round, then the answer): no input/output text in the export
    "responses_normal": ("responses", [[_fc("call_n1", "get_weather", {"city": "Paris"})], [_msg("It is sunny in Paris, 21 C.")]], "normal", 10),
    # a normal run cut by max_turns=1 after a tool round with a preamble (the run fails: no final_output)
    "max_turns_preamble": ("chat", [_chat("Let me look that up for you.", call("call_m1", "get_weather", {"city": "Paris"}))], "normal", 1),
}
QUESTION = "What is the weather in Paris?"


def _agent(how: str, model: str) -> Any:
    from agents import Agent, StopAtTools, function_tool

    tools = [function_tool(f, strict_mode=False) for f in (get_weather, convert_temperature, cancel_order)]
    behaviour: Any = {"stop": "stop_on_first_tool", "stop_at": StopAtTools(stop_at_tool_names=["convert_temperature"]),
                      "normal": "run_llm_again", "handoff": "stop_on_first_tool"}[how]
    agent = Agent(name="Weather" if how == "handoff" else "Assistant", instructions="Help.", tools=tools, model=model, tool_use_behavior=behaviour)
    if how == "handoff":
        return Agent(name="Triage", instructions="Hand off.", handoffs=[agent], model=model)
    return agent


def record(name: str, out: Path) -> Any:
    from agents import Runner

    api, replies, how, max_turns = SCENARIOS[name]
    with ScriptedOpenAI(replies) as fake, agents_recording(fake, out, name, "chat_completions" if api == "chat" else "responses"):
        try:
            outcome: Any = {"final_output": asyncio.run(Runner.run(_agent(how, "gpt-4o-mini" if api == "chat" else "o4-mini"), QUESTION,
                                                                   max_turns=max_turns)).final_output}
        except Exception as exc:  # the run's own failure is the scenario
            outcome = {"raised": f"{type(exc).__name__}: {exc}"}
    return write_outcome(out, name, outcome)


if __name__ == "__main__":
    record_scenarios(record, SCENARIOS, OUT)
