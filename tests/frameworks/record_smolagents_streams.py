"""Record smolagents runs iterated as streams (`agent.run(task, stream=True)`), with the installed smolagents.

    python tests/frameworks/record_smolagents_streams.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/smolagents-streams)

Each scenario runs once, in a subprocess of its own (the instrumentor patches smolagents once per process), recorded twice:
by openinference-instrumentation-smolagents (`OUTDIR/<scenario>.oi.jsonl`, OTLP/JSON, read as `format: otel`) and as the
run's own memory (`OUTDIR/<scenario>.memory.jsonl`, `{"id", "steps": agent.memory.get_full_steps()}`, read as
`format: smolagents`). `OUTDIR/<scenario>.truth.json` holds what the application got: the kinds of the events the run
yielded (`events`), the `output` of its last one (a `FinalAnswerStep`: what the run answered; `returned`), what it raised
(`raised`, `"<type>: <message>"`), what each tool was called with and returned (`tool_runs`), each memory step's error and
how many chat requests the server got. The model is a scripted loopback server (`Streaming`: request n gets reply n, sent
as server-sent-event chunks when the request asks to stream, content in pieces and each tool call's arguments in pieces as
OpenAI sends them; a reply may be an HTTP error; no network); the OpenAI client does not retry.

Scenarios (every run is `agent.run(TASK, stream=True)`, its events iterated to the end):

- `tool`: `ToolCallingAgent`; `get_weather` for Paris and Tokyo in one reply, then `final_answer`;
- `code-deltas`: `CodeAgent(stream_outputs=True)` (the model's replies streamed too: the run yields their deltas); step
  1's code calls `get_weather` twice, step 2's calls `final_answer` with a string;
- `code-dict`: `CodeAgent` whose code calls `get_weather` and `final_answer({"city": "Paris", "temp_c": 21})` in one block;
- `max-steps`: `ToolCallingAgent(max_steps=1)`; `get_weather`, then smolagents asks the model for an answer itself;
- `fails`: `ToolCallingAgent`; `get_weather`, then the second request gets HTTP 500: the iteration raises
  `AgentGenerationError` (smolagents re-raises a model's failure).

openinference-instrumentation-smolagents (0.1.43) wraps the run's generator: the agent span's `output.value` is the
`str()` of every event the run yielded, joined (its tool calls, tool outputs, deltas, action steps with their whole
memory), the last being `FinalAnswerStep(output=…)`; and its `finally` sets the span's status OK, over the ERROR it set
when the generator raised (the `exception` event stays).
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
from common import text_reply as _text, weather_tool, write_memory, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

OUT = HERE.parent / "data" / "smolagents-streams"
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
TASK = "What is the weather in Paris and Tokyo?"
SERVER_ERROR = {"status": 500, "body": {"error": {"message": "The server had an error while processing your request.", "type": "server_error"}}}

PARIS = call("c1", "get_weather", {"city": "Paris"})
# scenario: (agent kind, agent keyword arguments, replies)
SCENARIOS: dict[str, tuple[str, dict[str, Any], list[dict[str, Any]]]] = {
    "tool": ("tool", {}, [_calls(PARIS, call("c2", "get_weather", {"city": "Tokyo"})),
                          _calls(call("c3", "final_answer", {"answer": "Paris is sunny; Tokyo is rainy."}))]),
    "code-deltas": ("code", {"stream_outputs": True},
                    [_text('Thought: both cities.\n<code>\np = get_weather(city="Paris")\nt = get_weather(city="Tokyo")\nprint(p, t)\n</code>'),
                     _text('Thought: answer.\n<code>\nfinal_answer(f"Paris: {p}; Tokyo: {t}")\n</code>')]),
    "code-dict": ("code", {}, [_text('Thought: Paris, as a record.\n<code>\nw = get_weather(city="Paris")\n'
                                     'final_answer({"city": "Paris", "temp_c": 21})\n</code>')]),
    "max-steps": ("tool", {"max_steps": 1}, [_calls(PARIS), _text("Paris is sunny.")]),
    "fails": ("tool", {}, [_calls(PARIS), SERVER_ERROR]),
}


def _chunks(n: int, msg: dict[str, Any]) -> list[dict[str, Any]]:
    """Reply `msg` as OpenAI streams it: the role, the content in 8-character pieces, each tool call's id and name and then
    its arguments in 5-character pieces, the finish reason, and the usage chunk."""
    base = {"id": f"chatcmpl-{n}", "created": 1767225600, "model": MODEL, "object": "chat.completion.chunk"}
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
    content = msg.get("content") or ""
    deltas += [{"content": content[i:i + 8]} for i in range(0, len(content), 8)]
    for i, tc in enumerate(msg.get("tool_calls") or []):
        deltas.append({"tool_calls": [{"index": i, "id": tc["id"], "type": "function", "function": {"name": tc["function"]["name"], "arguments": ""}}]})
        args = tc["function"]["arguments"]
        deltas += [{"tool_calls": [{"index": i, "function": {"arguments": args[j:j + 5]}}]} for j in range(0, len(args), 5)]
    out = [base | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
    out.append(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop"}]})
    out.append(base | {"choices": [], "usage": {"prompt_tokens": 100 + n, "completion_tokens": 10 + n, "total_tokens": 110 + 2 * n}})
    return out


class Streaming(ScriptedOpenAI):
    """`ScriptedOpenAI` streaming its reply when the request asks to (`_chunks`); a reply `{"status", "body"}` is that HTTP error."""

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        reply = self.replies[self.n]
        if "status" in reply:
            await request.json()
            self.n += 1
            return web.json_response(reply["body"], status=reply["status"])
        body = await request.json()
        n, msg = self._next()
        if not body.get("stream"):
            usage = {"prompt_tokens": 100 + n, "completion_tokens": 10 + n, "total_tokens": 110 + 2 * n}
            return web.json_response({"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1767225600, "model": MODEL, "usage": usage,
                                      "choices": [{"index": 0, "message": msg, "finish_reason": "tool_calls" if msg.get("tool_calls") else "stop"}]})
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for chunk in _chunks(n, msg):
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


def run(out: Path, name: str) -> Any:
    from smolagents import CodeAgent, ToolCallingAgent

    kind, kwargs, replies = SCENARIOS[name]
    runs: list[dict[str, Any]] = []
    events: list[Any] = []
    raised = None
    server = Streaming(replies)
    with smolagents_recording(server, out, name) as model:
        agent = (CodeAgent if kind == "code" else ToolCallingAgent)(tools=[weather_tool(WEATHER, runs)], model=model, verbosity_level=0, **kwargs)
        try:
            for event in agent.run(TASK, stream=True):
                events.append(event)
        except Exception as e:  # noqa: BLE001 (what the application saw is the truth)
            raised = f"{type(e).__name__}: {e}"
    steps = write_memory(out, name, agent)
    last = events[-1] if events else None
    returned = last.output if type(last).__name__ == "FinalAnswerStep" else None
    kinds = [type(e).__name__ for e in events]
    write_truth(out, name, {"task": TASK, "events": [k for i, k in enumerate(kinds) if i == 0 or kinds[i - 1] != k or k != "ChatMessageStreamDelta"],
                            "deltas": kinds.count("ChatMessageStreamDelta"), "returned": returned, "raised": raised,
                            "step_errors": step_errors(steps), "tool_runs": runs, "requests": server.n})
    return returned


RUNS = {n: (lambda out, n=n: run(out, n)) for n in SCENARIOS}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], RUNS))
