"""Agreement with labels where a verdict combines several, where a labels file has problems, and where κ is undefined.

- A graded label was compared with the grade in `details.answers`: sample 0's under `judge.samples`, the
  first-listed model's under a panel aggregated by mean/all/any — so κ and ρ changed with the order of the
  models. It is now compared with the grade the score's value stands for on the metric's scale.
- A second, different label for the same (case, metric, trial) silently replaced the first; `"trial": 0.7`
  was read as trial 0 and `"trial": true` as trial 1. They are now named in `problems` and left out.
- With every label and every verdict `pass`, the `min_kappa` gate told the user to configure labels.

Real runs of `tracejudge calibrate` against the judge simulator (`provider: simulator`), over real HTTP.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from tracejudge.entrypoints.cli import main
from tracejudge.stages.judge.labels import load_label_file

N = 20
RUBRIC = {"type": "Rubric", "criteria": "Did the agent book the right flight?", "scale": [0, 3]}


def write_cases(path: Path, n: int = N) -> Path:
    with open(path, "w") as fh:
        for i in range(n):
            steps = [{"tool_calls": [{"name": "search", "arguments": {"q": f"flight {i}"}, "result": f"found AB{i}"}]},
                     {"tool_calls": [{"name": "book", "arguments": {"id": f"AB{i}"}, "result": "ok"}], "output": f"Booked AB{i}"}]
            fh.write(json.dumps({"id": f"c{i:02d}", "input": f"Book flight number {i} for me.", "tags": ["even" if i % 2 == 0 else "odd"],
                                 "metadata": {"grade": i % 4}, "trace": {"steps": steps}}) + "\n")
    return path


def calibrate(tmp: Path, name: str, judge: dict[str, Any], *args: str, metrics: list[dict[str, Any]] | None = None,
              assertions: dict[str, Any] | None = None) -> tuple[int, dict[str, Any], Path]:
    cfg: dict[str, Any] = {"dataset": {"path": str(tmp / "cases.jsonl")}, "metrics": metrics or [RUBRIC],
                           "judge": {"provider": "simulator", "model": "gpt-4o-mini", **judge},
                           "cache": {"dir": str(tmp / "cache")}, "run": {"dir": str(tmp / name)}}
    if assertions:
        cfg["assertions"] = assertions
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp / f"{name}.json"
    code = main(["calibrate", str(path), *args, "--json", str(out)])
    return code, json.loads(out.read_text()), tmp / name


def scores(run_dir: Path, metric: str) -> dict[str, dict[str, Any]]:
    return {(r := json.loads(line))["case_id"]: r["scores"][metric] for line in (run_dir / "results.jsonl").read_text().splitlines()}


def whole(grades: list[int]) -> int:
    """The mean grade rounded to the nearest whole grade, a half going to the lower one (exact arithmetic)."""
    return math.ceil(Fraction(sum(grades), len(grades)) - Fraction(1, 2))


FIGURES = ("n", "accuracy", "accuracy_ci", "kappa", "kappa_ci", "spearman", "spearman_ci", "confusion", "by_tag", "disagreeing")


@pytest.mark.parametrize("how", ["mean", "all", "any"])
def test_a_panels_graded_agreement_does_not_depend_on_the_order_of_its_models(tmp_path: Path, how: str) -> None:
    write_cases(tmp_path / "cases.jsonl")
    models = ["simulator:m1", "simulator:m2", "simulator:m3"]
    got = {}
    for name, order in (("ab", models), ("ba", models[::-1])):
        judge = {"models": order, "aggregate": how, "simulator": {"noise": 0.35}}
        code, block, run_dir = calibrate(tmp_path, name, judge, "--labels-field", "Rubric=metadata.grade")
        assert code == 0 and block["matched"] == N
        got[name] = (block, scores(run_dir, "Rubric"))
    (a, sa), (b, sb) = got["ab"], got["ba"]
    assert {k: sa[k]["value"] for k in sa} == pytest.approx({k: sb[k]["value"] for k in sb})  # the same verdicts, listed otherwise
    assert {f: a["metrics"]["Rubric"].get(f) for f in FIGURES} == {f: b["metrics"]["Rubric"].get(f) for f in FIGURES}
    assert a["metrics"]["Rubric"]["kappa_kind"] == "quadratic"
    combine = {"mean": whole, "all": min, "any": max}[how]
    first_differs = 0
    for row in a["cases"]:
        s = sa[row["case_id"]]
        grades = [m["answers"]["q1"] for m in s["details"]["panel"]["models"].values()]
        assert row["grade"] == combine(grades), (row, grades)
        first_differs += grades[0] != row["grade"]
    assert first_differs > 0  # the noise made the first-listed model's grade differ from the panel's: this case used to count it


def test_sampled_verdicts_are_compared_with_the_samples_combined_grade(tmp_path: Path) -> None:
    write_cases(tmp_path / "cases.jsonl")
    code, block, run_dir = calibrate(tmp_path, "rub", {"samples": 3, "temperature": 0.7, "simulator": {"noise": 0.4}},
                                     "--labels-field", "Rubric=metadata.grade")
    assert code == 0 and block["matched"] == N
    sampled = scores(run_dir, "Rubric")
    first_differs = 0
    for row in block["cases"]:
        grades = sampled[row["case_id"]]["details"]["samples"]["answers"]["q1"]
        assert row["grade"] == whole(grades), (row, grades)
        assert row["value"] == pytest.approx(sum(grades) / 3 / 3)  # the score value is the mean grade on [0, 3]
        first_differs += grades[0] != row["grade"]
    assert first_differs > 0
    # The figures are those of the combined grades against the labels.
    from sklearn.metrics import cohen_kappa_score

    labels = [int(c["label"]) for c in block["cases"]]
    combined = [whole(sampled[c["case_id"]]["details"]["samples"]["answers"]["q1"]) for c in block["cases"]]
    assert block["metrics"]["Rubric"]["kappa"] == round(cohen_kappa_score(labels, combined, weights="quadratic"), 6)


def test_label_file_problems_are_named_and_conflicting_labels_left_out(tmp_path: Path) -> None:
    write_cases(tmp_path / "cases.jsonl")
    labels = tmp_path / "labels.jsonl"
    rows = [{"case_id": "c00", "metric": "TaskCompletion", "label": True},
            {"case_id": "c05", "metric": "TaskCompletion", "label": 0},
            {"case_id": "c05", "metric": "TaskCompletion", "label": 1},           # line 3: conflicts with line 2
            {"case_id": "c06", "metric": "TaskCompletion", "label": False, "trial": 0.7},
            {"case_id": "c07", "metric": "TaskCompletion", "label": True, "trial": True},
            {"case_id": "c08", "metric": "TaskCompletion", "label": "pass"},
            {"case_id": "c08", "metric": "TaskCompletion", "label": True},        # line 7: repeats line 6
            {"case_id": "c09", "metric": "TaskCompletion", "label": False, "trial": 1.0},
            {"case_id": "c10", "metric": "TaskCompletion", "label": False, "trial": -1}]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = load_label_file(labels)
    assert sorted((lab.case_id, lab.value, lab.trial) for lab in got.labels) == [("c00", True, None), ("c08", True, None), ("c09", False, 1)]
    assert [p.split(": ")[0] for p in got.problems] == [f"{labels}:{n}" for n in (3, 4, 5, 7, 9)], got.problems
    by_line = {int(p.split(": ")[0].rsplit(":", 1)[1]): p for p in got.problems}
    assert by_line[3].startswith(f"{labels}:3: label: ") and "conflicts with line 2" in by_line[3] and "both left out" in by_line[3]
    assert by_line[4] == f"{labels}:4: trial: 0.7 is not a whole number"
    assert by_line[5] == f"{labels}:5: trial: true is a boolean, not a trial number"
    assert "repeats line 6" in by_line[7] and "counted once" in by_line[7]
    assert by_line[9] == f"{labels}:9: trial: -1 is negative"
    # Through calibrate: the problems are in the block, and the left-out labels are not counted.
    code, block, _ = calibrate(tmp_path, "cal", {}, "--labels", str(labels), metrics=[{"type": "TaskCompletion"}])
    assert code == 0 and block["total_labels"] == 3 and block["problem_count"] == 6
    # c09's trial 1 has no verdict (a run of one trial): unmatched, and named.
    assert block["problems"] == got.problems + [f"{labels}:8: trial: no result of this run is trial 1 of case 'c09' (its trial in the "
                                                "run: 0; trials count from 0), so the label is unmatched"]
    assert {c["case_id"] for c in block["cases"]} == {"c00", "c08"} and block["unmatched"] == 1
    # A CSV is held to the same rules.
    csv = tmp_path / "labels.csv"
    csv.write_text("case_id,metric,label,trial\na,m,yes,\na,m,no,\nb,m,1,0.5\nc,m,1,1\n")
    got = load_label_file(csv)
    assert [(lab.case_id, lab.trial) for lab in got.labels] == [("c", 1)]
    assert got.problems[0].startswith(f"{csv}:3: label: ") and "conflicts with line 2" in got.problems[0]
    assert got.problems[1] == f"{csv}:4: trial: '0.5' is not a whole number"


def test_kappa_undefined_with_one_class_says_why_not_to_configure_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_cases(tmp_path / "cases.jsonl")
    metrics = [{"type": "TaskCompletion"}]
    # A run of the flawless simulator: label true exactly the cases it passes, so every label and every verdict is `pass`.
    code, _, run_dir = calibrate(tmp_path, "truth", {}, "--labels-field", "TaskCompletion=metadata.grade", metrics=metrics)
    passing = [c for c, s in scores(run_dir, "TaskCompletion").items() if s["passed"]]
    assert len(passing) >= 3
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"case_id": c, "metric": "TaskCompletion", "label": True}) + "\n" for c in passing))
    capsys.readouterr()
    code, block, _ = calibrate(tmp_path, "g", {"labels": {"path": str(labels)}}, metrics=metrics,
                               assertions={"metrics": {"TaskCompletion": {"min_kappa": 0.6}}})
    run_dir = Path(block["run_dir"])  # (a labels file alone: only the labelled cases, in g-calibrate)
    out = capsys.readouterr().out
    m = block["metrics"]["TaskCompletion"]
    assert code == 1 and m["accuracy"] == 1.0 and m["kappa"] is None
    assert "only one class" in m["note"] and "pass" in m["note"]
    detail = next(c["detail"] for c in json.loads((run_dir / "summary.json").read_text())["verdict"]["checks"]
                  if c["name"] == "TaskCompletion min_kappa")
    assert "configure judge.labels" not in detail and "calibrate --labels" not in detail, detail
    assert "only one class" in detail and "fail" in detail and "required kappa >= 0.6" in detail, detail
    assert "FAIL TaskCompletion min_kappa" in out and "configure judge.labels" not in out
    # Without any label for the metric, the hint to configure labels stays.
    from tracejudge.stages.aggregate.gate import _kappa_check

    check = _kappa_check("TaskCompletion", 0.6, {})
    assert not check.ok and "configure judge.labels" in check.detail


def _combined_result(cid: str, first: tuple[str, list[int]], second: tuple[str, list[int]]) -> dict:
    """A Rubric score (scale 1..5) of a two-model `mean` panel, each model sampled: its samples' grades as written."""
    def member(grades: list[int]) -> dict:
        values = [(g - 1) / 4 for g in grades]
        return {"value": sum(values) / len(values), "answers": {"R1": {"score": grades[0]}}}
    models = {first[0]: member(first[1]), second[0]: member(second[1])}
    value = sum(m["value"] for m in models.values()) / 2
    head = models[first[0]]
    samples = {"n": len(first[1]), "values": [(g - 1) / 4 for g in first[1]], "answers": {"R1": list(first[1])}}
    return {"case_id": cid, "trial": 0, "status": "ok",
            "scores": {"quality": {"value": value, "passed": value >= 0.5, "reason": "",
                                   "details": {"answers": head["answers"], "samples": samples,
                                               "panel": {"aggregate": "mean", "models": models}}}}}


