"""Tools that call tools: Langfuse `@observe` and MLflow `@mlflow.trace` tools, against the loopback scripted server.

    python tests/frameworks/record_nested_tool_calls.py tests/data/nested-tool-calls [SCENARIO ...]

The loop (both): user "Plan a trip: weather in Paris and Tokyo?"; request 1 (streamed, include_usage) asks for
research(Paris) and research(Tokyo) in one reply (arguments streamed in fragments); `research` is a tool that itself
calls the tool `get_weather` and then a *nested* model request (a separate, non-streamed chat "Summarise weather for
<city>: ..."), returning that summary. get_weather raises for Tokyo (ConnectionError "weather service down"), so
research(Tokyo) raises; the loop sends "Error: weather service down" to the model. Request 2 (streamed): the answer.

- lf-nested: Langfuse `@observe(as_type="agent")` loop, `@observe(as_type="tool")` research and get_weather,
  `@observe(as_type="generation")` around the nested raw OpenAI request (usage given with
  update_current_generation); the main requests go through Langfuse's drop-in `langfuse.openai.OpenAI`.
  Writes lf-nested.otlp.jsonl (OTLP the SDK sent), lf-nested.json (public API v1 JSON via langfuse_api.py),
  lf-nested.v2.json.
- ml-stream: `mlflow.openai.autolog()`, the loop in `@mlflow.trace(span_type="AGENT")`, research and get_weather
  `@mlflow.trace(span_type="TOOL")`; main requests streamed. Writes ml-stream.mlflow.jsonl, ml-stream.otlp.jsonl.
- ml-stream-bare: the same without the AGENT span around the loop (each request / tool a trace of its own).
"""

import json
import os
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
warnings.simplefilter("ignore")

from common import MODEL, record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted, call, chat  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
Q = "Plan a trip: weather in Paris and Tokyo?"
N = {"n": 0}


def usage() -> dict[str, int]:
    n = N["n"]
    N["n"] += 1
    return {"prompt_tokens": 100 + n, "completion_tokens": 10 + n, "total_tokens": 110 + 2 * n}


def script(body: dict[str, Any], headers: Any) -> Any:
    msgs = body["messages"]
    u = next(m["content"] for m in reversed(msgs) if m["role"] == "user")
    if u.startswith("Summarise weather for "):
        city = u.split("for ", 1)[1].split(":")[0]
        return chat(f"{city} looks {WEATHER[city].split(',')[0]}."), usage()
    if u == Q:
        if not any(m["role"] == "tool" for m in msgs):
            return chat("Let me research both.", call("call_a", "research", {"city": "Paris"}), call("call_b", "research", {"city": "Tokyo"})), usage()
        return chat("Paris looks sunny; Tokyo could not be checked."), usage()
    raise LookupError(u)


