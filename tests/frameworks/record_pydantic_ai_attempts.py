"""Record pydantic-ai runs whose capability rejected a model response and had the request sent again (2.78 on), with their truth.

    python tests/frameworks/record_pydantic_ai_attempts.py OUTDIR [RECORDING ...]   (OUTDIR: tests/data/pydantic-ai-attempts)

writes `OUTDIR/<scenario>-<instrumentation>.jsonl` (OTLP/JSON, format `otel`) and `<…>.truth.json`. A real `pydantic_ai.Agent`
(`str` output, instructions, the tool `get_weather`) on `OpenAIChatModel` talks to the project's scripted loopback server
(`record_oi_faults.ScriptedOpenAI`: request n gets reply n; no network), with a capability whose `after_model_request` raises
`RetryModelRequest()` on a reply saying "probably": pydantic-ai sends the same request again, and the model never learns of
the reply it threw away. Scenario `rejected`: "Weather in Paris?"; replies `get_weather{Paris}`, "It is probably warm."
(rejected), "Paris is sunny, 21 C." (the same request again).

Instrumentations: `v5`, pydantic-ai's own `Instrumentation` capability at its default data-format version (5); `oi`, the same
with openinference-instrumentation-pydantic-ai's `OpenInferenceSpanProcessor` before the exporter.

The truth is what the run's messages (`all_messages()`, read as `record_pydantic_ai_deferred._truth` reads them) say, the
replies the capability rejected (`rejected`), the run's usage as pydantic-ai counted it (`usage`: input and output tokens,
requests) and how many requests the server got.
"""

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import instrumented, pydantic_ai_recording, record_per_instrumentation, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402
from record_pydantic_ai_deferred import _reply, _truth  # noqa: E402

OUT = HERE.parent / "data" / "pydantic-ai-attempts"
SCENARIOS = {"rejected": [_reply(None, call("call_w1", "get_weather", {"city": "Paris"})), _reply("It is probably warm."),
                          _reply("Paris is sunny, 21 C.")]}
INSTRUMENTATIONS = ("v5", "oi")


def _agent(model: Any, provider: Any, ran: list[dict[str, Any]], rejected: list[str]) -> Any:
    from pydantic_ai import Agent, RetryModelRequest
    from pydantic_ai.capabilities import AbstractCapability

    class RejectVague(AbstractCapability[None]):
        async def after_model_request(self, ctx: Any, *, request_context: Any, response: Any) -> Any:
            text = "".join(p.content for p in response.parts if type(p).__name__ == "TextPart")
            if "probably" in text:
                rejected.append(text)
                raise RetryModelRequest()
            return response

    agent = Agent(model, instructions="You report the weather.", capabilities=[*instrumented(provider), RejectVague()])

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Weather in a city."""
        ran.append({"name": "get_weather", "arguments": {"city": city}, "result": "sunny, 21 C"})
        return "sunny, 21 C"

    return agent


def record(out: Path, scenario: str, inst: str) -> Any:
    """Run `scenario` under instrumentation `inst` (see the module doc); write the recording and its truth."""
    from pydantic_ai.messages import ModelMessagesTypeAdapter

    name = f"{scenario}-{inst}"
    ran: list[dict[str, Any]] = []
    rejected: list[str] = []
    server = ScriptedOpenAI(SCENARIOS[scenario])
    with pydantic_ai_recording(server, out / f"{name}.jsonl", oi=inst == "oi") as (model, provider):
        result = _agent(model, provider, ran, rejected).run_sync("Weather in Paris?")
    usage = result.usage()
    messages = json.loads(ModelMessagesTypeAdapter.dump_json(result.all_messages()))
    write_truth(out, name, {**_truth(messages, [result.output], ran), "rejected": rejected, "requests": server.n,
                            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "requests": usage.requests}})
    return result.output


if __name__ == "__main__":
    sys.exit(record_per_instrumentation(__file__, sys.argv[1:], OUT, record, SCENARIOS, INSTRUMENTATIONS))