def test_a_sampled_mean_panels_grade_comes_from_the_metrics_scale_in_either_order() -> None:
    # With samples and a `mean` panel, the scale was read from the first-listed model's samples alone; when they showed
    # one grade, every verdict mapped to that model's grade: grade 1 in one order, 2 in the other, for the same value.
    from tracejudge.stages.judge.agreement import metric_scales, pair_up
    from tracejudge.stages.judge.labels import Label, LabelSet

    scales = metric_scales([{"type": "Rubric", "name": "quality", "criteria": "x", "scale": [1, 5]}])
    assert scales == {"quality": (1.0, 4.0)} and metric_scales([{"type": "Rubric", "criteria": "x"}]) == {"Rubric": (1.0, 4.0)}
    labels = LabelSet([Label(f"b{i}", "quality", 1.0) for i in range(3)], [])
    grades = []
    for order in ((("g1", [1, 1]), ("g2", [2, 2])), (("g2", [2, 2]), ("g1", [1, 1]))):
        results = [_combined_result(f"b{i}", *order) for i in range(3)]
        pairs, _ = pair_up(results, labels, scales)
        grades.append([p.grade for p in pairs["quality"]])
    assert grades == [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]  # value 0.125 is grade 1.5 on 1..5: a half goes to the lower grade


