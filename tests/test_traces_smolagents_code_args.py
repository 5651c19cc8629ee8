"""A smolagents tool that a `CodeAgent`'s code called, recorded by OpenInference, has the arguments the code gave it.

Recordings: `tests/data/trace-faults/oi-smolagents-code-args.jsonl` and `oi-smolagents-managed-code.jsonl`
(`tests/frameworks/record_trace_faults.py`, smolagents 1.26.0, openinference-instrumentation-smolagents 0.1.43). The
instrumentation records `Tool.__call__`'s bound arguments, `{"args": [...], "sanitize_inputs_outputs": false, "kwargs":
{...}}`; a call with no keyword argument read as that record itself (`get_time()` as `{"args": [], "kwargs": {},
"sanitize_inputs_outputs": false}`), so the call's arguments were smolagents' plumbing.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers import extract_path
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "trace-faults"


def _case(name: str) -> Case:
    (case,) = extract_path(DATA / f"{name}.jsonl", "otel")
    assert isinstance(case, Case), case
    return case


def test_a_code_agents_calls_read_with_the_arguments_each_tool_got() -> None:
    case = _case("oi-smolagents-code-args")
    outcome = json.loads((DATA / "oi-smolagents-code-args.outcome.json").read_text())
    got = [(c.name, c.arguments) for c in case.trace.tool_calls()]
    truth = [(c["name"], c["arguments"]) for c in outcome["calls"]]
    # `@tool` functions: positional values named after their parameters (`get_weather("Paris")`, `convert(21, to="F")`)
    assert got[:2] == truth[:2] == [("get_weather", {"city": "Paris"}), ("convert", {"celsius": 21, "to": "F"})]
    assert got[3] == truth[3] == ("get_time", {})
    # a hand-written `Tool` declares `days` before `city` but `forward(city, days)` took "Paris" first: the recorded
    # order of its parameters is not its signature's, so its positional values stay unnamed rather than misnamed
    assert truth[2] == ("forecast", {"city": "Paris", "days": 2}) and got[2] == ("forecast", {"args": ["Paris", 2]})
    assert case.trace.output == outcome["final_output"]


def test_a_call_with_no_argument_reads_none() -> None:
    calls = _case("oi-smolagents-managed-code").trace.tool_calls()
    assert (calls[0].name, calls[0].arguments) == ("get_time", {})
