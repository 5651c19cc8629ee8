"""Text from data and configs is shown, never interpreted: rich markup and emoji codes on the terminal, HTML in report.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from tracejudge import RunReport
import _forkserver

TJ = Path(sys.executable).with_name("tracejudge")
NAME = "[/x] :100: [bold]m"  # a closing tag with no opener raised MarkupError; ':100:' became an emoji


def test_ids_file_names_and_metric_names_with_markup_print_as_written(tmp_path: Path) -> None:
    with open(tmp_path / "f[red].jsonl", "w") as fh:
        for i in range(120):
            cid = "[/x]" if i in (3, 99) else f"c{i}"  # line 100 repeats an id: its reason names both places
            fh.write(json.dumps({"id": cid, "trace": {"steps": [{"tool_calls": [{"name": "t", "arguments": {}}]}], "output": "ok"}}) + "\n")
    (tmp_path / "c.yaml").write_text(f'dataset: {{path: "f[red].jsonl"}}\nmetrics:\n  - {{type: MaxToolCalls, max_calls: 3, name: "{NAME}"}}\nrun: {{dir: out}}\n')
    for cmd in (["run", "c.yaml", "--no-progress"], ["report", "out"]):
        proc = _forkserver.run([str(TJ), *cmd], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1, proc.stdout + proc.stderr  # FAIL (the repeated id), not exit 3
        assert "MarkupError" not in proc.stderr and "internal error" not in proc.stderr
        assert NAME in proc.stdout  # the summary table's metric column
        assert "f[red].jsonl:100 (id): duplicate case id '[/x]'" in proc.stdout  # the failed check's reasons
    bad = tmp_path / "out" / "results.jsonl"
    lines = bad.read_bytes().splitlines(keepends=True)
    lines[99] = b"{not json\n"
    bad.write_bytes(b"".join(lines))
    proc = _forkserver.run([str(TJ), "report", "out"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "results.jsonl:100:" in proc.stdout and "results.jsonl:100: not a valid result" in proc.stderr


def test_a_report_prints_markup_in_names_literally_on_any_console() -> None:
    summary = {"results": 1, "status": {"ok": 1}, "metrics": {NAME: {"results": 1, "scored": 1, "mean": 1.0, "std": None, "ci95": None,
                                                                      "pass_rate": 1.0, "passed": 1, "with_verdict": 1}}}
    report = RunReport(results=[], summary=summary)
    assert NAME in str(report)
    console = Console(record=True, width=120)  # a caller's console, markup and emoji on
    report.print(console)
    assert NAME in console.export_text()


def test_report_md_escapes_html_from_ids_and_metric_names(tmp_path: Path) -> None:
    with open(tmp_path / "cases.jsonl", "w") as fh:
        for cid in ("<script>alert(1)</script>", "ok"):
            fh.write(json.dumps({"id": cid, "trace": {"steps": [{"tool_calls": [{"name": "t", "arguments": {}}]}], "output": "ok"}}) + "\n")
    (tmp_path / "c.yaml").write_text('dataset: {path: cases.jsonl}\nmetrics:\n  - {type: MaxToolCalls, max_calls: 0, name: "<svg onload=alert(3)>"}\n'
                                     "run: {dir: out}\n")
    _forkserver.run([str(TJ), "run", "c.yaml", "--no-progress"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    md = (tmp_path / "out" / "report.md").read_text()
    assert "<script>" not in md and "<svg" not in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md and "&lt;svg onload=alert(3)&gt;" in md
