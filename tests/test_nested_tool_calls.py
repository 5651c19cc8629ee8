"""Tools that call tools: each inner call is placed inside the call that made it, in every reading of the same spans.

Recordings: `tests/data/nested-tool-calls/` (`tests/frameworks/record_nested_tool_calls.py`, langfuse 5.2.0, mlflow
3.17.2, openai 3.57.0). The model asks for `research(Paris)` and `research(Tokyo)` in one reply; `research` is a traced
tool that calls the traced tool `get_weather(city)` and then, for Paris, makes a model request of its own ("Summarise
weather for Paris: …"); `get_weather(Tokyo)` raises, so `research(Tokyo)` fails; the model then answers.

- `lf-nested.*`: Langfuse `@observe` (agent, tools, a generation around the inner request; the loop's requests through
  Langfuse's drop-in client), read as `otel` (the OTLP the SDK sent) and as `langfuse` (public API v1 and v2 JSON, whose
  times are in milliseconds: the failed `get_weather(Tokyo)` starts in the same millisecond as the answer request).
- `ml-stream.*`: `mlflow.openai.autolog()` with the loop in an AGENT span, tools `@mlflow.trace(span_type="TOOL")`,
  read as `mlflow` and as `otel`.
- `ml-stream-bare.otlp.jsonl`: the same loop with no span around it, read as `otel`: each request and each
  `research` call is a trace of its own, `research(Paris)`'s holding its inner request.

Before, an inner `get_weather` with no request of its call before it went to the latest request by start time:
`get_weather(Paris)` was a call of the first step, `get_weather(Tokyo)` a call of the inner summarise request (whose
text became a thought) or, read with Langfuse's milliseconds, of the answer request (the run's output then no step's
output); and the bare loop's `research(Paris)` trace was a case of its own, its inner request its input.
Now each reading lays the run out the same way: the request, a step inside `research(Paris)` with no request holding
`get_weather(Paris)`, its summarise request, a step inside `research(Tokyo)` holding `get_weather(Tokyo)`, the answer.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path, rewrite_spans
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "nested-tool-calls"

READINGS = [
    ("otel", "lf-nested.otlp.jsonl"),
    ("langfuse", "lf-nested.json"),
    ("langfuse", "lf-nested.v2.json"),
    ("mlflow", "ml-stream.mlflow.jsonl"),
    ("otel", "ml-stream.otlp.jsonl"),
    ("otel", "ml-stream-bare.otlp.jsonl"),
]

NESTED = [{"step": 1, "call": 0}, {"step": 2, "call": 0}, {"step": 3, "call": 1}]


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name.split('.')[0]}.truth.json").read_text())


def the_case(fmt: str, name: str) -> Case:
    cases = extract_path(DATA / name, fmt)
    assert all(isinstance(c, Case) for c in cases), cases
    assert len(cases) == 1, [c.input for c in cases]
    return cases[0]


def layout(case: Case) -> list[dict[str, Any]]:
    """Each step: its output, thought and calls (name, arguments, result, whether it failed)."""
    return [{"output": s.output, "thought": s.thought,
             "calls": [(c.name, c.arguments, c.result, bool(c.error)) for c in s.tool_calls or []]} for s in case.trace.steps]


@pytest.mark.parametrize(("fmt", "name"), READINGS, ids=[f"{f}-{n}" for f, n in READINGS])
def test_each_inner_call_is_inside_the_call_that_made_it(fmt: str, name: str) -> None:
    t = truth(name)
    case = the_case(fmt, name)
    paris, tokyo = t["calls"]
    (summary,) = t["nested_requests"]
    assert case.input == t["input"] and case.trace.output == t["output"]
    research_tokyo_result = case.trace.steps[0].tool_calls[1].result
    assert layout(case) == [
        {"output": None, "thought": "Let me research both.",
         "calls": [("research", {"city": "Paris"}, paris["result"], False), ("research", {"city": "Tokyo"}, research_tokyo_result, True)]},
        {"output": None, "thought": None, "calls": [("get_weather", {"city": "Paris"}, "sunny, 21 C", False)]},  # no request: inside call 0
        {"output": summary["answer"], "thought": None, "calls": []},  # the summarise request inside call 0: its answer, no call
        {"output": None, "thought": None, "calls": [("get_weather", {"city": "Tokyo"}, None, True)]},  # inside call 1
        {"output": t["output"], "thought": None, "calls": []},  # the answer, output only
    ]
    assert research_tokyo_result in (None, tokyo["result"])
    assert "weather service down" in case.trace.steps[0].tool_calls[1].error
    assert "weather service down" in case.trace.steps[3].tool_calls[0].error
    assert case.metadata["nested_steps"] == NESTED
    assert [c.name for c in case.trace.tool_calls()] == ["research", "research", "get_weather", "get_weather"]
    assert case.trace.usage.requests == t["requests"]
    assert [m.content for m in case.trace.user_messages] == [t["input"]]  # the inner request's prompt is no user message


def test_all_readings_agree() -> None:
    shapes = {(fmt, name): (layout(c := the_case(fmt, name)), c.metadata["nested_steps"]) for fmt, name in READINGS}
    lf = [v for (_, n), v in shapes.items() if n.startswith("lf-")]
    ml = [v for (_, n), v in shapes.items() if n.startswith("ml-")]
    assert all(v == lf[0] for v in lf) and all(v == ml[0] for v in ml)


def test_a_tool_trace_nobody_asked_for_stays_its_own_case(tmp_path: Path) -> None:
    """The bare loop's `research(Paris)` trace with other arguments than the model asked for is not joined."""
    def edit(span: dict[str, Any], attrs: dict[str, Any]) -> None:
        if span["name"] == "research" and "Paris" in attrs["mlflow.spanInputs"]["stringValue"]:
            attrs["mlflow.spanInputs"] = {"stringValue": json.dumps({"city": "Rome"})}

    cases = extract_path(rewrite_spans(DATA / "ml-stream-bare.otlp.jsonl", tmp_path / "bare.jsonl", edit), "otel")
    assert all(isinstance(c, Case) for c in cases) and len(cases) == 2
    main, apart = cases
    assert main.input == truth("ml-stream-bare")["input"]
    assert apart.input == truth("ml-stream-bare")["nested_requests"][0]["request"]


def test_langfuse_api_helper_reads_a_streamed_generation() -> None:
    """`tests/frameworks/langfuse_api.py` builds the stored API JSON from the OTLP: a drop-in streamed generation's
    `completion_start_time`, which the SDK writes JSON-quoted, no longer fails the SDK's `ObservationV2` model."""
    pytest.importorskip("langfuse.api")
    sys.path.insert(0, str(Path(__file__).parent / "frameworks"))
    try:
        from langfuse_api import observations_v2, trace_with_full_details
    finally:
        sys.path.pop(0)
    docs = [json.loads(line) for line in (DATA / "lf-nested.otlp.jsonl").read_text().splitlines()]
    v1 = trace_with_full_details(docs)
    assert v1 == [json.loads(line) for line in (DATA / "lf-nested.json").read_text().splitlines()]
    assert observations_v2(docs) == [json.loads(line) for line in (DATA / "lf-nested.v2.json").read_text().splitlines()]
    streamed = [o for o in v1[0]["observations"] if o["completionStartTime"] is not None]
    assert streamed and all(not o["completionStartTime"].startswith('"') for o in streamed)
