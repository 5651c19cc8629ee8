"""Record the traces behind `tests/test_otel_call_ids.py`: tool calls whose ids do not tell them apart.

    python tests/frameworks/record_call_ids.py OUTDIR [SCENARIO ...]

writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON, one export request a line; MLflow: `<scenario>.mlflow.jsonl`, its
own `Trace.to_json()`, and `<scenario>.otlp.jsonl`, the same spans over OTLP) and `OUTDIR/<scenario>.truth.json`
(what the application itself sent and got: its user turns, each call with the result it sent back, the answer,
and for the Responses API the order it sent the results in). Each scenario runs in its own subprocess against the
project's scripted loopback OpenAI server (`record_otel_loop_faults.Scripted`; no network). Plain `openai` loops,
no agent framework, under openinference-instrumentation-openai (`oi-`), opentelemetry-instrumentation-openai
(OpenLLMetry, `tl-`) or `mlflow.openai.autolog()` (`mlflow-`):

- `*-dup-ids`: the server numbers calls per response, as several OpenAI-compatible local servers do: `call_0`
  asks for Paris, the next response's `call_0` for Tokyo; the results differ.
- `tl-dup-ids-parallel`: two parallel calls `call_0`, `call_1` (get_weather), then `call_0`, `call_1` again (lookup).
- `oi-dup-ids-turns`: two user turns in one `using_session` conversation, each with one call `call_0`.
- `*-empty-ids-same`: the server gives every call the id `""`: two parallel `set_alarm` calls, then one more,
  each returning "ok" (OpenInference writes no id for `""`).
- `*-empty-ids`: ids `""` again, two parallel get_weather calls with different results, then `lookup`.
- `*-responses-rev`: a Responses API loop sending the whole input each time; two parallel calls, whose
  `function_call_output`s the application sends in completion order (Tokyo's first), then one more call.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_jsonl, write_otlp, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted, _openai_instrumentor, call, chat  # noqa: E402

RESULTS = {("get_weather", "Paris"): "sunny, 21 C", ("get_weather", "Tokyo"): "rainy, 14 C", ("get_weather", "Oslo"): "snow, -3 C",
           ("lookup", "Oslo"): "Oslo: 0.7M people", ("lookup", "Rome"): "Rome: 2.8M people"}
TOOLS = [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "time": {"type": "string"}}}}}
         for n in ("get_weather", "lookup", "set_alarm")]


def result_of(name: str, args: dict[str, Any]) -> str:
    """What the application's tool returns (`set_alarm` always "ok")."""
    return "ok" if name == "set_alarm" else RESULTS[(name, args["city"])]


SCRIPTS: dict[str, tuple[list[str], list[dict[str, Any]]]] = {  # user turns, the server's replies in order
    "dup-ids": (["Weather in Paris, then Tokyo?"], [
        chat(None, call("call_0", "get_weather", {"city": "Paris"})),
        chat(None, call("call_0", "get_weather", {"city": "Tokyo"})),
        chat("Paris is sunny, Tokyo is rainy.")]),
    "dup-ids-parallel": (["Weather in Paris and Tokyo, then who lives in Oslo and Rome?"], [
        chat(None, call("call_0", "get_weather", {"city": "Paris"}), call("call_1", "get_weather", {"city": "Tokyo"})),
        chat(None, call("call_0", "lookup", {"city": "Oslo"}), call("call_1", "lookup", {"city": "Rome"})),
        chat("Sunny and rainy; 0.7M and 2.8M people.")]),
    "dup-ids-turns": (["Weather in Paris?", "And in Tokyo?"], [
        chat(None, call("call_0", "get_weather", {"city": "Paris"})),
        chat("Sunny in Paris."),
        chat(None, call("call_0", "get_weather", {"city": "Tokyo"})),
        chat("Rainy in Tokyo.")]),
    "empty-ids-same": (["Set alarms at 07:00, 07:30 and 08:00."], [
        chat(None, call("", "set_alarm", {"time": "07:00"}), call("", "set_alarm", {"time": "07:30"})),
        chat(None, call("", "set_alarm", {"time": "08:00"})),
        chat("Three alarms set.")]),
    "empty-ids": (["Weather in Paris and Tokyo, and who lives in Oslo?"], [
        chat(None, call("", "get_weather", {"city": "Paris"}), call("", "get_weather", {"city": "Tokyo"})),
        chat(None, call("", "lookup", {"city": "Oslo"})),
        chat("Sunny, rainy; 0.7M people.")]),
}


