"""Record the smolagents memories behind `tests/test_smolagents_parallel_results.py`, with the installed smolagents.

    python tests/frameworks/record_smolagents_results.py OUTDIR

writes `OUTDIR/<scenario>.jsonl` (`agent.memory.get_full_steps()`, one run a line, as the README
says to export it) and `OUTDIR/<scenario>.truth.json` (what each tool returned, as the tools saw it)
for every scenario. A `ToolCallingAgent` on `OpenAIServerModel` talks to the project's scripted
loopback server (`record_oi_faults.ScriptedOpenAI`: one fixed reply per request; no network): the model
makes two calls in one message, then answers. Prints each scenario's answer on stderr.

Scenarios (`SCENARIOS`: call_a's result, call_b's result; smolagents joins them in call id order):

- `empty-last`: `get_forecast` returns two lines, `log_event` returns "": the step's observations
  are the two lines alone, as two one-line results would make them.
- `empty-first`: `log_event` (call_a) returns "", `get_forecast` (call_b) two lines.
- `one-result`: `get_forecast` returns one line, `log_event` "": one line for two calls.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, write_jsonl, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

USER = "Forecast for Paris, and log that I asked."
ANSWER = "Sunny, wind 5 km/h."
FORECAST = {"empty-last": "sunny\nwind 5 km/h", "empty-first": "sunny\nwind 5 km/h", "one-result": "sunny, 21 C"}
FIRST = {"empty-last": "get_forecast", "empty-first": "log_event", "one-result": "get_forecast"}  # the tool call_a runs
ARGS = {"get_forecast": {"city": "Paris"}, "log_event": {"event": "forecast asked"}}


def _tools(forecast: str) -> list[Any]:
    from smolagents import tool

    @tool
    def get_forecast(city: str) -> str:
        """Forecast for a city.

        Args:
            city: the city
        """
        return forecast

    @tool
    def log_event(event: str) -> str:
        """Log an event; returns nothing.

        Args:
            event: what happened
        """
        return ""

    return [get_forecast, log_event]


def record(name: str, out: Path) -> Any:
    from smolagents import OpenAIServerModel, ToolCallingAgent

    first = FIRST[name]
    second = next(n for n in ARGS if n != first)
    results = {"get_forecast": FORECAST[name], "log_event": ""}
    replies = [{"role": "assistant", "content": None, "tool_calls": [call("call_a", first, ARGS[first]), call("call_b", second, ARGS[second])]},
               {"role": "assistant", "content": None, "tool_calls": [call("call_c", "final_answer", {"answer": ANSWER})]}]
    with ScriptedOpenAI(replies) as fake:
        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake")
        agent = ToolCallingAgent(tools=_tools(FORECAST[name]), model=model, max_steps=4, verbosity_level=0)
        answer = agent.run(USER)
        write_jsonl(out / f"{name}.jsonl", [agent.memory.get_full_steps()])
    write_truth(out, name, {"input": USER, "output": answer, "user_turns": [USER],
                            "calls": [{"name": n, "arguments": ARGS[n], "result": results[n], "error": None} for n in (first, second)]})
    return answer


SCENARIOS = list(FORECAST)


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    for name in SCENARIOS:
        print(json.dumps({name: record(name, out)}), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
