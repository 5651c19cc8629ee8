"""Record the LangGraph traces behind `tests/test_otel_trial_lost_root.py`, with the installed libraries.

    python tests/frameworks/record_langgraph_lost_root.py OUTDIR [SCENARIO ...]

writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON, one export request a line) and `OUTDIR/<scenario>.truth.json` (what
the application itself sent and got). Each scenario runs in its own subprocess (instrumentors patch libraries
process-wide) against a scripted loopback OpenAI server (`record_otel_loop_faults.Scripted`; no network).
Scenarios (`SCENARIOS`), each under openinference-instrumentation-langchain (`oi-`) and
opentelemetry-instrumentation-langchain (`tl-`):

- `*-lg-checkpoint`: `create_react_agent` with an `InMemorySaver` checkpointer, invoked three times on thread
  `thread-77` (one trace per invoke): two turns that each call `get_weather`, then one answered from memory.
  The `oi-` run also writes what the SDK's `ConsoleSpanExporter` printed of the same spans to
  `oi-lg-checkpoint.console.txt` (pretty-printed span JSON, not OTLP: read as one error saying so).
- `*-lg-noargs`: one response asking for `get_profile` with `{"user": "ü1"}` and `get_blob` with no arguments
  (`{}`), then the answer. OpenInference writes no `function.arguments` attribute for `{}`.

The damaged copies beside them (root spans dropped, an attribute that does not decode) are made from these by
`damage_spans.py`.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted, call, chat  # noqa: E402

TURNS = ["Is it sunny in Lisbon?", "And in Oslo?", "Thanks, which one is warmer?"]
WEATHER = {"Lisbon": "sunny, 24 C", "Oslo": "cloudy, 9 C"}
NOARGS_Q = "Get my profile and the blob."


def _usage(i: int) -> dict[str, int]:
    return {"prompt_tokens": 100 + i, "completion_tokens": 10 + i, "total_tokens": 110 + 2 * i}


def _instrumentor(kind: str) -> Any:
    if kind == "oi":
        from openinference.instrumentation.langchain import LangChainInstrumentor
        return LangChainInstrumentor()
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor
    return LangchainInstrumentor()


def _react_agent(*args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (its deprecation notice: the prebuilt agent is what applications still run)
        from langgraph.prebuilt import create_react_agent
    return create_react_agent(*args, **kwargs)


def _checkpoint_reply(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, int]]:
    msgs = body["messages"]
    users = [m for m in msgs if m["role"] == "user"]
    last_user = max(i for i, m in enumerate(msgs) if m["role"] == "user")
    answered = len(msgs) > last_user + 1  # a tool result after the question
    turn = len(users) - 1
    if turn == 0:
        return (chat("Yes, sunny in Lisbon (24 C).") if answered else chat(None, call("c_l", "get_weather", {"city": "Lisbon"}))), _usage(int(answered))
    if turn == 1:
        return (chat("Oslo is cloudy, 9 C.") if answered else chat(None, call("c_o", "get_weather", {"city": "Oslo"}))), _usage(2 + int(answered))
    return chat("Lisbon is warmer (24 C vs 9 C)."), _usage(4)


def checkpoint(out: Path, name: str, kind: str) -> list[str]:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver

    @tool
    def get_weather(city: str) -> str:
        """Weather."""
        return WEATHER[city]

    with Scripted(_checkpoint_reply) as fake:
        provider = otel_provider(fake, "lg-checkpoint")
        console = None
        if kind == "oi":
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
            console = (out / f"{name}.console.txt").open("w")
            provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=console)))
        _instrumentor(kind).instrument(tracer_provider=provider)
        model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        agent = _react_agent(model, [get_weather], prompt="Be brief.", checkpointer=InMemorySaver())
        config = {"configurable": {"thread_id": "thread-77"}}
        answers = [agent.invoke({"messages": [{"role": "user", "content": t}]}, config)["messages"][-1].content for t in TURNS]
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
        if console is not None:
            console.close()
    write_truth(out, name, {"user_turns": TURNS, "answers": answers, "calls": [
        {"id": "c_l", "name": "get_weather", "arguments": {"city": "Lisbon"}, "result": WEATHER["Lisbon"]},
        {"id": "c_o", "name": "get_weather", "arguments": {"city": "Oslo"}, "result": WEATHER["Oslo"]}]})
    return answers


def _noargs_reply(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, int]]:
    if not any(m["role"] == "tool" for m in body["messages"]):
        return chat("Fetching both.", call("c_prof", "get_profile", {"user": "ü1"}), call("c_blob", "get_blob", {})), _usage(0)
    return chat("Done: Zoë, blob ok."), _usage(1)


def noargs(out: Path, name: str, kind: str) -> str:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool
    def get_profile(user: str) -> dict:
        """Profile."""
        return {"name": "Zoë", "age": 31}

    @tool
    def get_blob() -> str:
        """Blob."""
        return "blob-" + "x" * 40

    with Scripted(_noargs_reply) as fake:
        provider = otel_provider(fake, "lg-noargs")
        _instrumentor(kind).instrument(tracer_provider=provider)
        model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        state = _react_agent(model, [get_profile, get_blob], prompt="Be brief.").invoke({"messages": [{"role": "user", "content": NOARGS_Q}]})
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
    answer = state["messages"][-1].content
    write_truth(out, name, {"user_turns": [NOARGS_Q], "answer": answer, "calls": [
        {"id": "c_prof", "name": "get_profile", "arguments": {"user": "ü1"}, "result": {"name": "Zoë", "age": 31}},
        {"id": "c_blob", "name": "get_blob", "arguments": {}, "result": "blob-" + "x" * 40}]})
    return answer


SCENARIOS = {
    "oi-lg-checkpoint": lambda out: checkpoint(out, "oi-lg-checkpoint", "oi"),
    "tl-lg-checkpoint": lambda out: checkpoint(out, "tl-lg-checkpoint", "tl"),
    "oi-lg-noargs": lambda out: noargs(out, "oi-lg-noargs", "oi"),
    "tl-lg-noargs": lambda out: noargs(out, "tl-lg-noargs", "tl"),
}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
