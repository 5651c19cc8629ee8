"""Record the Agents SDK conversations behind `tests/test_openai_agents_linked_runs.py`, with the installed libraries.

    python tests/frameworks/record_agents_linked_runs.py [OUTDIR] [--only SCENARIO ...]   (OUTDIR: tests/data/agents-linked-runs)

Each scenario runs the real OpenAI Agents SDK against the project's scripted loopback server (no network) under
OpenInference's `OpenAIAgentsInstrumentor` and the SDK's own export at once (`oi-<s>.jsonl`, `export-<s>.jsonl`), each
turn a `Runner.run` of its own with no `trace()` around it, and writes `<s>.truth.json` (what each conversation's
turns asked, the calls and what the runs answered):

- `sessions`: two conversations, each in a `SQLiteSession` of its own, run side by side (both first turns at once,
  then both second turns), on a Chat Completions model; the agent's instructions are rendered per request (a time
  stamp), and both conversations open with the same question, so only the history a request replays tells them apart;
- `chained`: two turns on the Responses API, the second sent with `previous_response_id` (the SDK's export keeps
  neither a request's input nor that id).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
from pathlib import Path
from typing import Any

FRAMEWORKS = Path(__file__).resolve().parent
OUT = FRAMEWORKS.parent / "data" / "agents-linked-runs"
sys.path.insert(0, str(FRAMEWORKS))

from common import agents_recording, record_scenarios, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted, call, chat  # noqa: E402

WEATHER = {"Paris": "sunny 21 C", "Oslo": "snow -3 C", "Lima": "cloudy 19 C"}
TURNS = {"A": ["Weather in Paris?", "And Oslo?"], "B": ["Weather in Paris?", "And Lima?"]}


def _sessions_reply(ids: Any) -> Any:
    def reply(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, int]]:
        msgs = body["messages"]
        conv = "A" if "conversation A" in msgs[0]["content"] else "B"
        last_user = max(i for i, m in enumerate(msgs) if m["role"] == "user")
        city = next(c for c in WEATHER if c in msgs[last_user]["content"])
        usage = {"prompt_tokens": 100 + len(msgs), "completion_tokens": 10, "total_tokens": 110 + len(msgs)}
        if msgs[-1]["role"] == "user":
            return chat(None, call(f"call_{conv}{next(ids)}", "get_weather", {"city": city})), usage
        return chat(f"[{conv}] {city}: {msgs[-1]['content']}"), usage
    return reply


def _sessions(out: Path) -> Any:
    from agents import Agent, Runner, SQLiteSession, function_tool

    truth: dict[str, Any] = {"A": [], "B": []}

    @function_tool
    async def get_weather(city: str) -> str:
        """Weather in a city."""
        await asyncio.sleep(0.02)  # (both conversations' runs in flight at once)
        return WEATHER[city]

    stamp = itertools.count(1)

    def agent(conv: str) -> Any:
        return Agent(name="Weather", tools=[get_weather],
                     instructions=lambda ctx, ag: f"You are the weather bot of conversation {conv}. Time: 12:00:{next(stamp):02d}")

    async def main() -> None:
        sessions = {c: SQLiteSession(f"s-{c}") for c in TURNS}
        for t in range(2):
            async def one(c: str) -> None:
                r = await Runner.run(agent(c), TURNS[c][t], session=sessions[c])
                truth[c].append({"asked": TURNS[c][t], "answer": r.final_output})
            await asyncio.gather(one("A"), one("B"))

    with Scripted(_sessions_reply(itertools.count(1))) as fake, agents_recording(fake, out, "sessions"):
        asyncio.run(main())
    write_truth(out, "sessions", truth)
    return truth


def _fc(cid: str, city: str) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{cid}", "call_id": f"call_{cid}", "name": "get_weather",
            "arguments": json.dumps({"city": city}), "status": "completed"}


def _said(text: str, i: int) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{i}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def _chained(out: Path) -> Any:
    from agents import Agent, Runner, function_tool

    @function_tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return WEATHER[city]

    replies = [[_fc("p", "Paris")], [_said("Paris: sunny 21 C", 1)], [_fc("o", "Oslo")], [_said("Oslo: snow -3 C", 2)]]

    async def main() -> list[Any]:
        weather = Agent(name="Weather", instructions="You are a weather bot.", tools=[get_weather])
        first = await Runner.run(weather, "Weather in Paris?")
        second = await Runner.run(weather, "And Oslo?", previous_response_id=first.last_response_id)
        return [{"asked": "Weather in Paris?", "answer": first.final_output, "response": first.last_response_id},
                {"asked": "And Oslo?", "answer": second.final_output}]

    with Scripted(responses=replies) as fake, agents_recording(fake, out, "chained", api="responses"):
        truth = {"turns": asyncio.run(main())}
    write_truth(out, "chained", truth)
    return truth


SCENARIOS = {"sessions": _sessions, "chained": _chained}


def record(name: str, out: Path) -> Any:
    return SCENARIOS[name](out)


if __name__ == "__main__":
    record_scenarios(record, SCENARIOS, OUT)
