"""Record inspect-ai logs of samples stopped before their agent was done: a token limit, a tool that raised, a time limit.

    python tests/frameworks/record_inspect_stops.py OUTDIR      (OUTDIR: tests/data/inspect-stops)

runs four tasks with `inspect_ai.eval(...)` on the offline `mockllm/model` provider (no network; its replies scripted, as in
`record_inspect.py`, each with its usage: 100 input and 20 output tokens unless the script says otherwise), with real `@tool`
functions that log every run (started, returned, raised):

- `token-limit` (`react()`, `token_limit=300`): sample `over_calls` calls `get_weather(Paris)`, then `get_weather(Tokyo)`,
  then `get_weather(Oslo)` and `get_weather(Rome)` in one reply: that third reply brings the tokens to 360, so inspect
  stops the sample before it joins the messages, and neither call runs;
- `token-limit-gen` (`use_tools` + `generate`, `token_limit=300`): sample `over_answer` calls `get_weather(Lima)`, then
  `get_weather(Cairo)`, then answers in a third reply, past the limit; sample `over_first`'s first reply (400 tokens)
  calls `get_weather(Quito)` and is already past it;
- `crash-serial` (`use_tools` + `generate`, a `get_weather` declared `parallel=False`, so its calls run one after the
  other): sample `serial` calls `get_weather(Berlin)`, `get_weather(Nowhere)` and `get_weather(Madrid)` in one reply;
  Berlin returns, Nowhere raises `RuntimeError`, which ends the sample with an error (`fail_on_error=False` lets the run
  finish), and Madrid never runs;
- `time-limit` (`use_tools` + `generate`, `time_limit=2`): sample `slow` calls `get_weather(Vienna)` and
  `slow_weather(Delhi)` in one reply; Vienna returns at once, Delhi sleeps for 30 s and the time limit stops the sample
  while it runs.

inspect writes each log as `<timestamp>_<task>.eval`; it is copied to `OUTDIR/<task>.eval` and scrubbed of this machine's
paths (`inspect_common.scrub_file`). `OUTDIR/truth.json` holds, per task and sample, what the application
did: its question, the replies the model made (the script's, as served: text and call ids), every call the model asked
for with what its tool's own log says (`started`, the value it `returned`, the `repr` of what it `raised`), the usage of
the replies made, and from the log what inspect itself kept: the completion it scored (`output`), the sample's error
message and the limit that stopped it (type and reason). The run takes about 5 s.
"""

from __future__ import annotations

import asyncio
import sys
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from inspect_common import main, model_output, record_logs, script_turn, weather_tool  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C", "Oslo": "snow, -2 C", "Rome": "sunny, 25 C", "Lima": "cloudy, 18 C",
           "Cairo": "hot, 35 C", "Quito": "mild, 16 C", "Berlin": "windy, 12 C", "Madrid": "dry, 28 C", "Vienna": "foggy, 9 C",
           "Delhi": "humid, 33 C"}
QUESTIONS = {"over_calls": "Weather in Paris, Tokyo, Oslo and Rome?", "over_answer": "Weather in Lima and Cairo?",
             "over_first": "Weather in Quito?", "serial": "Weather in Berlin, Nowhere and Madrid?", "slow": "Weather in Vienna and Delhi?"}
# sample id -> the model's replies in order: ("text", text, tokens) | ("calls", [(call id, tool, arguments)], text, tokens)
SCRIPT: dict[str, list[tuple[Any, ...]]] = {
    "over_calls": [("calls", [("t1", "get_weather", {"city": "Paris"})], "Paris first.", 120),
                   ("calls", [("t2", "get_weather", {"city": "Tokyo"})], "Now Tokyo.", 120),
                   ("calls", [("t3", "get_weather", {"city": "Oslo"}), ("t4", "get_weather", {"city": "Rome"})], "Now Oslo and Rome.", 120),
                   ("text", "never asked for", 120)],
    "over_answer": [("calls", [("a1", "get_weather", {"city": "Lima"})], "Lima.", 120),
                    ("calls", [("a2", "get_weather", {"city": "Cairo"})], "Cairo.", 120),
                    ("text", "Lima is cloudy, 18 C; Cairo is hot, 35 C.", 120), ("text", "never asked for", 120)],
    "over_first": [("calls", [("q1", "get_weather", {"city": "Quito"})], "Quito.", 400), ("text", "never asked for", 120)],
    "serial": [("calls", [("s1", "get_weather", {"city": "Berlin"}), ("s2", "get_weather", {"city": "Nowhere"}),
                          ("s3", "get_weather", {"city": "Madrid"})], "All three, in order.", 120), ("text", "never asked for", 120)],
    "slow": [("calls", [("v1", "get_weather", {"city": "Vienna"}), ("v2", "slow_weather", {"city": "Delhi"})], "Both at once.", 120),
             ("text", "never asked for", 120)],
}
TASKS = {"token-limit": ["over_calls"], "token-limit-gen": ["over_answer", "over_first"], "crash-serial": ["serial"], "time-limit": ["slow"]}
SERVED: dict[str, list[dict[str, Any]]] = {sid: [] for sid in SCRIPT}  # per sample, the replies the model made: {"text", "calls", "tokens"}
RAN: dict[tuple[str, str], dict[str, Any]] = {}  # (tool, city) -> {"started", "returned", "raised"}: the tools' own log


