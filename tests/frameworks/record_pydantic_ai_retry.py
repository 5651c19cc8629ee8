"""Record pydantic-ai runs whose TEXT output it refused and asked again, with their truth.

    python tests/frameworks/record_pydantic_ai_retry.py OUTDIR [RECORDING ...]     (OUTDIR: tests/data/pydantic-ai-retry)

writes `OUTDIR/<scenario>-<instrumentation>.jsonl` (OTLP/JSON, format `otel`) and `<…>.truth.json`. A real
`pydantic_ai.Agent` on `OpenAIChatModel` talks to the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`:
request n gets reply n; no network). Scenarios:

- `native`: `output_type=NativeOutput(Weather)`, checked as text. `get_weather` raises `ModelRetry` for a city not
  capitalised (a tool retry: pydantic-ai answers the call, as before); the model's first JSON answer has `temp_c: "warm"`,
  which fails validation; the second passes;
- `validator`: `str` output with an `output_validator` raising `ModelRetry` ("Give a temperature in C") on the first answer;
  a second run (`message_history`: one conversation) asks again and is answered at once;
- `empty`: `str` output; the first reply is empty, pydantic-ai's fixed "Please return text." asks again.

pydantic-ai sends the model its feedback on a refused text answer as user-role text ("Your previous response failed the
application's validation (this is automated feedback, not a message from the user): …", a `RetryFeedbackPart`, part kind
`retry-feedback` in its message history; the deprecated `RetryPromptPart` with `tool_name=None` before). Instrumentations:

- `v5`: pydantic-ai's own `Instrumentation` capability at its default data-format version (5);
- `v2`, `v6`: the same at data-format versions 2 (the oldest it supports) and 6 (opt-in: tool results on role `tool`);
- `oi`: the default, with openinference-instrumentation-pydantic-ai's `OpenInferenceSpanProcessor` added before the
  exporter (how its README sets it up), which writes the last user text of each span's messages as `input.value`.

The truth is what the agent's `result.all_messages()` says after the last run: the user prompts, every response (its
text, the tools it called) with the feedback pydantic-ai sent back on it, the tool retries, and each run's output.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import calls_reply as _calls, instrumented, pydantic_ai_recording, record_per_instrumentation  # noqa: E402
from common import text_reply as _text, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

OUT = HERE.parent / "data" / "pydantic-ai-retry"
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}

# scenario: (output kind, user prompts (one run each), replies)
SCENARIOS: dict[str, tuple[str, list[str], list[dict[str, Any]]]] = {
    "native": ("native", ["Paris weather as JSON"],
               [_calls(call("call_w1", "get_weather", {"city": "paris"})), _calls(call("call_w2", "get_weather", {"city": "Paris"})),
                _text('{"city": "Paris", "temp_c": "warm"}'), _text('{"city": "Paris", "temp_c": 21}')]),
    "validator": ("checked", ["Weather in Paris?", "And in Tokyo?"],
                  [_text("It is probably warm."), _text("Paris: 21 C, sunny."), _text("Tokyo: 14 C, rainy.")]),
    "empty": ("text", ["Weather in Paris?"], [_text(None), _text("Paris: 21 C, sunny.")]),
}
INSTRUMENTATIONS = {"v5": None, "v2": 2, "v6": 6, "oi": None}  # name -> data-format version (None: pydantic-ai's default)


def _agent(kind: str, model: Any, provider: Any, version: int | None) -> Any:
    from pydantic import BaseModel
    from pydantic_ai import Agent, ModelRetry, NativeOutput

    class Weather(BaseModel):
        city: str
        temp_c: int

    agent = Agent(model, output_type=NativeOutput(Weather) if kind == "native" else str, instructions="You report the weather.",
                  capabilities=instrumented(provider, version))

    if kind == "native":
        @agent.tool_plain
        def get_weather(city: str) -> str:
            """Current weather in a city."""
            if not city[:1].isupper():
                raise ModelRetry("Capitalise the city name")
            return WEATHER[city]

    if kind == "checked":
        @agent.output_validator
        def has_temperature(out: str) -> str:
            if not any(ch.isdigit() for ch in out):
                raise ModelRetry("Give a temperature in C")
            return out

    return agent


def _output(value: Any) -> str:
    """A run's output as text: a model as pydantic dumps it (compact JSON), a string as it is."""
    return value if isinstance(value, str) else value.model_dump_json()


def _truth(messages: list[dict[str, Any]], outputs: list[str]) -> dict[str, Any]:
    """What `all_messages()` (as JSON) says: the user prompts, each response and the feedback pydantic-ai sent back on it."""
    prompts: list[str] = []
    responses: list[dict[str, Any]] = []
    tool_retries: list[dict[str, Any]] = []
    for m in messages:
        if m["kind"] == "response":
            responses.append({"text": "".join(p["content"] for p in m["parts"] if p["part_kind"] == "text") or None,
                              "calls": [{"id": p["tool_call_id"], "name": p["tool_name"], "arguments": json.loads(p["args"]) if isinstance(p["args"], str) else p["args"]}
                                        for p in m["parts"] if p["part_kind"] == "tool-call"],
                              "feedback": None})
            continue
        for p in m["parts"]:
            if p["part_kind"] == "user-prompt":
                prompts.append(p["content"])
            elif p["part_kind"] in ("retry-feedback", "retry-prompt") and p.get("tool_name") is None:
                # answers no tool call: pydantic-ai's feedback on the response before it (`RetryPromptPart` with `tool_name=None`
                # before 2.x's `RetryFeedbackPart`)
                responses[-1]["feedback"] = {"part_kind": p["part_kind"], "cause": (p.get("retry") or {}).get("cause"), "content": p["content"]}
            elif p["part_kind"] == "retry-prompt" or (p["part_kind"] == "tool-return" and p.get("outcome") == "retried"):
                tool_retries.append({"id": p["tool_call_id"], "name": p["tool_name"], "content": p["content"]})
    return {"input": prompts[0], "user_turns": prompts, "responses": responses, "tool_retries": tool_retries, "outputs": outputs, "output": outputs[-1]}


def record(out: Path, scenario: str, inst: str) -> Any:
    """Run `scenario` under instrumentation `inst` (see the module doc); write the recording and its truth."""
    kind, prompts, replies = SCENARIOS[scenario]
    name = f"{scenario}-{inst}"
    with pydantic_ai_recording(ScriptedOpenAI(replies), out / f"{name}.jsonl", oi=inst == "oi") as (model, provider):
        agent = _agent(kind, model, provider, INSTRUMENTATIONS[inst])
        history, outputs = None, []
        for prompt in prompts:
            result = agent.run_sync(prompt, message_history=history)
            history = result.all_messages()
            outputs.append(_output(result.output))
    write_truth(out, name, _truth(json.loads(result.all_messages_json()), outputs))
    return outputs


if __name__ == "__main__":
    sys.exit(record_per_instrumentation(__file__, sys.argv[1:], OUT, record, SCENARIOS, INSTRUMENTATIONS))
