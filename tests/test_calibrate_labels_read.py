"""How `tracejudge calibrate` reads numeric labels of a yes/no metric, and lays out its figures at 80 columns.

- Labels 0, 0.5, 0.75, 1 on TaskCompletion (a yes/no metric) switched the metric to a graded comparison: κ n/a,
  accuracy by exact equality with the verdict's value, and `--threshold` changed nothing, though the README says a
  numeric label is a pass when >= the threshold. `judge.labels` in a run read them the same way.
- At 100 columns (piped output's default) and 80 the table lost its metric and n columns and cut headers and CIs
  ("quadrati", "0.100 [0.000, 0."), though no table may shorten a metric name or a figure.

Real `tracejudge` processes against the simulator over HTTP on 127.0.0.1 (`provider: openai` at its URL).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from tracejudge.simulator.server import SimulatorThread

from helpers import write_flight_cases
import _forkserver

N = 20
LABELS = [0, 0.5, 0.75, 1]


def tracejudge(*args: str, cwd: Path, columns: int = 400) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={**os.environ, "COLUMNS": str(columns)})


def write_config(tmp: Path, url: str, metrics: list[dict[str, Any]], **judge: Any) -> Path:
    cases = write_flight_cases(tmp / "cases.jsonl", N)
    cfg = {"dataset": {"path": str(cases)}, "metrics": metrics,
           "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": url + "/v1", "api_key_env": None, **judge},
           "cache": {"dir": str(tmp / "cache")}, "run": {"dir": str(tmp / "run")}}
    path = tmp / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def by_hand(labels: list[bool], verdicts: list[bool]) -> tuple[float, float]:
    """Accuracy and Cohen's κ, from their definitions: (p_o − p_e) / (1 − p_e)."""
    n = len(labels)
    observed = sum(a == b for a, b in zip(labels, verdicts, strict=True)) / n
    chance = (sum(labels) / n) * (sum(verdicts) / n) + (1 - sum(labels) / n) * (1 - sum(verdicts) / n)
    return observed, (observed - chance) / (1 - chance)


def test_numeric_labels_of_a_yes_no_metric_are_read_at_the_threshold(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator(yes_share=0.6)
    labels = {f"c{i:02d}": LABELS[i % 4] for i in range(N)}
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps({"case_id": c, "metric": "TaskCompletion", "label": v}) + "\n" for c, v in labels.items()))
    cfg = write_config(tmp_path, sim.url, [{"type": "TaskCompletion"}])
    seen = {}
    for threshold in (0.5, 0.7):
        out = tmp_path / f"cal-{threshold}.json"
        proc = tracejudge("calibrate", str(cfg), "--labels", str(path), "--threshold", str(threshold), "--json", str(out), cwd=tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        got = json.loads(out.read_text())
        passed = {c["case_id"]: c["passed"] for c in got["cases"]}
        accuracy, kappa = by_hand([labels[c] >= threshold for c in sorted(labels)], [passed[c] for c in sorted(labels)])
        m = got["metrics"]["TaskCompletion"]
        assert (m["kind"], m["kappa_kind"], m["n"], m["threshold"]) == ("yes_no", "cohen", N, threshold), m
        assert abs(m["accuracy"] - accuracy) < 1e-6 and abs(m["kappa"] - kappa) < 1e-6, (m, accuracy, kappa)
        assert f"TaskCompletion: yes/no; a label from 0 to 1 is a pass when >= {threshold:g}" in proc.stdout
        seen[threshold] = (m["accuracy"], m["kappa"])
    assert seen[0.5] != seen[0.7]  # the 0.5 labels change sides
    # `judge.labels` in a run reads them the same way.
    run_cfg = yaml.safe_load(cfg.read_text())
    run_cfg["judge"]["labels"] = {"path": str(path), "threshold": 0.7}
    cfg.write_text(yaml.safe_dump(run_cfg))
    proc = tracejudge("run", str(cfg), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    m = json.loads((tmp_path / "run" / "summary.json").read_text())["labels"]["metrics"]["TaskCompletion"]
    assert m["kind"] == "yes_no" and (m["accuracy"], m["kappa"]) == seen[0.7], m


def figures(m: dict[str, Any]) -> list[str]:
    """Each figure of a metric's row as calibrate writes it, CIs included."""
    got = []
    for key in ("accuracy", "kappa", "spearman"):
        if m.get(key) is not None:
            got.append(f"{m[key]:.3f}")
        ci = m.get(f"{key}_ci")
        if ci:
            got.append(f"[{ci[0]:.3f}, {ci[1]:.3f}]")
    return got


def test_the_agreement_table_keeps_every_name_and_figure_whole_at_80_columns(simulator: Callable[..., SimulatorThread],
                                                                            tmp_path: Path) -> None:
    sim = simulator()
    path = tmp_path / "labels.jsonl"
    with open(path, "w") as fh:
        for i in range(N):
            fh.write(json.dumps({"case_id": f"c{i:02d}", "metric": "TaskCompletion", "label": i % 3 == 0}) + "\n")
            fh.write(json.dumps({"case_id": f"c{i:02d}", "metric": "Rubric", "label": i % 11}) + "\n")
    cfg = write_config(tmp_path, sim.url, [{"type": "TaskCompletion"}, {"type": "Rubric", "criteria": "Is the reply clear?", "scale": [0, 10]}])
    first = tracejudge("calibrate", str(cfg), "--labels", str(path), "--json", str(tmp_path / "cal.json"), cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    metrics = json.loads((tmp_path / "cal.json").read_text())["metrics"]
    assert metrics["Rubric"]["kappa_kind"] == "quadratic" and len(metrics["Rubric"]["confusion"]["labels"]) == 11
    for columns in (100, 80, 50):
        out = tracejudge("calibrate", str(cfg), "--labels", str(path), cwd=tmp_path, columns=columns).stdout
        start = out.index("agreement with the labels (95% CIs)")
        table = out[start:out.index("\n", out.index("\nTaskCompletion", start) + 1)]  # up to the last metric's first line
        tail = out[start:]
        for name, m in metrics.items():
            assert re.search(rf"^{name}\b", tail, re.M), (columns, name, out)
            for figure in figures(m):
                assert figure in tail[:tail.index(f"{name}: confusion") if f"{name}: confusion" in tail else None], (columns, figure, out)
            assert m["kappa_kind"] in tail, (columns, out)
        assert all(len(line.rstrip()) <= columns for line in table.splitlines()), (columns, table)
        if columns >= 80:
            assert re.search(r"^metric +n +cases +accuracy +kappa", table, re.M), (columns, table)
        # The 11 x 11 confusion matrix is a grid of whole cells within the width, one row per label.
        grid = out[out.index("Rubric: confusion"):].splitlines()[1:13]
        assert all(len(line) <= columns and len(line.split()) == (11 if i == 0 else 12) for i, line in enumerate(grid)), (columns, grid)
