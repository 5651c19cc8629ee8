"""Record pydantic-ai runs whose tool was sent back to try again more times than its `retries` allow, with their truth.

    python tests/frameworks/record_pydantic_ai_retry_limit.py OUTDIR [RECORDING ...]     (OUTDIR: tests/data/pydantic-ai-retry-limit)

writes `OUTDIR/<scenario>-<instrumentation>.jsonl` (OTLP/JSON, format `otel`) and `<…>.truth.json`. A real `pydantic_ai.Agent`
(`str` output, instructions, the tool `get_weather`) on `OpenAIChatModel` talks to the project's scripted loopback server
(`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network), which also keeps every request it got. `get_weather`
raises `ModelRetry(f"no such city: {city} (attempt {n})")` for a city it does not know (n counts its runs), so each retry
prompt says something of its own. Scenarios:

- `three_attempts`: `get_weather` declared with `retries=2`; the model asks it for Atlantis, Lemuria, then Mu, one reply each:
  the first two `ModelRetry`s are sent back, the third is over the limit and the run raises `UnexpectedModelBehavior`
  ("Tool 'get_weather' exceeded max retries count of 2 …");
- `no_retries`: `retries=0`: the first `ModelRetry` is already over the limit; the model is sent nothing back;
- `parallel`: `retries=1`; the model asks `get_weather` for Atlantis and Paris in one reply (Atlantis sent back, Paris
  answered), then for Lemuria and Tokyo in the next: Lemuria is over the limit and the run raises;
- `bad_args`: `retries=1`; the model calls `get_weather{"town": "Paris"}` twice: the arguments fail validation (the tool never
  runs), the first time sent back, the second over the limit.

Instrumentations: `v5`, pydantic-ai's own `Instrumentation` capability (`InstrumentationSettings` on an OTel SDK
`TracerProvider` exporting OTLP) at its default data-format version (5); `oi`, the same with
openinference-instrumentation-pydantic-ai's `OpenInferenceSpanProcessor` before the exporter.

The truth is what the application saw: the run's messages (`capture_run_messages()`, read as `record_pydantic_ai_deferred._truth`
reads them: every response with its calls and what pydantic-ai sent back for each), every time the tool function ran
(`tools_ran`, with what it raised), the text of every tool message the model was sent, by call id (`sent`: from the requests
the server got), what the run raised (`raised`: `<type>: <message>`) and how many requests the server got.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from aiohttp import web

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import instrumented, pydantic_ai_run, record_per_instrumentation, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402
from record_pydantic_ai_deferred import _reply, _truth  # noqa: E402

OUT = HERE.parent / "data" / "pydantic-ai-retry-limit"
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}


def _ask(cid: str, city: str) -> dict[str, Any]:
    return call(cid, "get_weather", {"city": city})


# scenario: (the tool's retries, replies)
SCENARIOS: dict[str, tuple[int, list[dict[str, Any]]]] = {
    "three_attempts": (2, [_reply(None, _ask("call_a1", "Atlantis")), _reply(None, _ask("call_a2", "Lemuria")),
                           _reply(None, _ask("call_a3", "Mu")), _reply("unused")]),
    "no_retries": (0, [_reply(None, _ask("call_n1", "Atlantis")), _reply("unused")]),
    "parallel": (1, [_reply("Checking both.", _ask("call_p1", "Atlantis"), _ask("call_p2", "Paris")),
                     _reply(None, _ask("call_p3", "Lemuria"), _ask("call_p4", "Tokyo")), _reply("unused")]),
    "bad_args": (1, [_reply(None, call("call_b1", "get_weather", {"town": "Paris"})), _reply(None, call("call_b2", "get_weather", {"town": "Paris"})),
                     _reply("unused")]),
}
INSTRUMENTATIONS = ("v5", "oi")
PROMPT = "What is the weather there?"


class KeptRequests(ScriptedOpenAI):
    """`ScriptedOpenAI` keeping the body of every chat request it answered (`bodies`)."""

    def __init__(self, replies: list[Any]) -> None:
        self.bodies: list[dict[str, Any]] = []
        super().__init__(replies)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        self.bodies.append(await request.json())
        return await super()._chat(request)


def _agent(retries: int, model: Any, provider: Any, ran: list[dict[str, Any]]) -> Any:
    from pydantic_ai import Agent, ModelRetry

    agent = Agent(model, instructions="You help travellers.", capabilities=instrumented(provider))

    @agent.tool_plain(retries=retries)
    def get_weather(city: str) -> str:
        """Weather in a city."""
        if city not in WEATHER:
            message = f"no such city: {city} (attempt {len(ran) + 1})"
            ran.append({"name": "get_weather", "arguments": {"city": city}, "raised": f"ModelRetry: {message}"})
            raise ModelRetry(message)
        ran.append({"name": "get_weather", "arguments": {"city": city}, "result": WEATHER[city]})
        return WEATHER[city]

    return agent


def _sent(bodies: list[dict[str, Any]]) -> dict[str, str]:
    """The text of each tool message the model was sent, by its call id (the last request holds them all)."""
    return {m["tool_call_id"]: m["content"] for m in bodies[-1]["messages"] if m.get("role") == "tool"} if bodies else {}


def record(out: Path, scenario: str, inst: str) -> Any:
    """Run `scenario` under instrumentation `inst` (see the module doc); write the recording and its truth."""
    retries, replies = SCENARIOS[scenario]
    name, server = f"{scenario}-{inst}", KeptRequests(replies)
    ran: list[dict[str, Any]] = []
    messages, output, raised = pydantic_ai_run(server, out / f"{name}.jsonl", inst == "oi", lambda model, provider: _agent(retries, model, provider, ran), PROMPT)
    write_truth(out, name, {**_truth(messages, [output], ran), "raised": raised, "requests": server.n, "retries": retries, "sent": _sent(server.bodies)})
    return [output, raised]


if __name__ == "__main__":
    sys.exit(record_per_instrumentation(__file__, sys.argv[1:], OUT, record, SCENARIOS, INSTRUMENTATIONS))
