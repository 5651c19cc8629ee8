"""Runs through the real CLI: 7-of-10 reporting, the PASS/FAIL verdict and its exit code, report rebuilds."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from _runs import native_case, planted_runs, result_line, seven_and_three, write_config, write_dataset
from hypothesis import given, settings
from hypothesis import strategies as st
from tracejudge.core.evalconfig import AssertionsConfig, MetricAssertion
from tracejudge.entrypoints.cli import main
from tracejudge.stages.aggregate.gate import evaluate_gate
import _forkserver

REPO = Path(__file__).resolve().parents[1]
TRACEJUDGE = Path(sys.executable).with_name("tracejudge")


def _verdict_word(text: str) -> str:
    found = re.findall(r"verdict: (PASS|FAIL)", text)
    assert found, text
    return found[-1]


def test_seven_scored_three_errored_is_reported_as_seven_of_ten(tmp_path: Path) -> None:
    data = seven_and_three(tmp_path / "cases.jsonl")
    run_dir = tmp_path / "run"
    cfg = write_config(tmp_path / "c.yaml", data, run_dir)
    proc = _forkserver.run([str(TRACEJUDGE), "run", str(cfg)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "10 results: invalid_input 3, ok 7" in out
    assert re.search(r"^ tc\s+7/10 ", out, re.M) and "7 of 10 results are ok" in out and "not ok: invalid_input 3" in out
    # not on a terminal: progress came as structlog JSON lines on stderr
    last = json.loads(proc.stderr.strip().splitlines()[-1])
    assert last["event"] == "progress_done" and last["done"] == 10 and last["errors"] == {"invalid_input": 3}

    summary = json.loads((run_dir / "summary.json").read_text())
    tc = summary["metrics"]["tc"]
    assert (tc["results"], tc["scored"], tc["excluded"], tc["not_computed"]) == (10, 7, {"invalid_input": 3}, 0)
    assert tc["mean"] == pytest.approx(4 / 7, abs=1e-6)  # four right out of the seven scored, never x/10
    assert summary["metrics"]["traj"]["mean"] == pytest.approx((4 * 1.0 + 3 * (2 / 3)) / 7, abs=1e-6)
    assert summary["verdict"]["verdict"] == "PASS"
    assert [c["name"] for c in summary["verdict"]["checks"]] == ["max_invalid_share"]  # the config tolerates 3 in 10

    md = (run_dir / "report.md").read_text()
    assert "**7 of 10**" in md and "| tc | 7 of 10 | invalid_input 3 |" in md
    assert "invalid_input: 3 (of 10 results)" in md
    assert "no-trace" in md and "case has no trace" in md and "typo" in md  # errors stated with their reasons
    assert "missing tools: 'b'" in md  # worst cases with reasons

    # The run passes, and so does its junit.xml: the gate's check is its own test case; the three
    # unreadable records the config tolerates are skipped, the cases below threshold say so.
    root = ET.parse(run_dir / "junit.xml").getroot()
    assert (root.get("failures"), root.get("errors")) == ("0", "0")
    suites = {s.get("name"): s for s in root}
    gate = suites["tracejudge.gate"].findall("testcase")
    assert [(c.get("name"), c.find("failure")) for c in gate] == [("max_invalid_share", None)]
    tc_suite = suites["tc"]
    assert (tc_suite.get("tests"), tc_suite.get("failures"), tc_suite.get("errors"), tc_suite.get("skipped")) == ("10", "0", "0", "3")
    cases = tc_suite.findall("testcase")
    assert len(cases) == 10
    assert sum(1 for c in cases if c.find("skipped") is not None) == 3
    assert "invalid_input: " in next(c for c in cases if c.get("name") == "typo").find("skipped").get("message")
    assert next(c for c in cases if c.get("name") == "half-0").find("system-out").text.startswith("below threshold: value 0.0: missing tools")
    assert (run_dir / "report.html").read_text().startswith("<!DOCTYPE html>")


GATES = [
    ({"metrics": {"tc": {"min_mean": 0.5}}}, "PASS"),
    ({"metrics": {"tc": {"min_mean": 0.6}}}, "FAIL"),  # mean is 4/7 = 0.571
    ({"metrics": {"traj": {"min_pass_rate": 0.5}}}, "PASS"),
    ({"metrics": {"traj": {"min_pass_rate": 0.6}}}, "FAIL"),  # 4/7
    ({"metrics": {"*": {"max_error_share": 0.3}}}, "PASS"),  # 3/10 exactly
    ({"metrics": {"*": {"max_error_share": 0.29}}}, "FAIL"),
    ({"metrics": {"tc": {"min_mean": 0.5}, "traj": {"min_mean": 0.9}}}, "FAIL"),  # one failure fails the run
]


@pytest.mark.parametrize(("assertions", "expected"), GATES)
def test_verdict_matches_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str], assertions: dict, expected: str) -> None:
    data = seven_and_three(tmp_path / "cases.jsonl")
    run_dir = tmp_path / "run"
    cfg = write_config(tmp_path / "c.yaml", data, run_dir, assertions=assertions)
    rc = main(["run", str(cfg), "--no-progress"])
    word = _verdict_word(capsys.readouterr().out)
    assert word == expected
    assert rc == (0 if word == "PASS" else 1)
    assert json.loads((run_dir / "summary.json").read_text())["verdict"]["verdict"] == word
    assert f"**Verdict: {word}**" in (run_dir / "report.md").read_text()
    _junit_agrees(run_dir, word)
    # the rebuilt reports reach the same verdict, with the same exit code
    rc2 = main(["report", str(run_dir)])
    assert _verdict_word(capsys.readouterr().out) == word and rc2 == rc
    _junit_agrees(run_dir, word)


def _junit_agrees(run_dir: Path, word: str) -> None:
    """junit.xml is red in CI exactly when the verdict is FAIL, the failing checks its failures, with their lines."""
    root = ET.parse(run_dir / "junit.xml").getroot()
    summary = json.loads((run_dir / "summary.json").read_text())
    gate = root.find("testsuite[@name='tracejudge.gate']")
    assert [c.get("name") for c in gate] == [c["name"] for c in summary["verdict"]["checks"]]
    failed = {c.get("name"): c.find("failure").get("message") for c in gate if c.find("failure") is not None}
    assert failed == {c["name"]: f"{c['name']}: {c['detail']}" for c in summary["verdict"]["checks"] if not c["ok"]}
    assert root.get("errors") == "0" and int(root.get("failures")) == len(failed) == int(gate.get("failures"))
    assert (len(failed) > 0) == (word == "FAIL")


def test_unreadable_records_fail_the_gate_by_default_naming_the_first_three(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = seven_and_three(tmp_path / "cases.jsonl")
    cfg = write_config(tmp_path / "c.yaml", data, tmp_path / "run", assertions={"max_invalid_share": 0.0})  # the default
    assert main(["run", str(cfg), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "FAIL max_invalid_share: 3 of 10 results are invalid_input" in out and _verdict_word(out) == "FAIL"
    reasons = out.split("(assertions.max_invalid_share)")[1].split("verdict:")[0].strip().splitlines()
    assert len(reasons) == 3 and f"{data}:8: invalid JSON" in reasons[0]


def test_more_unreadable_records_than_listed_are_counted_under_the_first_three(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = write_dataset(tmp_path / "cases.jsonl", [native_case("good", ["a"], ["a"]), *['{"id": "torn", '] * 5])
    cfg = write_config(tmp_path / "c.yaml", data, tmp_path / "run", assertions={"max_invalid_share": 0.0})
    assert main(["run", str(cfg), "--no-progress"]) == 1
    out = capsys.readouterr().out
    reasons = [r.strip() for r in out.split("(assertions.max_invalid_share)")[1].split("verdict:")[0].strip().splitlines()]
    assert [r.split(": ")[0] for r in reasons[:3]] == [f"{data}:{n}" for n in (2, 3, 4)]
    assert reasons[3:] == ["… and 2 more"]
    assert "      … and 2 more\n" in (tmp_path / "run" / "report.md").read_text()


def test_a_binary_file_is_one_file_level_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "cases.jsonl"
    data.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 40 + b"\n" * 50)  # a zip archive saved as .jsonl
    cfg = write_config(tmp_path / "c.yaml", data, tmp_path / "run", assertions={"max_invalid_share": 0.0})
    assert main(["run", str(cfg), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "1 results: invalid_input 1" in out
    assert f"{data}:1: not a text JSONL file (it starts with 50 4B 03 04, the mark of a zip archive: extract the file from it first (unzip))" in out
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes('{"id": "caf\u00e9"}\n'.encode("latin-1") * 20)
    cfg = write_config(tmp_path / "l.yaml", latin1, tmp_path / "run-l", assertions={"max_invalid_share": 0.0})
    assert main(["run", str(cfg), "--no-progress"]) == 1
    assert "1 results: invalid_input 1" in capsys.readouterr().out


def test_resumed_run_reaches_the_same_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = seven_and_three(tmp_path / "cases.jsonl")
    cfg = write_config(tmp_path / "c.yaml", data, tmp_path / "run", assertions={"metrics": {"tc": {"min_mean": 0.6}}})
    assert main(["run", str(cfg), "--no-progress"]) == 1
    first = json.loads((tmp_path / "run" / "summary.json").read_text())
    # nothing left to do; assertions do not block resuming, and a changed threshold is honoured
    cfg = write_config(tmp_path / "c.yaml", data, tmp_path / "run", assertions={"metrics": {"tc": {"min_mean": 0.5}}})
    assert main(["run", str(cfg), "--no-progress"]) == 0
    assert "0 new results, 10 already finished" in capsys.readouterr().out
    second = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert first["metrics"] == second["metrics"]


def test_report_rebuilds_everything_from_results_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = seven_and_three(tmp_path / "cases.jsonl")
    run_dir = tmp_path / "run"
    cfg = write_config(tmp_path / "c.yaml", data, run_dir, aggregate={"group_by": ["domain"]})
    assert main(["run", str(cfg), "--no-progress"]) == 0
    original = json.loads((run_dir / "summary.json").read_text())
    for name in ("summary.json", "report.md", "junit.xml", "report.html", "manifest.json"):
        (run_dir / name).unlink()
    # without the manifest the config's assertions are unknown: the default gate (no unreadable record) applies
    assert main(["report", str(run_dir)]) == 1
    assert "FAIL max_invalid_share" in capsys.readouterr().out
    rebuilt = json.loads((run_dir / "summary.json").read_text())
    assert rebuilt["metrics"] == original["metrics"]  # same figures, CI included (seeded)
    assert rebuilt["breakdowns"]["tag"] == original["breakdowns"]["tag"]
    for name in ("report.md", "junit.xml", "report.html"):
        assert (run_dir / name).stat().st_size > 0
    assert main(["report", str(tmp_path / "nowhere")]) == 2
    assert "nowhere: no such run directory" in capsys.readouterr().err  # (a path that is not there says so)
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty")]) == 2
    assert "no results.jsonl here" in capsys.readouterr().err


def test_regression_gate_against_a_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b, planted, _ = planted_runs(tmp_path)
    (b / "summary.json").write_text('{"complete": true}')  # hand-made: say it finished, as a run's own summary does
    rc = main(["report", str(b), "--baseline", str(a), "--out", str(tmp_path / "vs-a")])
    out = capsys.readouterr().out
    assert rc == 1 and _verdict_word(out) == "FAIL"
    assert "acc regression" in out and "drop is beyond noise" in out and "verdict: FAIL" in out
    assert "stable regression" in out  # unchanged metric: its check holds
    html = (tmp_path / "vs-a" / "report.html").read_text()
    assert "Regressed most: acc" in html and "planted regression" in html
    # the same comparison against itself passes
    rc = main(["report", str(a), "--baseline", str(a)])
    assert rc == 0 and _verdict_word(capsys.readouterr().out) == "PASS"


def test_a_baseline_verdict_is_never_written_into_the_run_it_reads(tmp_path: Path) -> None:
    # `report RUN --baseline X` used to write its one-off regression verdict into RUN's summary.json and reports,
    # so `view` and a later look showed a FAIL the run itself never said.
    data = seven_and_three(tmp_path / "cases.jsonl")
    cfgs = {}
    for name in ("base", "run"):
        cfgs[name] = write_config(tmp_path / f"{name}.yaml", data, tmp_path / name)
        got = _forkserver.run([str(TRACEJUDGE), "run", str(cfgs[name]), "--no-progress"], capture_output=True, text=True, timeout=120)
        assert got.returncode == 0, got.stdout + got.stderr
    run_dir = tmp_path / "run"
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    got = _forkserver.run([str(TRACEJUDGE), "report", str(run_dir), "--baseline", str(tmp_path / "base")],
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 0 and "tc regression" in got.stdout, got.stdout + got.stderr
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before  # nothing in the run changed
    assert "left as the run wrote them" in " ".join(got.stdout.split())
    checks = [c["name"] for c in json.loads((run_dir / "summary.json").read_text())["verdict"]["checks"]]
    assert checks == ["max_invalid_share"]  # what the run itself said
    got = _forkserver.run([str(TRACEJUDGE), "report", str(run_dir)], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0 and "regression" not in got.stdout, got.stdout + got.stderr


def _cli_runs(tmp_path: Path, *names: str) -> None:
    """`tracejudge run` of the same ten cases into each of `tmp_path / name`."""
    data = seven_and_three(tmp_path / "cases.jsonl")
    for name in names:
        got = _forkserver.run([str(TRACEJUDGE), "run", str(write_config(tmp_path / f"{name}.yaml", data, tmp_path / name)), "--no-progress"],
                             capture_output=True, text=True, timeout=120)
        assert got.returncode == 0, got.stdout + got.stderr


def test_an_out_that_is_a_file_or_lies_in_a_run_read_is_refused_in_one_line(tmp_path: Path) -> None:
    # `--out FILE` was an internal error (FileExistsError, exit 3); `--out RUN/sub` wrote the comparison into the run.
    _cli_runs(tmp_path, "base", "run")
    (tmp_path / "afile").write_text("mine")
    run_dir = tmp_path / "run"
    before = sorted(p.relative_to(run_dir) for p in run_dir.rglob("*"))
    for out, says in ((tmp_path / "afile", "is a file"), (run_dir / "sub", "lies in the run"), (run_dir, "lies in the run"),
                      (tmp_path / "base", "lies in the run")):
        got = _forkserver.run([str(TRACEJUDGE), "report", str(run_dir), "--baseline", str(tmp_path / "base"), "--out", str(out)],
                             capture_output=True, text=True, timeout=120)
        assert got.returncode == 2 and says in got.stderr and "--out" in got.stderr and "Traceback" not in got.stderr, got.stderr
    assert (tmp_path / "afile").read_text() == "mine"
    assert sorted(p.relative_to(run_dir) for p in run_dir.rglob("*")) == before
    got = _forkserver.run([str(TRACEJUDGE), "report", str(run_dir), "--baseline", str(tmp_path / "base"), "--out", str(tmp_path / "cmp")],
                         capture_output=True, text=True, timeout=120)
    assert got.returncode == 0 and (tmp_path / "cmp" / "summary.json").exists(), got.stdout + got.stderr


def test_an_out_holding_files_of_the_users_own_is_refused_naming_them(tmp_path: Path) -> None:
    # It said "holds something that is not a merge of shards" of a folder of notes: nothing about shards was asked.
    _cli_runs(tmp_path, "run", "other")
    mine = tmp_path / "mine"
    mine.mkdir()
    for name in ("notes.txt", "plot.png", "a.csv", "b.csv"):
        (mine / name).write_text("mine")
    got = _forkserver.run([str(TRACEJUDGE), "report", str(tmp_path / "run"), "--out", str(mine)], capture_output=True, text=True, timeout=120)
    assert got.returncode == 2, got.stdout + got.stderr
    assert " ".join(got.stderr.split()) == (f"error: {mine}: already holds files that report did not write (a.csv, b.csv, notes.txt and 1 more); "
                                            "they are never overwritten: give --out a new or empty directory to write the reports to")
    assert sorted(p.name for p in mine.iterdir()) == ["a.csv", "b.csv", "notes.txt", "plot.png"]
    got = _forkserver.run([str(TRACEJUDGE), "report", str(tmp_path / "run"), "--out", str(tmp_path / "other")], capture_output=True, text=True, timeout=120)
    assert got.returncode == 2 and "holds a run of its own (its manifest.json)" in " ".join(got.stderr.split()), got.stderr
    assert "shards" not in got.stderr


def test_regression_rule_within_noise_passes(tmp_path: Path) -> None:
    a, b, _, _ = planted_runs(tmp_path, planted=3, improved=1)  # a 2/300 drop: beyond 0.005, within noise
    summary = {"results": 300, "metrics": {"acc": {"results": 300, "scored": 300}}, "pass_at_k": {}}
    strict = AssertionsConfig.model_validate({"regression": {"baseline": str(a), "max_mean_drop": 0.005}})
    noisy = AssertionsConfig.model_validate({"regression": {"baseline": str(a), "max_mean_drop": 0.005, "noise": "ci"}})
    assert not evaluate_gate(strict, summary, b).passed
    v = evaluate_gate(noisy, summary, b)
    assert v.passed and "within noise" in v.checks[0].detail


def test_missing_baseline_fails_the_gate(tmp_path: Path) -> None:
    v = evaluate_gate(AssertionsConfig.model_validate({"regression": {"baseline": str(tmp_path / "none")}}), {"metrics": {}}, tmp_path)
    assert not v.passed and v.exit_code == 1 and any("has no results.jsonl" in c.detail for c in v.checks)


def test_interrupted_run_is_neither_pass_nor_fail(tmp_path: Path) -> None:
    v = evaluate_gate(AssertionsConfig(), {"complete": False, "metrics": {}}, None)
    assert v.word == "INTERRUPTED" and v.exit_code == 130 and not v.passed


def test_assertions_naming_unknown_metrics_are_config_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = seven_and_three(tmp_path / "cases.jsonl")
    cfg = write_config(tmp_path / "c.yaml", data, tmp_path / "run", assertions={"metrics": {"nope": {"min_mean": 0.5}}})
    assert main(["run", str(cfg)]) == 2
    err = capsys.readouterr().err
    assert re.search(r"c\.yaml:\d+: assertions\.metrics\.nope: no metric 'nope' in this run", err)
    # One slip from a metric's name, the gate names it (it listed the run's metrics alone).
    cfg = write_config(tmp_path / "c.yaml", data, tmp_path / "run", assertions={"metrics": {"trj": {"min_mean": 0.5}}})
    assert main(["run", str(cfg)]) == 2
    assert "assertions.metrics.trj: no metric 'trj' in this run; expected one of: tc, traj; did you mean traj?" in capsys.readouterr().err


metric_blocks = st.builds(
    lambda scored, results_extra, mean, passed: {
        "results": scored + results_extra, "scored": scored, "excluded": {"judge_error": results_extra} if results_extra else {},
        "not_computed": 0, "mean": mean if scored else None, "passed": min(passed, scored), "with_verdict": scored,
        "pass_rate": (min(passed, scored) / scored) if scored else None,
        "error_share": results_extra / (scored + results_extra) if scored + results_extra else None,
    },
    st.integers(0, 20), st.integers(0, 5), st.floats(0, 1), st.integers(0, 20),
)
rules = st.builds(MetricAssertion, min_mean=st.none() | st.floats(0, 1), min_pass_rate=st.none() | st.floats(0, 1),
                  max_error_share=st.none() | st.floats(0, 1))


@settings(max_examples=200, deadline=None)
@given(block=metric_blocks, rule=rules, complete=st.booleans())
def test_gate_verdict_is_pass_exactly_when_every_condition_holds(block: dict, rule: MetricAssertion, complete: bool) -> None:
    summary = {"complete": complete, "results": block["results"], "metrics": {"m": block}, "pass_at_k": {}}
    v = evaluate_gate(AssertionsConfig(metrics={"m": rule}), summary, None)
    holds = complete and block["results"] > 0 and block["scored"] > 0  # a run that scored nothing fails
    if rule.min_mean is not None:
        holds &= block["mean"] is not None and block["mean"] >= rule.min_mean - 1e-12
    if rule.min_pass_rate is not None:
        holds &= block["pass_rate"] is not None and block["pass_rate"] >= rule.min_pass_rate - 1e-12
    if rule.max_error_share is not None:
        holds &= block["error_share"] is not None and block["error_share"] <= rule.max_error_share + 1e-12
    assert v.passed == holds
    expected = ("INTERRUPTED", 130) if not complete else ("PASS", 0) if holds else ("FAIL", 1)
    assert (v.word, v.exit_code) == expected


def test_regression_compares_only_metrics_both_runs_have(tmp_path: Path) -> None:
    a, b, _, _ = planted_runs(tmp_path, planted=0, improved=0)
    summary = {"results": 300, "metrics": {"acc": {"scored": 300}, "stable": {"scored": 300}, "brand_new": {"scored": 300}}, "pass_at_k": {}}
    v = evaluate_gate(AssertionsConfig.model_validate({"regression": {"baseline": str(a)}}), summary, b)
    assert v.passed, v.checks
    assert [c.name for c in v.checks] == ["regression: new metrics", "acc regression", "stable regression"]
    assert "brand_new" in v.checks[0].detail
    named = AssertionsConfig.model_validate({"regression": {"baseline": str(a), "metrics": ["brand_new"]}})
    assert not evaluate_gate(named, summary, b).passed  # named explicitly: no pair to compare is a failure


def test_a_baseline_sharing_no_metric_fails_instead_of_comparing_nothing(tmp_path: Path) -> None:
    a, _, _, _ = planted_runs(tmp_path, planted=0, improved=0)
    renamed = tmp_path / "renamed"
    renamed.mkdir()
    with open(renamed / "results.jsonl", "w") as fh:
        for i in range(30):
            fh.write(result_line(f"c{i:03d}", 0, {"accuracy": (1.0, "renamed from acc")}) + "\n")
    summary = {"results": 30, "metrics": {"accuracy": {"scored": 30}}, "pass_at_k": {}}
    v = evaluate_gate(AssertionsConfig.model_validate({"regression": {"baseline": str(a)}}), summary, renamed)
    assert not v.passed and v.exit_code == 1
    assert [c.name for c in v.checks] == ["regression"] and "nothing to compare" in v.checks[0].detail


def test_an_interrupted_run_says_interrupted_and_writes_its_reports(tmp_path: Path) -> None:
    import anyio
    from tracejudge.core.config import load_config
    from tracejudge.engine import runner

    data = seven_and_three(tmp_path / "cases.jsonl")
    config = load_config(write_config(tmp_path / "c.yaml", data, tmp_path / "run"))

    async def go() -> runner.RunOutcome:
        stop = anyio.Event()
        stop.set()  # as after a first Ctrl-C: take no new case
        return await runner.run(config, stop=stop)

    outcome = anyio.run(go)
    assert outcome.interrupted and outcome.verdict.word == "INTERRUPTED" and outcome.verdict.exit_code == 130
    assert outcome.verdict.checks[0].name == "run complete"
    assert "**Verdict: INTERRUPTED**" in (tmp_path / "run" / "report.md").read_text()


def test_a_run_that_scored_nothing_fails(tmp_path: Path) -> None:
    empty = evaluate_gate(AssertionsConfig(), {"results": 0, "metrics": {"m": {"scored": 0}}}, None)
    assert empty.word == "FAIL" and "no results" in empty.checks[0].detail
    invalid = evaluate_gate(AssertionsConfig(), {"results": 3, "status": {"invalid_input": 3}, "metrics": {"m": {"scored": 0}}}, None)
    assert invalid.word == "FAIL" and "no metric scored any of the 3 results" in invalid.checks[0].detail


def test_a_configured_invalid_share_that_held_is_shown_as_held(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # With no invalid record, the gate used to say "(no assertions configured)" though the config set one.
    data = write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i}", ["a"], ["a"]) for i in range(7)])
    cfg = write_config(tmp_path / "c.yaml", data, tmp_path / "run")  # max_invalid_share: 0.3
    assert main(["run", str(cfg), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "ok   max_invalid_share: 0 of 7 results are invalid_input" in out and "no assertions configured" not in out, out
    assert main(["report", str(tmp_path / "run")]) == 0
    assert "ok   max_invalid_share: 0 of 7" in capsys.readouterr().out


def test_a_gate_on_a_case_level_metric_counts_over_the_cases_that_carry_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # One case of four carries its own metric `cm`. The gate used to say "3 of 4 results not scored ... = 0.0000":
    # its count took in the three cases without `cm`, its share (rightly) did not.
    def carrying(spec: dict) -> list:
        return [{**native_case("c0", ["a"], ["a"]), "metrics": [spec]}] + [native_case(f"c{i}", ["a"], ["a"]) for i in (1, 2, 3)]

    rules = {"*": {"min_mean": 0.5, "min_pass_rate": 0.5, "max_error_share": 0.1}}
    data = write_dataset(tmp_path / "cases.jsonl", carrying({"type": "Contains", "name": "cm", "value": "zzz"}))
    cfg = write_config(tmp_path / "c.yaml", data, tmp_path / "run", assertions={"metrics": rules})
    assert main(["run", str(cfg), "--no-progress"]) == 1
    checks = {c["name"]: c for c in json.loads((tmp_path / "run" / "summary.json").read_text())["verdict"]["checks"]}
    assert checks["cm max_error_share"]["ok"] and checks["cm max_error_share"]["detail"].startswith(
        "0 of 1 results carrying 'cm' not scored (none excluded; not computed 0) = 0.0000; 3 of 4 results do not carry it")
    assert "mean 0.0000 over 1 of 1 results carrying 'cm' (3 of 4 results do not carry it or it does not apply to them)" in checks["cm min_mean"]["detail"]
    assert checks["tc min_mean"]["detail"] == "mean 1.0000 over 4 of 4 results, required >= 0.5"  # a run-level metric: as before
    capsys.readouterr()
    # The case's spec does not validate (`valu`): `cm` scored no case, and every check on it says so.
    data = write_dataset(tmp_path / "cases-2.jsonl", carrying({"type": "Contains", "name": "cm", "valu": "zzz"}))
    cfg = write_config(tmp_path / "c-2.yaml", data, tmp_path / "run-2", assertions={"metrics": rules})
    assert main(["run", str(cfg), "--no-progress"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "FAIL cm min_mean: no result scored 'cm': 0 of the 1 results carrying it (3 of 4 results do not carry it or it does not apply to them); " \
           "no evidence is not a pass, required mean >= 0.5" in out, out
    assert "FAIL cm min_pass_rate: no result scored 'cm'" in out
    assert "FAIL cm max_error_share: 1 of 1 results carrying 'cm' not scored (none excluded; not computed 1) = 1.0000" in out


def test_the_summary_rows_of_a_case_level_metric_add_up_to_the_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # One case of four carries `cm`: its row said "1/4" with nothing else, hiding the three results that do not carry it.
    cases = [{**native_case("c0", ["a"], ["a"]), "metrics": [{"type": "Contains", "name": "cm", "value": "zzz"}]}]
    data = write_dataset(tmp_path / "cases.jsonl", cases + [native_case(f"c{i}", ["a"], ["a"]) for i in (1, 2, 3)])
    cfg = write_config(tmp_path / "c.yaml", data, tmp_path / "run")
    main(["run", str(cfg), "--no-progress"])
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.split()[:1] in (["cm"], ["tc"])}
    assert "1/4 (3 not applicable)" in rows["cm"], rows
    assert "not applicable" not in rows["tc"], rows  # a run-level metric every result carries: as before
    md = {line.split("|")[1].strip(): line for line in (tmp_path / "run" / "report.md").read_text().splitlines() if line.startswith("| cm") or line.startswith("| tc")}
    assert "| 1 of 4 (3 not applicable) |" in md["cm"] and "| 4 of 4 |" in md["tc"], md


def test_a_failed_agent_call_fails_the_gate_by_default_naming_the_case(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A live python target that raises for one case of four: a target_error, which fails the gate unless allowed.
    (tmp_path / "agent.py").write_text("def respond(request):\n    if request.case_id == 'c2':\n        raise RuntimeError('the tool server is down')\n"
                                       "    return 'done'\n")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "hi"}) + "\n" for i in range(4)))
    base = ("dataset: {path: cases.jsonl}\nmetrics: [{type: MaxToolCalls, max_calls: 5}]\n"
            "target: {kind: python, callable: 'agent:respond', pythonpath: ., retries: 0}\n")
    (tmp_path / "c.yaml").write_text(base + "run: {dir: run}\n")
    assert main(["run", str(tmp_path / "c.yaml"), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "FAIL max_target_error_share: 1 of 4 results are target_error" in out and "= 25.0%, allowed <= 0.0%" in out
    assert "case 'c2': " in out and "the tool server is down" in out
    # The same command retries the provisional failure, which fails again: the check lists the standing line only.
    assert main(["run", str(tmp_path / "c.yaml"), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert "1 of 4 results are target_error" in out and out.count("case 'c2': ") == 1, out
    (tmp_path / "ok.yaml").write_text(base + "run: {dir: run2}\nassertions: {max_target_error_share: 0.25}\n")
    assert main(["run", str(tmp_path / "ok.yaml"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "ok   max_target_error_share: 1 of 4 results are target_error" in out and _verdict_word(out) == "PASS"


def test_star_limits_also_bind_a_metric_with_a_rule_of_its_own(tmp_path: Path) -> None:
    # `tracejudge init` writes `ToolCalls: {min_mean: 0.0}` beside `"*": {max_error_share: 0.05}`: the 5% limit used to
    # be dropped for ToolCalls, so a run where it scored half the cases passed without the check being listed.
    lines = [native_case(f"c{i}", ["a"] if i % 2 == 0 else [], ["a"]) for i in range(4)]
    for line in lines[1::2]:
        del line["expected_tool_calls"]  # nothing to compare with: ToolCalls is not computed on these
    data = write_dataset(tmp_path / "cases.jsonl", lines)
    cfg = tmp_path / "tracejudge.yaml"
    made = _forkserver.run([str(TRACEJUDGE), "init", "--format", "native", "--dataset", str(data), "-o", str(cfg)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert made.returncode == 0 and '"*": {max_error_share: 0.05}' in cfg.read_text(), made.stderr
    for args in (["run", str(cfg), "--no-progress"], ["report", str(tmp_path / "runs" / "tracejudge")]):
        got = _forkserver.run([str(TRACEJUDGE), *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)
        out = " ".join(got.stdout.split())
        assert "ok ToolCalls min_mean" in out and "FAIL ToolCalls max_error_share: 2 of 4 results not scored" in out, out
        assert _verdict_word(out) == "FAIL" and got.returncode == 1, out


def test_a_metrics_own_key_overrides_only_that_key_of_star() -> None:
    summary = {"results": 4, "metrics": {"m": {"results": 4, "scored": 2, "mean": 0.5, "pass_rate": 0.5, "passed": 1, "error_share": 0.5}}}
    rules = AssertionsConfig(metrics={"*": MetricAssertion(min_mean=0.9, max_error_share=0.05), "m": MetricAssertion(min_mean=0.4)})
    checks = {c.name: c for c in evaluate_gate(rules, summary, None).checks}
    assert checks["m min_mean"].ok and "required >= 0.4" in checks["m min_mean"].detail
    assert not checks["m max_error_share"].ok and "allowed <= 0.05" in checks["m max_error_share"].detail
