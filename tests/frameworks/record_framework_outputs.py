"""Record the smolagents and LangGraph runs behind `tests/test_framework_outputs.py`, with the installed libraries.

    python tests/frameworks/record_framework_outputs.py OUTDIR [SCENARIO ...]

writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON, one export request a line), for smolagents also
`OUTDIR/mem-<scenario>.jsonl` (the same run's `agent.memory.get_full_steps()`, format `smolagents`), and
`OUTDIR/<scenario>.truth.json`: what the application itself sent and got (what `run` / `invoke` returned, what
each tool was called with and returned or raised, the errors the framework's memory kept). Each scenario runs
in its own subprocess (instrumentors patch libraries process-wide) against the project's scripted loopback
OpenAI server (`record_oi_faults.ScriptedOpenAI`: a fixed reply per request; no network). Scenarios:

- `oi-smol-code-fail`: a smolagents `CodeAgent` under openinference-instrumentation-smolagents; step 2's code
  `x = 21 / 0` raises, step 3 recovers, step 4 answers.
- `oi-smol-dict-answer`: a `CodeAgent` whose only step is `final_answer({"city": "Paris", "temp_c": 21})`.
- `oi-smol-parallel-fail`: a `ToolCallingAgent` (`max_tool_threads=2`) whose model calls `get_weather` for
  Paris (`c1`) and Atlantis (`c2`) in one message; Atlantis raises `KeyError`.
- `oi-lg-command`, `tl-lg-command`: `create_react_agent` whose tool `set_city` returns
  `Command(update={"messages": [ToolMessage("city set to Paris", tool_call_id=…)]})`; OpenInference / OpenLLMetry.
- `oi-lg-return-direct`, `tl-lg-return-direct`: a tool made with `return_direct=True`: the graph ends after it.
- `oi-lg-structured`, `tl-lg-structured`: `create_react_agent(..., response_format=Report)`: a last request
  fills `structured_response`.
"""

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, otel_provider, record_each_in_subprocess, write_jsonl, write_otlp, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

WEATHER = {"Paris": "sunny, 21 C", "Tokyo": "rainy, 14 C"}
ASK = "What is the weather in Paris, in F?"


def _text(t: str) -> dict[str, Any]:
    return {"role": "assistant", "content": t}


