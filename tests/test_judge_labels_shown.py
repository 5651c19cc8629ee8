"""Problems with a run's labels file are shown where the user looks: the end of `tracejudge run` and report.md.

They were only in summary.json: a run with a mistyped case id, a misspelt metric, a label out of range or lines that
could not be read printed its κ as if every label had counted. `calibrate`'s first line left out the labels out of
range (so its counts did not add up), a misspelt metric's problem named no `file:line`, and calibrate listed 20
problems with no word of the others.

Real `tracejudge` processes against the judge simulator (`provider: simulator`, over HTTP on 127.0.0.1).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
import _forkserver

N = 8


def write_cases(path: Path, n: int = N) -> Path:
    with open(path, "w") as fh:
        for i in range(n):
            steps = [{"tool_calls": [{"name": "search", "arguments": {"q": f"flight {i}"}, "result": f"found AB{i}"}]},
                     {"tool_calls": [{"name": "book", "arguments": {"id": f"AB{i}"}, "result": "ok"}], "output": f"Booked AB{i}"}]
            fh.write(json.dumps({"id": f"c{i}", "input": f"Book flight {i}", "trace": {"steps": steps}}) + "\n")
    return path


def write_config(tmp: Path, labels: Path | None) -> Path:
    cfg: dict[str, Any] = {"dataset": {"path": str(write_cases(tmp / "cases.jsonl"))}, "metrics": [{"type": "TaskCompletion"}],
                           "judge": {"provider": "simulator", "model": "gpt-4o-mini"},
                           "cache": {"dir": str(tmp / "cache")}, "run": {"dir": str(tmp / "run")}}
    if labels is not None:
        cfg["judge"]["labels"] = {"path": str(labels)}
    path = tmp / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def tracejudge(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={**os.environ, "COLUMNS": "400"})


def label_line(case: str, label: Any, metric: str = "TaskCompletion") -> str:
    return json.dumps({"case_id": case, "metric": metric, "label": label}) + "\n"


def test_a_runs_label_problems_end_its_terminal_summary_and_its_report(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    with open(labels, "wb") as fh:
        fh.write((label_line("c0", True) + label_line("c1", False) + label_line("c2", "pass")).encode())
        fh.write(label_line("nope", True).encode())                        # line 4: no such case
        fh.write(label_line("c3", True, "TaskCompletoin").encode())        # line 5: misspelt metric
        fh.write(label_line("c4", 1.5).encode())                           # line 6: out of range
        fh.write(label_line("c5", "maybe").encode())                       # line 7: not a label
        fh.write(b'{"case_id": "c6\xe9", "metric": "TaskCompletion", "label": true}\n')  # line 8: a Latin-1 byte
        fh.write(label_line("c7", True, "TaskCompletoin").encode())        # line 9: the misspelt metric again
    proc = tracejudge("run", str(write_config(tmp_path, labels)), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert ("judge labels: 7, matched to verdicts: 3, not judged: 0, no such case/metric: 3, out of range: 1; "
            "besides, not a label: 2; 5 problem(s) with the labels, below") in out, out  # (lines 7 and 8 hold no label)
    problems = [
        f"{labels}:5: metric: 2 label(s) for metric 'TaskCompletoin' (also line 9): no result of this run has that metric; "
        "did you mean TaskCompletion?",
        f"{labels}:7: label: 'maybe' is not a label: expected true/false (yes/no, pass/fail) or a number",
        f"{labels}:8: byte 0xE9 at line 8 column 16 (byte offset ",
        f"{labels}:4: case_id: no result of this run is case 'nope'",
        f"{labels}:6: label: 1.5 is out of range for metric 'TaskCompletion', which takes a yes/no label",
    ]
    for p in problems:
        assert f"  labels: {p}" in out, (p, out)
    assert out.index("judge labels TaskCompletion: 3 labelled") < out.index("run directory:")  # with the judge's lines, before the verdict
    report = (tmp_path / "run" / "report.md").read_text()
    section = report[report.index("## Judge labels"):]
    assert "labels: 7, matched to verdicts: 3, not judged: 0, no such case/metric: 3, out of range: 1; besides, not a label: 2." in section
    assert "Problems with the labels (5):" in section and all(f"- {p}" in section for p in problems), section
    assert "- TaskCompletion: 3 labelled cases, 3 verdicts, accuracy " in section
    # `tracejudge report` rebuilds the same section and prints the same lines.
    again = tracejudge("report", str(tmp_path / "run"), cwd=tmp_path)
    assert all(f"  labels: {p}" in again.stdout for p in problems), again.stdout


def test_many_label_problems_show_the_first_and_say_how_many_more(tmp_path: Path) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,metric,label\nc0,TaskCompletion,yes\nc1,TaskCompletion,no\n"
                      + "".join(f"c{i % N},TaskCompletion,maybe{i}\n" for i in range(25)))
    proc = tracejudge("run", str(write_config(tmp_path, labels)), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    shown = [line for line in proc.stdout.splitlines() if line.startswith("  labels: ")]
    assert len(shown) == 6
    assert shown[0] == f"  labels: {labels}:4: label: 'maybe0' is not a label: expected true/false (yes/no, pass/fail) or a number"
    assert shown[-1] == ("  labels: … and 20 more label problem(s) (in summary.json `labels.problems` and listed whole by "
                         "`tracejudge calibrate CONFIG --json OUT`)")
    report = (tmp_path / "run" / "report.md").read_text()
    assert "Problems with the labels (25):" in report and f"{labels}:23: label: 'maybe19'" in report
    assert "- … and 5 more label problem(s) (listed whole by `tracejudge calibrate CONFIG --json OUT`)" in report
    # calibrate: its first line's counts add up, the same note follows its 20 problems, and --json has every one.
    cal = tracejudge("calibrate", str(tmp_path / "c.yaml"), "--json", str(tmp_path / "cal.json"), cwd=tmp_path)
    assert cal.returncode == 0, cal.stderr
    assert cal.stdout.splitlines()[0].startswith("labels: 2, matched to verdicts: 2, not judged: 0, no such case/metric: 0, out of range: 0")
    assert "  labels: … and 5 more label problem(s) (listed whole by `tracejudge calibrate CONFIG --json OUT`)" in cal.stdout
    got = json.loads((tmp_path / "cal.json").read_text())
    assert got["problem_count"] == 25 and len(got["problems"]) == 25 and got["problems"][-1].startswith(f"{labels}:28: ")


def test_calibrates_first_line_counts_the_labels_out_of_range(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text(label_line("c0", True) + label_line("c1", 0) + label_line("c2", 2) + label_line("c3", True, "TaskCompletoin"))
    cal = tracejudge("calibrate", str(write_config(tmp_path, None)), "--labels", str(labels), cwd=tmp_path)
    assert cal.returncode == 0, cal.stderr
    first = cal.stdout.splitlines()[0]
    assert first.startswith("labels: 4, matched to verdicts: 2, not judged: 0, no such case/metric: 1, out of range: 1 (run "), first
    assert (f"  labels: {labels}:4: metric: 1 label(s) for metric 'TaskCompletoin': no result of this run has that metric; "
            "did you mean TaskCompletion?") in cal.stdout