def _usage(n: int) -> dict[str, int]:
    return {"prompt_tokens": 100 + n, "completion_tokens": 10 + n, "total_tokens": 110 + 2 * n}


def _chat_loop(client: Any, turns: list[str]) -> dict[str, Any]:
    """The application: a plain chat loop over `turns`, answering every call in the model's order; returns its truth."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    calls, answers, tokens = [], [], {"input_tokens": 0, "output_tokens": 0, "requests": 0}
    for text in turns:
        messages.append({"role": "user", "content": text})
        while True:
            r = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
            tokens = {"input_tokens": tokens["input_tokens"] + r.usage.prompt_tokens, "output_tokens": tokens["output_tokens"] + r.usage.completion_tokens,
                      "requests": tokens["requests"] + 1}
            message = r.choices[0].message.model_dump(exclude_none=True)
            messages.append(message)
            if not message.get("tool_calls"):
                answers.append(message["content"])
                break
            for c in message["tool_calls"]:
                args = json.loads(c["function"]["arguments"])
                result = result_of(c["function"]["name"], args)
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
                calls.append({"id": c["id"], "name": c["function"]["name"], "arguments": args, "result": result})
    return {"user_turns": turns, "calls": calls, "answers": answers, "output": answers[-1], "usage": tokens}


def chat_scenario(out: Path, name: str, kind: str, script: str) -> Any:
    """`script` under instrumentation `kind` (`oi`, `tl`); a two-turn script runs in one OpenInference session."""
    from openai import OpenAI

    turns, replies = SCRIPTS[script]
    served = iter(enumerate(replies))

    def reply(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, int]]:
        n, message = next(served)
        return message, _usage(n)

    with Scripted(reply) as fake:
        provider = otel_provider(fake, "call-ids")
        _openai_instrumentor(kind).instrument(tracer_provider=provider)
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        if len(turns) > 1:
            from openinference.instrumentation import using_session

            with using_session("session-1"):
                case = _chat_loop(client, turns)
        else:
            case = _chat_loop(client, turns)
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": [case]})
    return case["output"]


def mlflow_scenario(out: Path, name: str, script: str) -> Any:
    """`script` under `mlflow.openai.autolog()` inside an `@mlflow.trace` AGENT span (the tools are plain functions)."""
    from openai import OpenAI

    turns, replies = SCRIPTS[script]
    served = iter(enumerate(replies))
    with Scripted(lambda body, headers: (lambda n, m: (m, _usage(n)))(*next(served))) as fake, tempfile.TemporaryDirectory() as store:
        os.environ.update({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{fake.url}/v1/traces", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
                           "MLFLOW_TRACE_ENABLE_OTLP_DUAL_EXPORT": "true", "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false",
                           "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"})
        import mlflow
        from mlflow.entities import SpanType
        from mlflow.tracing.provider import provider

        from run_mlflow import _clean

        mlflow.set_tracking_uri(f"sqlite:///{store}/mlflow.db")
        mlflow.set_experiment(experiment_id=mlflow.create_experiment("call-ids", artifact_location=f"{store}/artifacts"))
        mlflow.openai.autolog()
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        case = mlflow.trace(name="agent", span_type=SpanType.AGENT)(lambda question: _chat_loop(client, turns))(turns[0])
        trace = mlflow.get_trace(mlflow.get_last_active_trace_id())
        write_jsonl(out / f"{name}.mlflow.jsonl", [_clean(trace.to_json(), store)])
        provider.get().force_flush()
        write_jsonl(out / f"{name}.otlp.jsonl", fake.take_otlp())
    write_truth(out, name, {"cases": [case]})
    return case["output"]


# --- Responses API, results sent in completion order ------------------------------------------------------------
def _fc(cid: str, name: str, args: Any) -> dict[str, Any]:
    return {"type": "function_call", "id": "fc_" + cid[5:], "call_id": cid, "name": name, "arguments": json.dumps(args), "status": "completed"}


def _said(text: str, i: int) -> dict[str, Any]:
    return {"type": "message", "id": f"msg_{i}", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}


RESPONSES = [[_fc("call_p1", "get_weather", {"city": "Paris"}), _fc("call_t2", "get_weather", {"city": "Tokyo"})],
             [_fc("call_o3", "get_weather", {"city": "Oslo"})],
             [_said("Paris sunny, Tokyo rainy, Oslo snowing.", 1)]]
FINISHED_FIRST = "Tokyo"  # the parallel call whose tool finished first: its output is sent first


def responses_scenario(out: Path, name: str, kind: str) -> Any:
    """The whole input sent each time (no `previous_response_id`); parallel outputs in completion order."""
    from openai import OpenAI

    question = "Weather in Paris and Tokyo, then Oslo?"
    with Scripted(responses=RESPONSES) as fake:
        provider = otel_provider(fake, "call-ids")
        _openai_instrumentor(kind).instrument(tracer_provider=provider)
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]
        items: list[Any] = [{"role": "user", "content": question}]
        calls, sent, tokens = [], [], {"input_tokens": 0, "output_tokens": 0, "requests": 0}
        while True:
            r = client.responses.create(model="gpt-4.1-mini", input=items, tools=tools)
            tokens = {"input_tokens": tokens["input_tokens"] + r.usage.input_tokens, "output_tokens": tokens["output_tokens"] + r.usage.output_tokens,
                      "requests": tokens["requests"] + 1}
            asked = [o for o in r.output if o.type == "function_call"]
            if not asked:
                answer = r.output_text
                break
            items += [o.model_dump(exclude_none=True) for o in r.output]
            done = sorted(asked, key=lambda c: json.loads(c.arguments)["city"] != FINISHED_FIRST)
            for c in done:
                args = json.loads(c.arguments)
                items.append({"type": "function_call_output", "call_id": c.call_id, "output": result_of(c.name, args)})
                sent.append(c.call_id)
            calls += [{"id": c.call_id, "item_id": c.id, "name": c.name, "arguments": json.loads(c.arguments),
                       "result": result_of(c.name, json.loads(c.arguments))} for c in asked]
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": [{"user_turns": [question], "calls": calls, "sent_order": sent, "answers": [answer], "output": answer, "usage": tokens}]})
    return answer


SCENARIOS = {
    "oi-dup-ids": lambda out: chat_scenario(out, "oi-dup-ids", "oi", "dup-ids"),
    "tl-dup-ids": lambda out: chat_scenario(out, "tl-dup-ids", "tl", "dup-ids"),
    "tl-dup-ids-parallel": lambda out: chat_scenario(out, "tl-dup-ids-parallel", "tl", "dup-ids-parallel"),
    "oi-dup-ids-turns": lambda out: chat_scenario(out, "oi-dup-ids-turns", "oi", "dup-ids-turns"),
    "mlflow-dup-ids": lambda out: mlflow_scenario(out, "mlflow-dup-ids", "dup-ids"),
    "oi-empty-ids-same": lambda out: chat_scenario(out, "oi-empty-ids-same", "oi", "empty-ids-same"),
    "tl-empty-ids-same": lambda out: chat_scenario(out, "tl-empty-ids-same", "tl", "empty-ids-same"),
    "oi-empty-ids": lambda out: chat_scenario(out, "oi-empty-ids", "oi", "empty-ids"),
    "tl-empty-ids": lambda out: chat_scenario(out, "tl-empty-ids", "tl", "empty-ids"),
    "oi-responses-rev": lambda out: responses_scenario(out, "oi-responses-rev", "oi"),
    "tl-responses-rev": lambda out: responses_scenario(out, "tl-responses-rev", "tl"),
}


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all), each in a subprocess; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, SCENARIOS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
