"""Record pydantic-ai runs whose tool returns a `ToolReturn` (content beside the result, metadata), with their truth.

    python tests/frameworks/record_pydantic_ai_tool_returns.py [OUTDIR] [--only SCENARIO ...]   (OUTDIR: tests/data/pydantic-ai-tool-returns)

A real `pydantic_ai.Agent` on `OpenAIChatModel` talks to the project's scripted loopback server
(`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network). Two runs, the second given the first's
`all_messages()` as `message_history`: "What's the weather in Paris?" and "And in Tokyo?". Each calls
`get_weather`, which returns `ToolReturn(return_value={...}, content=..., metadata={"station": ...})`: content a
list of one text for Paris, a text for Tokyo. Instrumentations (the scenario's suffix): `v2`, `v3`, `v5`, pydantic-ai's
own `Instrumentation` capability at that data-format version; `oi`, version 5 with
openinference-instrumentation-pydantic-ai's `OpenInferenceSpanProcessor` before the exporter.

Writes `<s>.jsonl` (OTLP/JSON, format `otel`) and `<s>.truth.json` from the application's own values: the prompts it
ran (`user_turns`), each call as `all_messages()` holds it (name, arguments, the `ToolReturnPart`'s content: what the
model was sent as the result, its metadata), the texts the tool added to the next request (`added`), and each run's output.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

FRAMEWORKS = Path(__file__).resolve().parent
OUT = FRAMEWORKS.parent / "data" / "pydantic-ai-tool-returns"
sys.path.insert(0, str(FRAMEWORKS))

from common import calls_reply as _chat, instrumented, pydantic_ai_recording, record_scenarios, text_reply, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

PROMPTS = ["What's the weather in Paris?", "And in Tokyo?"]
WEATHER = {"Paris": {"sky": "sunny", "temp_c": 21}, "Tokyo": {"sky": "rainy", "temp_c": 14}}
# what each city's ToolReturn adds for the model beside the result: a list of texts, a text
ADDED: dict[str, Any] = {"Paris": ["UV index 8: tell the user to wear sunscreen."], "Tokyo": "Typhoon warning in effect."}
REPLIES = [_chat(call("call_p", "get_weather", {"city": "Paris"})), text_reply("Sunny and 21 C in Paris; wear sunscreen."),
           _chat(call("call_t", "get_weather", {"city": "Tokyo"})), text_reply("Rainy and 14 C in Tokyo, with a typhoon warning.")]
SCENARIOS = {f"tool_return_{kind}": kind for kind in ("v2", "v3", "v5", "oi")}


def _truth(messages: list[Any], outputs: list[str]) -> dict[str, Any]:
    """What the application's messages say: calls with the result the model was sent, and what each tool added."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart, UserPromptPart

    calls: list[dict[str, Any]] = []
    returns = {p.tool_call_id: p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)}
    for m in messages:
        for p in m.parts if isinstance(m, ModelResponse) else []:
            if isinstance(p, ToolCallPart):
                r = returns[p.tool_call_id]
                calls.append({"name": p.tool_name, "arguments": p.args_as_dict(), "result": r.content, "error": None, "metadata": r.metadata})
    # a request after tool results: its user-prompt parts are what the tools' ToolReturn added, not the user's
    added = [p.content for m in messages if isinstance(m, ModelRequest) and any(isinstance(q, ToolReturnPart) for q in m.parts)
             for p in m.parts if isinstance(p, UserPromptPart)]
    return {"input": PROMPTS[0], "user_turns": PROMPTS, "calls": calls, "added": added, "outputs": outputs, "output": outputs[-1]}


def record(name: str, out: Path) -> Any:
    from pydantic_ai import Agent, ToolReturn

    kind = SCENARIOS[name]

    with pydantic_ai_recording(ScriptedOpenAI(REPLIES), out / f"{name}.jsonl", oi=kind == "oi") as (model, provider):
        agent = Agent(model, instructions="You report weather.", capabilities=instrumented(provider, 5 if kind == "oi" else int(kind[1:])))

        @agent.tool_plain
        def get_weather(city: str) -> Any:  # (a ToolReturn: the name is local, annotations are strings)
            """Weather in a city."""
            return ToolReturn(return_value=WEATHER[city], content=ADDED[city], metadata={"station": f"{city.lower()}-7"})

        history = None
        outputs = []
        for prompt in PROMPTS:
            result = agent.run_sync(prompt, message_history=history)
            history = result.all_messages()
            outputs.append(result.output)
    truth = _truth(history, outputs)
    write_truth(out, name, json.loads(json.dumps(truth)))
    return truth["outputs"]


if __name__ == "__main__":
    record_scenarios(record, SCENARIOS, OUT)
