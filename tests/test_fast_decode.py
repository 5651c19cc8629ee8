"""msgspec's typed decode of native lines gives pydantic's `Case` exactly, or hands the line to pydantic.

Real lines (the 200 τ-bench runs as `tracejudge extract` writes them) and lines at the edges of what
either validator accepts or coerces: for each, `fast_decode.decode` is None or a `Case` equal to
`Case.model_validate_json`'s in value, repr and JSON dump; a line pydantic refuses is never accepted.
"""

from __future__ import annotations

import pytest
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
