"""Record real inspect-ai evaluation logs, `.eval` and `.json`, with their ground truth.

    python tests/frameworks/record_inspect.py OUTDIR      (OUTDIR: tests/data/inspect)

runs four tasks with `inspect_ai.eval(...)` on the offline `mockllm/model` provider (no network): the model's
replies are scripted (`SCRIPT`, given as `custom_outputs`: a function of the conversation so far, so samples and
epochs running side by side each get their own reply; each reply carries its usage, `usage`, else mockllm would
count tokens with tiktoken, which downloads its encoding). The tools are real `@tool` functions inspect runs:

- `weather-tools` (`use_tools` + `generate`, scorers `includes()` and `match()`, 2 epochs): sample `"paris"`
  (string target) calls `get_weather(Paris)` and answers; sample `2` (an integer id, list target) makes two calls
  in one assistant message, `get_weather(Paris)` and `get_weather(Atlantis)`, which raises `ToolError` (the log
  holds the tool error), then answers;
- `weather-chat` (a system prompt, `generate`, a second user turn through `user_message`, `generate`): sample
  `"chat"` reasons (a `reasoning` content block) and calls `get_weather`, answers, is asked again, calls
  `convert_temperature` and answers; sample `"crash"` calls `get_weather(Nowhere)`, whose tool raises
  `RuntimeError`, and inspect ends that sample with an error (`fail_on_error=False` lets the rest finish);
- `weather-react` (the `react()` agent): calls `get_weather`, then `submit()`s; react takes the submit call out
  of the messages and appends the answer to the last assistant message's text;
- `weather-agent` (the `basic_agent()` solver): the same, but basic_agent keeps the `submit` call and its
  tool message in the log.

inspect writes each log as `<timestamp>_<task>.eval`; it is copied to `OUTDIR/<task>.eval` (a fixed name, so a
re-recording compares file by file), and `weather-tools` and `weather-react` are also converted by inspect's
own `write_eval_log(..., format="json")` to `OUTDIR/<task>.json` (the same samples in the other format; the
other two stay `.eval` only, to keep the folder small). `OUTDIR/truth.json` is what the script made each sample
do — calls, what each tool returned or raised, the answer, user turns, usage — built from `SCRIPT` and the
tools' own code (`weather`, `convert`), not from a log.

Nothing machine-specific is left: inspect runs with a temporary directory as its working directory (outside any
git checkout, so it records no `revision`) and as `XDG_DATA_HOME`/`XDG_CACHE_HOME`; then every file is rewritten
(`inspect_common.scrub`): the temporary directory, this checkout, the interpreter's prefix and the home directory become
`<tmp>`, `<repo>`, `<python>` and `<home>` (tracebacks of the crashed sample hold such paths). A `.eval` archive
is rewritten member by member with inspect's own zip settings (`zipfile_compress_kwargs`: Zstandard), in the
same order. The run takes about 4 s.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from inspect_common import MODEL, main, record_logs, weather_tool  # noqa: E402

SYSTEM = "You are a weather assistant. Use the tools; never guess a temperature."
FOLLOW_UP = "And in Fahrenheit?"
ANSWER = "Paris: sunny, 21 C"
QUESTIONS = {"paris": "What is the weather in Paris?", "2": "Compare the weather in Paris and Atlantis.", "chat": "How is Paris today?",
             "crash": "What is the weather in Nowhere?", "react": "Is it sunny in Paris?", "agent": "Is Paris sunny right now?"}
# sample id -> the model's replies in order: ("text", text) | ("calls", [(call id, tool, arguments)], text) | ("think", reasoning, calls, text)
SCRIPT: dict[str, list[tuple[Any, ...]]] = {
    "paris": [("calls", [("call_paris", "get_weather", {"city": "Paris"})], "Let me look that up."), ("text", "Paris is sunny, 21 C.")],
    "2": [("calls", [("call_p", "get_weather", {"city": "Paris"}), ("call_a", "get_weather", {"city": "Atlantis"})], "Checking both cities."),
          ("text", "Paris is sunny, 21 C; the weather service is unavailable for Atlantis.")],
    "chat": [("think", "The user wants Paris: call get_weather first.", [("call_c1", "get_weather", {"city": "Paris"})], ""),
             ("text", "Paris is sunny, 21 C."),
             ("calls", [("call_c2", "convert_temperature", {"celsius": 21, "to": "F"})], "Converting."),
             ("text", "That is 69.8 F.")],
    "crash": [("calls", [("call_x", "get_weather", {"city": "Nowhere"})], "Looking it up.")],
    "react": [("calls", [("call_r1", "get_weather", {"city": "Paris"})], "I will check the weather."),
              ("calls", [("call_r2", "submit", {"answer": ANSWER})], "")],
    "agent": [("calls", [("call_g1", "get_weather", {"city": "Paris"})], "Checking."),
              ("calls", [("call_g2", "submit", {"answer": ANSWER})], "Submitting.")],
}
TASKS = {"weather-tools": (["paris", "2"], 2), "weather-chat": (["chat", "crash"], 1), "weather-react": (["react"], 1),
         "weather-agent": (["agent"], 1)}
JSON_TOO = ("weather-tools", "weather-react")


def weather(city: str) -> str:
    """The weather tool's own code: Paris is sunny, Atlantis a `ToolError` (the model is told), any other city a
    `RuntimeError` (not a `ToolError`: inspect ends the sample with it)."""
    from inspect_ai.tool import ToolError

    if city == "Paris":
        return "sunny, 21 C"
    if city == "Atlantis":
        raise ToolError("weather service unavailable for Atlantis")
    raise RuntimeError(f"weather backend crashed on {city}")


def convert(celsius: float, to: str) -> str:
    """The conversion tool's own code."""
    return f"{celsius * 9 / 5 + 32:.1f} {to}"


