"""Record plain Responses API loops under OpenLLMetry's OpenAI instrumentation, behind `tests/test_openllmetry_responses_calls.py`.

    python tests/frameworks/record_openllmetry_responses.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/openllmetry-responses)

`client.responses.create` in a loop that sends the whole history each time (the previous responses' items, hosted
calls among them) and runs the function tool `get_weather`, under opentelemetry-instrumentation-openai
(OpenLLMetry, `OpenAIInstrumentor().instrument(tracer_provider=…)`), against the project's scripted loopback server
(`record_otel_loop_faults.Scripted`: request n gets the output items `replies[n]`; no network). It writes
`OUTDIR/<scenario>.jsonl` (OTLP/JSON) and `OUTDIR/<scenario>.truth.json`: what the application got and did — each
response's items as the API returned them (`responses`: the hosted calls, which no later span need record), each
function call it ran (`ran`: item id, `call_id`, name, arguments, the result it sent back, in the order sent), the
question and the answer. Each scenario runs in its own subprocess.

- `tl-hosted-loop`: the loop of `record_responses_hosted_loop.py` (a `web_search_call`, a preamble and a function
  call; then a `code_interpreter_call`, a failed `web_search_call` and the answer);
- `tl-hosted-parallel`: a `web_search_call` and two parallel function calls (results sent in the model's order),
  then a `file_search_call`, one more function call, and the answer after it;
- `tl-replay-call-ids`: as `tl-hosted-parallel`, the application sending each function call back as
  `{"type": "function_call", "call_id", "name", "arguments"}` (no item id, as input built by hand often is; the
  instrumentation then writes the replayed call with its `call_id`, the response's call with its item id) and the
  parallel calls' outputs in the order the tools finished (Tokyo's first).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted  # noqa: E402
from record_responses_hosted_loop import QUESTION, REPLIES, TOOLS, message  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C", "Oslo": "snow, -3 C"}


def _fc(i: int, cid: str, city: str) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{i}", "call_id": cid, "name": "get_weather", "arguments": json.dumps({"city": city}), "status": "completed"}


PARALLEL = [
    [{"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "weather sources"}},
     _fc(2, "call_p", "Paris"), _fc(3, "call_t", "Tokyo")],
    [{"type": "file_search_call", "id": "fs_4", "status": "completed", "queries": ["Oslo climate"],
      "results": [{"file_id": "file_1", "filename": "oslo.md", "score": 0.9, "text": "Oslo is cold in winter.", "attributes": {}}]},
     _fc(5, "call_o", "Oslo")],
    [message("Paris is sunny, Tokyo rainy, Oslo snowing.", 6)],
]
PARALLEL_TOOLS = [TOOLS[0], {"type": "web_search_preview"}, {"type": "file_search", "vector_store_ids": ["vs_1"]}]
SCRIPTS: dict[str, tuple[str, list[list[dict[str, Any]]], list[dict[str, Any]]]] = {  # question, replies, tools
    "tl-hosted-loop": (QUESTION, REPLIES, TOOLS),
    "tl-hosted-parallel": ("Weather in Paris, Tokyo and Oslo?", PARALLEL, PARALLEL_TOOLS),
    "tl-replay-call-ids": ("Weather in Paris, Tokyo and Oslo?", PARALLEL, PARALLEL_TOOLS),
}


def loop(client: Any, question: str, tools: list[dict[str, Any]], by_call_id: bool = False) -> tuple[str, list[dict[str, Any]]]:
    """The application: ask, run the function calls, send everything back, until a response asks for none
    (`by_call_id`: each function call sent back without its item id, and the outputs in completion order, Tokyo's first)."""
    items: list[Any] = [{"role": "user", "content": question}]
    ran = []
    while True:
        response = client.responses.create(model="gpt-4o-mini", input=items, tools=tools)
        out = [o.model_dump(exclude_none=True) for o in response.output]
        items += [{k: o[k] for k in ("type", "call_id", "name", "arguments")} if by_call_id and o["type"] == "function_call" else o for o in out]
        asked = [o for o in out if o["type"] == "function_call"]
        if not asked:
            return response.output_text, ran
        for c in sorted(asked, key=lambda c: json.loads(c["arguments"])["city"] != "Tokyo") if by_call_id else asked:
            args = json.loads(c["arguments"])
            result = WEATHER[args["city"]]
            ran.append({"item_id": c["id"], "call_id": c["call_id"], "name": c["name"], "arguments": args, "result": result})
            items.append({"type": "function_call_output", "call_id": c["call_id"], "output": result})


def record(out: Path, name: str) -> str:
    from openai import OpenAI
    from opentelemetry.instrumentation.openai import OpenAIInstrumentor

    question, replies, tools = SCRIPTS[name]
    with Scripted(responses=replies) as fake:
        provider = otel_provider(fake, "loop")
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        answer, ran = loop(OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0), question, tools, name == "tl-replay-call-ids")
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"question": question, "output": answer, "ran": ran, "responses": replies})
    return answer


SCENARIOS = {name: (lambda out, name=name: record(out, name)) for name in SCRIPTS}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
