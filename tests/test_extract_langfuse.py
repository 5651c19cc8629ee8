"""Format `langfuse`: traces as Langfuse's public API returns them (`GET /api/public/traces/{id}`).

Observations are built with the installed `langfuse` SDK's API model
(`langfuse.api.ObservationV2`) and written with its own aliases, so the field
names are the API's; the trace around them carries the documented
`TraceWithFullDetails` fields.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from framework_truth import assert_truth, extract, only_case, recording_id, recordings
from tracejudge.core.records import Case

langfuse_api = pytest.importorskip("langfuse.api")

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
QUESTION = "Compare Paris and Tokyo, then cancel #W9."
ANSWER = "Paris is sunny, Tokyo rainy; #W9 was not found."


def _obs(n: int, kind: str, name: str, parent: str | None, **fields: Any) -> dict[str, Any]:
    """One observation as the API returns it, `n` seconds into the trace."""
    model = langfuse_api.ObservationV2(id=f"o{n}", trace_id="tr-1", type=kind, name=name, parent_observation_id=parent,
                                       start_time=T0 + timedelta(seconds=n), end_time=T0 + timedelta(seconds=n, milliseconds=500),
                                       project_id="p", **fields)
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def _call(cid: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _trace(**over: Any) -> dict[str, Any]:
    user = {"role": "user", "content": QUESTION}
    first = {"role": "assistant", "content": None, "tool_calls": [_call("call_p", "get_weather", {"city": "Paris"}), _call("call_t", "get_weather", {"city": "Tokyo"})]}
    second = {"role": "assistant", "content": None, "tool_calls": [_call("call_x", "cancel_order", {"order_id": "#W9"})]}
    usage = {"input": 11, "output": 4, "total": 15}
    observations = [
        _obs(0, "AGENT", "support-agent", None, input={"question": QUESTION}, output=ANSWER),
        _obs(1, "RETRIEVER", "policy-search", "o0", input="cancel", output=[{"page_content": "Cancel within 24 hours.", "metadata": {"source": "policy.md"}}]),
        _obs(2, "GENERATION", "chat", "o0", model="gpt-4o-mini", input=[user], output=first, usage_details=usage, cost_details={"total": 0.001}),
        # Parallel tools finish out of order; the model's order stands.
        _obs(4, "TOOL", "get_weather", "o0", input={"city": "Tokyo"}, output="rainy, 14 C"),
        _obs(3, "TOOL", "get_weather", "o0", input={"city": "Paris"}, output="sunny, 21 C"),
        _obs(5, "GENERATION", "chat", "o0", input=[user, first], output=second, usage_details=usage, cost_details={"total": 0.001}),
        _obs(6, "TOOL", "cancel_order", "o0", input='{"order_id": "#W9"}', output=None, level="ERROR", status_message="order #W9 not found"),
        _obs(7, "GENERATION", "chat", "o0", input=[user, first, second], output={"role": "assistant", "content": ANSWER}, usage_details=usage,
             cost_details={"total": 0.001}),
    ]
    return {"id": "tr-1", "name": "support", "timestamp": T0.isoformat(), "input": QUESTION, "output": ANSWER, "sessionId": "sess-9",
            "userId": "u-1", "tags": ["prod"], "metadata": {"team": "care"}, "latency": 7.5, "totalCost": 0.003,
            "observations": observations, **over}


def test_api_trace(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(_trace()) + "\n")
    case = only_case(path, "langfuse")
    assert_truth(case, {"input": QUESTION, "output": ANSWER, "user_turns": [QUESTION],
                        "calls": [{"name": "get_weather", "arguments": {"city": "Paris"}, "result": "sunny, 21 C", "error": None},
                                  {"name": "get_weather", "arguments": {"city": "Tokyo"}, "result": "rainy, 14 C", "error": None},
                                  {"name": "cancel_order", "arguments": {"order_id": "#W9"}, "result": None, "error": "order #W9 not found"}]})
    assert [c.id for c in case.trace.tool_calls()] == ["call_p", "call_t", "call_x"]
    assert [len(s.tool_calls) for s in case.trace.steps] == [2, 1, 0]
    usage = case.trace.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests, usage.cost_usd, usage.latency_s) == (33, 12, 3, 0.003, 7.5)
    assert [(p.content, p.source) for p in case.trace.retrieved] == [("Cancel within 24 hours.", "policy.md")]
    assert case.tags == ["prod"] and case.metadata["langfuse"]["sessionId"] == "sess-9" and case.metadata["langfuse"]["userId"] == "u-1"


def test_a_page_of_the_v2_observations_api(tmp_path: Path) -> None:
    trace = _trace()
    observations = trace["observations"]
    observations[0].update(isRootObservation=True, sessionId="sess-9", userId="u-1", latency=7.5, input={"args": [QUESTION], "kwargs": {}})
    assert set(langfuse_api.ObservationsV2Response.model_fields) == {"data", "meta"}  # the page's shape in the SDK
    path = tmp_path / "page.jsonl"
    path.write_text(json.dumps({"data": observations, "meta": {"cursor": None}}) + "\n")
    case = only_case(path, "langfuse")
    # a trace with a `sessionId` is its conversation's case, named by the session (`group_by: conversation`)
    assert case.id == "sess-9" and case.metadata["langfuse"]["traces"] == ["tr-1"] and case.input == QUESTION and case.trace.output == ANSWER
    assert only_case(path, "langfuse", group_by="trace").id == "tr-1"
    assert [(c.name, c.arguments, c.result, c.error) for c in case.trace.tool_calls()] == [
        ("get_weather", {"city": "Paris"}, "sunny, 21 C", None), ("get_weather", {"city": "Tokyo"}, "rainy, 14 C", None),
        ("cancel_order", {"order_id": "#W9"}, None, "order #W9 not found")]
    assert case.metadata["langfuse"]["sessionId"] == "sess-9" and case.trace.usage.latency_s == 7.5
    mixed = {"data": [observations[0], {**observations[2], "traceId": "other"}]}
    path.write_text(json.dumps(mixed) + "\n")
    (bad,) = extract(path, "langfuse")
    assert bad[1].kind == "invalid_input" and bad[1].field == "data" and "2 traces" in bad[1].message


def test_without_trace_io_the_root_agent_and_models_give_them(tmp_path: Path) -> None:
    trace = _trace(input=None, output=None)
    trace["observations"][0]["input"] = [{"role": "user", "content": QUESTION}]
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(trace) + "\n")
    case = only_case(path, "langfuse")
    assert case.input == QUESTION and case.trace.output == ANSWER


def test_a_span_named_like_a_requested_tool_is_its_call(tmp_path: Path) -> None:
    trace = _trace()
    for obs in trace["observations"]:
        if obs["type"] == "TOOL":
            obs["type"] = "SPAN"
    trace["observations"].append(_obs(8, "SPAN", "format-answer", "o0", input="x", output="y"))
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(trace) + "\n")
    case = only_case(path, "langfuse")
    assert [c.name for c in case.trace.tool_calls()] == ["get_weather", "get_weather", "cancel_order"]
    assert case.trace.tool_calls()[2].error == "order #W9 not found"


def test_malformed_traces_cost_one_record_each(tmp_path: Path) -> None:
    broken = _trace()
    broken["observations"][2] = {"id": "o2", "name": "chat"}
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([json.dumps(_trace()), json.dumps({"id": "t2"}), json.dumps(broken), "[1]"]) + "\n")
    results = extract(path, "langfuse")
    # (the good trace has a `sessionId`: its conversation comes after the records read alone)
    assert [isinstance(r, Case) for r in results] == [False, False, False, True]
    errors = [r[1] for r in results[:-1]]
    assert [(e.kind, e.line, e.field) for e in errors] == [("invalid_input", 2, "observations"), ("invalid_input", 3, "observations[2].type"),
                                                           ("invalid_input", 4, None)]


RECORDED = recordings("langfuse-api")


@pytest.mark.skipif(not RECORDED, reason="no Langfuse API recordings in tests/data/frameworks/langfuse-api")
@pytest.mark.parametrize("export,truth", RECORDED, ids=[recording_id(r) for r in RECORDED])
def test_recorded_trace_matches_its_truth(export: Path, truth: dict[str, Any]) -> None:
    assert_truth(only_case(export, "langfuse"), truth)


def test_a_trace_without_observations_keeps_its_own_input_and_output(tmp_path: Path) -> None:
    # Nothing inside the trace was recorded, but the trace's input/output are the case's: no steps, not an empty case.
    folder = Path(__file__).parent / "data/frameworks/langfuse-api"
    trace = json.loads((folder / "sequence.json").read_text().splitlines()[0])
    truth = json.loads((folder / "sequence.truth.json").read_text())
    trace["observations"] = []
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(trace) + "\n")
    case = only_case(path, "langfuse")
    assert (case.input, case.trace.output) == (truth["input"], truth["output"])
    assert case.trace.steps == [] and [m.content for m in case.trace.user_messages] == [truth["input"]]


def test_a_trace_with_neither_observations_nor_input_is_invalid(tmp_path: Path) -> None:
    trace = json.loads((Path(__file__).parent / "data/frameworks/langfuse-api/sequence.json").read_text().splitlines()[0])
    trace.update(observations=[], input=None, output=None)
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(trace) + "\n")
    ((cid, error),) = extract(path, "langfuse")
    assert (cid, error.kind, error.line, error.field) == (trace["id"], "invalid_input", 1, "observations") and "t.jsonl" in error.file
