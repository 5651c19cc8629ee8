"""`tracejudge calibrate --labels` on labels files a user got wrong:

- a case whose only label is out of its metric's range, or between two grades, was judged (requests spent) and then
  left out of κ: it is not judged now, and calibrate says how many cases it left out and why; a file of such labels
  alone judges nothing and exits 2;
- an empty labels file (0 bytes, blank lines, a header alone) said "the CSV header lacks the column(s) case_id, metric,
  label (it has nothing, separated by commas)", or judged nothing and ended "see the problems above" with none above;
- κ by tag said "one class only" where the metric has no κ because its labels are not whole grades;
- a case whose only labels name a metric the config lacks (`TaskCompletoin`) was judged, then the labels named: it is
  not judged now, those labels skipped and named (with the metric meant) before any request, as other label faults are.

Real `tracejudge` processes; the judge is the simulator the run starts on 127.0.0.1 (real HTTP).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from helpers import write_flight_cases
import _forkserver

RUBRIC = {"type": "Rubric", "name": "grade", "criteria": "How helpful was the agent?", "scale": [1, 5]}


def _config(tmp: Path, n: int = 6) -> Path:
    cfg = {"dataset": {"path": str(write_flight_cases(tmp / "cases.jsonl", n))}, "metrics": [{"type": "TaskCompletion"}, RUBRIC],
           "judge": {"provider": "simulator", "model": "gpt-4o-mini"}, "cache": {"dir": str(tmp / "cache")}, "run": {"dir": str(tmp / "run")}}
    path = tmp / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _calibrate(tmp: Path, labels: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    out = tmp / "cal.json"
    out.unlink(missing_ok=True)
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "calibrate", str(_config(tmp)), "--labels", str(labels), "--json", str(out)],
                          capture_output=True, text=True, cwd=tmp, timeout=300, env={**os.environ, "COLUMNS": "200"})
    return proc, json.loads(out.read_text()) if out.exists() else {}


def _judged(tmp: Path) -> list[str]:
    path = tmp / "run-calibrate" / "results.jsonl"
    return sorted(json.loads(line)["case_id"] for line in path.read_text().splitlines()) if path.exists() else []


def test_a_case_whose_every_label_is_unusable_is_not_judged(tmp_path: Path) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,metric,label\n"
                      "c00,TaskCompletion,true\n"
                      "c01,TaskCompletion,7\n"  # out of a yes/no metric's range
                      "c02,grade,2.5\n"  # between two grades of 1..5
                      "c03,grade,0\n"  # 0 may be read as pass/fail: judged
                      "c04,TaskCompletion,1.5\n"
                      "c04,grade,1\n")  # one usable label: judged (0 and 1 on 1..5 are read as pass/fail)
    proc, got = _calibrate(tmp_path, labels)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _judged(tmp_path) == ["c00", "c03", "c04"]
    assert "labels: 2 labelled case(s) left out, not judged: each of their 2 label(s) is out of its metric's range" in proc.stderr, proc.stderr
    assert (got["total_labels"], got["matched"], got["out_of_range"], got["unmatched"]) == (6, 3, 3, 0), got
    assert got["cases_not_in_run"] == {}, got  # (counted out of range, not as cases the run lacks)
    assert sorted(got["problems"]) == [
        f"{labels}:3: label: 7 is out of range for metric 'TaskCompletion', which takes a yes/no label (true/false, or a number from 0 to 1)",
        f"{labels}:4: label: 2.5 is not a whole grade of metric 'grade', which takes a grade on its scale 1..5",
        f"{labels}:6: label: 1.5 is out of range for metric 'TaskCompletion', which takes a yes/no label (true/false, or a number from 0 to 1)",
    ], got["problems"]
    assert "no result of this run is case" not in proc.stdout


def test_a_labels_file_of_unusable_labels_alone_judges_nothing(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"case_id": "c01", "metric": "TaskCompletion", "label": -1}) + "\n"
                      + json.dumps({"case_id": "c02", "metric": "grade", "label": 9}) + "\n")
    proc, got = _calibrate(tmp_path, labels)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert not (tmp_path / "run-calibrate").exists()  # not a request spent
    assert "labels: 2 labelled case(s) left out, not judged" in proc.stderr, proc.stderr
    assert "none of the 2 label(s) matched a scored verdict (2 label(s) out of their metric's range)" in proc.stderr, proc.stderr
    assert got["verdict"] == "ERROR" and got["out_of_range"] == 2 and len(got["problems"]) == 2, got


def test_a_case_labelled_only_for_a_metric_the_config_lacks_is_not_judged(tmp_path: Path) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,metric,label\n"
                      "c00,TaskCompletion,true\n"
                      "c01,TaskCompletoin,yes\n"  # a slip: no such metric
                      "c02,grade,3\n"
                      "c03,TaskCompletoin,no\n"
                      "c03,grade,4\n")  # one label the run can use: judged
    proc, got = _calibrate(tmp_path, labels)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _judged(tmp_path) == ["c00", "c02", "c03"]  # (c01 never sent to the judge)
    assert (f"labels: 1 labelled case(s) left out, not judged: each of their labels names a metric the config does not have "
            f"({labels}:3: 'TaskCompletoin', did you mean TaskCompletion?)") in proc.stderr, proc.stderr
    # Named as the metric's fault where its first label is written, not as a case the run lacks.
    assert f"{labels}:3: metric: 2 label(s) for metric 'TaskCompletoin' (also line 5): no result of this run has that metric; " \
           "did you mean TaskCompletion?" in got["problems"], got["problems"]
    assert not any("no result of this run is case 'c01'" in p for p in got["problems"]), got["problems"]
    assert got["cases_not_in_run"] == {} and got["unknown_metrics"] == {"TaskCompletoin": 2}, got


def test_a_labels_file_for_metrics_the_config_lacks_alone_judges_nothing(tmp_path: Path) -> None:
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,metric,label\nc01,TaskCompletoin,yes\nc02,Grade2,3\n")
    proc, got = _calibrate(tmp_path, labels)
    assert proc.returncode == 2 and got["verdict"] == "ERROR", proc.stdout + proc.stderr
    assert not (tmp_path / "run-calibrate").exists()  # not a request spent
    assert "metric(s) 'Grade2', 'TaskCompletoin' that no result of the run has" in proc.stderr, proc.stderr
    assert f"{labels}:3: metric: 1 label(s) for metric 'Grade2': no result of this run has that metric; did you mean grade?" \
        in got["problems"], got["problems"]


def test_an_empty_labels_file_says_what_a_labels_file_needs(tmp_path: Path) -> None:
    for name, text in (("empty.csv", ""), ("blank.csv", "\r\n\r\n"), ("header.csv", "case_id,metric,label\r\n"), ("empty.jsonl", ""),
                       ("none.json", "[]\n")):
        labels = tmp_path / name
        labels.write_text(text)
        proc, _ = _calibrate(tmp_path, labels)
        assert proc.returncode == 2, (name, proc.stdout + proc.stderr)
        said = " ".join(proc.stderr.split())
        held = {"empty.csv": "is empty (0 bytes)", "blank.csv": "is empty (blank lines only)", "empty.jsonl": "is empty (0 bytes)",
                "header.csv": "holds a header row and no label row under it", "none.json": "holds an empty JSON array"}[name]
        assert f"error: {labels}: the labels file {held}: a labels file needs a header row naming its columns, case_id, metric and label" in said, said
        assert "it has nothing" not in said and "see the problems above" not in said
        assert not (tmp_path / "run-calibrate").exists(), name  # nothing judged


def test_kappa_by_tag_names_the_metrics_own_reason_for_having_none() -> None:
    from tracejudge.stages.judge.agreement import agreement_block
    from tracejudge.stages.judge.labels import Label, LabelSet

    # A graded metric whose scale the config does not give (a custom metric's): labels between its grades leave it without
    # a weighted κ, and every tag with it.
    grades = [1 + (i * 3) % 5 for i in range(24)]
    results = [{"case_id": f"c{i}", "trial": 0, "status": "ok", "tags": ["odd" if i % 2 else "even"],
                "scores": {"quality": {"value": (g - 1) / 4, "passed": g >= 3, "reason": "",
                                       "details": {"answers": {"q1": {"score": g, "reason": ""}}}}}} for i, g in enumerate(grades)]
    labels = LabelSet([Label(f"c{i}", "quality", g + 0.5, where=f"l.csv:{i + 2}") for i, g in enumerate(grades)], [])
    m = agreement_block(results, labels)["metrics"]["quality"]
    assert m["kappa"] is None and "not all whole numbers" in m["note"], m
    for tag in ("odd", "even"):
        assert m["by_tag"][tag]["kappa_why"].startswith("labels or grades not all whole numbers"), m["by_tag"]
    # Whole grades of one class in a tag stay "one class only"; a tag of one case "one case".
    same = LabelSet([Label(f"c{i}", "quality", float(g)) for i, g in enumerate(grades)], [])
    results[0]["tags"] = ["alone"]
    whole = agreement_block(results, same, scales={"quality": (1.0, 4.0)})["metrics"]["quality"]["by_tag"]
    assert whole["alone"]["kappa_why"] == "one case" and whole["odd"]["kappa"] is not None, whole


def test_a_labelled_case_id_one_slip_from_a_dataset_case_is_offered_as_a_run_offers_it(tmp_path: Path) -> None:
    # Calibrate judges only the labelled cases, so the case meant ('c01') had no result to offer: the dataset has it.
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,metric,label\nc00,TaskCompletion,true\nC01,TaskCompletion,true\nzz,TaskCompletion,true\n")
    proc, got = _calibrate(tmp_path, labels)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _judged(tmp_path) == ["c00"]
    assert got["problems"] == [f"{labels}:3: case_id: no result of this run is case 'C01'; did you mean 'c01'?",
                               f"{labels}:4: case_id: no result of this run is case 'zz'"], got["problems"]
    assert f"{labels}:3: case_id: no result of this run is case 'C01'; did you mean 'c01'?" in proc.stdout, proc.stdout


def test_a_slip_is_offered_when_no_label_names_a_dataset_case(tmp_path: Path) -> None:
    # A spreadsheet that stripped every id's leading zero leaves no labelled case in the dataset: nothing is judged,
    # and each label still offers the case meant (the hint came only once another label matched).
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,metric,label\nC00,TaskCompletion,true\nC01,TaskCompletion,false\nzz,TaskCompletion,true\n")
    proc, got = _calibrate(tmp_path, labels)
    assert _judged(tmp_path) == []
    slips = [f"{labels}:2: case_id: no result of this run is case 'C00'; did you mean 'c00'?",
             f"{labels}:3: case_id: no result of this run is case 'C01'; did you mean 'c01'?"]
    assert [p for p in got["problems"] if "did you mean" in p] == slips, got["problems"]
    assert all(s in proc.stdout for s in slips), proc.stdout + proc.stderr
