"""Record one pydantic-ai run under MLflow's autolog and pydantic-ai's own instrumentation at once, read by
`tests/test_mlflow_pydantic_ai_agents.py`.

    python tests/frameworks/record_mlflow_pydantic_names.py OUTDIR [SCENARIO ...]     (OUTDIR: tests/data/mlflow-agents)

Each scenario runs in its own subprocess against the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`;
no network): an agent whose tool `get_weather` is called once, then the answer, run by `run_sync` under
`mlflow.pydantic_ai.autolog()` with pydantic-ai's own `Instrumentation` capability exporting to a second loopback
server. So both recordings hold the same run: `OUTDIR/<scenario>.mlflow.jsonl` (`Trace.to_json()`),
`OUTDIR/<scenario>.otlp.jsonl` (the same MLflow spans through its OTLP dual export), `OUTDIR/<scenario>.pydantic-ai.jsonl`
(pydantic-ai's own spans, OTLP/JSON) and `OUTDIR/<scenario>.truth.json` (the run's input, output and call, and the
agent's `name` after the run). Scenarios:

- `pydantic-named`: `Agent(..., name="forecaster")`;
- `pydantic-unnamed`: an agent given no name, held in the variable `bot`. pydantic-ai would infer `bot` from the
  caller's frame, but under MLflow's patch the caller is MLflow's wrapper, so the name stays unset and pydantic-ai's
  own spans say its default, `agent`.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, instrumented, pydantic_ai_provider, record_each_in_subprocess, write_otlp  # noqa: E402
from record_mlflow_agents import _write  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402
from run_mlflow import _configure  # noqa: E402

QUESTION = "What is the weather in Paris?"
ANSWER = "Paris is sunny (21 C)."


def run(out: Path, name: str) -> dict[str, Any]:
    """One scenario (module docstring); returns its truth."""
    replies = [{"role": "assistant", "content": None, "tool_calls": [call("call_p", "get_weather", {"city": "Paris"})]},
               {"role": "assistant", "content": ANSWER}]
    with ScriptedOpenAI(replies) as fake, ScriptedOpenAI([]) as sink, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store, autolog="pydantic_ai")
        from pydantic_ai import Agent
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        provider = pydantic_ai_provider(sink, oi=False)  # (`sink` only collects pydantic-ai's own spans)
        model = OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=fake.base_url, api_key="sk-fake"))
        named = {"name": "forecaster"} if name == "pydantic-named" else {}
        bot = Agent(model, instructions="Use the tool.", capabilities=instrumented(provider), **named)
        calls: list[dict[str, Any]] = []

        @bot.tool_plain
        def get_weather(city: str) -> str:
            """Weather in a city."""
            calls.append({"id": "call_p", "name": "get_weather", "arguments": {"city": city}, "result": "sunny, 21 C"})
            return "sunny, 21 C"

        result = bot.run_sync(QUESTION)
        truth = {"input": QUESTION, "output": result.output, "calls": calls, "agent_name": bot.name,
                 "usage": {"input_tokens": 201, "output_tokens": 21, "requests": fake.n}}
        write_otlp(provider, sink, out / f"{name}.pydantic-ai.jsonl")
        provider.shutdown()
        return _write(out, name, mlflow, fake, store, truth)


SCENARIOS = {n: (lambda out, n=n: run(out, n)) for n in ("pydantic-named", "pydantic-unnamed")}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(HERE.parent / "data" / "mlflow-agents")], SCENARIOS))