SCHEMA = [{"type": "function", "function": {"name": "research", "description": "Research a city.",
                                            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


def collect(stream: Any) -> dict[str, Any]:
    """A streamed chat completion as the assistant message the application sends back."""
    text, calls = "", {}
    for chunk in stream:
        for ch in chunk.choices:
            d = ch.delta
            text += d.content or ""
            for tc in d.tool_calls or []:
                c = calls.setdefault(tc.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
                c["id"] = tc.id or c["id"]
                if tc.function:
                    c["function"]["name"] += tc.function.name or ""
                    c["function"]["arguments"] += tc.function.arguments or ""
    msg: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        msg["tool_calls"] = [calls[i] for i in sorted(calls)]
    return msg


def loop(client: Any, research: Any, log: list[dict[str, Any]]) -> str:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": Q}]
    while True:
        stream = client.chat.completions.create(model=MODEL, messages=messages, tools=SCHEMA, stream=True,
                                                stream_options={"include_usage": True})
        msg = collect(stream)
        messages.append(msg)
        if not msg.get("tool_calls"):
            return msg["content"]
        for c in msg["tool_calls"]:
            args = json.loads(c["function"]["arguments"])
            entry: dict[str, Any] = {"id": c["id"], "name": c["function"]["name"], "arguments": args}
            try:
                result = research(**args)
                entry["result"] = result
            except Exception as e:
                result = f"Error: {e}"
                entry.update(result=result, raised=f"{type(e).__name__}: {e}")
            log.append(entry)
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})


def make_tools(raw_client: Any, wrap_tool: Any, wrap_gen: Any, nested: list[dict[str, Any]], after_gen: Any = None) -> Any:
    def get_weather(city: str) -> str:
        if city == "Tokyo":
            raise ConnectionError("weather service down")
        return WEATHER[city]

    get_weather = wrap_tool(get_weather, "get_weather")

    def summarise(city: str, weather: str) -> str:
        r = raw_client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": f"Summarise weather for {city}: {weather}"}])
        if after_gen:
            after_gen(r)
        nested.append({"request": f"Summarise weather for {city}: {weather}", "answer": r.choices[0].message.content})
        return r.choices[0].message.content

    summarise = wrap_gen(summarise, "summarise")

    def research(city: str) -> str:
        w = get_weather(city=city)
        return summarise(city, w)

    return wrap_tool(research, "research")


def lf_nested(out: Path) -> Any:
    from langfuse_api import observations_v2, trace_with_full_details

    with Scripted(script) as fake:
        from langfuse import Langfuse, get_client, observe
        from langfuse.openai import OpenAI as LfOpenAI
        from openai import OpenAI

        langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
        client = LfOpenAI(base_url=fake.base_url, api_key="sk-fake")
        raw = OpenAI(base_url=fake.base_url, api_key="sk-fake")
        log: list[dict[str, Any]] = []
        nested: list[dict[str, Any]] = []

        def after_gen(r: Any) -> None:
            get_client().update_current_generation(model=MODEL, output=r.choices[0].message.content,
                                                   usage_details={"input": r.usage.prompt_tokens, "output": r.usage.completion_tokens})

        research = make_tools(raw, lambda f, n: observe(f, name=n, as_type="tool"), lambda f, n: observe(f, name=n, as_type="generation"),
                              nested, after_gen)

        @observe(name="agent", as_type="agent")
        def agent(question: str) -> str:
            return loop(client, research, log)

        answer = agent(Q)
        langfuse.flush()
        docs = fake.take_otlp()
        langfuse.shutdown()
    write_jsonl(out / "lf-nested.otlp.jsonl", docs)
    write_jsonl(out / "lf-nested.json", trace_with_full_details(docs))
    write_jsonl(out / "lf-nested.v2.json", observations_v2(docs))
    write_truth(out, "lf-nested", {"input": Q, "output": answer, "calls": log, "nested_requests": nested, "requests": N["n"]})
    return answer


def _mlflow(fake: Any, store: str) -> Any:
    os.environ.update({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{fake.url}/v1/traces", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
                       "MLFLOW_TRACE_ENABLE_OTLP_DUAL_EXPORT": "true", "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false",
                       "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"})
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{store}/mlflow.db")
    mlflow.set_experiment(experiment_id=mlflow.create_experiment("nested-tool-calls", artifact_location=f"{store}/artifacts"))
    mlflow.openai.autolog()
    return mlflow


def ml_stream(out: Path, bare: bool) -> Any:
    from run_mlflow import _clean

    name = "ml-stream-bare" if bare else "ml-stream"
    with Scripted(script) as fake, tempfile.TemporaryDirectory() as store:
        mlflow = _mlflow(fake, store)
        from mlflow.entities import SpanType
        from mlflow.tracing.provider import provider
        from openai import OpenAI

        client = OpenAI(base_url=fake.base_url, api_key="sk-fake")
        log: list[dict[str, Any]] = []
        nested: list[dict[str, Any]] = []
        research = make_tools(client, lambda f, n: mlflow.trace(f, name=n, span_type=SpanType.TOOL), lambda f, n: f, nested)
        if bare:
            answer = loop(client, research, log)
        else:
            answer = mlflow.trace(lambda question: loop(client, research, log), name="agent", span_type=SpanType.AGENT)(Q)
        ids = mlflow.search_traces(return_type="list", order_by=["timestamp_ms ASC"])
        traces = [mlflow.get_trace(t.info.trace_id) for t in ids]
        write_jsonl(out / f"{name}.mlflow.jsonl", [_clean(t.to_json(), store) for t in traces])
        provider.get().force_flush()
        write_jsonl(out / f"{name}.otlp.jsonl", fake.take_otlp())
    write_truth(out, name, {"input": Q, "output": answer, "calls": log, "nested_requests": nested, "requests": N["n"]})
    return answer


SCENARIOS = {"lf-nested": lf_nested, "ml-stream": lambda o: ml_stream(o, False), "ml-stream-bare": lambda o: ml_stream(o, True)}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
