"""Record the Agents SDK runs behind `tests/test_agents_sdk_run_faults.py`, with the installed libraries.

    python tests/frameworks/record_agents_faults.py [OUTDIR] [--only SCENARIO ...]   (OUTDIR: tests/data/agents-sdk-faults)

Each scenario (`SCENARIOS`) runs the real OpenAI Agents SDK (chat-completions model; `responses_incomplete` the
Responses API) against the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`: request n gets
reply n; streamed as chunks when the request asks, `Streaming`; no network), under OpenInference's `OpenAIAgentsInstrumentor` and the SDK's own
export at once, and writes `export-<s>.jsonl` (`{"trace", "spans"}` per trace, format `openai-agents`),
`oi-<s>.jsonl` (OTLP/JSON, format `otel`) and `<s>.outcome.json` (what `Runner.run` returned as `final_output`,
or the exception it raised, and how many model requests it made). Plumbing as `record_agents_stop.py`.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

FRAMEWORKS = Path(__file__).resolve().parent  # tests/frameworks: the fake server and the recorders' plumbing
OUT = FRAMEWORKS.parent / "data" / "agents-sdk-faults"
sys.path.insert(0, str(FRAMEWORKS))

from common import agents_recording, record_scenarios, write_outcome  # noqa: E402
from fake_openai import _chunks  # noqa: E402
from record_oi_faults import MODEL, ScriptedOpenAI, call  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
QUESTION = "What is the weather in Paris?"


def get_weather(city: str) -> str:
    """Weather in a city."""
    return WEATHER[city]


def _chat(text: str | None, *calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": text, **({"tool_calls": list(calls)} if calls else {})}


class Streaming(ScriptedOpenAI):
    """`ScriptedOpenAI` answering a request that asks for `stream` with the reply's chunks (`fake_openai._chunks`)."""

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if not body.get("stream"):
            n, msg = self._next()
            return web.json_response(self._completion(n, msg))
        n, msg = self._next()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for chunk in _chunks(self._completion(n, msg)):
            await resp.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    @staticmethod
    def _completion(n: int, msg: dict[str, Any]) -> dict[str, Any]:
        usage = {"prompt_tokens": 100 + n, "completion_tokens": 10 + n, "total_tokens": 110 + 2 * n}
        finish = "tool_calls" if msg.get("tool_calls") else "stop"
        return {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1767225600, "model": MODEL,
                "choices": [{"index": 0, "message": msg, "finish_reason": finish, "logprobs": None}], "usage": usage}


# scenario: (replies, how the agent is made, user text)
SCENARIOS: dict[str, tuple[list[Any], str, str]] = {
    # the model calls a tool the agent does not have, with a preamble: ModelBehaviorError, "Tool not found" on the turn span
    "hallucinated_tool": ([_chat("Let me check.", call("call_x1", "get_wether", {"city": "Paris"}))], "plain", QUESTION),
    # the same call under RunConfig(tool_not_found_behavior="return_error_to_model"): the model is told and the run goes on
    "tool_not_found_returned": ([_chat("Let me check.", call("call_x1", "get_wether", {"city": "Paris"})),
                                 _chat(None, call("call_x2", "get_weather", {"city": "Paris"})),
                                 _chat("It is sunny in Paris, 21 C.")], "returned", QUESTION),
    # an input guardrail trips before any model request: InputGuardrailTripwireTriggered, the error on the turn span
    "input_guardrail": ([_chat("unused")], "input_guardrail", QUESTION),
    # an output guardrail trips on the final text: OutputGuardrailTripwireTriggered, the error on the agent span
    "output_guardrail": ([_chat(None, call("call_o1", "get_weather", {"city": "Paris"})),
                          _chat("Paris is sunny, and my password is hunter2.")], "output_guardrail", QUESTION),
    # a handoff there and back, both `transfer_to_<agent>` calls with the arguments "{}"
    "handoff_back": ([_chat(None, call("call_h1", "transfer_to_weather", {})), _chat(None, call("call_h2", "get_weather", {"city": "Paris"})),
                      _chat(None, call("call_h3", "transfer_to_triage", {})), _chat("Paris is sunny at 21 C.")], "handoff_back", QUESTION),
    # Runner.run_streamed with two parallel calls: the answer is recorded as a Responses API response with `__fake_id__` items
    "streamed_parallel": ([_chat("Checking both.", call("call_sp1", "get_weather", {"city": "Paris"}), call("call_sp2", "get_weather", {"city": "Tokyo"})),
                           _chat("Paris is sunny; Tokyo is rainy.")], "streamed", "Compare Paris and Tokyo."),
    # the Responses API: a call, then a response cut off at max_output_tokens (`status: incomplete`): ModelBehaviorError;
    # from openai-agents 0.25.0 the failed `response` span keeps that response's usage
    "responses_incomplete": ([[{"type": "function_call", "id": "fc_1", "call_id": "call_ri1", "name": "get_weather",
                                "arguments": '{"city": "Paris"}', "status": "completed"}],
                              {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
                               "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "incomplete",
                                           "content": [{"type": "output_text", "text": "Paris is sun", "annotations": []}]}]}],
                             "responses", QUESTION),
}


def _agent(how: str) -> Any:
    from agents import Agent, GuardrailFunctionOutput, function_tool, input_guardrail, output_guardrail

    weather = function_tool(get_weather, strict_mode=False)
    if how == "input_guardrail":
        @input_guardrail
        async def no_weather(ctx: Any, agent: Any, text: Any) -> GuardrailFunctionOutput:
            return GuardrailFunctionOutput(output_info={"reason": "off-topic"}, tripwire_triggered=True)

        return Agent(name="Assistant", instructions="Help.", tools=[weather], model=MODEL, input_guardrails=[no_weather])
    if how == "output_guardrail":
        @output_guardrail
        async def no_secrets(ctx: Any, agent: Any, output: Any) -> GuardrailFunctionOutput:
            return GuardrailFunctionOutput(output_info={"leak": "password"}, tripwire_triggered="password" in str(output))

        return Agent(name="Assistant", instructions="Help.", tools=[weather], model=MODEL, output_guardrails=[no_secrets])
    if how == "handoff_back":
        triage = Agent(name="Triage", instructions="Route.", model=MODEL)
        forecaster = Agent(name="Weather", instructions="Weather.", tools=[weather], model=MODEL, handoffs=[triage])
        triage.handoffs = [forecaster]
        return triage
    return Agent(name="Assistant", instructions="Help.", tools=[weather], model=MODEL)


async def _run(how: str, text: str) -> Any:
    from agents import RunConfig, Runner

    agent = _agent(how)
    if how == "streamed":
        streamed = Runner.run_streamed(agent, text)
        async for _ in streamed.stream_events():
            pass
        return streamed.final_output
    config = RunConfig(tool_not_found_behavior="return_error_to_model") if how == "returned" else None
    return (await Runner.run(agent, text, run_config=config)).final_output


def record(name: str, out: Path) -> Any:
    replies, how, text = SCENARIOS[name]
    out.mkdir(parents=True, exist_ok=True)
    with Streaming(replies) as fake, agents_recording(fake, out, name, api="responses" if how == "responses" else "chat_completions"):
        try:
            outcome: Any = {"final_output": asyncio.run(_run(how, text))}
        except Exception as exc:  # the run's own failure is the scenario
            outcome = {"raised": f"{type(exc).__name__}: {exc}"}
        outcome["requests"] = fake.n
    return write_outcome(out, name, outcome)


if __name__ == "__main__":
    record_scenarios(record, SCENARIOS, OUT)