def usage(n: int) -> Any:
    """The usage of a sample's `n`-th reply (from 0): 100 + 10n input tokens at full rate, 20 + n output tokens,
    from the second reply on 40 more input tokens read from the prompt cache, and 0.001 (n + 1) dollars."""
    from inspect_ai.model import ModelUsage

    cached = 40 if n else None
    return ModelUsage(input_tokens=100 + 10 * n, output_tokens=20 + n, total_tokens=120 + 11 * n + (cached or 0),
                      input_tokens_cache_read=cached, total_cost=0.001 * (n + 1))


def scripted(messages: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> Any:
    """mockllm's `custom_outputs`: this sample's next scripted reply (by how many it made so far), with its usage."""
    from inspect_ai.model import ChatMessageAssistant, ContentReasoning, ContentText, ModelOutput
    from inspect_ai.tool import ToolCall

    question = next(m.text for m in messages if m.role == "user")
    n = sum(m.role == "assistant" for m in messages)
    turn = SCRIPT[next(k for k, q in QUESTIONS.items() if q in question)][n]
    if turn[0] == "text":
        output = ModelOutput.from_content(model=MODEL, content=turn[1])
    elif turn[0] == "calls" and len(turn[1]) == 1:
        (cid, name, args), = turn[1]
        output = ModelOutput.for_tool_call(model=MODEL, tool_name=name, tool_arguments=args, tool_call_id=cid, content=turn[2])
    else:  # several calls in one message, or reasoning before a call: a message made by hand
        calls, text = (turn[1], turn[2]) if turn[0] == "calls" else (turn[2], turn[3])
        content: Any = text if turn[0] == "calls" else [ContentReasoning(reasoning=turn[1]), *([ContentText(text=text)] if text else [])]
        message = ChatMessageAssistant(content=content, model=MODEL, source="generate",
                                       tool_calls=[ToolCall(id=cid, function=name, arguments=args) for cid, name, args in calls])
        output = ModelOutput.from_message(message, stop_reason="tool_calls")
    output.usage = usage(n)
    return output


def tasks() -> list[Any]:
    """The four tasks (see the module docstring)."""
    from inspect_ai import Task
    from inspect_ai.agent import react
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes, match
    from inspect_ai.solver import basic_agent, generate, system_message, use_tools, user_message
    from inspect_ai.tool import tool

    @tool
    def convert_temperature() -> Any:
        async def execute(celsius: float, to: str) -> str:
            """Convert a Celsius temperature.

            Args:
                celsius: degrees Celsius
                to: the scale to convert to (F)
            """
            return convert(celsius, to)

        return execute

    paris = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    tools = [weather_tool(weather), convert_temperature()]
    return [
        Task(name="weather-tools", epochs=2, solver=[use_tools(*tools), generate()], scorer=[includes(), match(location="any")],
             dataset=[Sample(id="paris", input=QUESTIONS["paris"], target="21", metadata={"city": "Paris", "level": 1, "expected_tool_calls": paris}),
                      Sample(id=2, input=QUESTIONS["2"], target=["unavailable", "Atlantis"],
                             metadata={"city": "Paris+Atlantis", "level": 2, "cities": ["Paris", "Atlantis"],
                                       "expected_tool_calls": [*paris, {"name": "get_weather", "arguments": {"city": "Atlantis"}}]})]),
        Task(name="weather-chat", solver=[system_message(SYSTEM), use_tools(*tools), generate(), user_message(FOLLOW_UP), generate()],
             scorer=includes(), dataset=[Sample(id="chat", input=QUESTIONS["chat"], target="69.8"),
                                          Sample(id="crash", input=QUESTIONS["crash"], target="unknown")]),
        Task(name="weather-react", solver=react(tools=[weather_tool(weather)]), scorer=includes(),
             dataset=[Sample(id="react", input=QUESTIONS["react"], target="sunny", metadata={"expected_tool_calls": paris})]),
        Task(name="weather-agent", solver=basic_agent(tools=[weather_tool(weather)]), scorer=includes(),
             dataset=[Sample(id="agent", input=QUESTIONS["agent"], target="sunny", metadata={"expected_tool_calls": paris})]),
    ]


def truth() -> dict[str, Any]:
    """`{task: {"epochs", "samples": {id: {...}}}}`: what `SCRIPT` and the tools' code make each sample do."""
    out: dict[str, Any] = {}
    for task, (ids, epochs) in TASKS.items():
        samples = {}
        for sid in ids:
            calls, thoughts, answer, error = [], [], None, None
            for turn in SCRIPT[sid]:
                if turn[0] == "text":
                    answer = turn[1]
                    continue
                if turn[0] == "think":
                    thoughts.append(turn[1])
                for cid, name, args in turn[1] if turn[0] == "calls" else turn[2]:
                    if name == "submit":  # the answer, not a call
                        answer = args["answer"]
                        continue
                    call: dict[str, Any] = {"id": cid, "name": name, "arguments": args, "result": None, "error": None}
                    try:
                        call["result"] = weather(**args) if name == "get_weather" else convert(**args)
                    except RuntimeError as exc:  # the sample ends here, with this error: the call failed with it, no result
                        answer, error, call["error"] = None, repr(exc), repr(exc)
                    except Exception as exc:  # noqa: BLE001 - ToolError: the model is told, with an empty result
                        call["result"], call["error"] = "", str(exc)
                    calls.append(call)
            n = len(SCRIPT[sid])
            spent = [usage(i) for i in range(n)]
            samples[sid] = {"input": QUESTIONS[sid], "user_turns": [QUESTIONS[sid], *([FOLLOW_UP] if sid == "chat" else [])],
                            "calls": calls, "thoughts": thoughts, "output": answer, "error": error,
                            "usage": {"input_tokens": sum(u.input_tokens + (u.input_tokens_cache_read or 0) for u in spent),
                                      "output_tokens": sum(u.output_tokens for u in spent), "requests": n,
                                      "cost_usd": round(sum(u.total_cost for u in spent), 6)}}
        out[task] = {"epochs": epochs, "samples": samples}
    return out


def record(out: Path) -> dict[str, Any]:
    """Run the tasks and write `out/<task>.eval`, `out/<task>.json` (`JSON_TOO`) and `out/truth.json`; returns the truth."""
    return record_logs(out, tasks, scripted, lambda logs: truth(), json_too=JSON_TOO, fail_on_error=False)


if __name__ == "__main__":
    sys.exit(main(record, __doc__, sys.argv[1:], show=False))
