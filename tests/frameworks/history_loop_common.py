"""Shared parts of the recorders of plain OpenAI chat loops that resend an edited history (`record_otel_stripped_history.py`,
`record_otel_compacted_history.py`): the tool, the questions and scripted replies, one request and its tool round, and the
recording of one loop under an OpenAI instrumentation.

The loop: a hand-written `client.chat.completions.create` loop (tool `get_weather`; no span around it, so each request is a
trace of its own) against a scripted loopback server (`record_otel_loop_faults.Scripted`, request n gets the script's reply
n, usage 100 + the number of messages sent in, 10 out; no network). Its truth is what the application sent and got: its
user turns, every call it ran with its result, each turn's answer and the last, token usage.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import MODEL, otel_provider, write_otlp, write_truth
from record_otel_loop_faults import Scripted, _openai_instrumentor, call, chat

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]
SYSTEM = {"role": "system", "content": "Be brief."}
QUESTIONS = {"round": ["Weather in Paris, then Tokyo?"], "turns": ["Weather in Paris?", "And in Tokyo?"]}
REPLIES = {  # the server's replies to QUESTIONS[kind], each call with a few words beside it
    "round": [chat("Checking Paris.", call("call_1", "get_weather", {"city": "Paris"})), chat("Now Tokyo.", call("call_2", "get_weather", {"city": "Tokyo"})),
              chat("Paris is sunny (21 C); Tokyo is rainy (14 C).")],
    "turns": [chat("Checking Paris.", call("call_1", "get_weather", {"city": "Paris"})), chat("Sunny, 21 C."),
              chat("Checking Tokyo.", call("call_2", "get_weather", {"city": "Tokyo"})), chat("Rainy, 14 C.")],
}


def quiet(replies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`replies` without the words beside their calls."""
    return [chat(None, *r["tool_calls"]) if r.get("tool_calls") else r for r in replies]


def no_usage() -> dict[str, int]:
    """The token usage of no request yet."""
    return {"input_tokens": 0, "output_tokens": 0, "requests": 0}


def request(client: Any, messages: list[dict[str, Any]], spent: dict[str, int]) -> dict[str, Any]:
    """One chat request sending `messages` with `TOOLS`; its usage added to `spent`; returns the reply's message."""
    r = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
    spent["input_tokens"] += r.usage.prompt_tokens
    spent["output_tokens"] += r.usage.completion_tokens
    spent["requests"] += 1
    return r.choices[0].message.model_dump(exclude_none=True)


def run_calls(message: dict[str, Any], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool messages answering `message`'s calls (`WEATHER`), in its order; each call is added to `calls` with its result."""
    results = []
    for c in message["tool_calls"]:
        args = json.loads(c["function"]["arguments"])
        results.append({"role": "tool", "tool_call_id": c["id"], "content": WEATHER[args["city"]]})
        calls.append({"id": c["id"], "name": "get_weather", "arguments": args, "result": WEATHER[args["city"]]})
    return results


def loop_truth(user_turns: list[str], answers: list[str], calls: list[dict[str, Any]], spent: dict[str, int]) -> dict[str, Any]:
    """A loop's truth (module docstring)."""
    return {"user_turns": user_turns, "output": answers[-1], "answers": answers, "calls": calls, "usage": spent}


def record_loop(out: Path, name: str, inst: str, replies: list[dict[str, Any]], app: Callable[[Any], dict[str, Any]], session: bool) -> Any:
    """Run `app(client)` against the server replying `replies` under instrumentation `inst` (`oi`: openinference-instrumentation-openai,
    `tl`: opentelemetry-instrumentation-openai), inside OpenInference's `using_session("chat-1")` when `session`; write
    `out/<name>.jsonl` (OTLP/JSON) and `out/<name>.truth.json` (`{"cases": [what app returned]}`); returns the loop's output."""
    from openai import OpenAI

    served = iter(replies)
    with Scripted(lambda body, headers: (next(served), {"prompt_tokens": 100 + len(body["messages"]), "completion_tokens": 10, "total_tokens": 110 + len(body["messages"])})) as fake:
        provider = otel_provider(fake, "openai-loop")
        _openai_instrumentor(inst).instrument(tracer_provider=provider)
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        if session:
            from openinference.instrumentation import using_session

            with using_session("chat-1"):
                truth = app(client)
        else:
            truth = app(client)
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    write_truth(out, name, {"cases": [truth]})
    return truth["output"]
