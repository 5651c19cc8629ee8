"""Format `otel` on spans from real pydantic-ai agents (FunctionModel, OpenTelemetry SDK, OTLP/JSON).

Each test runs an agent, exports its spans as an OTLP/JSON file and reads it
back through format `otel`; the calls counted agree with pydantic-evals'
own reading of the same spans. Skipped only when the `peers` extra is missing.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("pydantic_evals")

import peer_agents  # noqa: E402
from pydantic_evals.evaluators import agentic  # noqa: E402
from pydantic_evals.otel.span_tree import SpanTree  # noqa: E402
from tracejudge.core.records import Case  # noqa: E402
from tracejudge.stages.extract import otel  # noqa: E402
from tracejudge.stages.score import ArgumentCorrectness, ToolCalls  # noqa: E402


def _cases(tmp_path: Path, scenario: str, *, version: int = 5, include_content: bool = True, group_by: Any = "conversation") -> tuple[list[Case], Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # instrumentation versions 2-4 are deprecated upstream, still written by deployed agents
        doc, spans = peer_agents.record(peer_agents.SCENARIOS[scenario], version=version, include_content=include_content)
    path = tmp_path / f"{scenario}-v{version}.json"
    path.write_text(json.dumps(doc))
    cases = []
    for raw in otel.read(SimpleNamespace(path=str(path), options={"group_by": group_by}, limit=None)):
        assert raw.error is None, raw.error
        cases.append(otel.adapt(raw.payload))
    return cases, spans


def _names(case: Case) -> list[str]:
    assert case.trace is not None
    return [c.name for c in case.trace.tool_calls()]


def _peer_names(spans: Any) -> list[str]:
    # pydantic-evals' own reading of the spans: what its ToolCorrectness / ArgumentCorrectness count.
    tree = SpanTree()
    tree.add_readable_spans(spans)
    return [c.name for c in agentic._extract_tool_calls(tree, include_failed=True)]


@pytest.mark.parametrize("version", [2, 3, 5])
def test_output_function_span_is_not_a_tool_call(tmp_path, version):
    [case], spans = _cases(tmp_path, "output_function", version=version)
    assert _names(case) == ["search"] == _peer_names(spans)
    assert case.trace is not None and case.trace.output is not None


def test_output_tool_call_is_not_a_tool_call(tmp_path):
    [case], spans = _cases(tmp_path, "output_tool")
    assert _names(case) == ["search"] == _peer_names(spans)


@pytest.mark.parametrize("version", [3, 5])
def test_deferred_calls_are_not_counted_but_kept_in_metadata(tmp_path, version):
    [case], spans = _cases(tmp_path, "deferred", version=version)
    assert _names(case) == ["search"] == _peer_names(spans)
    deferred = case.metadata["otel"]["deferred"]
    assert [(d["name"], d["deferral"], d["arguments"], d["step"]) for d in deferred] == [
        ("delete_account", "requires_approval", {"user_id": "u7"}, 0),
        ("refund", "ApprovalRequired", {"order_id": "o1", "amount": 5.0}, 0),
    ]
    # Version 3 marks the ApprovalRequired span ERROR; it is still a deferral, not a failed call.
    assert all(c.error is None for c in case.trace.tool_calls())


def test_a_call_without_span_keeps_its_place_in_the_model_response(tmp_path):
    # The model emitted [search, lookup_order]; lookup_order is no tool, so it ran no span.
    [case], spans = _cases(tmp_path, "unknown_tool")
    assert _names(case) == ["search", "lookup_order"]
    assert case.trace.steps[0].tool_calls[1].arguments == {"order_id": "9"}
    assert _peer_names(spans) == ["search"]  # pydantic-evals counts only spans


def test_unrecorded_arguments_cannot_pass_an_argument_check(tmp_path):
    [case], _ = _cases(tmp_path, "no_content", include_content=False)
    [call] = case.trace.tool_calls()
    assert call.arguments_missing and call.arguments == {}
    for expected in ({}, {"query": {"$absent": True}}):
        score = ArgumentCorrectness(tool_name="search", expected_arguments=expected).evaluate(case)
        assert score.value == 0.0 and "arguments not recorded" in score.reason
        case_with = Case.model_validate({**case.model_dump(), "expected_tool_calls": [{"name": "search", "arguments": expected}]})
        for mode in ("subset", "shallow", "exact"):
            got = ToolCalls(arguments=mode).evaluate(case_with)
            assert got.value == 0.0 and "arguments not recorded" in got.reason, (mode, got.reason)
        assert ToolCalls(arguments="ignore").evaluate(case_with).value == 1.0
    # A name-only expectation still pairs.
    named = Case.model_validate({**case.model_dump(), "expected_tool_calls": [{"name": "search"}]})
    assert ToolCalls().evaluate(named).value == 1.0


def test_runs_under_one_parent_span_are_one_case_each(tmp_path):
    cases, _ = _cases(tmp_path, "batch")
    assert len(cases) == 4
    assert [_names(c) for c in cases] == [["search", "search"]] * 4
    assert [c.input for c in cases] == [f"question {i}" for i in range(4)]
    assert len({c.metadata["otel"]["traces"][0] for c in cases}) == 1  # one trace id, four cases
    # group_by: trace keeps the trace whole.
    [whole], _ = _cases(tmp_path, "batch", group_by="trace")
    assert len(_names(whole)) == 8


def test_runs_without_conversation_ids_split_by_agent_run(tmp_path):
    # An instrumentation that writes no conversation id: one trace, four invoke_agent roots under one parent.
    doc, _ = peer_agents.record(peer_agents.SCENARIOS["batch"])
    for span in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["attributes"] = [a for a in span["attributes"] if a["key"] != "gen_ai.conversation.id"]
    path = tmp_path / "no-ids.json"
    path.write_text(json.dumps(doc))

    def read(group_by: str) -> list[Case]:
        return [otel.adapt(r.payload) for r in otel.read(SimpleNamespace(path=str(path), options={"group_by": group_by}, limit=None))]

    runs = read("run")
    assert [c.input for c in runs] == [f"question {i}" for i in range(4)]
    assert [_names(c) for c in runs] == [["search", "search"]] * 4
    assert all(c.id.startswith(runs[0].metadata["otel"]["traces"][0] + ":") for c in runs)
    [one] = read("conversation")  # nothing says these are separate conversations
    assert len(_names(one)) == 8
