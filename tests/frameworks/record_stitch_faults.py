"""Record the traces behind `tests/test_otel_stitch_faults.py`, with the installed libraries.

    python tests/frameworks/record_stitch_faults.py OUTDIR [SCENARIO ...]

writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON, one export request a line) and `OUTDIR/<scenario>.truth.json`
(what the application itself sent and got: per conversation its user turns, calls with results, answers and
token usage). Each scenario runs in its own subprocess (instrumentors patch libraries process-wide) against
the scripted loopback OpenAI server of `record_otel_loop_faults.py` (no network). Scenarios (`SCENARIOS`):

- `oi-langgraph-both`, `oi-langgraph-both-stream`: `create_react_agent` + `ChatOpenAI` with OpenInference's
  LangChain AND OpenAI instrumentors on one provider (what Phoenix's `register(auto_instrument=True)` does); the
  model asks for two calls at once, then answers. The LangChain instrumentor does not make its span current, so
  each request is also a parentless `ChatCompletion` trace.
- `oi-sys-changes`, `tl-sys-changes`: a plain chat loop whose system prompt carries a per-request stamp
  ("Now: request <n>"), under openinference-instrumentation-openai / OpenLLMetry: one call, then the answer.
- `oi-window`: a plain chat loop, three user turns, each request sending the system prompt and only the last
  three messages (a sliding window); one call in each of the first two turns.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from record_otel_loop_faults import WEATHER, Scripted, call, chat  # noqa: E402

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]


def _replies(*messages: dict[str, Any]) -> Any:
    """A chat script answering request n with `messages[n]`, usage 100+n in, 10+n out."""
    it = iter(enumerate(messages))

    def script(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, int]]:
        n, message = next(it)
        return message, {"prompt_tokens": 100 + n, "completion_tokens": 10 + n, "total_tokens": 110 + 2 * n}

    return script


def _usage(n: int) -> dict[str, int]:
    return {"input_tokens": sum(100 + i for i in range(n)), "output_tokens": sum(10 + i for i in range(n)), "requests": n}


# --- LangGraph under both OpenInference instrumentors -----------------------------------------------------------
BOTH_Q = "Weather in Paris and Tokyo?"
BOTH = [chat("Checking.", call("c1", "get_weather", {"city": "Paris"}), call("c2", "get_weather", {"city": "Tokyo"})),
        chat("Paris sunny, Tokyo rainy.")]


def langgraph_both(out: Path, name: str, stream: bool) -> Any:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor

    with Scripted(_replies(*BOTH)) as fake:
        provider = otel_provider(fake, "langgraph")
        LangChainInstrumentor().instrument(tracer_provider=provider)
        OpenAIInstrumentor().instrument(tracer_provider=provider)

        @tool
        def get_weather(city: str) -> str:
            """Weather in a city."""
            return WEATHER[city]

        model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0, streaming=stream, stream_usage=stream)
        result = create_react_agent(model, [get_weather]).invoke({"messages": [{"role": "user", "content": BOTH_Q}]})
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    messages = result["messages"]
    asked = {c["id"]: c for m in messages if m.type == "ai" for c in m.tool_calls}
    calls = [{"id": m.tool_call_id, "name": "get_weather", "arguments": asked[m.tool_call_id]["args"], "result": m.content}
             for m in messages if m.type == "tool"]
    write_truth(out, name, {"cases": [{"user_turns": [BOTH_Q], "output": messages[-1].content, "answers": [messages[-1].content],
                                       "calls": calls, "usage": _usage(2)}]})
    return messages[-1].content


# --- plain loops: a system prompt stamped per request; a sliding window ------------------------------------------
def _client(fake: Any, kind: str, provider: Any) -> Any:
    from openai import OpenAI

    if kind == "oi":
        from openinference.instrumentation.openai import OpenAIInstrumentor
    else:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    return OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)


def _turn(client: Any, history: list[dict[str, Any]], system: Any, window: int | None, calls: list[dict[str, Any]]) -> str:
    """Run one user turn (the user message is already in `history`); each request sends `system(n)` and the last
    `window` messages of `history` (all when `None`). Returns the answer; `calls` gets each call with its result."""
    while True:
        sent = history if window is None else history[-window:]
        message = client.chat.completions.create(model=MODEL, messages=[{"role": "system", "content": system()}, *sent],
                                                 tools=TOOLS).choices[0].message.model_dump(exclude_none=True)
        history.append(message)
        if not message.get("tool_calls"):
            return message["content"]
        for c in message["tool_calls"]:
            args = json.loads(c["function"]["arguments"])
            history.append({"role": "tool", "tool_call_id": c["id"], "content": WEATHER[args["city"]]})
            calls.append({"id": c["id"], "name": "get_weather", "arguments": args, "result": WEATHER[args["city"]]})


SYS_Q = "Weather please (Paris)"
SYS = [chat(None, call("call_a", "get_weather", {"city": "Paris"})), chat("Sunny in Paris.")]


def sys_changes(out: Path, name: str, kind: str) -> Any:
    stamp = iter(range(1, 100))
    with Scripted(_replies(*SYS)) as fake:
        provider = otel_provider(fake, "openai-loops")
        client = _client(fake, kind, provider)
        calls: list[dict[str, Any]] = []
        answer = _turn(client, [{"role": "user", "content": SYS_Q}], lambda: f"Be brief. Now: request {next(stamp)}", None, calls)
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": [{"user_turns": [SYS_Q], "output": answer, "answers": [answer], "calls": calls, "usage": _usage(2)}]})
    return answer


WINDOW_Q = ["Weather in Paris?", "And Tokyo?", "Which is warmer?"]
WINDOW = [chat(None, call("call_a", "get_weather", {"city": "Paris"})), chat("Sunny in Paris."),
          chat(None, call("call_b", "get_weather", {"city": "Tokyo"})), chat("Rainy in Tokyo."), chat("Paris is warmer.")]


def window(out: Path, name: str) -> Any:
    with Scripted(_replies(*WINDOW)) as fake:
        provider = otel_provider(fake, "openai-loops")
        client = _client(fake, "oi", provider)
        history: list[dict[str, Any]] = []
        calls: list[dict[str, Any]] = []
        answers = []
        for question in WINDOW_Q:
            history.append({"role": "user", "content": question})
            answers.append(_turn(client, history, lambda: "Be brief.", 3, calls))
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": [{"user_turns": WINDOW_Q, "output": answers[-1], "answers": answers, "calls": calls, "usage": _usage(5)}]})
    return answers


SCENARIOS = {
    "oi-langgraph-both": lambda out: langgraph_both(out, "oi-langgraph-both", stream=False),
    "oi-langgraph-both-stream": lambda out: langgraph_both(out, "oi-langgraph-both-stream", stream=True),
    "oi-sys-changes": lambda out: sys_changes(out, "oi-sys-changes", "oi"),
    "tl-sys-changes": lambda out: sys_changes(out, "tl-sys-changes", "tl"),
    "oi-window": lambda out: window(out, "oi-window"),
}


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all), each in a subprocess; returns how many failed."""
    return record_each_in_subprocess(__file__, argv, SCENARIOS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
