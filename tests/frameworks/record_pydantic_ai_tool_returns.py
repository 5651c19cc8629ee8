"""Record pydantic-ai runs whose tool returns a `ToolReturn` (content beside the result, metadata), with their truth.

    python tests/frameworks/record_pydantic_ai_tool_returns.py [OUTDIR [SCENARIO ...]]   (OUTDIR: tests/data/pydantic-ai-tool-returns)

A real `pydantic_ai.Agent` on `OpenAIChatModel` talks to the project's scripted loopback server
(`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network). Two runs, the second given the first's
`all_messages()` as `message_history`: "What's the weather in Paris?" and "And in Tokyo?". Each calls
`get_weather`, which returns `ToolReturn(return_value={...}, content=..., metadata={"station": ...})`: content a
list of one text for Paris, a text for Tokyo. Instrumentations (the scenario's suffix): `v2`, `v3`, `v5`, pydantic-ai's
own `Instrumentation` capability at that data-format version; `oi`, version 5 with
openinference-instrumentation-pydantic-ai's `OpenInferenceSpanProcessor` before the exporter; `mlflow`, no
instrumentation of pydantic-ai's but `mlflow.pydantic_ai.autolog()` (each scenario runs in a process of its own:
autolog and OpenInference patch libraries process-wide).

Writes `<s>.jsonl` (OTLP/JSON, format `otel`; for `mlflow`, `<s>.mlflow.jsonl`, the traces as MLflow's
`Trace.to_json()` writes them, format `mlflow`, and `<s>.otlp.jsonl`, the same spans through its OTLP export) and `<s>.truth.json` from the application's own values: the prompts it
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

from common import MODEL, calls_reply as _chat, instrumented, pydantic_ai_recording, record_each_in_subprocess, text_reply, write_jsonl, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402
from run_mlflow import _clean, _configure  # noqa: E402

PROMPTS = ["What's the weather in Paris?", "And in Tokyo?"]
WEATHER = {"Paris": {"sky": "sunny", "temp_c": 21}, "Tokyo": {"sky": "rainy", "temp_c": 14}}
# what each city's ToolReturn adds for the model beside the result: a list of texts, a text
ADDED: dict[str, Any] = {"Paris": ["UV index 8: tell the user to wear sunscreen."], "Tokyo": "Typhoon warning in effect."}
REPLIES = [_chat(call("call_p", "get_weather", {"city": "Paris"})), text_reply("Sunny and 21 C in Paris; wear sunscreen."),
           _chat(call("call_t", "get_weather", {"city": "Tokyo"})), text_reply("Rainy and 14 C in Tokyo, with a typhoon warning.")]
SCENARIOS = {f"tool_return_{kind}": kind for kind in ("v2", "v3", "v5", "oi", "mlflow")}


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


def _run(agent: Any) -> tuple[list[Any], list[str]]:
    """Both prompts, the second run going on with the first's messages; returns the last messages and the outputs."""
    from pydantic_ai import ToolReturn

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
    return history, outputs


def _mlflow(out: Path, name: str) -> tuple[list[Any], list[str]]:
    """The run under `mlflow.pydantic_ai.autolog()`, its traces written as `<name>.mlflow.jsonl` and `<name>.otlp.jsonl`."""
    import tempfile

    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    with ScriptedOpenAI(REPLIES) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store, autolog="pydantic_ai")
        from mlflow.tracing.provider import provider

        model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=fake.base_url, api_key="sk-fake"))
        ran = _run(Agent(model, instructions="You report weather."))
        traces = sorted(mlflow.search_traces(return_type="list"), key=lambda t: t.info.request_time)
        write_jsonl(out / f"{name}.mlflow.jsonl", [_clean(t.to_json(), store) for t in traces])
        provider.get().force_flush()
        write_jsonl(out / f"{name}.otlp.jsonl", fake.take_otlp())
    return ran


def record(name: str, out: Path) -> Any:
    from pydantic_ai import Agent

    kind = SCENARIOS[name]
    if kind == "mlflow":
        history, outputs = _mlflow(out, name)
    else:
        with pydantic_ai_recording(ScriptedOpenAI(REPLIES), out / f"{name}.jsonl", oi=kind == "oi") as (model, provider):
            version = 5 if kind == "oi" else int(kind[1:])
            history, outputs = _run(Agent(model, instructions="You report weather.", capabilities=instrumented(provider, version)))
    truth = _truth(history, outputs)
    write_truth(out, name, json.loads(json.dumps(truth)))
    return truth["outputs"]


RECORDINGS = {name: (lambda out, n=name: record(n, out)) for name in SCENARIOS}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], RECORDINGS))
