"""Cases scored on their decoded msgspec structs (`stages.extract.struct_score`) give what the pydantic `Case` gives.

Every metric class the struct path allows, each with several parameter sets, scores real lines (the
200 τ-bench airline runs and the τ²-bench simulations as native lines, the example
cases) and lines that reach the records' other fields (usage, retrieval, user messages, failed
calls, matchers), once on the structs and once on the `Case`: every `Score` must be the same
(value, passed, reason, details, fields set), and so must the rendered result (line body, JUnit
ends, cells). Then a worker's whole chunk (`CpuJob.run`, `CpuJob.arun`) with the struct path and
without it, and each condition that sends a case to the general path.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.engine import runner
from tracejudge.engine.executors.base import CpuJob, Extracted
from tracejudge.engine.rendered import Rendered, render
from tracejudge.stages.extract import fast_decode, struct_score
from tracejudge.stages.extract.native import adapt
from tracejudge.stages.load import RawRecord
from tracejudge.stages.score import score_case
from tracejudge.stages.score.tool_calls import ToolCalls

from helpers import DATA
from test_fast_decode import _JSON, _PLACES, _base

WRITES = ["get_*", "search_*", "list_*", "calculate", "think", "transfer_*"]
SPECS = [
    {"type": "ToolCalls", "name": "tc-exact", "arguments": "exact", "exclude_tools": WRITES, "include_failed": False},
    {"type": "ToolCalls", "name": "tc-subset"},
    {"type": "ToolCalls", "name": "tc-shallow-reuse", "arguments": "shallow", "pairing": "reuse", "score": "recall"},
    {"type": "ToolCalls", "name": "tc-ignore-order", "arguments": "ignore", "order": "in_order", "score": "precision", "include_tools": ["*_reservation*", "search"]},
    {"type": "TrajectoryMatch", "name": "tm-in-order"},
    {"type": "TrajectoryMatch", "name": "tm-exact", "order": "exact", "include_failed": True},
    {"type": "TrajectoryMatch", "name": "tm-any-min", "order": "any_order", "score": "min", "exclude_tools": ["think"]},
    {"type": "TrajectoryMatch", "name": "tm-given", "expected_trajectory": ["get_user_details", "get_reservation_details"], "score": "recall"},
    {"type": "ToolCorrectness", "name": "tcor-extra", "allow_extra": True},
    {"type": "ToolCorrectness", "name": "tcor-strict", "include_failed": True},
    {"type": "ToolCorrectness", "name": "tcor-given", "expected_tools": ["search", "get_user_details"], "exclude_tools": ["think"]},
    {"type": "MaxToolCalls", "name": "mtc-20", "max_calls": 20},
    {"type": "MaxToolCalls", "name": "mtc-3-nofail", "max_calls": 3, "include_failed": False, "exclude_tools": ["think"]},
    {"type": "MaxModelRequests", "name": "mmr-30", "max_requests": 30},
    {"type": "MaxModelRequests", "name": "mmr-2", "max_requests": 2},
    {"type": "Contains", "name": "c-reservation", "value": "reservation"},
    {"type": "Contains", "name": "c-expected", "case_sensitive": True},
    {"type": "Contains", "name": "c-all", "value": ["reservation", "cancel", "refund"], "require": "all", "threshold": 0.5},
    {"type": "Contains", "name": "c-expected-all", "require": "all"},
    {"type": "ExactMatch", "name": "em"},
    {"type": "ExactMatch", "name": "em-strict", "case_sensitive": True, "strip": False, "threshold": 0.5},
    {"type": "ExactMatch", "name": "em-json", "expected": {"a": 1}},
    {"type": "Regex", "name": "re-search", "pattern": r"[A-Z0-9]{6}"},
    {"type": "Regex", "name": "re-full", "pattern": r"(?s).*\.", "full_match": True},
    {"type": "JsonSchema", "name": "js", "schema": {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}}},
    {"type": "Latency", "name": "lat"}, {"type": "Latency", "name": "lat-1s", "max_seconds": 1},
    {"type": "Cost", "name": "cost"}, {"type": "Cost", "name": "cost-cap", "max_usd": 0.001},
    {"type": "TokenUsage", "name": "tok"}, {"type": "TokenUsage", "name": "tok-cap", "max_tokens": 50},
    {"type": "ArgumentCorrectness", "name": "ac-first", "tool_name": "get_reservation_details", "expected_arguments": {"reservation_id": "Z7GOZK"}},
    {"type": "ArgumentCorrectness", "name": "ac-last-exact", "tool_name": "get_user_details", "occurrence": "last", "match_mode": "exact"},
    {"type": "ArgumentCorrectness", "name": "ac-index", "tool_name": "search", "occurrence": 1, "include_failed": True, "expected_arguments": {"q": "fox"}},
    {"type": "ArgumentCorrectness", "name": "ac-none", "tool_name": "think", "occurrence": "middle"},
    {"type": "ToolCallAccuracy", "name": "tca"},
    {"type": "ToolCallAccuracy", "name": "tca-order-pen", "require_order": True, "penalize_unexpected": True, "include_failed": False},
    {"type": "RetrievalRecall", "name": "rr"}, {"type": "RetrievalPrecision", "name": "rp"}, {"type": "RetrievalMRR", "name": "mrr"},
    {"type": "DeepEvalToolCorrectness", "name": "de"},
    {"type": "DeepEvalToolCorrectness", "name": "de-params-order", "evaluation_params": ["input_parameters", "output"], "should_consider_ordering": True},
    {"type": "DeepEvalToolCorrectness", "name": "de-exact-strict", "evaluation_params": ["input_parameters"], "should_exact_match": True, "strict_mode": True},
]
METRICS = [registry.build_metric(s) for s in SPECS]
KEYS = [m.key for m in METRICS]

# Lines that reach what the real data leaves empty: usage, retrieval, user messages, failed calls, matchers,
# JSON outputs, a case's own metric specs (one not valid), no expectation, odd text.
EXTRA = [
    b'{"id":"r1","input":"q","expected_output":{"a":1},"expected_passages":["p1","The quick brown fox jumps"],'
    b'"expected_tool_calls":[{"name":"search","arguments":{"q":"fox"}},{"name":"fetch","arguments":null,"result":"doc"},'
    b'{"name":"search","arguments":{"q":{"$regex":"^f"}}}],"trace":{"steps":[{"thought":"t","tool_calls":[{"id":"c1","name":"search",'
    b'"arguments":{"q":"fox","k":3},"result":["a"]},{"name":"fetch","arguments":{},"error":"boom"}]},{"tool_calls":[{"name":"fetch",'
    b'"arguments":{"id":"p1"},"result":"doc"},{"name":"search","arguments":{"q":"fun"},"arguments_missing":true}]},{"output":"x"}],'
    b'"output":"{\\"a\\": 1.0}","usage":{"input_tokens":100,"output_tokens":20,"requests":3,"cost_usd":0.002,"latency_s":1.5},'
    b'"retrieved":[{"id":"p1","content":"x"},{"content":"the  quick brown FOX jumps high","score":0.3},{"content":"noise","source":"s"}],'
    b'"user_messages":[{"step":0,"content":"q"},{"step":3,"content":"###STOP###"}]}}',
    b'{"id":"r2","expected_output":"Done.","expected_tool_calls":[],"expected_passages":[],"trace":{"steps":[{"tool_calls":'
    b'[{"name":"think","arguments":{"thought":"\xc3\xa9\\u2028"}}]}],"output":"  done.  ","usage":{"output_tokens":7},"retrieved":[{"content":"a b c"}]}}',
    b'{"id":"r3","expected_tool_calls":[{"name":"search","arguments":{"q":{"$any_of":["a","b"]},"n":{"$approx":1,"tol":0.5}}}],'
    b'"trace":{"steps":[{"tool_calls":[{"name":"search","arguments":{"q":"b","n":1.2}},{"name":"search","arguments":{"q":"c","n":1}}]}],'
    b'"output":null,"usage":{"requests":null,"latency_s":0.2}}}',
    b'{"id":"r4","tags":["a","\xe2\x9c\x88"],"metadata":{"k":[1,{"n":null}],"f":0.1},"trace":{}}',
    b'{"id":"r5","expected_passages":["x"],"trace":{"steps":[{},{"output":"Your reservation ABC123 is confirmed."}],"output":"Reservation ABC123 confirmed."}}',
    b'{"id":"r6","expected_output":"x","trace":{"steps":[],"output":"x"},"metrics":[{"type":"Contains","value":"x","name":"c-reservation"},'
    b'{"type":"NoSuch"},{"type":"MaxToolCalls","max_calls":"many"}]}',
    b'{"id":"r7","expected_tool_calls":[{"name":"get_user_details","arguments":{"user_id":"u"}}],"trace":{"steps":'
    b'[{"tool_calls":[{"name":"get_user_details","arguments":{"user_id":"u","extra":[1,2]}},{"name":"get_user_details","arguments":{"user_id":"v"}}]}]}}',
]


def _tau_lines() -> list[bytes]:
    from tracejudge.stages.extract.tau_bench import adapt as tau_adapt, load_tasks
    from tracejudge.stages.load import read_json_array

    tau = DATA / "tau_bench"
    tasks = load_tasks(tau / "tasks" / "tasks_airline_test.json")
    return [tau_adapt(r.payload, tasks).model_dump_json().encode() for r in read_json_array(tau / "historical_trajectories" / "gpt-4o-airline.json")]


def _tau2_lines() -> list[bytes]:
    from tracejudge.stages.extract.tau2_bench import adapt as tau2_adapt, read_results

    files = sorted((DATA / "tau2_bench" / "model_training_results").glob("*_1trials.json"))
    return [tau2_adapt(r.payload).model_dump_json(exclude_defaults=True).encode() for path in files for r in read_results(path)]


def _lines() -> list[bytes]:
    examples = (Path(__file__).resolve().parent.parent / "examples" / "data" / "cases.jsonl").read_bytes().splitlines()
    return _tau_lines() + _tau2_lines() + examples + EXTRA


LINES = _lines()


def _same_scores(got: dict, want: dict, raw: bytes) -> None:
    assert list(got) == list(want), raw[:80]
    for key, w in want.items():
        g = got[key]
        assert (g.value, g.passed, g.reason, g.details) == (w.value, w.passed, w.reason, w.details), (key, raw[:80])
        assert repr(g) == repr(w) and g.model_fields_set == w.model_fields_set, (key, raw[:80])


def test_the_real_lines_take_the_struct_path():
    assert len(LINES) > 250
    assert all(fast_decode.decode_struct(raw) is not None for raw in LINES)


def test_every_allowed_metric_scores_a_struct_case_as_it_scores_the_case():
    assert {type(m).__name__ for m in METRICS} == struct_score.AUDITED
    for raw in LINES:
        struct, case = fast_decode.decode_struct(raw), adapt(raw)
        assert struct is not None, raw[:80]
        use = runner._merge_case_metrics(METRICS, case.metrics) if case.metrics else METRICS
        _same_scores(score_case(struct, use), score_case(case, use), raw)


def test_the_struct_path_renders_each_line_as_the_general_path_does():
    path = struct_score.scorer(registry.format_for("native"), METRICS, runner._merge_case_metrics, KEYS)
    assert path is not None
    rendered = 0
    for i, raw in enumerate(LINES):
        got = path(RawRecord("cases.jsonl", i + 1, raw))
        case = adapt(raw)
        if case.trace is None:
            assert isinstance(got, Case) and got == case
            continue
        use = runner._merge_case_metrics(METRICS, case.metrics) if case.metrics else METRICS
        want = render(case, score_case(case, use), KEYS)
        assert isinstance(got, Rendered) and got == want, raw[:80]
        rendered += 1
    assert rendered == len(LINES)


BAD = [
    b'{"id": "bad-json", "trace": {"steps": [', b'[1, 2, 3]', b'{"id": "bad-utf8", "trace": {"output": "\xff\xfe"}}',
    b'{"id": "bad-user-step", "trace": {"steps": [], "user_messages": [{"step": 3, "content": "hi"}]}}',
    b'{"id": 12345, "trace": {"steps": [{"tool_calls": [{"name": "a", "arguments": "{\\"a\\": 1}"}]}], "output": "a reservation"}}',
    b'{"id": "colour", "trace": {"steps": []}, "colour": "red"}', b'{"id": "no-trace", "tags": ["t"], "metadata": {"m": 1}}',
    b'{"id": "own-custom", "trace": {"steps": [], "output": "x"}, "metrics": [{"type": "test_struct_score:_Sub"}]}',
    b'{"id": "raises", "expected_output": {"a": 1}, "trace": {"output": "' + b"[" * 100_000 + b'"}}',
]


def _job(**kw) -> CpuJob:
    fields = {"format_name": "native", "dataset": DatasetConfig(path=None), "metric_specs": SPECS, "metrics": None,
              "merge": runner._merge_case_metrics, "score": True, "keep_case": False, "render_keys": KEYS}
    return CpuJob(**{**fields, **kw})


def _view(item: Extracted) -> tuple:
    case = item.case
    return (item.file, item.line, item.error, item.failure, item.rendered and repr(item.rendered), None if case is None else (repr(case), case.model_dump_json()),
            None if item.scores is None else {k: repr(s) for k, s in item.scores.items()})


def _both(chunk: list[RawRecord], asynchronous: bool = False, **kw) -> tuple[list[tuple], list[tuple]]:
    fast, slow = _job(**kw), _job(**kw)
    slow._struct = None  # decided: no struct path
    if asynchronous:
        return [_view(x) for x in anyio.run(fast.arun, chunk)], [_view(x) for x in anyio.run(slow.arun, chunk)]
    return [_view(x) for x in fast.run(chunk)], [_view(x) for x in slow.run(chunk)]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_chunk_gives_the_same_records_with_the_struct_path_as_without(asynchronous):
    chunk = [RawRecord("cases.jsonl", i + 1, raw) for i, raw in enumerate(LINES + BAD)]
    fast, slow = _both(chunk, asynchronous)
    assert fast == slow
    assert sum(v[4] is not None for v in fast) >= len(LINES)


def _path(metrics=METRICS):
    return struct_score.scorer(registry.format_for("native"), metrics, runner._merge_case_metrics, KEYS)


@pytest.mark.parametrize("raw", BAD[:6])
def test_a_line_pydantic_must_validate_is_extracted_as_ever(raw):
    assert _path()(RawRecord("cases.jsonl", 1, raw)) is None
    fast, slow = _both([RawRecord("cases.jsonl", 1, raw)])
    assert fast == slow


@pytest.mark.parametrize("raw", BAD[6:])
def test_a_case_the_struct_path_cannot_settle_goes_on_as_a_case(raw):
    # no trace (invalid_input); a case-level spec the path has not audited; text JSON cannot carry; a metric that raised.
    got = _path()(RawRecord("cases.jsonl", 1, raw))
    assert isinstance(got, Case) and repr(got) == repr(Case.model_validate_json(raw))
    fast, slow = _both([RawRecord("cases.jsonl", 1, raw)])
    assert fast == slow


def test_the_raising_line_does_raise():
    # (what the line above stands for really happens: it is not refused earlier)
    assert fast_decode.decode_struct(BAD[-1]) is not None
    scores = score_case(adapt(BAD[-1]), [registry.build_metric({"type": "ExactMatch"})])
    assert scores["ExactMatch"].reason.startswith("metric raised RecursionError")


def test_a_case_that_does_not_render_goes_on_as_a_case(monkeypatch):
    # (msgspec refuses the lone surrogates that make `render` give up; any other reason takes this branch too)
    monkeypatch.setattr(struct_score, "render", lambda *a: None)
    got = _path()(RawRecord("cases.jsonl", 1, LINES[0]))
    assert isinstance(got, Case) and repr(got) == repr(Case.model_validate_json(LINES[0]))


def test_a_metric_reading_what_a_struct_lacks_costs_no_score(monkeypatch):
    # A metric changed to read a pydantic method: on the structs it raises, and the general path scores the case.
    original = ToolCalls.evaluate

    def evaluate(self, case):
        case.model_fields_set  # noqa: B018 - a struct has no such attribute
        return original(self, case)

    monkeypatch.setattr(ToolCalls, "evaluate", evaluate)
    raw = LINES[0]
    assert isinstance(_path()(RawRecord("cases.jsonl", 1, raw)), Case)
    fast, slow = _both([RawRecord("cases.jsonl", 1, raw)])
    assert fast == slow and fast[0][4] is not None  # rendered by the general path, with its scores


class _Sub(ToolCalls):
    """A subclass of an audited metric: not audited itself."""


def test_a_run_with_a_metric_not_audited_has_no_struct_path():
    assert _path([*METRICS, _Sub(name="sub")]) is None
    assert struct_score.scorer(registry.format_for("tau-bench"), METRICS, runner._merge_case_metrics, KEYS) is None


@pytest.mark.parametrize("change", [{"render_keys": None}, {"keep_case": True}, {"score": False}])
def test_a_run_whose_results_settle_later_has_no_struct_path(change):
    job = _job(**change)
    job.run([RawRecord("cases.jsonl", 1, LINES[0])])
    assert job._struct is None
    assert _job()._struct_path() is not None


@settings(max_examples=150, deadline=None)
@given(place=st.sampled_from(_PLACES), value=_JSON, ascii_only=st.booleans())
def test_any_value_in_any_field_gives_the_same_record_with_the_struct_path_as_without(place, value, ascii_only):
    data = _base()
    node = data
    for key in place[:-1]:
        node = node[key]
    node[place[-1]] = value
    raw = json.dumps(data, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    fast, slow = _both([RawRecord("cases.jsonl", 3, raw)])
    assert fast == slow, raw


def test_each_struct_has_its_records_properties_and_methods_with_the_same_results():
    # A property or method added to a record must be added to its struct (`fast_decode`) before a metric reads it there.
    from pydantic import BaseModel

    for struct, model in fast_decode._PAIRS:
        own = {n for n in vars(model) if not n.startswith("_") and n not in vars(BaseModel) and n not in model.model_fields
               and n not in ("model_config", "model_fields", "model_computed_fields")}
        assert own <= set(dir(struct)), (model.__name__, own - set(dir(struct)))
    for raw in LINES:
        struct, case = fast_decode.decode_struct(raw), adapt(raw)
        if case.trace is None:
            continue
        calls, want = struct.trace.tool_calls(), case.trace.tool_calls()
        assert [(c.name, c.arguments, c.failed, c.error) for c in calls] == [(c.name, c.arguments, c.failed, c.error) for c in want]
    assert any(c.failed for raw in LINES for c in fast_decode.decode_struct(raw).trace.tool_calls())


def test_a_metric_that_times_out_scores_as_it_does_on_the_general_path(monkeypatch):
    import time

    from tracejudge.stages.score import time_limit

    original = ToolCalls.evaluate

    def evaluate(self, case):
        if self.name == "tc-subset":
            time.sleep(5)
        return original(self, case)

    monkeypatch.setattr(ToolCalls, "evaluate", evaluate)
    try:
        job = _job(metric_timeout_s=0.05)
        assert job._struct_path() is not None
        got = job._struct(RawRecord("cases.jsonl", 1, LINES[0]))
        assert isinstance(got, Rendered) and got.timed_out == ("tc-subset",)
        fast, slow = _both([RawRecord("cases.jsonl", 1, LINES[0])], metric_timeout_s=0.05)
        assert fast == slow
    finally:
        time_limit.set_default(time_limit.DEFAULT_S)
