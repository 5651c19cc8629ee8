"""msgspec's typed decode of native lines gives pydantic's `Case` exactly, or hands the line to pydantic.

Real lines (the 200 τ-bench runs as `tracejudge extract` writes them) and lines at the edges of what
either validator accepts or coerces: for each, `fast_decode.decode` is None or a `Case` equal to
`Case.model_validate_json`'s in value, repr and JSON dump; a line pydantic refuses is never accepted.
Through `extract_record`, a table of lines and random values in every field give the same case, or the same
error (message, file, line, field), with the fast path as without it.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from tracejudge.core.records import Case
from tracejudge.stages.extract import fast_decode
from tracejudge.stages.extract.native import adapt

from helpers import DATA

EDGES = [
    b'{"id":"x","metadata":{"big":123456789012345678901234567890}}', b'{"id":"x","metadata":{"f":1e400}}',
    b'{"id":"x","metadata":{"s":"\\ud800"}}', b'{"id":"x","trace":{"usage":{"cost_usd":5}}}', b'{"id":"x","trace":{"usage":{"requests":5.0}}}',
    b'{"id":"x","id":"y"}', b'{"id":"x","metadata":{"a":1,"a":2}}', b'{"id":"x","metadata":{"n":NaN}}', b'{"id":"x","tags":["a"],"trace":null}',
    b'{"id":"x","metadata":{"n":-0.0,"m":-0,"e":1E2,"z":0.1}}', b'  {"id":"x"}  ', b'{"id":7}', b'{"id":true}', b'{"id":"x","tags":"a"}',
    b'{"id":"x","trace":{"steps":[{"tool_calls":[{"name":"a","arguments":{},"result":[1,{"b":null}]}]}]}}',
    b'{"id":"x","trace":{"steps":[{"tool_calls":[{"name":"a","arguments":"{\\"q\\": 1}"}]}]}}',
    b'{"id":"x","trace":{"steps":[{"tool_calls":[{"name":"a","arguments":"not json"}]}]}}',
    b'{"id":"x","trace":{"steps":[{"tool_calls":[{"name":"a","arguments_invalid":1}]}]}}',
    b'{"id":"x","trace":{"steps":[],"user_messages":[{"step":1}]}}', b'{"id":"x","trace":{"steps":[{}],"user_messages":[{"step":1},{"step":0}]}}',
    b'{"id":"x","trace":{"steps":[{}],"user_messages":[{"step":0},{"step":1,"content":[{"type":"text"}]}]}}',
    b'{"id":"x","trace":{"user_messages":[{"step":-1}]}}', b'{"id":"x","expected_tool_calls":[{"name":"a","arguments":"{}"}]}',
    b'{"id":"x","expected_tool_calls":[{"name":"a","arguments":null,"result":3}],"expected_passages":["p"]}',
    b'{"id":"x","trace":{"retrieved":[{"content":"c","score":1}],"output":"o"},"colour":1}', b'{"id":"x","trace":{"retrieved":[{"content":"c","score":1}]}}',
    b'{"id":"x","input":"\xc3\xa9\\u00e9"}', b'{"id":"x","input":"\xff"}', b'[1]', b'{"id":"x"', b'{"id":"x"} x',
    b'{"id":"x","turns":[1,"a"],"metrics":[{"type":"Contains","value":"a"}],"context":{"k":[1]}}', b'{"id":"x","metrics":[1]}',
]


def _same(raw: bytes) -> None:
    fast = fast_decode.decode(raw)
    try:
        slow = Case.model_validate_json(raw)
    except ValidationError:
        assert fast is None, raw
        return
    if fast is not None:
        assert fast == slow and repr(fast) == repr(slow) and fast.model_dump_json() == slow.model_dump_json(), raw


@pytest.mark.parametrize("raw", EDGES)
def test_an_edge_line_decodes_as_pydantic_decodes_it_or_goes_to_pydantic(raw):
    _same(raw)


def test_real_lines_take_the_fast_path_and_equal_pydantic():
    from tracejudge.stages.extract.tau_bench import adapt as tau_adapt, load_tasks
    from tracejudge.stages.load import read_json_array

    tau = DATA / "tau_bench"
    tasks = load_tasks(tau / "tasks" / "tasks_airline_test.json")
    lines = [tau_adapt(r.payload, tasks).model_dump_json().encode() for r in read_json_array(tau / "historical_trajectories" / "gpt-4o-airline.json")]
    assert len(lines) == 200
    for raw in lines:
        assert fast_decode.decode(raw) is not None
        _same(raw)


def test_a_case_from_the_fast_path_can_still_be_changed():
    case = adapt(b'{"id":"x","trace":{"steps":[]}}')
    case.tags = ["t"]  # (a live target sets a case's trace the same way)
    assert case.model_dump()["tags"] == ["t"] and "tags" in case.model_fields_set


def test_records_from_the_fast_path_share_no_mutable_state():
    a = fast_decode.decode(b'{"id":"a","trace":{"steps":[{},{}]}}')
    b = fast_decode.decode(b'{"id":"b","trace":{"steps":[{}]}}')
    steps = a.trace.steps + b.trace.steps
    assert len({id(s.tool_calls) for s in steps}) == 3 and len({id(x.model_fields_set) for x in [a, b, *steps]}) == 5
    a.trace.steps[0].tool_calls.append("x")
    assert a.trace.steps[1].tool_calls == [] and b.trace.steps[0].tool_calls == []


# Lines whose record or error the fast path must not change: each goes through `extract_record` with the
# fast path and without it (pydantic alone, as before it existed) and must give the same case, or the same
# error with the same file, line, field and message.
SAME_ERROR = [
    b'{"id":"x","trace":{"steps":[{"tool_calls":[{"name":"a","colour":1}]}]}}',
    b'{"id":"x","trace":{"usage":{"requests":"5"}}}', b'{"id":"x","trace":{"usage":{"requests":true}}}',
    b'{"id":"x","trace":{"usage":{"input_tokens":123456789012345678901234567890}}}',
    b'{"id":"x","trace":{"usage":{"cost_usd":123456789012345678901234567890}}}',
    b'{"id":"x","trace":{"steps":[{"tool_calls":[{"name":null}]}]}}', b'{"id":"x","trace":{"steps":null}}', b'{"id":"x","tags":[null]}',
    b'{"id":null}', b'{"id":"x","trace":{"steps":[{"thought":7}]}}', b'{"id":"x","trace":{"retrieved":[{"content":null}]}}',
    b'{"id":"x","expected_tool_calls":[{"name":"a","arguments":[1]}]}', b'{"id":"x","expected_tool_calls":[{"arguments":{}}]}',
    b'{"id":"x","trace":{"steps":[{"tool_calls":[{"name":"a","arguments":"[1]"}]}]}}', b'{"id":"x","trace":{"steps":[{"tool_calls":[{"name":"a","arguments":7}]}]}}',
    b'{"id":"x","trace":{"user_messages":[{"step":"0"}]}}', b'{"id":"x","trace":{"user_messages":[{"content":"hi"}]}}',
    b'{"id":"\xe2\x9c\x88 \\u00e9\\ud83d\\ude00","input":"\xf0\x9f\x98\x80","trace":{"output":"\\u2028"}}', b'{"id":"x","input":"\xed\xa0\x80"}',
    b'{"id":"x","metrics":[{"type":1}],"turns":null}', b'{"id":"x","metadata":[]}', b'{"id":"x","trace":[]}', b'{"id":"x","trace":{"usage":[]}}',
    b'{"id":"x","trace":{"steps":[{"tool_calls":[{"name":"a","arguments":{},"id":1}]}]}}', b'{"id":1.5}', b'"x"', b'',
    # What a strict reader refuses and pydantic's lax mode took: a boolean for a number, an empty id or one
    # holding NUL, a non-finite number in metadata or usage.
    b'{"id":"x","trace":{"steps":[{}],"user_messages":[{"step":true}]}}', b'{"id":"x","trace":{"usage":{"cost_usd":false}}}',
    b'{"id":"x","trace":{"retrieved":[{"content":"c","score":true}]}}', b'{"id":""}', b'{"id":"a\\u0000b"}', b'{"id":0,"metadata":{"f":-1e400}}',
    b'{"id":"x","metadata":{"m":{"k":[1,NaN]}}}', b'{"id":"x","trace":{"usage":{"latency_s":1e400}}}',
]


def _extracted(raw: bytes) -> tuple:
    from tracejudge.core import registry
    from tracejudge.stages.extract import extract_record
    from tracejudge.stages.load import RawRecord

    got = extract_record(RawRecord("cases.jsonl", 3, raw), registry.format_for("native"), None)
    # A case is compared by repr and JSON dump, which (unlike ==) hold for a NaN too.
    return ("case", repr(got), got.model_dump_json()) if isinstance(got, Case) else ("error", got)


def _same_both_ways(raw: bytes, monkeypatch) -> None:
    fast = _extracted(raw)
    with monkeypatch.context() as m:
        m.setattr(fast_decode, "_FAST", False)
        slow = _extracted(raw)
    assert fast == slow, raw


@pytest.mark.parametrize("raw", SAME_ERROR + EDGES)
def test_a_line_gives_the_same_case_or_error_with_the_fast_path_as_without(raw, monkeypatch):
    if raw is SAME_ERROR[0]:
        assert _extracted(raw)[0] == "error"  # (the comparison sees errors, not only lines that decode)
    _same_both_ways(raw, monkeypatch)


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.integers(min_value=2**63 - 2, max_value=2**65)
                     | st.floats() | st.text(max_size=5), lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                     max_leaves=6)
# Where a value lands in an otherwise valid case: every field of every record, and a key no record has.
_PLACES = [("id",), ("input",), ("tags",), ("metadata",), ("metrics",), ("turns",), ("expected_passages",), ("expected_tool_calls",),
           ("expected_tool_calls", 0, "name"), ("expected_tool_calls", 0, "arguments"), ("expected_tool_calls", 0, "result"),
           ("trace",), ("trace", "output"), ("trace", "steps"), ("trace", "retrieved"), ("trace", "usage"), ("trace", "user_messages"),
           ("trace", "usage", "requests"), ("trace", "usage", "cost_usd"), ("trace", "user_messages", 0, "step"), ("trace", "user_messages", 0, "content"),
           ("trace", "steps", 0, "thought"), ("trace", "steps", 0, "tool_calls"), ("trace", "steps", 0, "tool_calls", 0, "name"),
           ("trace", "steps", 0, "tool_calls", 0, "id"), ("trace", "steps", 0, "tool_calls", 0, "arguments"), ("trace", "steps", 0, "tool_calls", 0, "error"),
           ("trace", "steps", 0, "tool_calls", 0, "arguments_invalid"), ("trace", "steps", 0, "tool_calls", 0, "result"),
           ("trace", "retrieved", 0, "score"), ("trace", "retrieved", 0, "content"), ("trace", "steps", 0, "colour"), ("colour",)]


def _base() -> dict:
    return {"id": "x", "expected_tool_calls": [{"name": "a", "arguments": {"k": 1}}], "metadata": {"m": [1]},
            "trace": {"steps": [{"thought": "t", "tool_calls": [{"name": "a", "arguments": {"k": 1}, "result": "r"}]}, {"output": "o"}],
                      "user_messages": [{"step": 0, "content": "hi"}], "usage": {"requests": 2}, "retrieved": [{"content": "c", "score": 0.5}]}}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(place=st.sampled_from(_PLACES), value=_JSON, ascii_only=st.booleans())
def test_any_value_in_any_field_gives_the_same_case_or_error_with_the_fast_path_as_without(place, value, ascii_only, monkeypatch):
    data = _base()
    node = data
    for key in place[:-1]:
        node = node[key]
    node[place[-1]] = value
    _same_both_ways(json.dumps(data, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass"), monkeypatch)
