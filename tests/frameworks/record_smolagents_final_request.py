"""Record smolagents runs that reached `max_steps` and whose own final-answer request then failed, with the installed smolagents.

    python tests/frameworks/record_smolagents_final_request.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/smolagents-final-request)

Each scenario runs once, in a subprocess of its own (the instrumentor patches smolagents once per process), recorded twice: by
openinference-instrumentation-smolagents (`OUTDIR/<scenario>.oi.jsonl`, OTLP/JSON, read as `format: otel`) and as the run's own
memory (`OUTDIR/<scenario>.memory.jsonl`, `{"id", "steps": agent.memory.get_full_steps()}`, read as `format: smolagents`).
`OUTDIR/<scenario>.truth.json` holds what `agent.run` returned (a `RunResult`'s `output`), the run's state as smolagents tells it
(`RunResult.state`: `max_steps_error` when the memory's last step has `AgentMaxStepsError`),
each step's error, what each tool returned, and how many chat requests the server got. The model is a scripted loopback server
(`FailingOpenAI`: request n gets reply n, which may be an HTTP error or a malformed body; no network); the OpenAI client does
not retry (`max_retries=0`).

Scenarios: the model calls `get_weather` on each of the `max_steps=2` steps and never `final_answer`; smolagents then asks the
model for an answer itself (`provide_final_answer`), and that request

- `tool-500`: (`ToolCallingAgent`) gets HTTP 500 (`openai.InternalServerError`);
- `tool-malformed`: (`ToolCallingAgent`) gets HTTP 200 whose body has no `choices` (smolagents fails reading it);
- `code-500`: (`CodeAgent`, the steps' code calls `get_weather`) gets HTTP 500;
- `tool-ok`: (`ToolCallingAgent`) is answered, for comparison;
- `tool-500-full`, `tool-ok-full`: `tool-500` and `tool-ok` run as `agent.run(task, return_full_result=True)` (it returns a
  `RunResult`, whose `output` is what `agent.run` returns otherwise).

smolagents catches that failure: the run returns `[{"type": "text", "text": "Error in generating final LLM output: …"}]`
(its stand-in message's content) and raises nothing; the memory's last step has error `AgentMaxStepsError` and that content as
its `action_output`; `RunResult.state` is `max_steps_error`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, calls_reply as _calls, record_each_in_subprocess, smolagents_recording, step_errors  # noqa: E402
from common import weather_tool, write_memory, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

OUT = HERE.parent / "data" / "smolagents-final-request"
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
ASK = "Keep checking the weather in Paris and Tokyo."
SERVER_ERROR = {"status": 500, "body": {"error": {"message": "The server had an error while processing your request.", "type": "server_error"}}}
NO_CHOICES = {"status": 200, "body": {"id": "chatcmpl-x", "object": "chat.completion", "created": 1767225600, "model": MODEL}}


def _code(city: str) -> dict[str, Any]:
    return {"role": "assistant", "content": f'Thought: check {city}.\n<code>\nw = get_weather(city="{city}")\nprint(w)\n</code>'}


_STEPS = [_calls(call("c1", "get_weather", {"city": "Paris"})), _calls(call("c2", "get_weather", {"city": "Tokyo"}))]
REPLIES = {
    "tool-500": [*_STEPS, SERVER_ERROR],
    "tool-malformed": [*_STEPS, NO_CHOICES],
    "code-500": [_code("Paris"), _code("Tokyo"), SERVER_ERROR],
    "tool-ok": [*_STEPS, {"role": "assistant", "content": "Paris is sunny and Tokyo is rainy."}],
}
REPLIES["tool-500-full"] = REPLIES["tool-500"]  # the same runs, `agent.run(..., return_full_result=True)`
REPLIES["tool-ok-full"] = REPLIES["tool-ok"]


class FailingOpenAI(ScriptedOpenAI):
    """`ScriptedOpenAI` whose reply may be `{"status", "body"}`: that HTTP status and JSON body, sent as they are."""

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        reply = self.replies[self.n]
        if "status" not in reply:
            return await super()._chat(request)
        await request.json()
        self.n += 1
        return web.json_response(reply["body"], status=reply["status"])


def run(out: Path, name: str) -> Any:
    from smolagents import CodeAgent, ToolCallingAgent

    runs: list[dict[str, Any]] = []
    server = FailingOpenAI(REPLIES[name])
    with smolagents_recording(server, out, name) as model:
        kind = CodeAgent if name.startswith("code") else ToolCallingAgent
        agent = kind(tools=[weather_tool(WEATHER, runs)], model=model, max_steps=2, verbosity_level=0)
        full = name.endswith("-full")
        returned = agent.run(ASK, return_full_result=full)
    steps = write_memory(out, name, agent)
    output = returned.output if full else returned
    state = returned.state if full else "max_steps_error" if type(agent.memory.steps[-1].error).__name__ == "AgentMaxStepsError" else "success"
    write_truth(out, name, {"asked": ASK, "returned": json.loads(json.dumps(output, default=str)), "state": state,
                            "step_errors": step_errors(steps), "last_action_output": json.loads(json.dumps(steps[-1].get("action_output"), default=str)),
                            "tool_runs": runs, "requests": server.n})
    return output


SCENARIOS = {n: (lambda out, n=n: run(out, n)) for n in REPLIES}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], SCENARIOS))
