"""Format `otel` on OpenInference / Traceloop traces recorded now by the installed libraries: what the frameworks recorded, read as they recorded it.

Each scenario of `tests/frameworks/record_oi_faults.py` runs in its own subprocess (instrumentors patch
libraries process-wide) against a scripted loopback OpenAI server; all start together when the module's
first test needs them. A scenario whose libraries are not installed is skipped.

- A Responses API reasoning summary is not the answer (nor a step's output).
- A tool exception LangGraph lets propagate is the exception's type and message, not its repr and traceback.
- A LangChain call whose arguments were not JSON (`invalid_tool_calls`) is kept, its raw arguments invalid.
- A smolagents managed agent's result is the text the manager's model got, not its sub-agent's observation.
- smolagents' closing prompt when the steps run out is not the user speaking again.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import installed
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record
from tracejudge.stages.extract.otel.conventions import group_views
import _forkserver

RECORD = Path(__file__).parent / "frameworks" / "record_oi_faults.py"
NEEDS = {
    "oi-responses-loop": ("openai", "openinference.instrumentation.openai"),
    "tl-responses-loop": ("openai", "opentelemetry.instrumentation.openai"),
    "oi-chat-reasoning": ("openai", "openinference.instrumentation.openai"),
    "oi-agents-responses": ("agents", "openinference.instrumentation.openai_agents"),
    "oi-langgraph-raises": ("langgraph.prebuilt", "langchain_openai", "openinference.instrumentation.langchain"),
    "oi-langgraph-bad-args": ("langgraph.prebuilt", "langchain_openai", "openinference.instrumentation.langchain"),
    "tl-langgraph-bad-args": ("langgraph.prebuilt", "langchain_openai", "opentelemetry.instrumentation.langchain"),
    "oi-smolagents-managed": ("smolagents", "openinference.instrumentation.smolagents"),
    "oi-smolagents-max-steps": ("smolagents", "openinference.instrumentation.smolagents"),
}


@pytest.fixture(scope="module")
def recordings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, subprocess.Popen[str]]:
    """Every installed scenario's recording, started at once: scenario -> its process (writing `<dir>/<scenario>.jsonl`)."""
    out = tmp_path_factory.mktemp("oi-faults")
    return {name: _forkserver.popen([sys.executable, str(RECORD), name, str(out / f"{name}.jsonl")], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
            for name, mods in NEEDS.items() if all(installed(m) for m in mods)}


def recorded(recordings: dict[str, subprocess.Popen[str]], name: str) -> tuple[Path, Any]:
    """(the OTLP/JSON export, the framework's own answer) of scenario `name`; skips when its libraries are missing."""
    for module in NEEDS[name]:
        pytest.importorskip(module)
    proc = recordings[name]
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    return Path(proc.args[-1]), json.loads(stdout.strip().splitlines()[-1])["answer"]


def extract_one(path: Path) -> Case:
    fmt = registry.format_for("otel")
    ds = DatasetConfig(path=path, format="otel", options={})
    ctx = fmt.prepare(ds)
    cases = [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]
    assert len(cases) == 1 and isinstance(cases[0], Case), cases
    return cases[0]


def model_views(path: Path) -> list[Any]:
    """The `View` of every model span of the one conversation in `path`, in start order."""
    fmt = registry.format_for("otel")
    (raw,) = list(fmt.read(DatasetConfig(path=path, format="otel", options={})))
    views = group_views(raw.payload)
    return [views[s.span_id] for s in raw.payload.spans if views[s.span_id].role == "model"]


@pytest.mark.parametrize("name", ["oi-responses-loop", "oi-agents-responses"])
def test_reasoning_summary_is_not_the_answer(recordings, name):
    path, answer = recorded(recordings, name)
    case = extract_one(path)
    assert answer == "Paris is sunny; Tokyo is rainy."
    assert case.trace.output == answer
    assert [s.output for s in case.trace.steps] == [None, answer]
    assert case.metadata["otel"]["turns"][0]["intermediate_texts"] == []
    # the summaries stay on the requests' outputs as reasoning, for a step's thought
    from tracejudge.stages.extract.otel.messages import reasoning_text

    assert [reasoning_text(v.outputs or []) for v in model_views(path)] == ["Need both cities; call the tool twice.", "Both results in; summarise."]


@pytest.mark.parametrize("name", ["oi-responses-loop", "tl-responses-loop"])
def test_reasoning_summary_is_the_steps_thought(recordings, name):
    # (OpenLLMetry writes the summary as the JSON text of its parts, `[{"text": …, "type": "summary_text"}]`: read as its text.)
    path, _ = recorded(recordings, name)
    steps = extract_one(path).trace.steps
    assert [(s.thought, s.output) for s in steps] == [("Need both cities; call the tool twice.", None),
                                                      ("Both results in; summarise.", "Paris is sunny; Tokyo is rainy.")]


def test_chat_reasoning_content_is_the_steps_thought(recordings):
    # The instrumentation flattens a message's content and calls only: `reasoning_content` was in `output.value` alone.
    path, answer = recorded(recordings, "oi-chat-reasoning")
    steps = extract_one(path).trace.steps
    assert answer == "Sunny, 21 C."
    assert [(s.thought, s.output) for s in steps] == [("The user wants Paris weather; call the tool.", None), ("Tool said sunny.", answer)]


def test_propagated_tool_exception_is_its_type_and_message(recordings):
    path, answer = recorded(recordings, "oi-langgraph-raises")
    (call,) = extract_one(path).trace.tool_calls()
    assert answer == "ValueError: order #W5 not found"  # what the application caught
    assert (call.name, call.arguments, call.error) == ("cancel_order", {"order_id": "#W5"}, "ValueError: order #W5 not found")


def test_call_with_arguments_that_are_not_json_is_kept_invalid(recordings):
    path, _ = recorded(recordings, "oi-langgraph-bad-args")
    (call,) = extract_one(path).trace.tool_calls()
    assert (call.id, call.name, call.arguments, call.arguments_invalid, call.result) == ("call_8", "get_weather", '{"city": "Par', True, None)


def test_traceloop_invalid_call_comes_from_the_chain_that_recorded_its_response(recordings):
    """OpenLLMetry writes no part for the call on the model span; the enclosing chain's AIMessage (same response id) has it."""
    from tracejudge.stages.extract.otel.conventions import traceloop

    path, _ = recorded(recordings, "tl-langgraph-bad-args")
    fmt = registry.format_for("otel")
    (raw,) = list(fmt.read(DatasetConfig(path=path, format="otel", options={})))
    views = group_views(raw.payload)
    traceloop.invalid_calls(raw.payload.spans, views)
    parts = [p for v in views.values() if v.role == "model" for m in v.outputs or [] for p in m["parts"] if p["type"] == "tool_call"]
    assert [(p["id"], p["name"], p["arguments"]) for p in parts] == [("call_8", "get_weather", '{"city": "Par')]
    traceloop.invalid_calls(raw.payload.spans, views)  # a second pass adds nothing
    assert sum(1 for v in views.values() if v.role == "model" for m in v.outputs or [] for p in m["parts"] if p["type"] == "tool_call") == 1


def test_traceloop_invalid_call_is_in_the_case(recordings):
    path, _ = recorded(recordings, "tl-langgraph-bad-args")
    (call,) = extract_one(path).trace.tool_calls()
    assert (call.name, call.arguments, call.arguments_invalid) == ("get_weather", '{"city": "Par', True)


def test_managed_agent_result_is_what_the_manager_got(recordings):
    path, answer = recorded(recordings, "oi-smolagents-managed")
    case = extract_one(path)
    calls = {c.name: c for c in case.trace.tool_calls()}
    assert calls["weather_agent"].result == "Here is the final answer from your managed agent 'weather_agent':\nParis: sunny, 21 C"
    assert calls["get_weather"].result == "sunny, 21 C"  # the sub-agent's own call keeps its tool span's result
    assert case.trace.output == answer


def test_closing_prompt_after_the_last_step_is_not_a_user_turn(recordings):
    path, answer = recorded(recordings, "oi-smolagents-max-steps")
    case = extract_one(path)
    assert [m.content for m in case.trace.user_messages] == ["Keep checking the weather in Paris."]
    assert case.turns == []
    assert case.trace.output == answer == "Final: Paris is sunny."