def test_a_trial_label_that_differs_from_its_case_label_is_named_and_answers_its_trial(tmp_path: Path) -> None:
    # No conflict (both are kept: the trial's answers its trial, the case's the others), but a user who wrote both
    # for a one-trial run learns that the case's label answers nothing there.
    labels = tmp_path / "labels.jsonl"
    rows = [{"case_id": "a", "metric": "m", "label": True},
            {"case_id": "a", "metric": "m", "label": False, "trial": 0},
            {"case_id": "b", "metric": "m", "label": True},
            {"case_id": "b", "metric": "m", "label": 1, "trial": 0}]  # the same label: nothing to say
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = load_label_file(labels)
    assert {(lab.case_id, lab.value, lab.trial) for lab in got.labels} == {("a", False, 0), ("a", True, None), ("b", 1.0, 0), ("b", True, None)}
    assert got.problems == [f"{labels}:2: label: false for case 'a' metric 'm' trial 0 differs from line 1's true for the "
                            "whole case: trial 0 takes this one"]


def test_a_repeat_of_a_conflicting_label_is_not_said_to_count(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    rows = [{"case_id": "a", "metric": "m", "label": True}, {"case_id": "a", "metric": "m", "label": False},
            {"case_id": "a", "metric": "m", "label": True}]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = load_label_file(labels)
    assert got.labels == [] and len(got.problems) == 2
    assert "conflicts with line 1" in got.problems[0]
    assert "repeats line 1" in got.problems[1] and "left out with it" in got.problems[1] and "counted once" not in got.problems[1]


def test_a_repeat_before_a_conflict_and_a_trial_in_conflict_are_said_right_once(tmp_path: Path) -> None:
    # Line 2 repeats line 1 before line 3 conflicts with both: left out, not "counted once". Trial 0's two labels
    # conflict, so the case's label answers trial 0: no "takes this one" for it. And a set made again from resolved
    # labels (`agreement.run_labels` puts sources together) names nothing twice.
    from tracejudge.stages.judge.labels import LabelSet

    labels = tmp_path / "labels.jsonl"
    rows = [{"case_id": "a", "metric": "m", "label": True}, {"case_id": "a", "metric": "m", "label": True},
            {"case_id": "a", "metric": "m", "label": False},
            {"case_id": "b", "metric": "m", "label": True}, {"case_id": "b", "metric": "m", "label": False, "trial": 0},
            {"case_id": "b", "metric": "m", "label": True, "trial": 0},
            {"case_id": "c", "metric": "m", "label": True}, {"case_id": "c", "metric": "m", "label": False, "trial": 1}]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = load_label_file(labels)
    by_line = {int(p.split(": ")[0].rsplit(":", 1)[1]): p for p in got.problems}
    assert sorted(by_line) == [2, 3, 6, 8], got.problems
    assert "left out with it" in by_line[2] and "counted once" not in by_line[2]
    assert "conflicts with line 5" in by_line[6]
    assert "trial 1 takes this one" in by_line[8]
    assert {(lab.case_id, lab.trial) for lab in got.labels} == {("b", None), ("c", None), ("c", 1)}
    again = LabelSet(got.labels, got.problems)
    assert again.problems == got.problems
