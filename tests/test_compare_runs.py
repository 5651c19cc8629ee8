"""`tracejudge compare`: pairing by (case, trial), paired test, the planted regression found with its reasons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _runs import planted_runs, result_line
from tracejudge.entrypoints.cli import main
from tracejudge.stages.comparison.runs import compare_runs


def test_compare_finds_the_planted_regression(tmp_path: Path) -> None:
    a, b, planted, improved = planted_runs(tmp_path, n=300, planted=25, improved=5)
    cmp = compare_runs(a, b, top=10)
    assert (cmp.results_a, cmp.results_b, cmp.paired, cmp.only_a, cmp.only_b) == (300, 300, 300, 0, 0)
    acc = cmp.metrics["acc"]
    assert acc.pairs == 300 and acc.regressed == 25 and acc.improved == 5 and acc.unchanged == 270
    assert acc.delta == pytest.approx(-20 / 300)
    assert acc.mean_b - acc.mean_a == pytest.approx(acc.delta)
    assert acc.ci95 is not None and acc.ci95[1] < 0 < -acc.ci95[0]  # the whole interval is a drop
    assert acc.p_value < 0.01
    assert len(acc.worst) == 10 and {m.case_id for m in acc.worst} <= planted
    assert [m.case_id for m in acc.worst] == sorted(m.case_id for m in acc.worst)  # ties (all -1) ordered by case id
    for m in acc.worst:
        assert (m.a, m.b) == (1.0, 0.0)
        assert m.reason_a.startswith("baseline reason") and m.reason_b.startswith("planted regression")
    assert {m.case_id for m in acc.best} == improved
    stable = cmp.metrics["stable"]
    assert stable.delta == 0.0 and stable.p_value == 1.0 and stable.regressed == stable.improved == 0


def test_compare_is_reproducible(tmp_path: Path) -> None:
    a, b, _, _ = planted_runs(tmp_path)
    assert compare_runs(a, b).as_dict() == compare_runs(a, b).as_dict()


def test_compare_pairs_by_case_and_trial_and_counts_the_unpaired(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "results.jsonl").write_text("\n".join([
        result_line("x", 0, {"m": (1.0, "a-x0")}), result_line("x", 1, {"m": (0.0, "a-x1")}),
        result_line("y", 0, {"m": (0.5, "a-y0")}), result_line("gone", 0, {"m": (1.0, "")}),
    ]) + "\n")
    (b / "results.jsonl").write_text("\n".join([
        result_line("x", 1, {"m": (1.0, "b-x1")}), result_line("x", 0, {"m": (1.0, "b-x0")}),
        result_line("y", 0, {}, status="judge_error", error="timeout"), result_line("new", 0, {"m": (0.0, "")}),
    ]) + "\n")
    cmp = compare_runs(a, b)
    assert (cmp.paired, cmp.only_a, cmp.only_b) == (3, 1, 1)
    m = cmp.metrics["m"]
    assert m.pairs == 2 and m.scored_only_a == 1  # y errored in B: not a pair for the metric
    assert m.improved == 1 and m.unchanged == 1 and m.delta == pytest.approx(0.5)
    assert [(x.case_id, x.trial, x.reason_a, x.reason_b) for x in m.best] == [("x", 1, "a-x1", "b-x1")]


def test_compare_cli_lists_regressed_cases_with_both_reasons(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b, planted, _ = planted_runs(tmp_path)
    assert main(["compare", str(a), str(b), "--metric", "acc", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "acc: regressed most" in out and "planted regression" in out and "baseline reason" in out
    assert "sign-flip" in out
    assert main(["compare", str(a), str(b), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["metrics"]["acc"]["regressed"] == 25
    assert {w["case_id"] for w in data["metrics"]["acc"]["worst"]} <= planted
    assert main(["compare", str(a), str(tmp_path / "missing")]) == 2


def test_compare_says_what_it_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b, _, _ = planted_runs(tmp_path)
    with open(b / "results.jsonl", "a") as fh:
        fh.write("{damaged\n" + result_line("extra", 0, {"b_only": (1.0, "new metric")}) + "\n")
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "warning: 1 line(s) of B's results.jsonl are not results and were left out" in out
    assert "not compared (scored in one run only): A only: -; B only: b_only" in out
    assert main(["compare", str(a), str(b), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["unreadable_a"], data["unreadable_b"], data["metrics_only_b"]) == (0, 1, ["b_only"])


def test_compare_metric_neither_run_scores_is_an_error_listing_the_runs_metrics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b, _, _ = planted_runs(tmp_path, n=20, planted=2, improved=1)
    assert main(["compare", str(a), str(b), "--metric", "acc", "--metric", "Nope"]) == 2
    got = capsys.readouterr()
    assert "--metric Nope: no result of either run scores it; the runs' metrics: acc, stable" in " ".join(got.err.split())
    assert got.out == ""  # no table with an empty row
    with open(b / "results.jsonl", "a") as fh:  # a metric one run alone scores is still compared
        fh.write(result_line("extra", 0, {"b_only": (1.0, "new metric")}) + "\n")
    assert main(["compare", str(a), str(b), "--metric", "b_only", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"]["b_only"]["pairs"] == 0


def test_a_metric_scored_in_one_run_only_is_no_row_and_no_table_draws_vertical_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # A's only metric was named "not compared" and then drawn as a row of zero pairs, in a boxed table unlike any other.
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "results.jsonl").write_text(result_line("x", 0, {"m": (1.0, "a")}) + "\n")
    (b / "results.jsonl").write_text(result_line("x", 0, {"n": (1.0, "b")}) + "\n")
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "not compared (scored in one run only): A only: m; B only: n" in out
    assert "no metric is scored in both runs: nothing to compare" in out and "per metric over pairs" not in out
    pa, pb, _, _ = planted_runs(tmp_path / "planted", n=20, planted=2, improved=1)
    with open(pb / "results.jsonl", "a") as fh:
        fh.write(result_line("extra", 0, {"b_only": (1.0, "new metric")}) + "\n")
    assert main(["compare", str(pa), str(pb)]) == 0
    out = capsys.readouterr().out
    table = out[out.index("per metric over pairs"):out.index("acc: regressed most")]
    assert not any(c in table for c in "┃│┏┡└"), table  # as wide as it likes: still no vertical rule
    assert [row.split()[0] for row in table.splitlines()[-2:]] == ["acc", "stable"], table  # no row for b_only


def test_compare_names_a_last_line_cut_off_mid_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A run killed mid-write leaves a last line without a line break: compare left it out without a word, while it named
    # every other damaged line by line and field. Unless a process still writes the run (a line being written).
    from tracejudge.engine.run_lock import RunLock

    a, b, _, _ = planted_runs(tmp_path, n=20, planted=2, improved=1)
    lines = (b / "results.jsonl").read_bytes().splitlines(keepends=True)
    (b / "results.jsonl").write_bytes(b"".join(lines[:-1]) + lines[-1][:60])
    assert main(["compare", str(a), str(b), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["results_b"], data["unreadable_b"]) == (19, 1)
    (named,) = data["unreadable_lines_b"]
    assert named.startswith(f"{b / 'results.jsonl'}:20: (root): the last line ends without a line break (cut off as it was written)"), named
    assert "the line ends early (it looks truncated)" in named
    assert main(["compare", str(a), str(b)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "warning: 1 line(s) of B's results.jsonl are not results and were left out: " in out and "results.jsonl:20: (root): the last line" in out
    with RunLock(b):  # a process writes the run: its last line is being written, not damaged
        assert main(["compare", str(a), str(b), "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert (data["results_b"], data["unreadable_b"], data["unreadable_lines_b"]) == (19, 0, [])
