"""Record inspect-ai logs of its own agents speaking in the user's role, and of a message limit cutting tool messages.

    python tests/frameworks/record_inspect_agents.py OUTDIR      (OUTDIR: tests/data/inspect-agents)

runs four tasks with `inspect_ai.eval(...)` on the offline `mockllm/model` provider (no network; its replies scripted, as in
`record_inspect.py`) with a real `@tool` `get_weather` that logs every run:

- `react-nudge` (`react()`): sample `nudged` replies "I think it is sunny." without a tool call; react appends its continue
  prompt as a user message ("Please proceed to the next step using your best judgement. If you believe you have completed
  the task, please call the `submit()` tool with your final answer."); the model calls `get_weather(Paris)`, then submits;
- `react-attempts` (`react(attempts=AgentAttempts(2))`): sample `attempts` submits "About 30 C", which the task's scorer
  (`includes()`, target "21") refuses: react appends "Your submission was incorrect. Please proceed and attempt to find the
  correct answer."; the model calls `get_weather(Paris)` and submits "21 C";
- `agent-nudge` (`basic_agent()`): sample `agent_nudged` replies "Probably sunny." without a call; basic_agent appends
  "Please proceed to the next step using your best judgement."; then `get_weather(Paris)`, then `submit()`;
- `msg-limit` (`react()`, `message_limit=6`): sample `msg_limit` calls `get_weather(Paris)`, then `get_weather(Tokyo)` and
  `get_weather(Oslo)` in one message: both run, but their tool messages would exceed the limit, so inspect stops the
  sample there and keeps neither (the `tool` events hold what they returned).

inspect writes each log as `<timestamp>_<task>.eval`; it is copied to `OUTDIR/<task>.eval` and scrubbed of this machine's
paths (`inspect_common.scrub_file`). `OUTDIR/truth.json` holds, per task and sample, what the script and the
tool made the sample do: the question (the one user turn), the prompts the agent itself added (inspect's own constants),
every call the model made with what the tool returned (the tool's own log: `tools_ran`), the answers the scorer refused,
the completion inspect scored (`output`, from the log: what inspect itself kept) and the limit that stopped it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from inspect_common import main, model_output, record_logs, script_turn, weather_tool  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C", "Oslo": "snow, -2 C"}
QUESTIONS = {"nudged": "Is it sunny in Paris?", "attempts": "How warm is Paris, in C?", "agent_nudged": "Is Paris sunny now?",
             "msg_limit": "Weather in Paris, Tokyo and Oslo?"}
# sample id -> the model's replies in order: ("text", text) | ("calls", [(call id, tool, arguments)], text)
SCRIPT: dict[str, list[tuple[Any, ...]]] = {
    "nudged": [("text", "I think it is sunny."), ("calls", [("c1", "get_weather", {"city": "Paris"})], "Let me check."),
               ("calls", [("c2", "submit", {"answer": "Yes: sunny, 21 C"})], "")],
    "attempts": [("calls", [("a1", "submit", {"answer": "About 30 C"})], ""), ("calls", [("a2", "get_weather", {"city": "Paris"})], "Checking."),
                 ("calls", [("a3", "submit", {"answer": "21 C"})], "")],
    "agent_nudged": [("text", "Probably sunny."), ("calls", [("g1", "get_weather", {"city": "Paris"})], "Checking."),
                     ("calls", [("g2", "submit", {"answer": "sunny, 21 C"})], "Submitting.")],
    "msg_limit": [("calls", [("m1", "get_weather", {"city": "Paris"})], "Paris first."),
                  ("calls", [("m2", "get_weather", {"city": "Tokyo"}), ("m3", "get_weather", {"city": "Oslo"})], "Now Tokyo and Oslo."),
                  ("text", "unused")],
}
TASKS = {"react-nudge": "nudged", "react-attempts": "attempts", "agent-nudge": "agent_nudged", "msg-limit": "msg_limit"}
RAN: list[dict[str, Any]] = []  # every run of the tool, in order: {"city", "result"}


def scripted(messages: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> Any:
    """mockllm's `custom_outputs`: this sample's next scripted reply (by how many it made so far), with a fixed usage."""
    from inspect_ai.model import ModelUsage

    output = model_output(script_turn(messages, QUESTIONS, SCRIPT)[1])
    output.usage = ModelUsage(input_tokens=100, output_tokens=20, total_tokens=120)
    return output


def tasks() -> list[Any]:
    from inspect_ai import Task
    from inspect_ai.agent import AgentAttempts, react
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes
    from inspect_ai.solver import basic_agent

    def weather(city: str) -> str:
        RAN.append({"city": city, "result": WEATHER[city]})
        return WEATHER[city]

    def get_weather() -> Any:
        return weather_tool(weather)

    def sample(sid: str, target: str) -> Any:
        return [Sample(id=sid, input=QUESTIONS[sid], target=target)]

    return [
        Task(name="react-nudge", solver=react(tools=[get_weather()]), scorer=includes(), dataset=sample("nudged", "sunny")),
        Task(name="react-attempts", solver=react(tools=[get_weather()], attempts=AgentAttempts(attempts=2)), scorer=includes(),
             dataset=sample("attempts", "21")),
        Task(name="agent-nudge", solver=basic_agent(tools=[get_weather()]), scorer=includes(), dataset=sample("agent_nudged", "sunny")),
        Task(name="msg-limit", solver=react(tools=[get_weather()]), scorer=includes(), message_limit=6, dataset=sample("msg_limit", "sunny")),
    ]


def truth(logs: dict[str, Any]) -> dict[str, Any]:
    """Per task, its one sample: what `SCRIPT`, inspect's own prompts and the tool's log (`RAN`) say it did."""
    from inspect_ai.agent._types import DEFAULT_CONTINUE_PROMPT
    from inspect_ai.solver._basic_agent import DEFAULT_CONTINUE_MESSAGE, DEFAULT_INCORRECT_MESSAGE

    prompts = {"nudged": [DEFAULT_CONTINUE_PROMPT.replace("{submit}", "submit")], "attempts": [DEFAULT_INCORRECT_MESSAGE],
               "agent_nudged": [DEFAULT_CONTINUE_MESSAGE], "msg_limit": []}
    ran = [(r["city"], r["result"]) for r in RAN]
    out: dict[str, Any] = {}
    for task, sid in TASKS.items():
        calls, refused = [], []
        for turn in SCRIPT[sid]:  # (a reply never asked for, "unused", makes no call)
            for cid, name, args in turn[1] if turn[0] == "calls" else []:
                if name == "submit":
                    refused.append(args["answer"])  # (the last one is the answer, below)
                    continue
                got = WEATHER[args["city"]]
                ran.remove((args["city"], got))  # it ran: the tool logged it
                calls.append({"id": cid, "name": name, "arguments": args, "result": got, "error": None})
        sample = logs[task].samples[0]
        out[task] = {sid: {"input": QUESTIONS[sid], "user_turns": [QUESTIONS[sid]], "agent_prompts": [p.strip() for p in prompts[sid]],
                           "calls": calls, "refused": refused[:-1], "output": sample.output.completion,
                           "limit": sample.limit.type if sample.limit else None}}
    assert not ran, ran  # every run of the tool is a call above
    return out


def record(out: Path) -> dict[str, Any]:
    """Run the tasks and write `out/<task>.eval` and `out/truth.json`; returns the truth."""
    return record_logs(out, tasks, scripted, truth)


if __name__ == "__main__":
    sys.exit(main(record, __doc__, sys.argv[1:]))
