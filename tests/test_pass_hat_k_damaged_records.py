"""pass^k over τ-bench's GPT-4o airline file with two records damaged: an unreadable record (`invalid_input`) is no
sample of the agent, so it is left out (no metadata, so no task) and its task, one trial short, has too few trials for
pass^4; every report says what the figures are computed over, unreadable records included."""

from __future__ import annotations

import copy
import json
import urllib.request
from math import comb
from pathlib import Path
from typing import Any

import pytest
import yaml
from _runs import view_server
from tracejudge.entrypoints.cli import main

DAMAGED = {(5, 0), (7, 0)}  # (task_id, trial) of the records whose second message loses its role


def _damaged_file(tau_paths: tuple[Path, Path], root: Path) -> tuple[Path, list[dict[str, Any]]]:
    records = json.loads(tau_paths[0].read_text())
    out = copy.deepcopy(records)
    hit = 0
    for r in out:
        if (r["task_id"], r["trial"]) in DAMAGED:
            r["traj"][1]["role"] = None
            hit += 1
    assert hit == len(DAMAGED)
    path = root / "airline-damaged.json"
    path.write_text(json.dumps(out, indent=1))
    return path, records


def test_unreadable_records_are_left_out_of_pass_hat_k_and_the_reports_say_so(
        tau_paths: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, records = _damaged_file(tau_paths, tmp_path)
    metrics = [{"type": "RecordedReward"}, {"type": "PassHatK", "metric": "RecordedReward", "k": 4, "group_by": "task_id"},
               {"type": "PassHatK", "metric": "RecordedReward", "k": 1, "group_by": "task_id"}]
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(path), "format": "tau-bench"}, "metrics": metrics,
                                   "run": {"dir": str(tmp_path / "run"), "processes": 1}}))
    rc = main(["run", str(cfg), "--no-progress"])
    terminal = capsys.readouterr().out
    assert rc == 1  # (the gate's max_invalid_share: the file holds records to fix)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == {"invalid_input": 2, "ok": 198}

    # By hand, from the intact records: the damaged ones count neither as passes nor as failures.
    n: dict[int, int] = {}
    c: dict[int, int] = {}
    for r in records:
        if (r["task_id"], r["trial"]) in DAMAGED:
            continue
        n[r["task_id"]] = n.get(r["task_id"], 0) + 1
        c[r["task_id"]] = c.get(r["task_id"], 0) + (r["reward"] == 1.0)
    full = [t for t in n if n[t] >= 4]
    hat4 = summary["pass_at_k"]["pass^4(RecordedReward)"]
    assert (hat4["cases"], hat4["too_few_trials"], hat4["results_without_key"]) == (48, 2, 2)
    assert hat4["value"] == pytest.approx(sum(comb(c[t], 4) for t in full) / 48)
    hat1 = summary["pass_at_k"]["pass^1(RecordedReward)"]
    assert (hat1["cases"], hat1["too_few_trials"]) == (50, 0)
    assert hat1["value"] == pytest.approx(sum(c[t] / n[t] for t in n) / 50)

    # Each report says what the figures are over, not "cases with a scored trial", and that unreadable records are out.
    md = (tmp_path / "run" / "report.md").read_text()
    html = (tmp_path / "run" / "report.html").read_text()
    flat = " ".join(terminal.split())
    with view_server(str(tmp_path / "run")) as url, urllib.request.urlopen(url + "/run/run", timeout=60) as reply:
        page = reply.read().decode()
    for text in (md, html.replace("&#x27;", "'"), page.replace("&#x27;", "'"), flat):
        assert "averaged over cases with a scored trial" not in text
        assert "the mean, over the cases with at least k trials" in text
        assert "unreadable record (invalid_input, no sample of the agent)" in text
    assert "mean over cases with k or more trials" in flat
