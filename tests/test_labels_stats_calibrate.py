"""How `tracejudge calibrate` measures verdicts against labels: the faults a tester found, each checked against
scikit-learn and statsmodels.

- quadratic-weighted κ spaced grades by their rank among the grades present (labels 1, 2, 5: 5 next to 2);
- a label without `trial` made each (case, trial) a pair and the bootstrap resampled them: n inflated, CIs too narrow;
- 2 of 2 agreeing gave `1.000 [1.000, 1.000]` and `min_kappa` passed on it;
- no label matching a verdict (a mistyped metric, unknown case ids) exited 0 with `verdict: PASS`;
- labels of only 0 and 1 on a graded Rubric with `scale: [0, 4]` were read as pass/fail;
- `RUN_DIR-calibrate` counted earlier label files' cases in the judge checks.

Real `tracejudge` processes; the judge is the simulator the run starts on 127.0.0.1 (real HTTP).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from helpers import write_flight_cases
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.proportion import proportion_confint
import _forkserver

RUBRIC = {"type": "Rubric", "name": "grade", "criteria": "How helpful was the agent?", "scale": [1, 5]}


def tracejudge(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={**os.environ, "COLUMNS": "200"})


def write_config(tmp: Path, metrics: list[dict[str, Any]], n: int = 60, trials: int = 1, assertions: dict[str, Any] | None = None,
                 name: str = "c") -> Path:
    cases = write_flight_cases(tmp / "cases.jsonl", n)
    cfg: dict[str, Any] = {"dataset": {"path": str(cases)}, "metrics": metrics,
                           "judge": {"provider": "simulator", "model": "gpt-4o-mini"},
                           "cache": {"dir": str(tmp / "cache")}, "run": {"dir": str(tmp / "run"), "trials": trials}}
    if assertions:
        cfg["assertions"] = {"metrics": assertions}
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def write_labels(path: Path, rows: list[tuple[str, str, Any]]) -> Path:
    path.write_text("".join(json.dumps({"case_id": c, "metric": m, "label": v}) + "\n" for c, m, v in rows))
    return path


def calibrate(tmp: Path, cfg: Path, labels: Path, out: str = "cal.json", *more: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = tracejudge("calibrate", cfg, "--labels", labels, "--json", tmp / out, *more, cwd=tmp)
    return proc, json.loads((tmp / out).read_text()) if (tmp / out).exists() else {}


def grades_of(got: dict[str, Any], metric: str) -> dict[str, int]:
    return {c["case_id"]: int(c["grade"]) for c in got["cases"] if c["metric"] == metric}


def test_quadratic_kappa_weighs_grades_by_the_metric_s_whole_scale(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, [RUBRIC])
    first = write_labels(tmp_path / "all.jsonl", [(f"c{i:02d}", "grade", 3) for i in range(60)])
    proc, got = calibrate(tmp_path, cfg, first, "all.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    verdict = grades_of(got, "grade")
    # Cases whose verdicts are 1, 2 or 5, labelled with 1, 2 or 5 only: grades 3 and 4 occur nowhere.
    chosen = sorted(c for c, g in verdict.items() if g in (1, 2, 5))
    assert len(chosen) >= 15, verdict
    shift = {1: 2, 2: 5, 5: 2}
    labels = {c: verdict[c] if i % 3 else shift[verdict[c]] for i, c in enumerate(chosen)}
    y, v = [labels[c] for c in chosen], [verdict[c] for c in chosen]
    whole = cohen_kappa_score(y, v, weights="quadratic", labels=[1, 2, 3, 4, 5])
    by_rank = cohen_kappa_score(y, v, weights="quadratic")  # (what was printed: the grades present spaced by rank)
    assert abs(whole - by_rank) > 0.01, (whole, by_rank)
    least = round((whole + by_rank) / 2, 4)  # a min_kappa between the two: the gate's verdict depends on the weights
    cfg = write_config(tmp_path, [RUBRIC], assertions={"grade": {"min_kappa": least}}, name="gated")
    path = write_labels(tmp_path / "grades.jsonl", [(c, "grade", labels[c]) for c in chosen])
    proc, got = calibrate(tmp_path, cfg, path)
    m = got["metrics"]["grade"]
    assert m["kappa_kind"] == "quadratic" and m["kappa_labels"] == [1, 2, 3, 4, 5], m
    assert abs(m["kappa"] - whole) < 1e-6, (m["kappa"], whole, by_rank)
    for tag in ("even", "odd"):  # by tag, with the same weights
        ix = [i for i, c in enumerate(chosen) if (int(c[1:]) % 2 == 1) == (tag == "odd")]
        ref = cohen_kappa_score([y[i] for i in ix], [v[i] for i in ix], weights="quadratic", labels=[1, 2, 3, 4, 5])
        assert abs(m["by_tag"][tag]["kappa"] - ref) < 1e-6, (tag, m["by_tag"][tag], ref)
    assert m["kappa_ci"][0] <= m["kappa"] <= m["kappa_ci"][1], m
    assert proc.returncode == (0 if whole >= least else 1), proc.stdout + proc.stderr
    assert "quadratic-weighted kappa over the grades 1..5 (the metric's scale)" in proc.stdout


def test_a_label_without_trial_counts_its_case_once_in_the_intervals(tmp_path: Path) -> None:
    rows = [(f"c{i:02d}", "TaskCompletion", i % 3 == 0) for i in range(20)]
    labels = write_labels(tmp_path / "labels.jsonl", rows)
    one = write_config(tmp_path, [{"type": "TaskCompletion"}], n=20, name="one")
    proc1, got1 = calibrate(tmp_path, one, labels, "one.json", "--run-dir", tmp_path / "one-run")
    assert proc1.returncode == 0, proc1.stdout + proc1.stderr
    four = write_config(tmp_path, [{"type": "TaskCompletion"}], n=20, trials=4, assertions={"TaskCompletion": {"min_kappa": -1}}, name="four")
    proc4, got4 = calibrate(tmp_path, four, labels, "four.json", "--run-dir", tmp_path / "four-run")
    assert proc4.returncode == 0, proc4.stdout + proc4.stderr
    m1, m4 = got1["metrics"]["TaskCompletion"], got4["metrics"]["TaskCompletion"]
    assert (m1["n"], m1["cases"], m4["n"], m4["cases"]) == (20, 20, 80, 20), (m1, m4)
    # Each case's 4 trials are judged on the same trace: the verdicts of a case agree with its label all alike or not.
    by_case: dict[str, set[bool]] = {}
    for c in got4["cases"]:
        by_case.setdefault(c["case_id"], set()).add(c["passed"])
    assert all(len(s) == 1 for s in by_case.values()), by_case
    # Four copies of each case are no more evidence than one: the intervals are those of the one-trial run.
    agree = 20 - m1["disagreeing"]
    wilson = proportion_confint(agree, 20, alpha=0.05, method="wilson")
    for m in (m1, m4):
        assert abs(m["accuracy_ci"][0] - wilson[0]) < 1e-6 and abs(m["accuracy_ci"][1] - wilson[1]) < 1e-6, (m, wilson)
    assert m4["kappa_ci"] == m1["kappa_ci"] and m4["kappa"] == m1["kappa"], (m1, m4)
    assert "over 20 labelled cases (80 verdicts)" in proc4.stdout, proc4.stdout
    head = next(line for line in proc4.stdout.splitlines() if line.startswith("metric "))
    row = next(line for line in proc4.stdout.splitlines() if line.startswith("TaskCompletion "))
    assert head.split()[1:3] == ["n", "cases"] and row.split()[1:3] == ["80", "20"], (head, row)


def test_two_agreeing_labels_give_no_informative_kappa_and_min_kappa_fails(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, [{"type": "TaskCompletion"}], n=20)
    all_labels = write_labels(tmp_path / "all.jsonl", [(f"c{i:02d}", "TaskCompletion", True) for i in range(20)])
    proc, got = calibrate(tmp_path, cfg, all_labels, "all.json")
    passed = {c["case_id"]: c["passed"] for c in got["cases"]}
    yes = next(c for c, p in sorted(passed.items()) if p)
    no = next(c for c, p in sorted(passed.items()) if not p)
    gated = write_config(tmp_path, [{"type": "TaskCompletion"}], n=20, assertions={"TaskCompletion": {"min_kappa": 0.8}}, name="gated")
    two = write_labels(tmp_path / "two.jsonl", [(yes, "TaskCompletion", True), (no, "TaskCompletion", False)])
    proc, got = calibrate(tmp_path, gated, two)
    m = got["metrics"]["TaskCompletion"]
    assert (m["n"], m["cases"], m["accuracy"], m["kappa"]) == (2, 2, 1.0, 1.0), m
    lo, hi = proportion_confint(2, 2, alpha=0.05, method="wilson")  # Wilson: [0.342, 1], not [1, 1]
    assert abs(m["accuracy_ci"][0] - lo) < 1e-6 and abs(m["accuracy_ci"][1] - hi) < 1e-6, m
    assert m["kappa_ci_informative"] is False and "only 2 labelled cases" in m["kappa_ci_why"], m
    # Resamples drawing one case twice have one class only: κ undefined, dropped, and counted.
    assert 0 < m["kappa_ci_dropped"] < m["kappa_ci_resamples"] == 1000, m
    assert proc.returncode == 1 and got["verdict"] == "FAIL", proc.stdout + proc.stderr
    assert "FAIL TaskCompletion min_kappa: cohen 1.000" in proc.stdout and "not informative" in proc.stdout, proc.stdout
    assert "resamples had kappa undefined (one class only) and were dropped" in proc.stdout, proc.stdout


def test_no_label_matching_a_verdict_is_an_error_naming_why(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, [{"type": "TaskCompletion"}], n=10)
    typo = tmp_path / "typo.csv"
    typo.write_text("case_id,metric,label\nc01,TaskCompletoin,yes\nc02,TaskCompletoin,no\n")
    proc, got = calibrate(tmp_path, cfg, typo, "typo.json")
    assert proc.returncode == 2 and got["verdict"] == "ERROR", proc.stdout + proc.stderr
    assert "metric(s) 'TaskCompletoin' that no result of the run has" in proc.stderr, proc.stderr
    nocase = tmp_path / "nocase.csv"
    nocase.write_text("case_id,metric,label\nnope,TaskCompletion,yes\nc1,TaskCompletion,no\n")
    proc, got = calibrate(tmp_path, cfg, nocase, "nocase.json", "--run-dir", tmp_path / "nocase-run")
    assert proc.returncode == 2 and got["verdict"] == "ERROR", proc.stdout + proc.stderr
    assert "2 label(s) for case ids not in the run" in proc.stderr, proc.stderr
    assert not any("no result of this run has that metric" in p for p in got["problems"]), got["problems"]
    assert f"{nocase}:2: case_id: no result of this run is case 'nope'" in got["problems"][0], got["problems"]


def test_labels_0_and_1_on_a_graded_scale_from_0_are_grades(tmp_path: Path) -> None:
    rubric = {**RUBRIC, "scale": [0, 4]}
    cfg = write_config(tmp_path, [rubric], n=30)
    labels = write_labels(tmp_path / "labels.jsonl", [(f"c{i:02d}", "grade", i % 2) for i in range(30)])
    proc, got = calibrate(tmp_path, cfg, labels)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    m = got["metrics"]["grade"]
    assert (m["kind"], m["reading"], m["kappa_kind"], m["kappa_labels"]) == ("graded", "grades", "quadratic", [0, 1, 2, 3, 4]), m
    cases = sorted((c["case_id"], c["label"], c["grade"]) for c in got["cases"])
    ref = cohen_kappa_score([int(c[1]) for c in cases], [int(c[2]) for c in cases], weights="quadratic", labels=[0, 1, 2, 3, 4])
    assert abs(m["kappa"] - ref) < 1e-6, (m["kappa"], ref)
    assert "labels 0 and 1 only, read as grades on the metric's scale 0..4" in proc.stdout, proc.stdout
    # true/false labels of the same metric stay pass/fail.
    labels = write_labels(tmp_path / "bools.jsonl", [(f"c{i:02d}", "grade", bool(i % 2)) for i in range(30)])
    proc, got = calibrate(tmp_path, cfg, labels, "bools.json")
    assert got["metrics"]["grade"]["kind"] == "yes_no", got["metrics"]["grade"]


def test_judge_checks_count_only_the_labelled_cases(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, [{"type": "TaskCompletion"}], n=20)
    many = write_labels(tmp_path / "many.jsonl", [(f"c{i:02d}", "TaskCompletion", i % 2 == 0) for i in range(12)])
    proc, _ = calibrate(tmp_path, cfg, many, "many.json")
    assert "judge errors: 0 of 12 judged results" in proc.stdout, proc.stdout
    one = write_labels(tmp_path / "one.jsonl", [("c15", "TaskCompletion", True)])
    proc, got = calibrate(tmp_path, cfg, one, "one.json")  # the same RUN_DIR-calibrate, which keeps the 12 earlier cases
    assert "judge errors: 0 of 1 judged results" in proc.stdout, proc.stdout
    assert [c["detail"] for c in got["checks"] if c["name"] == "judge max_error_share"][0].startswith("judge errors: 0 of 1 "), got["checks"]
    # A tag of one case has no κ, and says why, rather than 0.000.
    tags = got["metrics"]["TaskCompletion"]["by_tag"]
    assert tags["odd"]["kappa"] is None and tags["odd"]["kappa_why"] == "one case", tags
    assert "kappa=n/a (one case)" in proc.stdout, proc.stdout


def test_report_md_names_the_kappa_and_what_each_interval_is(tmp_path: Path) -> None:
    cfg = write_config(tmp_path, [RUBRIC], n=20)
    labels = write_labels(tmp_path / "labels.jsonl", [(f"c{i:02d}", "grade", 1 + i % 5) for i in range(20)])
    raw = yaml.safe_load(cfg.read_text())
    raw["judge"]["labels"] = {"path": str(labels)}
    cfg.write_text(yaml.safe_dump(raw))
    proc = tracejudge("run", cfg, "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    section = (tmp_path / "run" / "report.md").read_text().split("## Judge labels", 1)[1]
    assert "- grade: 20 labelled cases, 20 verdicts, accuracy " in section and ", quadratic-weighted kappa " in section, section
    assert "accuracy's the Wilson score interval, kappa's (and spearman's) a BCa bootstrap over the labelled cases" in section, section


def write_csv(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path.write_text("case_id,metric,label\n" + "".join(f"{c},{m},{v}\n" for c, m, v in rows))
    return path


def mixed_problem(path: Path, line: int, label: str, case: str, numbers: int, total: int) -> str:
    return (f"{path}:{line}: label: {label} (case {case!r}) is pass/fail among the grades of metric 'grade' ({numbers} of its "
            f"{total} labels are numbers, read as grades): a metric's labels are read one way, so it is left out; write the "
            "grade it stands for on its scale 0..4 instead (or every label of the metric as true/false)")


def test_true_false_mixed_with_grades_are_named_and_left_out_not_read_as_1_and_0(tmp_path: Path) -> None:
    # true/false among whole grades on `scale: [0, 4]` were read as grades 1 and 0, silently: no problem, and kappa
    # over labels such as `true` against a grade of 3.
    rubric = {**RUBRIC, "scale": [0, 4]}
    cfg = write_config(tmp_path, [rubric], n=30)
    rows = [(f"c{i:02d}", "grade", "true" if i in (3, 8) else "false" if i in (5, 11) else str(i % 5)) for i in range(30)]
    labels = write_csv(tmp_path / "mixed.csv", rows)
    proc, got = calibrate(tmp_path, cfg, labels, "mixed.json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    named = [mixed_problem(labels, i + 2, rows[i][2], rows[i][0], 26, 30) for i in (3, 5, 8, 11)]
    assert got["problems"] == named, got["problems"]
    assert (got["total_labels"], got["matched"], got["mixed_kinds"], got.get("out_of_range", 0)) == (30, 26, 4, 0), got
    for line in named:
        assert f"  labels: {line}" in proc.stdout, proc.stdout
    assert "matched to verdicts: 26, not judged: 0, no such case/metric: 0, out of range: 0, true/false mixed with grades: 4" in proc.stdout
    # The figures are those of the 26 grades kept, as scikit-learn has them.
    m = got["metrics"]["grade"]
    cases = sorted((c["case_id"], c["label"], c["grade"]) for c in got["cases"])
    assert [c[0] for c in cases] == [r[0] for i, r in enumerate(rows) if i not in (3, 5, 8, 11)], cases
    assert not any(isinstance(c[1], bool) for c in cases), cases
    ref = cohen_kappa_score([int(c[1]) for c in cases], [int(c[2]) for c in cases], weights="quadratic", labels=[0, 1, 2, 3, 4])
    assert (m["n"], m["kind"], m["kappa_kind"], m["kappa_labels"]) == (26, "graded", "quadratic", [0, 1, 2, 3, 4]), m
    assert abs(m["kappa"] - ref) < 1e-6, (m["kappa"], ref)
    # Disagreements show each label as written: `label 3`, not `label 3.0`.
    shown = [line for line in proc.stdout.splitlines() if line.startswith("  disagrees: ")]
    assert shown and all(re.search(r": label [0-4], verdict ", line) for line in shown), shown


def test_a_few_grades_among_true_false_labels_are_named_and_the_rest_read_pass_fail(tmp_path: Path) -> None:
    rubric = {**RUBRIC, "scale": [0, 4]}
    cfg = write_config(tmp_path, [rubric], n=30)
    rows = [(f"c{i:02d}", "grade", str(i % 5) if i in (4, 7) else ("true" if i % 3 else "false")) for i in range(30)]
    labels = write_csv(tmp_path / "mostly.csv", rows)
    proc, got = calibrate(tmp_path, cfg, labels, "mostly.json")
    assert got["problems"] == [
        f"{labels}:{i + 2}: label: {i % 5} (case {rows[i][0]!r}) is a grade among the pass/fail labels of metric 'grade' (28 of its 30 "
        "labels are true/false): a metric's labels are read one way, so it is left out; write true or false instead (or every "
        "label of the metric as a grade on its scale 0..4)" for i in (4, 7)], got["problems"]
    m = got["metrics"]["grade"]
    assert (m["n"], m["kind"], m["kappa_kind"], got["mixed_kinds"]) == (28, "yes_no", "cohen", 2), m
    cases = sorted((c["case_id"], c["label"], c["passed"]) for c in got["cases"])
    assert all(isinstance(c[1], bool) for c in cases) and len(cases) == 28, cases
    assert abs(m["kappa"] - cohen_kappa_score([c[1] for c in cases], [c[2] for c in cases])) < 1e-6, m
    shown = [line for line in proc.stdout.splitlines() if line.startswith("  disagrees: ")]
    assert shown and all(re.search(r": label (true, verdict fail|false, verdict pass) ", line) for line in shown), shown


def test_as_many_true_false_labels_as_grades_give_no_agreement(tmp_path: Path) -> None:
    rubric = {**RUBRIC, "scale": [0, 4]}
    cfg = write_config(tmp_path, [rubric], n=10)
    rows = [("c00", "grade", "true"), ("c01", "grade", "false"), ("c02", "grade", "1"), ("c03", "grade", "0")]
    labels = write_csv(tmp_path / "tie.csv", rows)
    proc, got = calibrate(tmp_path, cfg, labels, "tie.json")
    why = ("metric 'grade' has as many true/false labels as grades (2 each), so its labels cannot be read one way and its "
           "agreement is not computed; write every label of the metric as a grade on its scale 0..4, or every one as true/false "
           "to compare pass/fail")
    assert got["problems"] == [f"{labels}:{i + 2}: label: {v} (case {c!r}) left out: {why}" for i, (c, _, v) in enumerate(rows)]
    m = got["metrics"]["grade"]
    assert m["n"] == 0 and m["note"].startswith(f"no agreement: {why}"), m
    assert proc.returncode == 2 and got["verdict"] == "ERROR", proc.stdout + proc.stderr
    assert "4 label(s) left out for mixing true/false with grades" in proc.stderr, proc.stderr


def test_a_runs_labels_mixing_true_false_with_grades_are_named_in_its_report(tmp_path: Path) -> None:
    rubric = {**RUBRIC, "scale": [0, 4]}
    cfg = write_config(tmp_path, [rubric], n=20)
    rows = [(f"c{i:02d}", "grade", "true" if i == 6 else "false" if i == 13 else str(i % 5)) for i in range(20)]
    labels = write_csv(tmp_path / "labels.csv", rows)
    raw = yaml.safe_load(cfg.read_text())
    raw["judge"]["labels"] = {"path": str(labels)}
    cfg.write_text(yaml.safe_dump(raw))
    proc = tracejudge("run", cfg, "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    block = json.loads((tmp_path / "run" / "summary.json").read_text())["labels"]
    named = [mixed_problem(labels, i + 2, rows[i][2], rows[i][0], 18, 20) for i in (6, 13)]
    assert block["problems"] == named and block["problem_count"] == 2, block["problems"]
    assert (block["matched"], block["mixed_kinds"]) == (18, 2), block
    for line in named:
        assert f"  labels: {line}" in proc.stdout, proc.stdout
    assert "true/false mixed with grades: 2" in proc.stdout, proc.stdout
    # The figures are the kept grades' against the run's own grades.
    run = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    grade = {r["case_id"]: next(iter(r["scores"]["grade"]["details"]["answers"].values()))["score"] for r in run}
    kept = [(int(v), int(grade[c])) for i, (c, _, v) in enumerate(rows) if i not in (6, 13)]
    ref = cohen_kappa_score([k[0] for k in kept], [k[1] for k in kept], weights="quadratic", labels=[0, 1, 2, 3, 4])
    m = block["metrics"]["grade"]
    assert (m["n"], m["kind"]) == (18, "graded") and abs(m["kappa"] - ref) < 1e-6, (m, ref)
    section = (tmp_path / "run" / "report.md").read_text().split("## Judge labels", 1)[1]
    assert all(f"- {line}" in section for line in named) and "true/false mixed with grades: 2." in section, section
