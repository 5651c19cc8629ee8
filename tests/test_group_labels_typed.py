"""A metadata value that is text and one that is not, written alike (`"1"` and `1`), keep groups of their own.

A breakdown labelled a value that is not text with its JSON and a text with itself, so the text "1" and the
number 1 shared the group `1`. They are kept apart; the text shows in JSON quotes (`"1"`) only in a breakdown
that has both, so every other value keeps its label, its figures and its place (real processes and files,
resumed, rebuilt, and resumed from a checkpoint written before).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tracejudge.core.evalconfig import AggregateConfig
from tracejudge.core.records import CaseResult, Score
from tracejudge.stages.aggregate.fold import Aggregator
from tracejudge.stages.aggregate.state import STATE_FORMAT
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")
CONFIG = ("dataset: {path: d.jsonl}\nmetrics:\n  - {type: MaxToolCalls, max_calls: 0}\n"
          "aggregate: {group_by: [split]}\nrun: {dir: out}\n")


def _fold(values: list[object]) -> dict:
    agg = Aggregator(["m"], settings=AggregateConfig(group_by=["split"]))
    for i, v in enumerate(values):
        agg.fold(CaseResult(case_id=f"c{i}", scores={"m": Score(value=float(i % 2), passed=None, reason="r")}, metadata={"split": v}))
    return agg.summary()["breakdowns"]["metadata.split"]


def test_a_text_and_a_number_written_alike_are_two_groups() -> None:
    groups = _fold(["1", 1, "1", "x", 2, "true", True, None, "null", "[1, 2]", [1, 2]])
    assert {label: g["results"] for label, g in groups.items()} == {
        '"1"': 2, "1": 1, "x": 1, "2": 1, '"true"': 1, "true": 1, "null": 1, '"null"': 1, '"[1, 2]"': 1, "[1, 2]": 1}
    # a text that is itself a quoted "1" moves on again, so no two groups show one label
    assert sorted(_fold(["1", 1, '"1"'])) == ['"1"', '"\\"1\\""', "1"]

    # values that do not collide keep their labels and figures
    texts, numbers = _fold(["1", "1", "x", "1"]), _fold([1, 1, "x", 1])
    assert list(texts) == ["1", "x"] and list(numbers) == ["1", "x"]
    assert texts == numbers  # the same figures, intervals included: a group's sample is seeded by the label it shows
    assert list(_fold(["1 ", "[1,2]", "(missing)", '"x'])) == ["\"x", "((missing))", "1 ", "[1,2]"]


def _run(root: Path) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=root, capture_output=True, text=True, timeout=120)


def _write(root: Path, splits: list[object]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "d.jsonl", "w") as fh:
        for i, split in enumerate(splits):  # c0 makes one call (scores 0), the others none
            steps = [{"tool_calls": [{"name": "get"}]}] if i == 0 else []
            fh.write(json.dumps({"id": f"c{i}", "metadata": {"split": split}, "trace": {"steps": steps}}) + "\n")
    (root / "run.yaml").write_text(CONFIG)


def _as_before(run_dir: Path) -> None:
    """Make the checkpoint one written before metadata keys told a text from a number (aggregate state format 3)."""
    cp = json.loads((run_dir / "checkpoint.json").read_text())
    state = cp["aggregator"]
    state["format"] = 3
    for g in state["groups"]:
        if g["breakdown"] == "metadata.split" and g["value"] == '"1"':
            g["value"] = "1"  # the text "1" was labelled 1, and shared that group with the number
    merged: dict[str, dict] = {}
    for g in state["groups"]:
        merged.setdefault((g["breakdown"], g["value"]), g)
    state["groups"] = list(merged.values())
    (run_dir / "checkpoint.json").write_text(json.dumps(cp))


def test_a_run_reports_both_groups_and_resumes_from_checkpoints_old_and_new(tmp_path: Path) -> None:
    _write(tmp_path / "both", ["1", 1, 1, "y"])
    first = _run(tmp_path / "both")
    assert first.returncode in (0, 1), first.stderr
    out = tmp_path / "both" / "out"
    summary = json.loads((out / "summary.json").read_text())
    split = summary["breakdowns"]["metadata.split"]
    assert {label: (g["results"], g["metrics"]["MaxToolCalls"]["mean"]) for label, g in split.items()} == {
        '"1"': (1, 0.0), "1": (2, 1.0), "y": (1, 1.0)}
    report = (out / "report.md").read_text()
    assert '| "1" |' in report and "| 1 |" in report

    again = _run(tmp_path / "both")  # resumed from its own checkpoint
    assert again.returncode == first.returncode and "not reused" not in again.stderr, again.stderr
    assert json.loads((out / "summary.json").read_text()) == summary
    _as_before(out)  # a checkpoint whose group 1 may hold both is not trusted: rebuilt from results.jsonl
    old = _run(tmp_path / "both")
    # (Every state before the current format is rebuilt: format 3 lacks the exact sums the means are taken from.)
    assert old.returncode == first.returncode and f"state format 3, expected {STATE_FORMAT}" in old.stderr, old.stderr
    assert json.loads((out / "summary.json").read_text())["breakdowns"] == summary["breakdowns"]
