"""A labels file naming a metric in another case (`taskcompletion` for `TaskCompletion`) is read as that metric, and
calibrate says so: header names and `yes`/`PASS` labels are read in any case too. Its labelled cases were judged, then
every label of the metric was named as one for a metric the run lacks and left unmatched: requests paid for nothing.

Real `tracejudge` processes; the judge is the bundled simulator.
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


def _setup(tmp: Path, labels: str, metrics: list[dict[str, Any]] | None = None) -> Path:
    (tmp / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "q", "trace": {"steps": [], "output": "answer"}}) + "\n"
                                             for i in range(4)))
    (tmp / "labels.csv").write_text(labels)
    cfg = {"dataset": {"path": "cases.jsonl"}, "metrics": metrics or [{"type": "TaskCompletion"}, {"type": "Contains", "value": "answer"}],
           "judge": {"provider": "simulator"}, "run": {"dir": "run"}}
    (tmp / "c.yaml").write_text(yaml.safe_dump(cfg))
    return tmp / "c.yaml"


def _calibrate(tmp: Path, cfg: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    got = _forkserver.run([sys.executable, "-m", "tracejudge", "calibrate", str(cfg), "--labels", "labels.csv", "--json", "out.json"],
                         capture_output=True, text=True, cwd=tmp, timeout=300, env={**os.environ, "COLUMNS": "300"})
    return got, json.loads((tmp / "out.json").read_text())


def test_a_metric_named_in_another_case_is_read_as_the_runs_and_said(tmp_path: Path) -> None:
    cfg = _setup(tmp_path, "case_id,metric,label\nc0,taskcompletion,true\nc1,TASKCOMPLETION,false\nc2,TaskCompletion,true\n")
    got, out = _calibrate(tmp_path, cfg)
    assert got.returncode in (0, 1), got.stderr
    assert out["metrics"]["TaskCompletion"]["n"] == 3 and out["matched"] == 3 and not out["unknown_metrics"], out
    assert "labels.csv:2: metric: 1 label(s) for metric 'taskcompletion' read as the run's metric 'TaskCompletion' (the names differ " \
           "only in case)" in got.stdout
    assert "labels.csv:3: metric: 1 label(s) for metric 'TASKCOMPLETION' read as the run's metric 'TaskCompletion'" in got.stdout
    assert "no result of this run has that metric" not in got.stdout
    judged = [json.loads(line) for line in (tmp_path / "run-calibrate" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["case_id"] for r in judged) == ["c0", "c1", "c2"]


def test_a_label_now_conflicting_with_one_of_the_exact_name_is_named_and_left_out(tmp_path: Path) -> None:
    cfg = _setup(tmp_path, "case_id,metric,label\nc0,TaskCompletion,true\nc0,taskcompletion,false\nc1,TaskCompletion,true\n")
    got, out = _calibrate(tmp_path, cfg)
    assert out["metrics"]["TaskCompletion"]["n"] == 1
    assert any("labels.csv:3: label: false conflicts with line 2's true for case 'c0' metric 'TaskCompletion'" in p
               for p in out["problems"]), out["problems"]


def test_a_name_two_metrics_share_in_other_cases_stays_unknown(tmp_path: Path) -> None:
    metrics = [{"type": "TaskCompletion", "name": "tc"}, {"type": "TaskCompletion", "name": "TC"}]
    cfg = _setup(tmp_path, "case_id,metric,label\nc0,Tc,true\nc1,tc,true\n", metrics)
    got, out = _calibrate(tmp_path, cfg)
    assert out["metrics"]["tc"]["n"] == 1 and "Tc" not in out["metrics"]
    assert any(p.startswith("labels.csv:2: metric: 1 label(s) for metric 'Tc'") and "no result of this run has that metric" in p
               for p in out["problems"]), out["problems"]


def test_labels_that_name_a_folder_are_refused_as_a_folder_naming_where_the_path_came_from(tmp_path: Path) -> None:
    # `--labels .` said "no such file"; a config's judge.labels.path was named as if --labels had given it.
    cfg = _setup(tmp_path, "case_id,metric,label\nc0,TaskCompletion,true\n")
    (tmp_path / "labels").mkdir()
    folder = "is a folder; labels are one JSONL or CSV file: name the file"
    for extra, said in ((["--labels", "."], f"error: --labels .: {folder}"),
                        (["--labels", "nope.csv"], "error: --labels nope.csv: no such file"),
                        # (a config's labels file is checked with the config, the option that set it named)
                        (["--set", "judge.labels.path=labels"],
                         f"error: --set judge.labels.path=labels: judge.labels.path: {tmp_path / 'labels'} {folder}")):
        got = _forkserver.run([sys.executable, "-m", "tracejudge", "calibrate", str(cfg), *extra], capture_output=True, text=True,
                             cwd=tmp_path, timeout=120, env={**os.environ, "COLUMNS": "300"})
        assert (got.returncode, got.stderr.strip()) == (2, said), got.stderr


def test_labels_that_name_a_pipe_or_device_are_refused_as_such_not_as_missing(tmp_path: Path) -> None:
    # `--labels <(grep … labels.csv)` or /dev/null said "no such file" of a path that is there.
    cfg = _setup(tmp_path, "case_id,metric,label\nc0,TaskCompletion,true\n")
    os.mkfifo(tmp_path / "labels.fifo")
    why = "is not a regular file (a pipe or a device); the labels are read more than once: save them to a file and name it"
    for path in ("labels.fifo", os.devnull):
        got = _forkserver.run([sys.executable, "-m", "tracejudge", "calibrate", str(cfg), "--labels", path], capture_output=True,
                             text=True, cwd=tmp_path, timeout=120, env={**os.environ, "COLUMNS": "300"})
        assert (got.returncode, got.stderr.strip()) == (2, f"error: --labels {path}: {why}"), got.stderr
