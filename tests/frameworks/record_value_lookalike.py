"""Record the traces behind `tests/test_otel_value_lookalike.py`: an application's own text that looks like a value the
attribute length limit cut (JSON that never closes, exactly 1,000 characters), recorded with NO limit.

    python tests/frameworks/record_value_lookalike.py OUTDIR   (OUTDIR: tests/data/value-limit)

The OpenAI Agents SDK (Chat Completions) under OpenInference, against the project's scripted loopback OpenAI server
(`record_otel_loop_faults.Scripted`; no network): agent `Ops` calls `fetch_log`, which returns a log excerpt its
service cut at 1,000 characters (it opens with `{` and never closes), and answers with the same text.

- `lookalike-1000`: the model answers after the call; the next request's history holds the tool message, longer values
  than 1,000 characters are in the trace, so no limit at 1,000 was set.
- `lookalike-stop-1000`: `tool_use_behavior="stop_on_first_tool"`: the tool's text is the run's output and the longest
  value of the trace: read as the limit's cut or not, the tool ran (it is no call held for approval).

Each writes `oi-<scenario>.jsonl` (OTLP/JSON) and `<scenario>.truth.json`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import agents_recording, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted, call, chat  # noqa: E402

N = 1000
TEXT = ('{"log": [' + ",".join(json.dumps({"ts": i, "msg": f"disk full on node-{i}"}) for i in range(400)))[:N]


def _script(body: dict, headers: dict) -> tuple[dict, dict]:
    msgs = body["messages"]
    usage = {"prompt_tokens": 100 + len(msgs), "completion_tokens": 10, "total_tokens": 110 + len(msgs)}
    if msgs[-1]["role"] == "tool":
        return chat(TEXT), usage
    return chat(None, call("call_l1", "fetch_log", {"node": "n1"})), usage


def record(out: Path, stop: bool) -> None:
    from agents import Agent, Runner, function_tool

    @function_tool
    def fetch_log(node: str) -> str:
        return TEXT

    name = f"lookalike-{'stop-' if stop else ''}{N}"
    agent = Agent(name="Ops", instructions="You are Ops. Return the raw log.", tools=[fetch_log],
                  tool_use_behavior="stop_on_first_tool" if stop else "run_llm_again")
    with agents_recording(Scripted(_script), out, name, files=("oi-{}.jsonl", "export-{}.jsonl")):
        result = asyncio.run(Runner.run(agent, "Show me the raw log of node n1."))
    (out / f"export-{name}.jsonl").unlink()  # (the SDK's export is not what this reads)
    write_truth(out, name, {"call": "fetch_log", "arguments": {"node": "n1"}, "result": TEXT, "output": result.final_output})


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    record(target, stop=False)
    record(target, stop=True)
