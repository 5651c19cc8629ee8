"""Record the MLflow traces of an OpenAI Responses API loop behind `tests/test_mlflow_responses_api.py`.

    python tests/frameworks/record_mlflow_responses.py OUTDIR [SCENARIO ...]

A plain `client.responses.create` loop under `mlflow.openai.autolog()` (MLflow 3), its tool `get_weather` a
`@mlflow.trace` TOOL span, against the project's scripted loopback server (`record_otel_loop_faults.Scripted`;
no network). The model answers the question with a reasoning summary and two parallel calls (Paris, Tokyo),
then, given both results, with the answer. Each scenario writes `OUTDIR/<scenario>.mlflow.jsonl` (the traces as
`Trace.to_json()` writes them, one per line, in the order they started), `OUTDIR/<scenario>.otlp.jsonl` (the same
spans through MLflow's OTLP dual export, OTLP/JSON) and `OUTDIR/<scenario>.truth.json` (what the application sent
and got). Scenarios (`SCENARIOS`), each in its own subprocess:

- `agent`: the loop inside an `@mlflow.trace` AGENT span (one trace), each request sending the whole history;
- `bare`: the same loop with nothing around it: each request and each tool call is a trace of its own;
- `prev`: as `bare`, the second request chained with `previous_response_id`, sending only the two results.
- `prev2`: as `prev`, then a second user turn ("And Berlin?") chained to the answer with `previous_response_id`: one
  more call (`call_b`) and answer, so the lone tool trace of turn 2 must join turn 2's request, not turn 1's.
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

from common import record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted  # noqa: E402
from run_mlflow import _clean, _configure  # noqa: E402

QUESTION = "Compare the weather in Paris and Tokyo."
WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C", "Berlin": "cloudy, 9 C"}
QUESTION2, ANSWER2 = "And Berlin?", "Berlin cloudy 9C."
THOUGHT = "Two cities."
ANSWER = "Paris sunny 21C; Tokyo rainy 14C."
TOOLS = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]


def _call(cid: str, city: str) -> dict[str, Any]:
    return {"type": "function_call", "id": f"fc_{cid}", "call_id": cid, "name": "get_weather", "arguments": json.dumps({"city": city}),
            "status": "completed"}


REPLIES = [[{"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": THOUGHT}]}, _call("call_p", "Paris"), _call("call_t", "Tokyo")],
           [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": ANSWER, "annotations": []}]}]]
REPLIES2 = [[_call("call_b", "Berlin")], [{"type": "message", "id": "msg_2", "role": "assistant", "status": "completed",
                                           "content": [{"type": "output_text", "text": ANSWER2, "annotations": []}]}]]


def scenario(out: Path, name: str) -> Any:
    """Run the loop as scenario `name` says (module docstring) and write its recordings and truth."""
    from openai import OpenAI

    with Scripted(responses=REPLIES + (REPLIES2 if name == "prev2" else [])) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store)
        from mlflow.entities import SpanType
        from mlflow.tracing.provider import provider

        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        get_weather = mlflow.trace(lambda city: WEATHER[city], name="get_weather", span_type=SpanType.TOOL)
        calls: list[dict[str, Any]] = []
        usage = {"input_tokens": 0, "output_tokens": 0, "requests": 0}
        thoughts: list[str | None] = []

        last: list[str | None] = [None]  # the last response's id (a later turn chains to it)

        def loop(question: str, previous: str | None = None) -> str:
            history: list[Any] = [{"role": "user", "content": question}]
            sent = history
            while True:
                r = client.responses.create(model="gpt-4o-mini", input=sent, tools=TOOLS, previous_response_id=previous)
                usage.update(input_tokens=usage["input_tokens"] + r.usage.input_tokens, output_tokens=usage["output_tokens"] + r.usage.output_tokens,
                             requests=usage["requests"] + 1)
                items = [o.model_dump(exclude_none=True) for o in r.output]
                thoughts.append("\n".join(s["text"] for o in items if o["type"] == "reasoning" for s in o.get("summary", [])) or None)
                asked = [o for o in items if o["type"] == "function_call"]
                last[0] = r.id
                if not asked:
                    return r.output_text
                results = []
                for c in asked:
                    result = get_weather(**json.loads(c["arguments"]))
                    results.append({"type": "function_call_output", "call_id": c["call_id"], "output": result})
                    calls.append({"id": c["call_id"], "name": c["name"], "arguments": json.loads(c["arguments"]), "result": result})
                history += items + results
                sent, previous = (results, r.id) if name in ("prev", "prev2") else (history, None)

        if name == "agent":
            loop = mlflow.trace(loop, name="agent", span_type=SpanType.AGENT)
        answer = loop(QUESTION)
        if name == "prev2":
            answer = loop(QUESTION2, last[0])
        traces = sorted(mlflow.search_traces(return_type="list"), key=lambda t: t.info.request_time)
        write_jsonl(out / f"{name}.mlflow.jsonl", [_clean(t.to_json(), store) for t in traces])
        provider.get().force_flush()
        write_jsonl(out / f"{name}.otlp.jsonl", fake.take_otlp())
    steps = [{"thought": thoughts[0], "output": None}, {"thought": thoughts[1], "output": ANSWER}]
    if name == "prev2":
        steps += [{"thought": thoughts[2], "output": None}, {"thought": thoughts[3], "output": answer}]
    write_truth(out, name, {"input": QUESTION, "output": answer, "calls": calls, "usage": usage, "traces": len(traces), "steps": steps,
                            "user_messages": [QUESTION] + ([QUESTION2] if name == "prev2" else [])})
    return answer


SCENARIOS = {name: (lambda out, name=name: scenario(out, name)) for name in ("agent", "bare", "prev", "prev2")}


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all) into the folder `argv[0]`; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, SCENARIOS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