class _Log:
    """What each tool was called with and returned or raised, in call order (the application's own record)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def run(self, name: str, args: dict[str, Any], fn: Any) -> Any:
        entry: dict[str, Any] = {"name": name, "arguments": args}
        self.calls.append(entry)
        try:
            entry["result"] = fn()
        except Exception as exc:
            entry["raised"] = f"{type(exc).__name__}: {exc}"
            raise
        return entry["result"]


# --- smolagents -----------------------------------------------------------------------------------------------
SMOL: dict[str, tuple[str, list[Any]]] = {
    "oi-smol-code-fail": ("code", [_text('Thought: get weather.\n<code>\nw = get_weather(city="Paris")\nprint(w)\n</code>'),
                                   _text("Thought: convert.\n<code>\nx = 21 / 0\nprint(x)\n</code>"),
                                   _text("Thought: fix it.\n<code>\nprint(21 * 9 / 5 + 32)\n</code>"),
                                   _text('Thought: done.\n<code>\nfinal_answer("Sunny, 69.8 F")\n</code>')]),
    "oi-smol-dict-answer": ("code", [_text('Thought: answer.\n<code>\nfinal_answer({"city": "Paris", "temp_c": 21})\n</code>')]),
    "oi-smol-parallel-fail": ("tools", [{"role": "assistant", "content": None,
                                         "tool_calls": [call("c1", "get_weather", {"city": "Paris"}), call("c2", "get_weather", {"city": "Atlantis"})]},
                                        {"role": "assistant", "content": None,
                                         "tool_calls": [call("c3", "final_answer", {"answer": "Paris sunny; Atlantis unknown"})]}]),
}


def smolagents_run(out: Path, name: str) -> Any:
    """One smolagents scenario of `SMOL`: OTLP, memory steps and truth written to `out`; returns what `run` returned."""
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor
    from smolagents import CodeAgent, OpenAIServerModel, ToolCallingAgent, tool

    kind, replies = SMOL[name]
    log = _Log()

    def get_weather(city: str) -> str:
        """Weather in a city.

        Args:
            city: the city
        """
        return log.run("get_weather", {"city": city}, lambda: WEATHER[city])

    with ScriptedOpenAI(replies) as fake:
        provider = otel_provider(fake, "smolagents")
        SmolagentsInstrumentor().instrument(tracer_provider=provider)
        model = OpenAIServerModel(model_id=MODEL, api_base=fake.base_url, api_key="sk-fake")
        if kind == "code":
            agent: Any = CodeAgent(tools=[tool(get_weather)], model=model, max_steps=6, verbosity_level=0)
        else:
            agent = ToolCallingAgent(tools=[tool(get_weather)], model=model, max_steps=4, verbosity_level=0, max_tool_threads=2)
        returned = agent.run(ASK)
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
        requests = fake.n
    steps = agent.memory.get_full_steps()
    write_jsonl(out / f"mem-{name}.jsonl", [{"id": name, "steps": steps}])
    errors = [{"step": s.get("step_number"), **s["error"]} for s in steps if isinstance(s.get("error"), dict)]
    write_truth(out, name, {"returned": returned, "returned_type": type(returned).__name__, "tool_runs": log.calls,
                            "step_errors": errors, "requests": requests, "asked": ASK})
    return returned


# --- LangGraph ------------------------------------------------------------------------------------------------
LG: dict[str, list[Any]] = {
    "command": [{"role": "assistant", "content": None, "tool_calls": [call("c1", "set_city", {"city": "Paris"}), call("c2", "get_weather", {"city": "Paris"})]},
                _text("City set; sunny.")],
    "return-direct": [{"role": "assistant", "content": None, "tool_calls": [call("c1", "lookup_answer", {"q": "capital"})]}],
    "structured": [{"role": "assistant", "content": None, "tool_calls": [call("c1", "get_weather", {"city": "Paris"})]},
                   _text("It is sunny in Paris, 21 C."),
                   _text('{"city": "Paris", "temp_c": 21}')],
}
LG_ASK = {"command": "Set Paris and get weather", "return-direct": "Capital of France?", "structured": "Weather report for Paris"}


def _instrumentor(kind: str) -> Any:
    if kind == "oi":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        return LangChainInstrumentor()
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    return LangchainInstrumentor()


def _lg_tools(scenario: str, log: _Log) -> list[Any]:
    # (no `from __future__ import annotations` in this module: LangChain reads these tools' annotations at definition)
    from typing import Annotated

    from langchain_core.messages import ToolMessage
    from langchain_core.tools import InjectedToolCallId, tool
    from langgraph.types import Command

    @tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        return log.run("get_weather", {"city": city}, lambda: WEATHER[city])

    @tool
    def set_city(city: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
        """Remember the city."""
        return log.run("set_city", {"city": city},
                       lambda: Command(update={"messages": [ToolMessage(f"city set to {city}", tool_call_id=tool_call_id)]}))

    @tool(return_direct=True)
    def lookup_answer(q: str) -> str:
        """Look up the final answer."""
        return log.run("lookup_answer", {"q": q}, lambda: "The capital of France is Paris.")

    return {"command": [set_city, get_weather], "return-direct": [lookup_answer], "structured": [get_weather]}[scenario]


def langgraph_run(out: Path, name: str) -> Any:
    """One LangGraph scenario (`<oi|tl>-lg-<scenario>`): OTLP and truth written to `out`; returns the last message's content."""
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from pydantic import BaseModel

    class Report(BaseModel):
        city: str
        temp_c: int

    kind, scenario = name.split("-", 1)[0], name.split("-", 2)[2]
    log = _Log()
    with ScriptedOpenAI(LG[scenario]) as fake:
        provider = otel_provider(fake, "langgraph")
        _instrumentor(kind).instrument(tracer_provider=provider)
        model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        agent = create_react_agent(model, _lg_tools(scenario, log), **({"response_format": Report} if scenario == "structured" else {}))
        state = agent.invoke({"messages": [{"role": "user", "content": LG_ASK[scenario]}]})
        write_otlp(provider, fake, out / f"{name}.jsonl")
        provider.shutdown()
        requests = fake.n
    structured = state.get("structured_response")
    got = [{"tool_call_id": m.tool_call_id, "content": m.content} for m in state["messages"] if m.type == "tool"]
    write_truth(out, name, {"asked": LG_ASK[scenario], "last_message": {"type": state["messages"][-1].type, "content": state["messages"][-1].content},
                            "structured_response": structured.model_dump() if structured is not None else None,
                            "tool_messages": got, "tool_runs": [{k: v for k, v in c.items() if k != "result"} for c in log.calls],
                            "requests": requests})
    return state["messages"][-1].content


def _scenario(name: str) -> Any:
    return (lambda out: smolagents_run(out, name)) if name in SMOL else (lambda out: langgraph_run(out, name))


SCENARIOS = {n: _scenario(n) for n in [*SMOL, *(f"{k}-lg-{s}" for s in LG for k in ("oi", "tl"))]}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
