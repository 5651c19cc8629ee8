"""A step of 5,000 parallel tool calls: report.md, report.html and the viewer show its first `STEP_CALLS` calls, then
"… and N more calls" (`tracejudge.core.shown_calls`); results.jsonl keeps every call.

A real run (`tracejudge run`), its reports rebuilt from results.jsonl (`tracejudge report`), and the viewer as a real
process over HTTP on 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from _runs import view_server, write_dataset
from test_viewer_usability import get
from tracejudge.core.shown_calls import STEP_CALLS, capped_calls, more_calls
from tracejudge.entrypoints.cli import main

FANNED = 5000


def _run(tmp: Path) -> Path:
    calls = [{"name": f"fetch_{i % 7}", "arguments": {"id": i}, "result": f"row {i}"} for i in range(FANNED)]
    big = {"id": "fan-out", "expected_tool_calls": [{"name": f"fetch_{i % 7}", "arguments": {"id": i}} for i in range(0, FANNED, 2)],
           "trace": {"steps": [{"tool_calls": calls}, {"tool_calls": [{"name": "summarize", "arguments": {}}]}], "output": "done"}}
    small = {"id": "small", "expected_tool_calls": [{"name": "a"}],
             "trace": {"steps": [{"tool_calls": [{"name": "a", "arguments": {}}, {"name": "b", "arguments": {}}]}], "output": "done"}}
    data = write_dataset(tmp / "cases.jsonl", [big, small])
    cfg = tmp / "cfg.json"
    cfg.write_text(json.dumps({"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "TrajectoryMatch"}, {"type": "ToolCalls"}],
                               "run": {"dir": str(tmp / "run")}}))
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    return tmp / "run"


def test_a_fanned_out_step_is_shown_capped_in_the_reports_and_the_viewer(tmp_path: Path) -> None:
    run = _run(tmp_path)
    kept = json.loads((run / "results.jsonl").read_text().splitlines()[0])["scores"]["TrajectoryMatch"]["reason"]
    assert kept.count("'fetch_") > FANNED // 2 + FANNED  # results.jsonl keeps every call the reason names
    note = more_calls(FANNED - STEP_CALLS)
    assert note == "… and 4,900 more calls"

    page = (run / "report.html").read_text()
    case_data = json.loads(re.search(r'<script type="application/json" id="case-data">(.*?)</script>', page, re.S).group(1))
    shown = next(r for r in case_data["rows"] if r["case_id"] == "fan-out")["scores"]["TrajectoryMatch"]["reason"]
    # (its lists: the 2,500 calls expected, and the 5,001 of the trajectory)
    assert shown == capped_calls(kept) and more_calls(FANNED // 2 - STEP_CALLS) in shown and more_calls(FANNED + 1 - STEP_CALLS) in shown
    assert shown.count("'fetch_") == 2 * STEP_CALLS + 2 and len(page) < len(kept)  # (2: the first divergence's names)
    markdown = (run / "report.md").read_text()
    assert "fetch_" in markdown and len(markdown) < 20_000  # (its cells are cut shorter still: the first names, then "…")
    # junit.xml shows each reason as report.md does: its lists of names capped (a CI page of one case was 85 KB).
    junit = ET.parse(run / "junit.xml").getroot()
    out = next(t for t in junit.iter("testcase") if t.get("name") == "fan-out" and t.get("classname") == "TrajectoryMatch")
    assert out.findtext("system-out").endswith(shown) and out.findtext("system-out").count("'fetch_") == 2 * STEP_CALLS + 2
    assert (run / "junit.xml").stat().st_size < 20_000

    # The reports rebuilt from results.jsonl are the run's own, byte for byte: the run's rows of rendered results
    # and the rows read back cap alike.
    before = {name: (run / name).read_bytes() for name in ("report.md", "report.html", "junit.xml")}
    for name in before:
        (run / name).unlink()
    assert main(["report", str(run)]) in (0, 1)
    assert {name: (run / name).read_bytes() for name in before} == before

    with view_server(str(run)) as url:
        status, case = get(url + "/run/run/case?id=fan-out")
    assert status == 200
    ids = [int(i) for i in re.findall(r'<div class="call" id="run-call-(\d+)"', case)]
    assert ids == [*range(STEP_CALLS), FANNED]  # the fanned-out step's first calls, then the next step's, numbered on
    assert f'{note} in this step, not shown (#{STEP_CALLS} to #{FANNED - 1:,})' in case
    assert more_calls(FANNED + 1 - STEP_CALLS) in re.search(r'<tr data-metric="TrajectoryMatch">.*?</tr>', case, re.S).group()  # (its reason)
    assert len(case) < 1_000_000


def test_capped_calls_cuts_only_lists_past_the_cap() -> None:
    names = [f"t{i}" for i in range(STEP_CALLS)]
    at_cap = f"x (expected: {names!r}) y"
    assert capped_calls(at_cap) is at_cap
    past = f"x (expected: {[*names, 'last']!r}, actual: ['a']) y"
    assert capped_calls(past) == f"x (expected: {str(names)[:-1]}, … and 1 more call], actual: ['a']) y"
    quoted = [f"it\\'s {i}" for i in range(STEP_CALLS + 5)]  # (a name holding a quote, escaped as repr escapes it)
    listed = "[" + ", ".join(f"'{q}'" for q in quoted) + "]"
    assert capped_calls(listed).endswith(f"'{quoted[STEP_CALLS - 1]}', … and 5 more calls]")
    assert capped_calls("no list at all, " * 200) == "no list at all, " * 200
