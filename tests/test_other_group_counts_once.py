"""A result counts once in a breakdown's "(other)" group, however many of its tags or fields fall into it.

With `aggregate.max_groups` reached, every new tag of a result maps to "(other)"; the result still
counts once there (as it does in a named group whose tag it carries twice), so "(other)"'s mean is
not weighted by tag count, and the checkpoint's counts stay within the result lines, so a resume
reuses it (real processes and files).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tracejudge.core.evalconfig import AggregateConfig
from tracejudge.core.records import CaseResult, Score
from tracejudge.stages.aggregate.fold import Aggregator
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")
CONFIG = "dataset: {path: d.jsonl}\nmetrics:\n  - {type: MaxToolCalls, max_calls: 0}\naggregate: {max_groups: 1}\nrun: {dir: out}\n"


def _workspace(root: Path) -> Path:
    # Case i carries tags a<i>, b<i>, c<i>; only a0 gets a named group. c0 makes one tool call, so it alone scores 0.
    with open(root / "d.jsonl", "w") as fh:
        for i in range(4):
            steps = [{"tool_calls": [{"name": "get"}]}] if i == 0 else []
            fh.write(json.dumps({"id": f"c{i}", "tags": [f"a{i}", f"b{i}", f"c{i}"], "trace": {"steps": steps}}) + "\n")
    (root / "run.yaml").write_text(CONFIG)
    return root


def _run(root: Path) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=root, capture_output=True, text=True, timeout=120)


def test_other_counts_each_result_once_and_the_finished_run_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    first = _run(root)
    assert first.returncode in (0, 1), first.stderr
    summary = json.loads((root / "out" / "summary.json").read_text())
    tags = summary["breakdowns"]["tag"]
    assert summary["results"] == 4
    assert {name: g["results"] for name, g in tags.items()} == {"a0": 1, "(other)": 4}  # c0 (by b0 and c0), c1, c2, c3
    other = tags["(other)"]["metrics"]["MaxToolCalls"]
    assert other["scored"] == 4
    assert other["mean"] == pytest.approx(0.75)  # not (2 × 0 + 9 × 1) / 11

    again = _run(root)
    assert again.returncode == first.returncode, again.stderr
    assert "checkpoint not reused" not in again.stderr, again.stderr
    assert json.loads((root / "out" / "summary.json").read_text()) == summary

    # Rebuilt from results.jsonl (no checkpoint): the same figures (the segments went with the checkpoint).
    (root / "out" / "checkpoint.json").unlink()
    rebuilt = _run(root)
    assert rebuilt.returncode == first.returncode, rebuilt.stderr
    refolded = json.loads((root / "out" / "summary.json").read_text())
    assert [refolded[k] for k in ("results", "metrics", "breakdowns")] == [summary[k] for k in ("results", "metrics", "breakdowns")]


def test_a_group_by_field_listed_twice_counts_each_result_once_in_its_groups() -> None:
    agg = Aggregator(["m"], settings=AggregateConfig(group_by=["domain", "domain"], by_tags=False, max_groups=1))
    for i in range(3):
        agg.fold(CaseResult(case_id=f"c{i}", scores={"m": Score(value=float(i == 0))}, metadata={"domain": f"d{i}"}))
    domain = agg.summary()["breakdowns"]["metadata.domain"]
    assert {name: g["results"] for name, g in domain.items()} == {"d0": 1, "(other)": 2}
    assert domain["(other)"]["metrics"]["m"]["scored"] == 2
    assert domain["d0"]["metrics"]["m"]["mean"] == 1.0


def test_pass_at_k_counts_each_case_once_in_other() -> None:
    agg = Aggregator(["m"], trials=2, settings=AggregateConfig(max_groups=1))
    for i in range(3):  # c0 falls in "(other)" by its tag b0 only; c1 and c2 by both their tags
        for trial in range(2):
            agg.fold(CaseResult(case_id=f"c{i}", trial=trial, tags=[f"a{i}", f"b{i}"], scores={"m": Score(value=1.0, passed=True)}))
    other = agg.summary()["breakdowns"]["tag"]["(other)"]
    assert other["results"] == 6
    assert {k: block["cases"] for k, block in other["metrics"]["m"]["pass_at_k"].items()} == {"1": 3, "2": 3}
