"""Record pydantic-ai runs whose tool calls were sent back to the model to try again, with their truth.

    python tests/frameworks/record_pydantic_ai_tool_retries.py OUTDIR [RECORDING ...]     (OUTDIR: tests/data/pydantic-ai-tool-retries)

writes `OUTDIR/<scenario>-<instrumentation>.jsonl` (OTLP/JSON, format `otel`) and `<…>.truth.json`. A real
`pydantic_ai.Agent` (`str` output, `retries=1`, the tool `get_weather`) on `OpenAIChatModel` talks to the project's scripted
loopback server (`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network). Scenarios:

- `max_retries`: the model asks `get_weather{Atlantis}` twice, in two replies; the tool raises `ModelRetry("unknown city
  Atlantis")` each time: the first is sent back to the model, the second is over the tool's retries, so the run raises
  `UnexpectedModelBehavior` ("Tool 'get_weather' exceeded max retries count of 1 …");
- `unknown_tool`: the model asks `get_wether{Paris}` (no such tool): pydantic-ai runs nothing and sends back "Unknown tool
  name: 'get_wether'. Available tools: 'get_weather'"; the model then asks `get_weather{Paris}` and answers;
- `prepared_out`: the agent also has `book_flight`, whose `prepare` leaves it out of every request until the run's deps say
  the user is signed in (they do not): the model asks `book_flight{…}` anyway, pydantic-ai answers it as an unknown tool,
  and the model answers without it.

Instrumentations: `v5`, pydantic-ai's own `Instrumentation` capability at its default data-format version (5); `oi`, the same
with openinference-instrumentation-pydantic-ai's `OpenInferenceSpanProcessor` before the exporter.

The truth is what the run's messages (`capture_run_messages()`, as `record_pydantic_ai_deferred._truth` reads them) say: the
prompt, every response with its calls and what pydantic-ai sent back for each (`returned`: its content and `outcome`,
`retried` for a call sent back to try again), every time a tool function really ran (`tools_ran`: its result, or what it
raised), the output, what the run raised (`raised`) and how many requests the server got.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pydantic_ai import RunContext, ToolDefinition  # (module level: pydantic-ai resolves the tools' annotations here)

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import instrumented, pydantic_ai_run, record_per_instrumentation, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402
from record_pydantic_ai_deferred import _reply, _truth  # noqa: E402

OUT = HERE.parent / "data" / "pydantic-ai-tool-retries"
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
# scenario: (prompt, replies)
SCENARIOS: dict[str, tuple[str, list[dict[str, Any]]]] = {
    "max_retries": ("Weather in Atlantis?", [_reply(None, call("call_m1", "get_weather", {"city": "Atlantis"})),
                                             _reply(None, call("call_m2", "get_weather", {"city": "Atlantis"})), _reply("unused")]),
    "unknown_tool": ("Weather in Paris?", [_reply(None, call("call_u1", "get_wether", {"city": "Paris"})),
                                           _reply(None, call("call_u2", "get_weather", {"city": "Paris"})), _reply("Paris is sunny, 21 C.")]),
    "prepared_out": ("Book me a flight to Paris and tell me the weather there.",
                     [_reply("Let me book it.", call("call_b1", "book_flight", {"to": "Paris"}), call("call_w1", "get_weather", {"city": "Paris"})),
                      _reply("I cannot book flights until you sign in; Paris is sunny, 21 C.")]),
}
INSTRUMENTATIONS = ("v5", "oi")


def _agent(model: Any, provider: Any, ran: list[dict[str, Any]]) -> Any:
    from pydantic_ai import Agent, ModelRetry

    agent = Agent(model, deps_type=dict, instructions="You help travellers.", retries=1, capabilities=instrumented(provider))

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Weather in a city."""
        if city not in WEATHER:
            ran.append({"name": "get_weather", "arguments": {"city": city}, "raised": f"ModelRetry: unknown city {city}"})
            raise ModelRetry(f"unknown city {city}")
        ran.append({"name": "get_weather", "arguments": {"city": city}, "result": WEATHER[city]})
        return WEATHER[city]

    async def only_signed_in(ctx: RunContext[dict], tool_def: ToolDefinition) -> ToolDefinition | None:
        return tool_def if ctx.deps.get("signed_in") else None

    @agent.tool(prepare=only_signed_in)
    def book_flight(ctx: RunContext[dict], to: str) -> str:
        """Book a flight."""
        ran.append({"name": "book_flight", "arguments": {"to": to}, "result": f"booked to {to}"})
        return f"booked to {to}"

    return agent


def record(out: Path, scenario: str, inst: str) -> Any:
    """Run `scenario` under instrumentation `inst` (see the module doc); write the recording and its truth."""
    prompt, replies = SCENARIOS[scenario]
    name, server = f"{scenario}-{inst}", ScriptedOpenAI(replies)
    ran: list[dict[str, Any]] = []
    messages, output, raised = pydantic_ai_run(server, out / f"{name}.jsonl", inst == "oi", lambda model, provider: _agent(model, provider, ran), prompt,
                                               deps={"signed_in": False})
    write_truth(out, name, {**_truth(messages, [output], ran), "raised": raised, "requests": server.n})
    return [output, raised]


if __name__ == "__main__":
    sys.exit(record_per_instrumentation(__file__, sys.argv[1:], OUT, record, SCENARIOS, INSTRUMENTATIONS))
