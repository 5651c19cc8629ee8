"""junit.xml shows a reason's invisible characters as report.md does: a bidirectional override (U+202E), a zero-width
space (U+200B) and tag characters quoted from a trace are written as `\\u{NNNN}`, never acted on or hidden on a CI page.

Both ways a test case is written: rendered where the case was scored (a run with no target or judge), and from the
result lines (`tracejudge report`, which rebuilds the reports); and a skipped result's message.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import xml.etree.ElementTree as ET

from tracejudge.stages.reports.junit import JunitWriter
import _forkserver

HIDDEN = "\u202e\u200b\U000e0041\U000e0042"
NAME = "lo\u202egin\u200bx\U000e0041\U000e0042"
SHOWN = "lo\\u{202e}gin\\u{200b}x\\u{e0041}\\u{e0042}"


def _raw(text: str) -> list[str]:
    return [f"U+{ord(c):04X}" for c in text if c in HIDDEN or 0xE0000 <= ord(c) <= 0xE007F]


def _reason(junit: str) -> str:
    (out,) = [e.text or "" for e in ET.fromstring(junit).iter("system-out") if "actual calls" in (e.text or "")]
    return out


def test_junit_reasons_show_invisible_characters(tmp_path):
    case = {"id": "c1", "input": "q", "expected_tool_calls": [{"name": "login"}],
            "trace": {"steps": [{"tool_calls": [{"name": NAME, "arguments": {}}]}], "output": "ok"}}
    (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    (tmp_path / "eval.yaml").write_text("dataset: {path: cases.jsonl, format: native}\nmetrics: [{type: ToolCalls}]\nrun: {dir: run}\n")
    run = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "eval.yaml", "--no-progress"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    junit = (tmp_path / "run" / "junit.xml").read_text(encoding="utf-8")
    assert _raw(junit) == [], _raw(junit)
    reason = _reason(junit)
    assert f"unexpected: #0 (step 0) {SHOWN}(" in reason, reason
    assert SHOWN in (tmp_path / "run" / "report.md").read_text(encoding="utf-8")  # (as report.md shows it)
    # Rebuilt from results.jsonl, which keeps the reason as the metric wrote it: the same file.
    report = _forkserver.run([sys.executable, "-m", "tracejudge", "report", "run"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert report.returncode == 0, report.stdout + report.stderr
    assert NAME in (tmp_path / "run" / "results.jsonl").read_text(encoding="utf-8")
    rebuilt = (tmp_path / "run" / "junit.xml").read_text(encoding="utf-8")
    assert _raw(rebuilt) == [] and _reason(rebuilt) == reason


def test_junit_result_dicts_show_invisible_characters():
    writer = JunitWriter({"metrics": {"m": {"results": 2}}, "trials": 1})
    writer.feed({"case_id": "a", "status": "ok", "scores": {"m": {"value": 0.5, "passed": True, "reason": f"called {NAME}\tthen\nstopped"}}})
    writer.feed({"case_id": "b", "status": "invalid_input", "error": {"message": f"record quotes {NAME}"}})
    out = io.StringIO()
    writer.finish(out)
    junit = out.getvalue()
    assert _raw(junit) == [], _raw(junit)
    root = ET.fromstring(junit)
    assert [e.text for e in root.iter("system-out")] == [f"value 0.5: called {SHOWN}\tthen\nstopped"]
    assert [e.get("message") for e in root.iter("skipped")] == [f"invalid_input: record quotes {SHOWN}"]