def scripted(messages: list[Any], tools: list[Any], tool_choice: Any, config: Any) -> Any:
    """mockllm's `custom_outputs`: this sample's next scripted reply (by how many it made so far), with its usage."""
    from inspect_ai.model import ModelUsage

    sid, turn = script_turn(messages, QUESTIONS, SCRIPT)
    output = model_output(turn)
    tokens = turn[-1]
    output.usage = ModelUsage(input_tokens=tokens - 20, output_tokens=20, total_tokens=tokens)
    SERVED[sid].append({"text": turn[1] if turn[0] == "text" else turn[2], "calls": [c[0] for c in turn[1]] if turn[0] == "calls" else [],
                        "tokens": tokens})
    return output


def _weather(tool: str, city: str) -> str:
    """The tools' own code: a known city's weather, any other a `RuntimeError` (not a `ToolError`: it ends the sample)."""
    RAN[(tool, city)] = {"started": True, "returned": None, "raised": None}
    if city not in WEATHER:
        exc = RuntimeError(f"weather backend crashed on {city}")
        RAN[(tool, city)]["raised"] = repr(exc)
        raise exc
    RAN[(tool, city)]["returned"] = WEATHER[city]
    return WEATHER[city]


def tasks() -> list[Any]:
    from inspect_ai import Task
    from inspect_ai.agent import react
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate, use_tools
    from inspect_ai.tool import tool

    def get_weather(parallel: bool = True) -> Any:
        return weather_tool(partial(_weather, "get_weather"), parallel=parallel)

    @tool
    def slow_weather() -> Any:
        async def execute(city: str) -> str:
            """Current weather in a city, from a slow service.

            Args:
                city: the city
            """
            RAN[("slow_weather", city)] = {"started": True, "returned": None, "raised": None}
            await asyncio.sleep(30)
            RAN[("slow_weather", city)]["returned"] = WEATHER[city]
            return WEATHER[city]

        return execute

    def samples(task: str) -> list[Any]:
        return [Sample(id=sid, input=QUESTIONS[sid], target="sunny") for sid in TASKS[task]]

    return [
        Task(name="token-limit", solver=react(tools=[get_weather()]), scorer=includes(), token_limit=300, dataset=samples("token-limit")),
        Task(name="token-limit-gen", solver=[use_tools(get_weather()), generate()], scorer=includes(), token_limit=300,
             dataset=samples("token-limit-gen")),
        Task(name="crash-serial", solver=[use_tools(get_weather(parallel=False)), generate()], scorer=includes(), dataset=samples("crash-serial")),
        Task(name="time-limit", solver=[use_tools(get_weather(), slow_weather()), generate()], scorer=includes(), time_limit=2,
             dataset=samples("time-limit")),
    ]


def truth(logs: dict[str, Any]) -> dict[str, Any]:
    """Per task and sample: what the script served, what the tools' log says of each call, and what inspect kept (module doc)."""
    out: dict[str, Any] = {}
    for task, ids in TASKS.items():
        out[task] = {}
        for sid in ids:
            sample = next(s for s in logs[task].samples if s.id == sid)
            calls = []
            for turn in SCRIPT[sid]:
                for cid, name, args in turn[1] if turn[0] == "calls" else []:
                    if cid in (c for r in SERVED[sid] for c in r["calls"]):
                        ran = RAN.get((name, args["city"]), {"started": False, "returned": None, "raised": None})
                        calls.append({"id": cid, "name": name, "arguments": args, **ran})
            out[task][sid] = {"input": QUESTIONS[sid], "replies": [{k: r[k] for k in ("text", "calls")} for r in SERVED[sid]], "calls": calls,
                              "usage": {"requests": len(SERVED[sid]), "input_tokens": sum(r["tokens"] - 20 for r in SERVED[sid]),
                                        "output_tokens": 20 * len(SERVED[sid])},
                              "output": sample.output.completion if sample.error is None else None,
                              "error": sample.error.message if sample.error else None,
                              "limit": {"type": sample.limit.type, "reason": sample.limit.reason} if sample.limit else None}
    return out


def record(out: Path) -> dict[str, Any]:
    """Run the tasks and write `out/<task>.eval` and `out/truth.json`; returns the truth."""
    return record_logs(out, tasks, scripted, truth, fail_on_error=False)


if __name__ == "__main__":
    sys.exit(main(record, __doc__, sys.argv[1:]))
