"""Record the pydantic-ai runs behind `tests/test_pydantic_ai_turn_answers.py`, with the installed libraries.

    python tests/frameworks/record_pydantic_ai_answers.py [OUTDIR] [--only SCENARIO ...]   (OUTDIR: tests/data/pydantic-ai-answers)

Each scenario runs a real `pydantic_ai.Agent` with structured output (`output_type=`, given through its
`final_result` output tool) on `OpenAIChatModel` against the project's scripted loopback server
(`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network), instrumented by pydantic-ai's own
`Instrumentation` capability at the scenario's data-format version, and writes `<s>.jsonl` (OTLP/JSON, format
`otel`) and `<s>.outcome.json` (the output of each run, or the exception it raised). Runs after the first pass
the previous run's `all_messages()` as `message_history`: one conversation of several turns.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Any

FRAMEWORKS = Path(__file__).resolve().parent  # tests/frameworks: the fake server and the recorders' plumbing
OUT = FRAMEWORKS.parent / "data" / "pydantic-ai-answers"
sys.path.insert(0, str(FRAMEWORKS))

from common import calls_reply as _chat, instrumented, otel_provider, record_scenarios, write_otlp, write_outcome  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

WEATHER = {"Paris": {"sky": "sunny", "temp_c": 21}, "Tokyo": {"sky": "rainy", "temp_c": 14}}
PARIS = {"city": "Paris", "temp_c": 21, "summary": "Sunny"}
TOKYO = {"city": "Tokyo", "temp_c": 14, "summary": "Rainy"}


# scenario: (instrumentation version, output type, user prompts (one run each), replies)
SCENARIOS: dict[str, tuple[int, str, list[str], list[Any]]] = {
    # two runs sharing message_history, each answered through final_result (the trial's pai-retry-history, smaller)
    **{f"history_v{v}": (v, "weather", ["What's the weather in Paris?", "And in Tokyo?"],
                         [_chat(call("call_h1", "get_weather", {"city": "Paris"})), _chat(call("call_h2", "final_result", PARIS)),
                          _chat(call("call_h3", "final_result", TOKYO))]) for v in (2, 3, 5)},
    # an answer that fails validation (temp_c not an int, summary missing), the retry, then a second run
    **{f"output_retry_v{v}": (v, "weather", ["What's the weather in Paris?", "And in Tokyo?"],
                              [_chat(call("call_r1", "final_result", {"city": "Paris", "temp_c": "warm"})), _chat(call("call_r2", "final_result", PARIS)),
                               _chat(call("call_r3", "final_result", TOKYO))]) for v in (2, 5)},
    # an output validator raising ModelRetry: the refusal is its message, not a list of validation errors
    "validator_retry": (5, "checked", ["What's the weather in Paris?"],
                        [_chat(call("call_v1", "final_result", {"city": "Paris", "temp_c": 99, "summary": "Hot"})), _chat(call("call_v2", "final_result", PARIS))]),
    # a non-object output type: pydantic-ai wraps it as {"response": …} (`outer_typed_dict_key`), the answer is the value
    "scalar": (5, "int", ["How warm is Paris, in C?"], [_chat(call("call_s1", "final_result", {"response": 21}))]),
}


def _agent(kind: str, model: Any, provider: Any, version: int) -> Any:
    from pydantic import BaseModel
    from pydantic_ai import Agent, ModelRetry

    class Weather(BaseModel):
        city: str
        temp_c: int
        summary: str

    output: Any = int if kind == "int" else Weather
    agent = Agent(model, output_type=output, instructions="You report weather.", capabilities=instrumented(provider, version))

    @agent.tool_plain
    def get_weather(city: str) -> dict[str, Any]:
        """Weather in a city."""
        return WEATHER[city]

    if kind == "checked":
        @agent.output_validator
        def plausible(out: Any) -> Any:
            if out.temp_c > 60:
                raise ModelRetry(f"temp_c {out.temp_c} is not a plausible air temperature; check the weather tool")
            return out

    return agent


def record(name: str, out: Path) -> Any:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    version, kind, prompts, replies = SCENARIOS[name]
    with ScriptedOpenAI(replies) as fake, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # versions before 5 are deprecated formats: recording them is the point
        provider = otel_provider(fake, "pydantic-ai")
        model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=fake.base_url, api_key="sk-fake"))
        agent = _agent(kind, model, provider, version)
        outcome: dict[str, Any] = {"outputs": []}
        history = None
        try:
            for prompt in prompts:
                result = agent.run_sync(prompt, message_history=history)
                history = result.all_messages()
                outcome["outputs"].append(result.output if isinstance(result.output, (int, str)) else result.output.model_dump())
        except Exception as exc:  # the run's own failure is the scenario
            outcome["raised"] = f"{type(exc).__name__}: {exc}"
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    return write_outcome(out, name, outcome)


if __name__ == "__main__":
    record_scenarios(record, SCENARIOS, OUT)
