"""The OpenAI Agents SDK's streamed runs and handoffs read as its plain runs do, in both the SDK's export and OpenInference's.

A streamed run (`Runner.run_streamed`) records each model answer as the Responses API response it was streamed as
(`generation.output`, and OpenInference's `output.value`), not as chat messages; OpenInference records a handoff as a
`TOOL` span of its own beside the model's `transfer_to_<agent>` call. Recorded live: the real SDK (chat-completions
model) against the scripted loopback server (`frameworks/fake_openai.py`), in a subprocess (instrumentors patch
process-wide), once per recording; every variant must give the same case.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from framework_truth import extract
import _forkserver

pytest.importorskip("agents")
pytest.importorskip("openinference.instrumentation.openai_agents")

FRAMEWORKS = Path(__file__).resolve().parent / "frameworks"

RECORD = r"""
import asyncio, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import tasks as T
from tasks import Reply, Task
from fake_openai import FakeOpenAI
from common import MODEL, otel_provider, write_jsonl, write_otlp
import run_agents as RA

T.TASKS["handoff"] = Task("handoff", ("Please route me to billing and check the weather in Paris.",),
    ((Reply(calls=(("transfer_to_billing", {}),)), Reply(calls=(("get_weather", {"city": "Paris"}),)),
      Reply("Billing here: it is sunny in Paris.")),), ("get_weather",))
T.TASKS["chat"] = Task("chat", ("Say hello, no tools.",), ((Reply("Hello!"),),), ("get_weather",))
mode, out = sys.argv[2], Path(sys.argv[3])

async def run(name, stream):
    from agents import Agent, Runner, function_tool
    if name == "handoff":
        billing = Agent(name="Billing", instructions="Bill.", tools=[function_tool(T.TOOLS["get_weather"], strict_mode=False)], model=MODEL)
        agent = Agent(name="Triage", instructions="Route.", handoffs=[billing], model=MODEL)
    else:
        agent = Agent(name="Assistant", instructions="Help.", tools=[function_tool(T.TOOLS["get_weather"], strict_mode=False)], model=MODEL)
    text = T.TASKS[name].turns[0]
    if stream:
        result = Runner.run_streamed(agent, text)
        async for _ in result.stream_events():
            pass
        return result
    return await Runner.run(agent, text)

with FakeOpenAI() as fake:
    RA._setup(fake)
    stream = mode.endswith("-stream")
    # One event loop for both runs: the SDK's default client is bound to the loop it first ran on.
    if mode.startswith("export"):
        from agents import add_trace_processor
        collector = RA.Collector()
        add_trace_processor(collector)

        async def both():
            for name in ("handoff", "chat"):
                await run(name, stream)
        asyncio.run(both())
        write_jsonl(out / "all.jsonl", collector.done)
    else:
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
        provider = otel_provider(fake, "openai-agents")
        OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)

        async def both():
            for name in ("handoff", "chat"):
                await run(name, stream)
                write_otlp(provider, fake, out / f"{name}.jsonl")
        asyncio.run(both())
"""

MODES = {"export": "openai-agents", "export-stream": "openai-agents", "oi": "otel", "oi-stream": "otel"}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("agents-streamed")
    script = root / "record.py"
    script.write_text(RECORD)
    out = {}
    for mode in MODES:
        folder = root / mode
        done = _forkserver.run([sys.executable, str(script), str(FRAMEWORKS), mode, str(folder)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        out[mode] = folder / "all.jsonl" if mode.startswith("export") else folder
    return out


def _cases(path: Path, fmt: str) -> dict[str, Any]:
    cases = extract(path, fmt)
    return {c.input: c for c in cases}


@pytest.mark.parametrize("mode", list(MODES))
def test_streamed_runs_and_handoffs_read_as_the_plain_run(recorded: dict[str, Path], mode: str) -> None:
    cases = _cases(recorded[mode], MODES[mode])
    handoff = cases["Please route me to billing and check the weather in Paris."]
    calls = [(c.name, c.arguments) for c in handoff.trace.tool_calls()]
    # One handoff call (the model's), not none (the streamed answer unread) nor two (OpenInference's handoff span too).
    assert calls == [("transfer_to_billing", {}), ("get_weather", {"city": "Paris"})], (mode, calls)
    assert handoff.trace.tool_calls()[1].result == "sunny, 21 C"
    assert handoff.trace.output == "Billing here: it is sunny in Paris.", mode
    chat = cases["Say hello, no tools."]
    assert chat.trace.output == "Hello!" and [s.output for s in chat.trace.steps] == ["Hello!"], mode
    assert chat.trace.usage.requests == 1
    plain = _cases(recorded[mode.removesuffix("-stream")], MODES[mode])
    for text, case in cases.items():  # the streamed recording gives the plain one's case, step for step
        other = plain[text]
        assert [(s.output, [(c.name, c.arguments, c.result) for c in s.tool_calls]) for s in case.trace.steps] == \
               [(s.output, [(c.name, c.arguments, c.result) for c in s.tool_calls]) for s in other.trace.steps], (mode, text)
