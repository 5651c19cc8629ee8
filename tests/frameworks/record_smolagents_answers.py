"""Record smolagents `CodeAgent` runs whose code answers with `final_answer(value)`, a value of each kind, with the installed smolagents.

    python tests/frameworks/record_smolagents_answers.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/smolagents-answers)

Each scenario runs once, in a subprocess of its own (the instrumentor patches smolagents once per process), recorded twice:
by openinference-instrumentation-smolagents (`OUTDIR/<scenario>.oi.jsonl`, OTLP/JSON, read as `format: otel`) and as the
agent's memory after the run (`OUTDIR/<scenario>.memory.jsonl`, `{"id", "steps": agent.memory.get_full_steps()}`, read as
`format: smolagents`). `OUTDIR/<scenario>.truth.json` holds the task, the model's one reply (`reply`: its words and code),
what `agent.run` returned (`returned`, the value itself), the type of that value, what the memory's last step holds as its
`action_output`, what each tool was called with and returned (`tool_runs`), and how many chat requests the server got. The
model is the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network).

Scenarios (one step each; its code ends in `final_answer(...)`):

- `text`: `final_answer("Paris is sunny, 21 C.")`, for comparison;
- `dict`: `final_answer({"city": "Paris", "temp_c": 21})`;
- `dict-keyword`: `final_answer(answer={"city": "Paris", "temp_c": 21})`;
- `number`: `final_answer(21)`;
- `list`: `final_answer([21, 14])` (its `str()` is JSON too);
- `dict-after-tool`: `w = get_weather(city="Paris")`, then `final_answer({"city": "Paris", "weather": w})` in the same code.
- `str-number`, `str-json`, `str-list`, `str-quoted`, `str-empty`: a string that reads as JSON (`final_answer("21")`,
  `final_answer('{"city": "Paris", "temp_c": 21}')`, `"[21, 14]"`, `'"Paris"'`, `""`): the run returned that string;
- `none`: `final_answer(None)`: the run returned `None`.

openinference-instrumentation-smolagents (0.1.43) records the `final_answer` call's Python arguments as its span's `input.value`
(`{"args": [value], "kwargs": {}, ...}`, or the value under `kwargs`), the value as its `output.value` (JSON when it is no
string, `output.mime_type` `application/json`), and the agent span's `output.value` is `str()` of the value.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import record_each_in_subprocess, smolagents_recording, text_reply, weather_tool, write_memory, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI  # noqa: E402

OUT = HERE.parent / "data" / "smolagents-answers"
TASK = "What is the weather in Paris?"
WEATHER = {"Paris": "sunny, 21 C"}
CODE = {
    "text": 'final_answer("Paris is sunny, 21 C.")',
    "dict": 'final_answer({"city": "Paris", "temp_c": 21})',
    "dict-keyword": 'final_answer(answer={"city": "Paris", "temp_c": 21})',
    "number": "final_answer(21)",
    "list": "final_answer([21, 14])",
    "dict-after-tool": 'w = get_weather(city="Paris")\nfinal_answer({"city": "Paris", "weather": w})',
    "str-number": 'final_answer("21")',
    "str-json": "final_answer('{\"city\": \"Paris\", \"temp_c\": 21}')",
    "str-list": 'final_answer("[21, 14]")',
    "str-quoted": "final_answer('\"Paris\"')",
    "str-empty": 'final_answer("")',
    "none": "final_answer(None)",
}


def run(out: Path, name: str) -> Any:
    from smolagents import CodeAgent

    reply = f"Thought: I answer.\n<code>\n{CODE[name]}\n</code>"
    runs: list[dict[str, Any]] = []
    server = ScriptedOpenAI([text_reply(reply)])
    with smolagents_recording(server, out, name) as model:
        agent = CodeAgent(tools=[weather_tool(WEATHER, runs)], model=model, verbosity_level=0)
        returned = agent.run(TASK)
    steps = write_memory(out, name, agent)
    write_truth(out, name, {"task": TASK, "reply": reply, "returned": returned, "returned_type": type(returned).__name__,
                            "last_action_output": json.loads(json.dumps(steps[-1].get("action_output"), default=str)),
                            "tool_runs": runs, "requests": server.n})
    return returned


RUNS = {n: (lambda out, n=n: run(out, n)) for n in CODE}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], RUNS))
