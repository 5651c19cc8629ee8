"""Format `langfuse`: observations that started in the same millisecond read in the order they ran.

Recording in `tests/data/langfuse-api-faults/` (`tests/frameworks/record_langfuse_api_faults.py`, scenario `lf-ties`; the
folder's README says what runs): an `@observe` order desk that asks no model calls `lookup_order` (returns at once), then
`fetch_invoice` (4 ms), then `send_receipt`; the agent and the first two tools start in one millisecond.

Langfuse's server keeps times in milliseconds and lists observations in no running order (`GET
/api/public/traces/{id}`: as stored, by type and id; the v2 API: newest first, then by span id), so the spans of the
two tools started together and the assembler ordered them by span id: here `fetch_invoice` before `lookup_order`. Now
ties are ordered by what the times still say (an enclosing observation first; of two in a row, the one that ended
first), the same from either API and whatever the list order.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record

DATA = Path(__file__).parent / "data" / "langfuse-api-faults"
TRUTH = json.loads((DATA / "lf-ties.truth.json").read_text())


def extract(path: Path, fmt_name: str) -> list[Case]:
    fmt = registry.format_for(fmt_name)
    ds = DatasetConfig(path=path, format=fmt_name, options={})
    ctx = fmt.prepare(ds)
    cases = [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]
    assert all(isinstance(c, Case) for c in cases), cases
    return cases


def calls(case: Case) -> list[tuple[str, Any]]:
    return [(c.name, c.result) for c in case.trace.tool_calls()]


def test_the_recording_ties_the_tools_and_their_ids_sort_against_their_order() -> None:
    (trace,) = [json.loads(line) for line in (DATA / "lf-ties.json").read_text().splitlines()]
    by_name = {o["name"]: o for o in trace["observations"]}
    assert len({by_name[n]["startTime"] for n in ("agent", "lookup_order", "fetch_invoice")}) == 1
    assert by_name["fetch_invoice"]["id"] < by_name["lookup_order"]["id"]
    assert by_name["lookup_order"]["endTime"] < by_name["fetch_invoice"]["endTime"]


@pytest.mark.parametrize("file, fmt", [("lf-ties.json", "langfuse"), ("lf-ties.v2.json", "langfuse"), ("lf-ties.otlp.jsonl", "otel")])
def test_tools_started_in_one_millisecond_read_in_the_order_they_ran(file: str, fmt: str) -> None:
    (case,) = extract(DATA / file, fmt)
    assert calls(case) == [(c["name"], c["result"]) for c in TRUTH["calls"]]
    assert case.input == TRUTH["input"] and case.trace.output == TRUTH["output"]


def test_the_order_does_not_depend_on_the_list_order(tmp_path: Path) -> None:
    (trace,) = [json.loads(line) for line in (DATA / "lf-ties.json").read_text().splitlines()]
    lines = []
    for seed in range(6):
        observations = list(trace["observations"])
        random.Random(seed).shuffle(observations)
        lines.append(json.dumps({**trace, "id": f"t{seed}", "observations": observations}))
    path = tmp_path / "shuffled.json"
    path.write_text("\n".join(lines) + "\n")
    cases = extract(path, "langfuse")
    assert len(cases) == 6 and all(calls(c) == calls(cases[0]) == [(c["name"], c["result"]) for c in TRUTH["calls"]] for c in cases)


def _tool(oid: str, name: str, start: str, end: str, parent: str = "agent") -> dict[str, Any]:
    return {"id": oid, "traceId": "t", "type": "TOOL", "name": name, "parentObservationId": parent, "startTime": start, "endTime": end,
            "input": {"args": [name]}, "output": f"{name} done", "level": "DEFAULT", "metadata": {}}


def test_a_tie_in_start_and_end_reads_the_same_from_either_list_order(tmp_path: Path) -> None:
    # Two tools of under a millisecond each, one after the other: nothing Langfuse keeps tells which ran first. Each list
    # order reads alike (by id), and the tool whose start and end tie with a later one's start still comes first.
    t = "2026-01-01T00:00:00.{:03d}Z"
    agent = {"id": "agent", "traceId": "t", "type": "AGENT", "name": "agent", "startTime": t.format(0), "endTime": t.format(9),
             "input": "go", "output": "done", "level": "DEFAULT", "metadata": {}}
    tools = [_tool("b1", "first", t.format(0), t.format(2)), _tool("a2", "second", t.format(0), t.format(5)),
             _tool("z3", "x", t.format(5), t.format(5)), _tool("c4", "y", t.format(5), t.format(5))]
    lines = [json.dumps({"id": f"t{i}", "input": "go", "output": "done", "observations": [agent, *order]})
             for i, order in enumerate([tools, tools[::-1]])]
    path = tmp_path / "ties.json"
    path.write_text("\n".join(lines) + "\n")
    one, other = extract(path, "langfuse")
    assert [c.name for c in one.trace.tool_calls()] == [c.name for c in other.trace.tool_calls()]
    assert [c.name for c in one.trace.tool_calls()][:2] == ["first", "second"]
