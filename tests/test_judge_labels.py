"""Agreement with labels: `tracejudge calibrate`, `judge.labels` in a run, `min_kappa`, and the judge identity `compare` checks.

The judge is the simulator over real HTTP with a known flaw: `agreement` p makes each verdict equal
the simulator's truth (its verdict with no flaws) with probability p. Labels are that truth, taken from
a run with no flaws, so calibrate must find accuracy p.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from scipy.stats import binomtest
from tracejudge.core.config import validate_config
from tracejudge.core.errors import ConfigError
from tracejudge.engine import runner
from tracejudge.entrypoints.cli import main
from tracejudge.stages.comparison.runs import compare_runs
from tracejudge.stages.judge.labels import field_labels, load_label_file

N = 150
RUBRIC = {"type": "Rubric", "name": "quality", "criteria": "Did the agent book the cheapest flight?", "scale": [0, 1]}


def write_cases(path: Path, n: int = N, truth: dict[str, bool] | None = None) -> Path:
    with open(path, "w") as fh:
        for i in range(n):
            steps = [{"tool_calls": [{"name": "search_flights", "arguments": {"day": i}, "result": f"HAT{i:03d} $1{i:02d}"}]},
                     {"output": f"Booked HAT{i:03d}."}]
            meta = {"truth": truth[f"c{i}"]} if truth else {}
            fh.write(json.dumps({"id": f"c{i}", "input": f"Book the cheapest flight on day {i}", "tags": ["even" if i % 2 == 0 else "odd"],
                                 "metadata": meta, "trace": {"steps": steps}}) + "\n")
    return path


def config(tmp: Path, cases: Path, name: str, **sim: Any) -> dict[str, Any]:
    return {"dataset": {"path": str(cases)}, "metrics": [RUBRIC],
            "judge": {"provider": "simulator", "model": "gpt-4o-mini", "simulator": sim},
            "cache": {"dir": str(tmp / "cache")}, "run": {"dir": str(tmp / name)}}


def results(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def truth(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bool]]:
    """A run of the flawless simulator: its verdicts are the truth."""
    tmp = tmp_path_factory.mktemp("truth")
    cases = write_cases(tmp / "cases.jsonl")
    anyio.run(lambda: runner.run(validate_config(config(tmp, cases, "truth"))))
    got = {r["case_id"]: r["scores"]["quality"]["passed"] for r in results(tmp / "truth")}
    assert 0.3 < sum(got.values()) / N < 0.7  # both classes well represented, so kappa is informative
    return tmp, got


def test_calibrate_recovers_the_configured_agreement(truth: tuple[Path, dict[str, bool]], tmp_path: Path) -> None:
    base, labels = truth
    label_file = tmp_path / "labels.jsonl"
    label_file.write_text("".join(json.dumps({"case_id": c, "metric": "quality", "label": v}) + "\n" for c, v in labels.items()))
    cfg = config(tmp_path, base / "cases.jsonl", "flawed", agreement=0.8)
    cfg["assertions"] = {"metrics": {"quality": {"min_kappa": 0.3}}}
    path = tmp_path / "flawed.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "cal.json"
    assert main(["calibrate", str(path), "--labels", str(label_file), "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    m = got["metrics"]["quality"]
    assert m["n"] == N and m["kind"] == "yes_no" and m["kappa_kind"] == "cohen"
    lo, hi = m["accuracy_ci"]
    assert lo <= 0.8 <= hi, m  # the configured agreement lies in calibrate's interval
    # The simulator's disagreements are Bernoulli(0.2) draws: the count is consistent with that rate.
    assert binomtest(m["disagreeing"], N, 0.2).pvalue > 0.01
    assert m["confusion"]["labels"] == ["fail", "pass"] and sum(map(sum, m["confusion"]["matrix"])) == N
    assert m["kappa_ci"][0] <= m["kappa"] <= m["kappa_ci"][1] and m["kappa"] > 0.3
    assert set(m["by_tag"]) == {"even", "odd"}
    # Each labelled verdict beside its label; the disagreeing ones are listed.
    assert len(got["cases"]) == N and all(c["label"] == labels[c["case_id"]] for c in got["cases"])
    wrong = {c["case_id"] for c in got["cases"] if c["passed"] != c["label"]}
    assert {d["case_id"] for d in m["disagreements"]} == wrong and len(wrong) == m["disagreeing"]
    # The same judge gated harder fails (exit 1), and costs no new request: every verdict is cached.
    cfg["assertions"] = {"metrics": {"quality": {"min_kappa": 0.95}}}
    path.write_text(yaml.safe_dump(cfg))
    assert main(["calibrate", str(path), "--labels", str(label_file), "--run-dir", str(tmp_path / "again")]) == 1
    summary = json.loads((tmp_path / "again" / "summary.json").read_text())
    assert (summary["judge"]["requests"], summary["judge"]["cache_hits"]) == (0, N)
    assert summary["labels"]["metrics"]["quality"]["kappa"] == m["kappa"]
    # The viewer's case page shows each label beside its verdict, and marks a disagreement.
    from tracejudge.viewer.pages_case import CaseView, _side
    from tracejudge.viewer.runs import Run

    run = Run("r", tmp_path / "again", "again")
    for res in results(tmp_path / "again"):
        html = _side(CaseView(run, res, None, ""), res["case_id"], res.get("trial", 0))
        label = labels[res["case_id"]]
        assert f"label {'pass' if label else 'fail'}" in html
        assert ("≠ verdict" in html) == (res["case_id"] in wrong)


def test_a_run_with_judge_labels_reports_agreement_from_a_field(truth: tuple[Path, dict[str, bool]], tmp_path: Path) -> None:
    _, labels = truth
    cases = write_cases(tmp_path / "cases.jsonl", truth=labels)  # same traces, the truth in metadata (never shown to the judge)
    cfg = config(tmp_path, cases, "run")
    cfg["judge"]["labels"] = {"fields": {"quality": "metadata.truth"}}
    summary = anyio.run(lambda: runner.run(validate_config(cfg))).summary
    m = summary["labels"]["metrics"]["quality"]
    assert (m["n"], m["accuracy"], m["kappa"], m["disagreeing"]) == (N, 1.0, 1.0, 0)


def test_label_files_name_each_bad_line(tmp_path: Path) -> None:
    jl = tmp_path / "l.jsonl"
    jl.write_text('{"case_id": "a", "metric": "m", "label": true}\n[1]\n{"case_id": "b", "metric": "m", "label": "maybe"}\n'
                  '{"case_id": "c", "metric": "m", "label": 0.5, "trial": 1}\n')
    got = load_label_file(jl)
    assert [(lab.case_id, lab.value, lab.trial) for lab in got.labels] == [("a", True, None), ("c", 0.5, 1)]
    assert got.problems[0].startswith(f"{jl}:2: ") and got.problems[1].startswith(f"{jl}:3: label: ")
    csv = tmp_path / "l.csv"
    csv.write_text("case_id,metric,label\na,m,yes\nb,m,\nc,m,3\n")
    got = load_label_file(csv)
    assert [(lab.case_id, lab.value) for lab in got.labels] == [("a", True), ("c", 3.0)]
    assert got.problems == [f"{csv}:3: label: missing"]
    got = field_labels([{"case_id": "a", "metadata": {"reward": 1.0}}, {"case_id": "b", "metadata": {}}], {"TaskCompletion": "metadata.reward"})
    assert [(lab.case_id, lab.metric, lab.value) for lab in got.labels] == [("a", "TaskCompletion", 1.0)]


def test_label_files_from_excel_and_notepad_read_as_written(tmp_path: Path) -> None:
    # A byte-order mark made the first CSV column `\ufeffcase_id` ("the CSV header lacks the column(s) case_id") and the
    # first JSONL line a problem; a Latin-1 byte crashed the command with a UnicodeDecodeError traceback.
    csv = tmp_path / "l.csv"
    csv.write_bytes(b"\xef\xbb\xbfcase_id,metric,label\na,m,yes\nb,caf\xe9,no\nc,m,no\n")
    got = load_label_file(csv)
    assert [(lab.case_id, lab.value) for lab in got.labels] == [("a", True), ("c", False)]
    # The column is the line's, as an editor shows it (it was the column within the cell, 4 here).
    assert got.problems == [not_utf8(f"{csv}:3: metric", 3, 6, 37)]
    jl = tmp_path / "l.jsonl"
    jl.write_bytes(b'\xef\xbb\xbf{"case_id": "a", "metric": "m", "label": true}\n{"case_id": "b\xe9", "metric": "m", "label": 1}\n')
    got = load_label_file(jl)
    assert [lab.case_id for lab in got.labels] == ["a"]
    assert got.problems == [not_utf8(f"{jl}:2", 2, 15, 64)]
    # A Windows "CSV" (cp1252) with an accent in a note: the row stays; one in the metric is placed in the line
    # (its 11th character, the 5th of its cell), past the note's.
    csv.write_bytes(b"case_id,note,metric,label\nc0,n\xe9,m,yes\nc1,n\xe9,Task\xe9,no\n")
    got = load_label_file(csv)
    assert [lab.case_id for lab in got.labels] == ["c0"] and got.problems == [not_utf8(f"{csv}:3: metric", 3, 11, 48)]
    wide = tmp_path / "w.csv"
    wide.write_bytes("case_id,metric,label\na,m,yes\n".encode("utf-16"))
    with pytest.raises(ConfigError, match="not UTF-8 text: it starts with FF FE, a UTF-16 LE byte-order mark"):
        load_label_file(wide)


def not_utf8(where: str, line: int, column: int, offset: int) -> str:
    return (f"{where}: byte 0xE9 at line {line} column {column} (byte offset {offset}) starts no UTF-8 character "
            "(invalid continuation byte); save the file as UTF-8")


def test_graded_labels_get_weighted_kappa_and_spearman() -> None:
    from tracejudge.stages.judge.agreement import Pair, metric_agreement

    grades = [1, 2, 3, 4, 5, 2, 3, 4, 5, 1]
    labels = [1, 2, 3, 5, 5, 2, 2, 4, 4, 1]
    pairs = [Pair(f"c{i}", 0, float(lab), None, (g - 1) / 4, float(g)) for i, (g, lab) in enumerate(zip(grades, labels, strict=True))]
    m = metric_agreement("rubric", pairs, resamples=200)
    from scipy.stats import spearmanr
    from sklearn.metrics import cohen_kappa_score

    assert m["kind"] == "graded" and m["kappa_kind"] == "quadratic"
    assert m["kappa"] == round(cohen_kappa_score(labels, grades, weights="quadratic"), 6)
    assert m["spearman"] == round(float(spearmanr(labels, grades).statistic), 6)
    assert m["accuracy"] == 0.7 and m["confusion"]["labels"] == [1, 2, 3, 4, 5]


def test_scores_record_the_judge_and_compare_warns_when_it_changes(tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "cases.jsonl", n=6)
    a = config(tmp_path, cases, "a")
    b = config(tmp_path, cases, "b")
    b["judge"]["model"] = "gpt-4.1-mini"
    b["metrics"] = [{**RUBRIC, "criteria": "Was the cheapest flight booked, at once?"}]
    for cfg in (a, b):
        anyio.run(lambda cfg=cfg: runner.run(validate_config(cfg)))
    judge = results(tmp_path / "a")[0]["scores"]["quality"]["judge"]
    assert (judge["model"], judge["prompt_version"], judge["structured_output"]) == ("gpt-4o-mini", "rubric/4", "json_schema")
    warnings = compare_runs(tmp_path / "a", tmp_path / "b").warnings
    assert len(warnings) == 1 and "model gpt-4o-mini → gpt-4.1-mini" in warnings[0] and "criteria" in warnings[0]
    assert compare_runs(tmp_path / "a", tmp_path / "a").warnings == []


def test_a_labels_section_without_a_source_is_a_config_error(tmp_path: Path) -> None:
    from tracejudge.core.config import load_config
    from tracejudge.core.errors import ConfigError

    cfg = config(tmp_path, write_cases(tmp_path / "cases.jsonl", 2), "x")
    cfg["judge"]["labels"] = {"threshold": 0.5}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError, match=r"judge\.labels.*give `path`"):
        load_config(path, [])
    cfg["judge"]["labels"] = {"path": "labels.csv"}  # relative: resolved against the config's folder
    path.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConfigError) as err:  # a labels file that is not there: the run judged all, then said nothing
        load_config(path, [])
    assert str(err.value) == f"{path}:7: judge.labels.path: file not found: {tmp_path / 'labels.csv'}"
    (tmp_path / "labels.csv").write_text("case_id,metric,label\n")
    assert load_config(path, []).judge.labels.path == tmp_path / "labels.csv"
    assert load_config(path, [], scoring=False).judge.labels.path == tmp_path / "labels.csv"  # (extract reads no labels)
    (tmp_path / "labels.csv").unlink()
    assert load_config(path, [], scoring=False).judge is not None and load_config(path, [], labels_file=False).judge is not None


def test_calibrate_the_demo_against_tau_bench_rewards(data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = Path(__file__).resolve().parent.parent
    code = main(["calibrate", str(repo / "configs" / "demo.yaml"), "--labels-field", "TaskCompletion=metadata.reward",
                 "--set", "dataset.limit=30", "--set", f"cache.dir={tmp_path / 'cache'}", "--run-dir", str(tmp_path / "run"),
                 "--json", str(tmp_path / "cal.json")])
    out = capsys.readouterr().out
    assert code == 0 and "kappa" in out and "TaskCompletion: confusion (rows: label, columns: verdict)" in out
    m = json.loads((tmp_path / "cal.json").read_text())["metrics"]["TaskCompletion"]
    rewards = [r["metadata"]["reward"] for r in results(tmp_path / "run")]
    assert m["n"] == 30 and m["confusion"]["matrix"][1][0] + m["confusion"]["matrix"][1][1] == sum(1 for x in rewards if x >= 0.5)


def test_calibrate_with_a_labels_file_judges_only_the_labelled_cases(truth: tuple[Path, dict[str, bool]], tmp_path: Path) -> None:
    base, labels = truth
    some = dict(list(labels.items())[:10])
    label_file = tmp_path / "labels.csv"
    label_file.write_text("case_id,metric,label\n" + "".join(f"{c},quality,{'yes' if v else 'no'}\n" for c, v in some.items()))
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config(tmp_path, base / "cases.jsonl", "full")))
    assert main(["calibrate", str(path), "--labels", str(label_file)]) == 0
    judged = results(tmp_path / "full-calibrate")
    assert sorted(r["case_id"] for r in judged) == sorted(some) and not (tmp_path / "full").exists()
    summary = json.loads((tmp_path / "full-calibrate" / "summary.json").read_text())
    assert summary["judge"]["requests"] == 10 and summary["labels"]["metrics"]["quality"]["accuracy"] == 1.0


def test_label_counts_add_up_and_a_metric_the_run_lacks_is_named_not_tabled(tmp_path: Path) -> None:
    # A label for a metric no result has counted as "not judged" and as "matched", so the counts summed past the
    # labels, and the metric was a table row of n=0.
    from tracejudge.stages.judge.agreement import agreement_block

    def res(cid: str, trial: int, value: float | None) -> dict[str, Any]:
        return {"case_id": cid, "trial": trial, "status": "ok", "tags": [],
                "scores": {"TaskCompletion": {"value": value, "passed": None if value is None else value >= 0.5, "reason": "r"}}}

    labels = tmp_path / "labels.jsonl"
    rows = [("a", "TaskCompletion", 1), ("b", "TaskCompletion", 0), ("c", "TaskCompletion", 1), ("nope", "TaskCompletion", 1),
            ("a", "Nope", 1), ("b", "Nope", 0)]
    labels.write_text("".join(json.dumps({"case_id": c, "metric": m, "label": v}) + "\n" for c, m, v in rows))
    # Two trials of "a" and of "c": a label without a trial answers both, and counts once.
    results = [res("a", 0, 1.0), res("a", 1, 0.0), res("b", 0, 0.0), res("c", 0, None), res("c", 1, None)]
    block = agreement_block(results, load_label_file(labels), resamples=50)
    counts = {k: block[k] for k in ("total_labels", "matched", "not_judged", "unmatched")}
    assert counts == {"total_labels": 6, "matched": 2, "not_judged": 1, "unmatched": 3}, counts
    assert block["unknown_metrics"] == {"Nope": 2} and list(block["metrics"]) == ["TaskCompletion"]
    assert block["problems"][0] == f"{labels}:5: metric: 2 label(s) for metric 'Nope' (also line 6): no result of this run has that metric"
    assert block["metrics"]["TaskCompletion"]["n"] == 3  # a/0, a/1, b/0


def test_labels_that_cannot_be_compared_are_named_where_they_were_written(tmp_path: Path) -> None:
    # A label for a case the run does not have was only counted ("unmatched"); a misspelt metric got no suggestion; and
    # one label of 1.5 on a yes/no metric made the whole metric a graded comparison (accuracy 0.000, no kappa).
    from tracejudge.stages.judge.agreement import agreement_block

    def res(cid: str, value: float) -> dict[str, Any]:
        return {"case_id": cid, "trial": 0, "status": "ok", "tags": [],
                "scores": {"TaskCompletion": {"value": value, "passed": value >= 0.5, "reason": "r"}}}

    labels = tmp_path / "labels.jsonl"
    rows = [("a", "TaskCompletion", 1), ("b", "TaskCompletion", 0), ("c", "TaskCompletion", 1), ("d", "TaskCompletion", 1.5),
            ("nope", "TaskCompletion", 1), ("a", "TaskCompletoin", 1)]
    labels.write_text("".join(json.dumps({"case_id": c, "metric": m, "label": v}) + "\n" for c, m, v in rows))
    results = [res("a", 1.0), res("b", 0.0), res("c", 0.0), res("d", 1.0)]
    block = agreement_block(results, load_label_file(labels), resamples=50)
    assert block["problems"] == [
        f"{labels}:6: metric: 1 label(s) for metric 'TaskCompletoin': no result of this run has that metric; did you mean TaskCompletion?",
        f"{labels}:5: case_id: no result of this run is case 'nope'",
        f"{labels}:4: label: 1.5 is out of range for metric 'TaskCompletion', which takes a yes/no label (true/false, or a number from 0 to 1)",
    ]
    counts = {k: block.get(k) for k in ("total_labels", "matched", "not_judged", "unmatched", "out_of_range")}
    assert counts == {"total_labels": 6, "matched": 3, "not_judged": 0, "unmatched": 2, "out_of_range": 1}, counts
    got = block["metrics"]["TaskCompletion"]
    assert (got["kind"], got["n"], got["accuracy"]) == ("yes_no", 3, round(2 / 3, 6)) and got["kappa"] is not None, got


def test_true_false_among_grades_are_counted_by_label_and_named_once_whatever_the_trials(tmp_path: Path) -> None:
    # A case label answers every trial: 2 grades over 3 trials each are still 2 labels, fewer than 3 true/false ones.
    from sklearn.metrics import cohen_kappa_score
    from tracejudge.stages.judge.agreement import agreement_block

    def res(cid: str, trial: int, grade: int) -> dict[str, Any]:
        return {"case_id": cid, "trial": trial, "status": "ok", "tags": [],
                "scores": {"R": {"value": grade / 4, "passed": grade >= 2, "reason": "r", "details": {"answers": {"q": {"score": grade}}}}}}

    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,metric,label\na,R,3\nb,R,1\nc,R,true\nd,R,false\ne,R,yes\n")
    grades = {"a": 3, "b": 0, "c": 1, "d": 4, "e": 2}
    results = [res(c, t, g) for c, g in grades.items() for t in range(3 if c in "ab" else 1)]
    block = agreement_block(results, load_label_file(labels), resamples=50, scales={"R": (0.0, 4.0)}, with_cases=True)
    assert block["problems"] == [
        f"{labels}:{n}: label: {v} (case {c!r}) is a grade among the pass/fail labels of metric 'R' (3 of its 5 labels are true/false): "
        "a metric's labels are read one way, so it is left out; write true or false instead (or every label of the metric as a "
        "grade on its scale 0..4)" for n, v, c in ((2, 3, "a"), (3, 1, "b"))], block["problems"]
    assert (block["matched"], block["mixed_kinds"]) == (3, 2), block
    m = block["metrics"]["R"]
    assert (m["kind"], m["n"]) == ("yes_no", 3), m
    y, v = [c["label"] for c in block["cases"]], [c["passed"] for c in block["cases"]]
    assert y == [True, False, True] and abs(m["kappa"] - cohen_kappa_score(y, v)) < 1e-9, (y, v, m)


@pytest.mark.parametrize(("name", "said"), [("gone.jsonl", "file not found: {p}"),
                                             ("labels.fifo", "{p} is a FIFO (named pipe), not a regular file")])
def test_run_refuses_a_labels_path_that_names_no_regular_file_naming_the_key_and_the_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, said: str) -> None:
    # Missing: it judged every case, then wrote "cannot read the labels file" into summary.json without a word, exit 0.
    # A FIFO: it judged every case, then blocked opening it for ever, deaf to SIGTERM, no summary written.
    if name.endswith(".fifo"):
        os.mkfifo(tmp_path / name)
    cfg = config(tmp_path, write_cases(tmp_path / "cases.jsonl", 2), "run")
    cfg["judge"]["labels"] = {"path": name}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["run", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "judge.labels.path: " + said.format(p=tmp_path / name) in err and "config error" in err, err
    assert not (tmp_path / "run").exists()
