"""Record the Langfuse traces behind `tests/test_langfuse_renamed_tools.py`: tool observations the application named otherwise
than the tool the model called.

    python tests/frameworks/record_langfuse_renamed.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/langfuse-renamed-tools)

Each scenario runs the real Langfuse SDK (langfuse 5.2: it posts OTLP to the loopback fake server) in a process of its own
around a plain `openai` tool loop, and writes `<scenario>.otlp.jsonl` (the OTLP the SDK sent: format `otel`),
`<scenario>.json` (`GET /api/public/traces/{id}`) and `<scenario>.v2.json` (`GET /api/public/v2/observations?traceId=…`),
both built from that OTLP by `langfuse_api.py` as Langfuse's server keeps it, and `<scenario>.truth.json`: the calls the
model asked for and the application ran (id, the model's tool name, arguments, result or error, the text the model was
sent), the name each tool observation had, the requests' tokens and the answer. An `agent` observation holds each request's
`generation` (its `usage_details` set from the response) and the tool observations:

- `lf-decorator-name`: the tool is `@observe(name="Weather lookup", as_type="tool")`, called by keyword; the model asks for
  Paris and Tokyo in one reply;
- `lf-renamed`: the tool is `@observe(as_type="tool")` and renames its observation, `update_current_span(name=f"weather:
  {city}")` (the v3-on SDK's `update_current_observation(name=…)`); the model asks for Paris and Atlantis, which raises
  (the SDK sets level ERROR; the application sends the model an error text);
- `lf-generic-id`: each tool observation is `start_as_current_observation(as_type="tool", name="tool-call")` with the model's
  call id as `metadata.tool_call_id`.

Against the scripted loopback server of `record_oi_faults.py` (no network).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
CITIES = {"lf-decorator-name": ("Paris", "Tokyo"), "lf-renamed": ("Paris", "Atlantis"), "lf-generic-id": ("Paris", "Tokyo")}
ANSWERS = {"lf-decorator-name": "Paris is sunny (21 C); Tokyo is rainy (14 C).", "lf-renamed": "Paris is sunny (21 C); I could not get Atlantis.",
           "lf-generic-id": "Paris is sunny (21 C); Tokyo is rainy (14 C)."}


def record(out: Path, name: str) -> dict[str, Any]:
    from langfuse import Langfuse, get_client, observe
    from langfuse_api import observations_v2, trace_with_full_details
    from openai import OpenAI

    first, second = CITIES[name]
    question = f"What is the weather in {first} and {second}?"
    replies = [{"role": "assistant", "content": None, "tool_calls": [call("call_1", "get_weather", {"city": first}), call("call_2", "get_weather", {"city": second})]},
               {"role": "assistant", "content": ANSWERS[name]}]

    def weather(city: str) -> str:
        if city not in WEATHER:
            raise LookupError(f"no such city: {city}")
        return WEATHER[city]

    @observe(name="Weather lookup", as_type="tool")
    def looked_up(city: str) -> str:
        return weather(city)

    @observe(as_type="tool")
    def renamed(city: str) -> str:
        get_client().update_current_span(name=f"weather: {city}")
        return weather(city)

    ran: list[dict[str, Any]] = []
    requests: list[dict[str, int]] = []
    with ScriptedOpenAI(replies) as fake:
        langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
        with langfuse.start_as_current_observation(as_type="agent", name="weather-desk", input=question) as agent:
            while True:
                with langfuse.start_as_current_observation(as_type="generation", name="chat", model=MODEL, input=list(messages)) as gen:
                    resp = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
                    msg = resp.choices[0].message
                    usage = {"input": resp.usage.prompt_tokens, "output": resp.usage.completion_tokens}
                    gen.update(output=msg.model_dump(exclude_none=True), usage_details=usage)
                requests.append(usage)
                messages.append(msg.model_dump(exclude_none=True))
                if not msg.tool_calls:
                    break
                for tc in msg.tool_calls:
                    arguments = json.loads(tc.function.arguments)
                    result, error = None, None
                    try:
                        if name == "lf-decorator-name":
                            result, observed = looked_up(**arguments), "Weather lookup"
                        elif name == "lf-renamed":
                            observed = f"weather: {arguments['city']}"
                            result = renamed(**arguments)
                        else:
                            observed = "tool-call"
                            with langfuse.start_as_current_observation(as_type="tool", name=observed, input=arguments,
                                                                       metadata={"tool_call_id": tc.id}) as tool:
                                result = weather(**arguments)
                                tool.update(output=result)
                        sent = result
                    except LookupError as exc:
                        error = f"{type(exc).__name__}: {exc}"
                        sent = f"Error: {exc}"
                    ran.append({"id": tc.id, "name": tc.function.name, "observation": observed, "arguments": arguments, "result": result,
                                "error": error, "sent": sent})
                    messages.append({"role": "tool", "tool_call_id": tc.id, "content": sent})
            agent.update(output=msg.content)
        langfuse.flush()
        docs = fake.take_otlp()
        langfuse.shutdown()
    write_jsonl(out / f"{name}.otlp.jsonl", docs)
    write_jsonl(out / f"{name}.json", trace_with_full_details(docs))
    write_jsonl(out / f"{name}.v2.json", observations_v2(docs))
    truth = {"input": question, "calls": ran, "requests": requests, "output": msg.content}
    write_truth(out, name, truth)
    return truth


SCENARIOS: dict[str, Callable[[Path], Any]] = {n: (lambda out, n=n: record(out, n)) for n in CITIES}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(HERE.parent / "data" / "langfuse-renamed-tools")], SCENARIOS))
