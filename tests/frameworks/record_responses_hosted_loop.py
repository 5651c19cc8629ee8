"""Record a plain Responses API loop whose model uses hosted tools, behind `tests/test_hosted_tools.py`.

    python tests/frameworks/record_responses_hosted_loop.py OUTDIR [SCENARIO ...]

`client.responses.create` in a loop that sends the whole history each time (the previous responses' items
included, hosted calls among them) and runs the function tool `get_weather`, against the project's scripted
loopback servers (no network). The first response holds a `web_search_call` (with its sources), a preamble and a
function call; the second a `code_interpreter_call` (with its logs), a failed `web_search_call` and the answer.
Scenarios, each in its own subprocess:

- `oi-loop`: OpenInference's openai instrumentation (`OUTDIR/oi-loop.jsonl`, OTLP/JSON);
- `ml-agent`: `mlflow.openai.autolog()` with the loop in an `@mlflow.trace` AGENT span (`OUTDIR/ml-agent.mlflow.jsonl`,
  `Trace.to_json()` lines, and `OUTDIR/ml-agent.otlp.jsonl`, MLflow's OTLP dual export);
- `ml-bare`: the same with nothing around the loop (a trace per request and per tool call).

`OUTDIR/<scenario>.truth.json` holds the answer the application got and the function calls it ran.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import otel_provider, record_each_in_subprocess, write_jsonl, write_otlp, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI  # noqa: E402
from record_otel_loop_faults import Scripted  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
         {"type": "web_search_preview"}, {"type": "code_interpreter", "container": {"type": "auto"}}]
QUESTION = "Paris vs Tokyo weather?"
ANSWER = "Paris is sunny (21 C), 7 degrees warmer than rainy Tokyo."


def message(text: str, i: int) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{i}", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


REPLIES = [
    [{"type": "web_search_call", "id": "ws_1", "status": "completed",
      "action": {"type": "search", "query": "Tokyo weather", "sources": [{"type": "url", "url": "https://w.example/tokyo"}]}},
     message("Looked up Tokyo; now Paris.", 2),
     {"type": "function_call", "id": "fc_1", "call_id": "call_p", "name": "get_weather", "arguments": json.dumps({"city": "Paris"}), "status": "completed"}],
    [{"type": "code_interpreter_call", "id": "ci_1", "status": "completed", "code": "print(21-14)", "container_id": "cntr_1",
      "outputs": [{"type": "logs", "logs": "7"}]},
     {"type": "web_search_call", "id": "ws_2", "status": "failed", "action": {"type": "search", "query": "Paris forecast"}},
     message(ANSWER, 3)],
]


def loop(client: Any) -> tuple[str, list[dict[str, Any]]]:
    """The application: ask, run the function calls, send everything back, until a response asks for none."""
    items: list[Any] = [{"role": "user", "content": QUESTION}]
    ran = []
    while True:
        response = client.responses.create(model="gpt-4o-mini", input=items, tools=TOOLS)
        out = [o.model_dump(exclude_none=True) for o in response.output]
        items += out
        asked = [o for o in out if o["type"] == "function_call"]
        if not asked:
            return response.output_text, ran
        for c in asked:
            result = WEATHER[json.loads(c["arguments"])["city"]]
            ran.append({"id": c["call_id"], "result": result})
            items.append({"type": "function_call_output", "call_id": c["call_id"], "output": result})


def openinference(out: Path) -> str:
    from openai import OpenAI
    from openinference.instrumentation.openai import OpenAIInstrumentor

    with ScriptedOpenAI(REPLIES) as fake:
        provider = otel_provider(fake, "loop")
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        answer, ran = loop(OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0))
        write_otlp(provider, fake, out / "oi-loop.jsonl")
    write_truth(out, "oi-loop", {"output": answer, "ran": ran})
    return answer


def mlflow_loop(out: Path, name: str) -> str:
    from openai import OpenAI
    from run_mlflow import _clean, _configure

    with Scripted(responses=REPLIES) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store)
        from mlflow.entities import SpanType
        from mlflow.tracing.provider import provider

        run = mlflow.trace(loop, name="agent", span_type=SpanType.AGENT) if name == "ml-agent" else loop
        answer, ran = run(OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0))
        traces = sorted(mlflow.search_traces(return_type="list"), key=lambda t: t.info.request_time)
        write_jsonl(out / f"{name}.mlflow.jsonl", [_clean(t.to_json(), store) for t in traces])
        provider.get().force_flush()
        write_jsonl(out / f"{name}.otlp.jsonl", fake.take_otlp())
    write_truth(out, name, {"output": answer, "ran": ran})
    return answer


SCENARIOS = {"oi-loop": openinference, "ml-agent": lambda out: mlflow_loop(out, "ml-agent"), "ml-bare": lambda out: mlflow_loop(out, "ml-bare")}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
