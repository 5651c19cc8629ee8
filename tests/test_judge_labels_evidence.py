"""Label agreement: faults a check against scikit-learn found.

- a judge agreeing with all of 200 labelled cases (both classes) had κ 1.000 [1.000, 1.000] marked "not informative"
  — every resample gave 1 — so `min_kappa` failed ("label more cases") while 199 of 200 passed; the rule is now about
  the evidence (cases, labels of both classes), not the interval's width;
- 0/1 labels on a Rubric scored 1..5 are read as pass/fail, but were range-checked as grades: every 0 label was left
  out as "out of range", leaving one label class (κ 0.0 instead of scikit-learn's 0.290);
- a label naming a trial the run does not have (`trial: 5`) was counted as unmatched, but no problem named it;
- one label between two grades (2.5 on a 1..5 Rubric, a typo or an average of two annotators) was kept as in range,
  and left the whole metric without a weighted κ ("the labels or the grades are not all whole numbers");
- a label field no result has (`metadata.rewrd`) gave no label and no problem: calibrate said "no label was read (see
  the problems above)" with nothing above.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.metrics import cohen_kappa_score
from tracejudge.stages.aggregate.gate import _kappa_check
from tracejudge.stages.judge.agreement import Pair, agreement_block, metric_agreement
from tracejudge.stages.judge.labels import Label, LabelSet, field_labels


def _pairs(n: int, wrong: int = 0) -> list[Pair]:
    return [Pair(f"c{i:03d}", 0, i % 2 == 0, (i % 2 == 0) != (i < wrong), 0.0, 0.0) for i in range(n)]


def _gate(m: dict[str, Any], least: float = 0.6) -> Any:
    return _kappa_check("TaskCompletion", least, {"labels": {"metrics": {"TaskCompletion": m}}})


def test_a_judge_agreeing_with_every_one_of_many_labels_passes_min_kappa() -> None:
    pairs = _pairs(200)
    m = metric_agreement("TaskCompletion", pairs, yes_no=True)
    assert m["kappa"] == cohen_kappa_score([p.label for p in pairs], [p.passed for p in pairs]) == 1.0
    assert m["kappa_ci"] == [1.0, 1.0], m  # every resample agrees: the interval is a point, and that is evidence
    assert m["kappa_ci_informative"] is True and "kappa_ci_why" not in m, m
    check = _gate(m)
    assert check.ok, check.detail
    one_off = metric_agreement("TaskCompletion", _pairs(200, wrong=1), yes_no=True)
    assert one_off["kappa_ci_informative"] is True and _gate(one_off).ok


def test_two_agreeing_labels_and_labels_of_one_class_stay_not_informative() -> None:
    two = metric_agreement("TaskCompletion", _pairs(2), yes_no=True)
    assert two["kappa"] == 1.0 and two["kappa_ci_informative"] is False and "only 2 labelled cases" in two["kappa_ci_why"], two
    assert not _gate(two).ok and "label more cases" in _gate(two).detail
    # Every label `pass`, the verdicts mixed: κ is 0 whatever the judge says (scikit-learn's too).
    pairs = [Pair(f"c{i:03d}", 0, True, i % 3 != 0, 0.0, 0.0) for i in range(60)]
    m = metric_agreement("TaskCompletion", pairs, yes_no=True)
    assert m["kappa"] == cohen_kappa_score([p.label for p in pairs], [p.passed for p in pairs]) == 0.0
    assert m["kappa_ci_informative"] is False and "every label is pass" in m["kappa_ci_why"], m
    # The gate says what to add: labels of the other class, not "more cases" (there are 60).
    assert "add labels for cases that should fail" in _gate(m).detail and "label more cases" not in _gate(m).detail
    assert not _gate(m, least=0.0).ok  # not even a bar of 0 passes on it
    # Graded labels of one grade alike.
    graded = [Pair(f"c{i:03d}", 0, 3.0, None, 0.0, float(1 + i % 5)) for i in range(40)]
    g = metric_agreement("quality", graded, scale=(1.0, 4.0))
    assert g["kind"] == "graded" and g["kappa"] == 0.0 and g["kappa_ci_informative"] is False, g
    assert "every label is 3" in g["kappa_ci_why"], g


def _rubric_results(grades: list[int], trials: int = 1) -> list[dict[str, Any]]:
    """Results of a Rubric scored 1..5 (passing from grade 3: value 0.5), one per case and trial."""
    return [{"case_id": f"c{i}", "trial": t, "status": "ok", "tags": [],
             "scores": {"quality": {"value": (g - 1) / 4, "passed": g >= 3, "reason": "",
                                    "details": {"answers": {"q1": {"score": g, "reason": ""}}}}}}
            for i, g in enumerate(grades) for t in range(trials)]


def test_0_1_labels_on_a_1_to_5_rubric_are_read_and_range_checked_as_pass_fail() -> None:
    grades = [1 + (i * 3) % 5 for i in range(20)]
    results = _rubric_results(grades)
    truth = [i % 3 == 0 for i in range(20)]
    scales = {"quality": (1.0, 4.0)}
    as01 = LabelSet([Label(f"c{i}", "quality", float(b), where=f"l.jsonl:{i + 1}", text=str(int(b))) for i, b in enumerate(truth)], [])
    astf = LabelSet([Label(f"c{i}", "quality", b, where=f"l.jsonl:{i + 1}") for i, b in enumerate(truth)], [])
    got01 = agreement_block(results, as01, scales=scales)
    gottf = agreement_block(results, astf, scales=scales)
    assert got01["problems"] == [] and "out_of_range" not in got01 and got01["matched"] == 20, got01["problems"]
    m = got01["metrics"]["quality"]
    passed = [g >= 3 for g in grades]
    assert m["reading"] == "pass/fail" and m["n"] == 20, m
    assert m["kappa"] == round(cohen_kappa_score(truth, passed), 6) and m["accuracy"] == float(np.mean(np.equal(truth, passed))), m
    same = ("n", "cases", "accuracy", "accuracy_ci", "kappa", "kappa_ci", "confusion")
    assert {k: m[k] for k in same} == {k: gottf["metrics"]["quality"][k] for k in same}
    # Whole grades of the scale stay grades (1..5 labels), checked against the scale.
    graded = LabelSet([Label(f"c{i}", "quality", float(1 + i % 5)) for i in range(19)] + [Label("c19", "quality", 0.0, where="l.jsonl:20")], [])
    got = agreement_block(results, graded, scales=scales)
    assert got["metrics"]["quality"]["reading"] == "grades" and got["out_of_range"] == 1, got


def test_a_label_for_a_trial_the_run_does_not_have_is_named() -> None:
    results = _rubric_results([1 + i % 5 for i in range(12)], trials=2)
    labels = LabelSet([Label(f"c{i}", "quality", float(1 + i % 5), where=f"l.jsonl:{i + 1}") for i in range(1, 12)]
                      + [Label("c0", "quality", 2.0, trial=5, where="l.jsonl:13"), Label("c0", "quality", 1.0, trial=1, where="l.jsonl:14")], [])
    got = agreement_block(results, labels, scales={"quality": (1.0, 4.0)})
    assert got["unmatched"] == 1 and got["problem_count"] == 1, got
    assert got["problems"] == ["l.jsonl:13: trial: no result of this run is trial 5 of case 'c0' (its trials in the run: 0, 1; "
                               "trials count from 0), so the label is unmatched"], got["problems"]


def test_a_label_between_two_grades_is_named_and_left_out_not_the_metrics_kappa() -> None:
    grades = [1 + (i * 3) % 5 for i in range(24)]
    results = _rubric_results(grades)
    labels = LabelSet([Label(f"c{i}", "quality", float(g), where=f"l.csv:{i + 2}") for i, g in enumerate(grades[:23])]
                      + [Label("c23", "quality", 2.5, where="l.csv:25", text="2.5")], [])
    got = agreement_block(results, labels, scales={"quality": (1.0, 4.0)})
    assert got["problems"] == ["l.csv:25: label: 2.5 is not a whole grade of metric 'quality', which takes a grade on its scale 1..5"]
    assert (got["matched"], got["out_of_range"]) == (23, 1), got
    m = got["metrics"]["quality"]
    assert (m["kind"], m["kappa_kind"], m["n"]) == ("graded", "quadratic", 23), m
    assert m["kappa"] == round(cohen_kappa_score(grades[:23], grades[:23], weights="quadratic"), 6), m


def test_a_label_field_no_result_has_is_named_with_the_field_it_may_be_a_slip_for() -> None:
    results = [{"case_id": f"c{i}", "trial": 0, "metadata": {"reward": float(i % 2), "labels": {"correct": True}}} for i in range(3)]
    got = field_labels(results, {"TaskCompletion": "metadata.rewrd", "Other": "metadata.labels.corect"})
    assert got.labels == [] and got.unreadable == 0, got
    assert got.problems == ["TaskCompletion=metadata.rewrd: no result of this run has a value there (none of its 3); did you mean metadata.reward?",
                            "Other=metadata.labels.corect: no result of this run has a value there (none of its 3); did you mean "
                            "metadata.labels.correct?"], got.problems
    # A field some results have is no problem: the others are simply not labelled.
    assert field_labels(results + [{"case_id": "c9", "trial": 0, "metadata": {}}], {"TaskCompletion": "metadata.reward"}).problems == []
