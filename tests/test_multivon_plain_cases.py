"""multivon-eval cases without an `agent_trace` (plain cases beside agent ones) are read as multivon reads them.

multivon-eval's `ToolCallAccuracy.evaluate` skips a case whose `agent_trace` is None, and its output judges
score the answer with or without one. tracejudge made every such record `invalid_input`: a dataset mixing
plain and agent cases failed the run's gate (`max_invalid_share` 0) and lost the plain cases' output scores.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tracejudge.stages.extract.multivon import NO_AGENT_TRACE, adapt
import _forkserver

RECORDS = [
    {"id": "plain", "input": "capital of France?", "expected_tool_calls": ["search"], "actual_output": "Paris is the answer"},
    {"id": "null-trace", "input": "q", "expected_tool_calls": ["search"], "agent_trace": None, "metadata": {"k": 1}},
    {"id": "agent", "input": "q", "expected_tool_calls": ["search"],
     "agent_trace": [{"tool_calls": [{"name": "search", "arguments": {"q": "x"}}], "output": "the answer"}]},
    {"id": "empty-trace", "input": "q", "expected_tool_calls": ["search"], "agent_trace": [], "actual_output": "answer"},
    {"id": "bad", "input": "q", "agent_trace": "a string"},
]


def _run(tmp_path: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, dict]]:
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"dataset: {{path: {json.dumps(str(data))}, format: multivon}}\n"
                   "metrics: [{type: ToolCallAccuracy}, {type: Contains, value: answer}]\nrun: {dir: run}\n")
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    lines = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    return done, {x["case_id"]: x for x in lines}


def test_a_case_without_agent_trace_is_skipped_by_tool_call_accuracy_and_its_output_scored(tmp_path: Path) -> None:
    _, got = _run(tmp_path)
    for cid in ("plain", "null-trace"):
        assert got[cid]["status"] == "ok", got[cid]
        tca = got[cid]["scores"]["ToolCallAccuracy"]
        assert tca["value"] is None and "no agent_trace (multivon-eval skips it)" in tca["reason"]
    assert got["plain"]["scores"]["Contains"]["value"] == 1.0  # the record's actual_output is the answer
    assert got["null-trace"]["metadata"] == {"k": 1, NO_AGENT_TRACE: True}
    # A recorded trace, even an empty one, is scored as ever: an agent that called nothing scores 0.
    assert got["agent"]["scores"]["ToolCallAccuracy"]["value"] == 1.0
    assert got["empty-trace"]["scores"]["ToolCallAccuracy"]["value"] == 0.0
    assert NO_AGENT_TRACE not in got["agent"]["metadata"] and NO_AGENT_TRACE not in got["empty-trace"]["metadata"]
    # Skipped as multivon-eval skips it: the metric does not apply there, so no error share of its counts those cases.
    assert all(got[cid]["scores"]["ToolCallAccuracy"]["reason"].startswith("not applicable: ") for cid in ("plain", "null-trace"))
    tca = json.loads((tmp_path / "run" / "summary.json").read_text())["metrics"]["ToolCallAccuracy"]
    assert (tca["not_applicable"], tca["not_computed"]) == (2, 0)


def test_an_agent_trace_that_is_not_a_list_is_still_refused_naming_its_line_and_field(tmp_path: Path) -> None:
    _, got = _run(tmp_path)
    err = got["bad"]["error"]
    assert got["bad"]["status"] == "invalid_input"
    assert (err["line"], err["field"]) == (5, "agent_trace") and err["message"].endswith("got a string"), err


def test_the_plain_case_keeps_input_and_output_for_the_judges() -> None:
    case = adapt(json.dumps(RECORDS[0]))
    assert case.trace is not None and case.trace.steps == [] and case.trace.output == "Paris is the answer"
    assert case.input == "capital of France?"
