"""Record smolagents runs whose answer or failure both of smolagents' records hold, with the installed smolagents.

    python tests/frameworks/record_smolagents_agree.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/smolagents-agree)

Each scenario runs once, in a subprocess of its own (the instrumentor patches smolagents once per process), recorded twice:
by openinference-instrumentation-smolagents (`OUTDIR/<scenario>.oi.jsonl`, OTLP/JSON, read as `format: otel`) and as the
agent's memory after its runs (`OUTDIR/<scenario>.memory.jsonl`, `{"id", "steps": agent.memory.get_full_steps()}`, read as
`format: smolagents`). `OUTDIR/<scenario>.truth.json` holds, for each run, its task, what it returned (the value as JSON) or
raised (`"<type>: <message>"`), the memory's steps' errors, what each tool was called with and returned (`tool_runs`), and
how many chat requests the server got. The model is the project's scripted loopback server (request n gets reply n; a reply
may be an HTTP error; no network); the OpenAI client does not retry.

Scenarios:

- `code-true`: `CodeAgent`; its code is `final_answer(True)`: the run returns `True`;
- `tool-true`: `ToolCallingAgent`; the model calls `final_answer` with `{"answer": true}`: the run returns `True`;
- `tool-empty`: `ToolCallingAgent`; the model calls `final_answer` with `{"answer": ""}`: the run returns `""`;
- `tool-dict`: `ToolCallingAgent`; `final_answer` with `{"answer": {"city": "Paris", "temp_c": 21}}`: the run returns that dict;
- `tool-none`: `ToolCallingAgent`; `final_answer` with `{"answer": null}`: the run returns `None`;
- `tool-raised`: `ToolCallingAgent`; `get_weather` (Paris), then the second request gets HTTP 500: `run` raises
  `AgentGenerationError`;
- `code-raised`: `CodeAgent`; step 1's code calls `get_weather` (Paris) and prints, then the second request gets HTTP 500;
- `tool-check`, `code-check`: the agent has `final_answer_checks` (the answer must name Paris); its first answer ("I do
  not know.") fails the check (smolagents records the step's error and goes on), its second ("Paris is sunny.") passes;
- `managed`: a `ToolCallingAgent` manager with a managed `ToolCallingAgent` `researcher`: the manager calls
  `researcher(task=…)`, the researcher calls `get_weather` (Paris) and answers, the manager answers with its text.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import calls_reply as _calls, record_each_in_subprocess, smolagents_recording, step_errors, text_reply as _text  # noqa: E402
from common import weather_tool, write_memory, write_truth  # noqa: E402
from record_oi_faults import call  # noqa: E402
from record_smolagents_final_request import SERVER_ERROR, FailingOpenAI  # noqa: E402

OUT = HERE.parent / "data" / "smolagents-agree"
WEATHER = {"Paris": "sunny, 21 C"}
TASK = "What is the weather in Paris?"
PARIS = call("c1", "get_weather", {"city": "Paris"})
# scenario: (agent kind, replies)
SCENARIOS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "code-true": ("code", [_text("Thought: I answer.\n<code>\nfinal_answer(True)\n</code>")]),
    "tool-true": ("tool", [_calls(call("c0", "final_answer", {"answer": True}))]),
    "tool-empty": ("tool", [_calls(call("c0", "final_answer", {"answer": ""}))]),
    "tool-dict": ("tool", [_calls(call("c0", "final_answer", {"answer": {"city": "Paris", "temp_c": 21}}))]),
    "tool-none": ("tool", [_calls(call("c0", "final_answer", {"answer": None}))]),
    "tool-raised": ("tool", [_calls(PARIS), SERVER_ERROR]),
    "code-raised": ("code", [_text('Thought: check Paris.\n<code>\nw = get_weather(city="Paris")\nprint(w)\n</code>'), SERVER_ERROR]),
    "tool-check": ("tool", [_calls(call("c0", "final_answer", {"answer": "I do not know."})),
                            _calls(call("c1", "final_answer", {"answer": "Paris is sunny."}))]),
    "code-check": ("code", [_text('Thought: I answer.\n<code>\nfinal_answer("I do not know.")\n</code>'),
                            _text('Thought: I answer again.\n<code>\nfinal_answer("Paris is sunny.")\n</code>')]),
    "managed": ("managed", [_calls(call("m1", "researcher", {"task": "Find the weather in Paris."})),
                            _calls(PARIS),
                            _calls(call("r2", "final_answer", {"answer": "Paris: sunny, 21 C"})),
                            _calls(call("m2", "final_answer", {"answer": "It is sunny in Paris, 21 C."}))]),
}


def _names_paris(answer: Any, memory: Any, agent: Any = None) -> bool:
    """A final-answer check: the answer names Paris (smolagents refuses one that does not, and the run goes on)."""
    return "Paris" in str(answer)


def run(out: Path, name: str) -> Any:
    from smolagents import CodeAgent, ToolCallingAgent

    kind, replies = SCENARIOS[name]
    runs: list[dict[str, Any]] = []
    server = FailingOpenAI(replies)
    entry: dict[str, Any] = {"task": TASK, "returned": None, "returned_type": None, "raised": None}
    with smolagents_recording(server, out, name) as model:
        tools = [weather_tool(WEATHER, runs)]
        if kind == "managed":
            researcher = ToolCallingAgent(tools=tools, model=model, name="researcher", description="Looks up the weather.", verbosity_level=0)
            agent = ToolCallingAgent(tools=[], model=model, managed_agents=[researcher], verbosity_level=0)
        else:
            checks = [_names_paris] if name.endswith("-check") else None
            agent = (CodeAgent if kind == "code" else ToolCallingAgent)(tools=tools, model=model, verbosity_level=0, final_answer_checks=checks)
        try:
            returned = agent.run(TASK)
            entry["returned"], entry["returned_type"] = json.loads(json.dumps(returned, default=str)), type(returned).__name__
        except Exception as e:  # noqa: BLE001 (what the application saw is the truth)
            entry["raised"] = f"{type(e).__name__}: {e}"
    steps = write_memory(out, name, agent)
    truth = {**entry, "step_errors": step_errors(steps), "tool_runs": runs, "requests": server.n}
    if kind == "managed":
        truth["managed_returned"] = [s.get("observations") for s in steps if any(
            (tc.get("function") or {}).get("name") == "researcher" for tc in s.get("tool_calls") or [])]
    write_truth(out, name, truth)
    return entry


RUNS = {n: (lambda out, n=n: run(out, n)) for n in SCENARIOS}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], RUNS))
