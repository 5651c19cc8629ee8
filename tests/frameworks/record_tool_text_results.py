"""Record the runs behind `tests/test_tool_text_results.py`, with the installed libraries.

    python tests/frameworks/record_tool_text_results.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/tool-text-results)

Tools whose results are text that reads as a JSON scalar (`"42"`, `"true"`, `"-1.5"`, `"\\"ok\\""`), beside a tool
that returned the number 42 and one that returned a mapping, under each OpenTelemetry instrumentation that records
them, against the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`; no network). Each scenario
runs in a subprocess of its own (instrumentors patch libraries process-wide) and writes `<scenario>.jsonl` (OTLP/JSON):

- `loop-oi`, `loop-tl`, `loop-v2`: a plain OpenAI Chat Completions loop (OpenInference's, OpenLLMetry's and
  OpenTelemetry's `openai-v2` instrumentor, the last with content on spans): no tool span, the results are the tool
  messages the application sent, always text (`TEXTS`, and `MAPPING` as `json.dumps`);
- `langgraph-oi`, `langgraph-tl`: LangGraph's `create_react_agent` (ToolNode) under OpenInference's and OpenLLMetry's
  LangChain instrumentors: tool spans, one a tool (`TOOLS`: the texts, the number, the mapping);
- `agents-oi`: the OpenAI Agents SDK under OpenInference (`oi-agents.jsonl`) and its own export
  (`export-agents.jsonl`, format `openai-agents`), the same tools as `function_tool`s.

`tools.truth.json` says what each tool returned, as Python's `repr`.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, agents_recording, otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI, call  # noqa: E402

OUT = HERE.parent / "data" / "tool-text-results"
TEXTS = {"t_int": "42", "t_bool": "true", "t_float": "-1.5", "t_quoted": '"ok"'}
NUMBER, MAPPING = 42, {"n": 42}
TOOLS: dict[str, Any] = {**TEXTS, "number": NUMBER, "mapping": MAPPING}  # tool name -> what it returns


def _replies() -> list[dict[str, Any]]:
    calls = [call(f"call_{name}", name, {"q": name}) for name in TOOLS]
    return [{"role": "assistant", "content": None, "tool_calls": calls}, {"role": "assistant", "content": "done"}]


def loop(which: str, out: Path) -> Any:
    if which == "v2":
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    from openai import OpenAI

    with ScriptedOpenAI(_replies()) as fake:
        provider = otel_provider(fake, f"loop-{which}")
        if which == "oi":
            from openinference.instrumentation.openai import OpenAIInstrumentor
        elif which == "tl":
            from opentelemetry.instrumentation.openai import OpenAIInstrumentor  # type: ignore[no-redef]
        else:
            from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor  # type: ignore[no-redef]
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        client = OpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}
                 for n in TOOLS]
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Fetch everything."}]
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=tools).choices[0].message
        messages.append(reply.model_dump(exclude_none=True))
        for c in reply.tool_calls or []:
            value = TOOLS[c.function.name]
            messages.append({"role": "tool", "tool_call_id": c.id, "content": value if isinstance(value, str) else json.dumps(value)})
        answer = client.chat.completions.create(model=MODEL, messages=messages, tools=tools).choices[0].message.content
        write_otlp(provider, fake, out / f"loop-{which}.jsonl")
    return answer


def _returning(name: str, value: Any) -> Any:
    def tool(q: str) -> Any:
        return value
    tool.__name__ = name
    tool.__doc__ = f"Return {value!r}."
    tool.__annotations__ = {"q": str, "return": type(value)}
    return tool


def langgraph(which: str, out: Path) -> Any:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import ToolNode, create_react_agent

    with ScriptedOpenAI(_replies()) as fake:
        provider = otel_provider(fake, f"langgraph-{which}")
        if which == "oi":
            from openinference.instrumentation.langchain import LangChainInstrumentor

            LangChainInstrumentor().instrument(tracer_provider=provider)
        else:
            from opentelemetry.instrumentation.langchain import LangchainInstrumentor

            LangchainInstrumentor().instrument(tracer_provider=provider)
        model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        agent = create_react_agent(model, ToolNode([tool(_returning(n, v)) for n, v in TOOLS.items()]), prompt="Help.")
        answer = agent.invoke({"messages": [{"role": "user", "content": "Fetch everything."}]})["messages"][-1].content
        write_otlp(provider, fake, out / f"langgraph-{which}.jsonl")
    return answer


def agents(out: Path) -> Any:
    from agents import Agent, Runner, function_tool

    with ScriptedOpenAI(_replies()) as fake, agents_recording(fake, out, "agents"):
        agent = Agent(name="Fetcher", instructions="Help.", tools=[function_tool(_returning(n, v)) for n, v in TOOLS.items()])
        return asyncio.run(Runner.run(agent, "Fetch everything.")).final_output


SCENARIOS = {
    "loop-oi": lambda out: loop("oi", out),
    "loop-tl": lambda out: loop("tl", out),
    "loop-v2": lambda out: loop("v2", out),
    "langgraph-oi": lambda out: langgraph("oi", out),
    "langgraph-tl": lambda out: langgraph("tl", out),
    "agents-oi": agents,
}


def main(argv: list[str]) -> int:
    """Record the scenarios named in `argv[1:]` (default: all) into `argv[0]`, each in a subprocess; returns how many failed."""
    out = Path(argv[0]) if argv else OUT
    if os.environ.get("RECORD_IN_PROCESS") != "1":
        write_truth(out, "tools", {"returned": {n: repr(v) for n, v in TOOLS.items()}})
    return record_each_in_subprocess(__file__, [str(out), *argv[1:]], SCENARIOS)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
