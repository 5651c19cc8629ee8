"""What `compare` and the gate print: data shown inert, figures that agree with their verdict, coverage the gate loses.

Every test makes real run directories with `tracejudge run` on small native datasets.
"""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import yaml
import _forkserver

TJ = Path(sys.executable).with_name("tracejudge")

# An OSC that sets the terminal's title, an SGR that paints it red, a right-to-left override.
HOSTILE_ID = "x\x1b]0;OWNED\x07\x1b[41mRED\u202eevil"
HOSTILE_METRIC = "tc\x1b[41mRED\x1b[0m"


def _case(cid: str, called: str, **extra: Any) -> dict[str, Any]:
    return {"id": cid, "input": "q", "expected_tool_calls": [{"name": "s", "arguments": {}}],
            "trace": {"steps": [{"tool_calls": [{"name": called, "arguments": {}}]}], "output": "o"}, **extra}


def _run(root: Path, name: str, cases: list[dict[str, Any]], metrics: list[dict[str, Any]], **sections: Any) -> subprocess.CompletedProcess[str]:
    """`tracejudge run` of `cases` scored with `metrics` into `root/runs/name` (cwd `root`)."""
    (root / f"{name}.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    cfg = {"dataset": {"path": f"{name}.jsonl", "format": "native"}, "metrics": metrics, "run": {"dir": f"runs/{name}"}, **sections}
    (root / f"{name}.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return _forkserver.run([str(TJ), "run", f"{name}.yaml", "--no-progress"], cwd=root, capture_output=True, text=True, timeout=120)


def _tj(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([str(TJ), *args], cwd=root, capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})


RAW = ("\x1b", "\x07", "\u202e", "\x9b")


# (1) ------------------------------------------------------------------------------------------------------------------

def test_compare_prints_ids_and_metric_names_inert_and_json_exact(tmp_path: Path) -> None:
    # The OSC, the SGR and the override of a case id reached the terminal from the table of moved cases.
    metrics = [{"type": "ToolCalls", "name": HOSTILE_METRIC}]
    assert _run(tmp_path, "a", [_case(HOSTILE_ID, "s"), _case("plain", "s")], metrics).returncode == 0
    assert _run(tmp_path, "b", [_case(HOSTILE_ID, "t"), _case("plain", "s")], metrics).returncode == 0
    got = _tj(tmp_path, "compare", "runs/a", "runs/b")
    assert got.returncode == 0, got.stderr
    assert not any(ch in got.stdout for ch in RAW), repr(got.stdout)
    flat = "".join(got.stdout.split())  # the id may wrap in its table cell
    assert "x\\x1b]0;OWNED\\x07\\x1b[41mRED\\u{202e}evil" in flat
    assert "tc\\x1b[41mRED\\x1b[0m" in flat  # the metric's row and its table's title
    data = json.loads(_tj(tmp_path, "compare", "runs/a", "runs/b", "--json").stdout)
    assert list(data["metrics"]) == [HOSTILE_METRIC]
    assert [m["case_id"] for m in data["metrics"][HOSTILE_METRIC]["worst"]] == [HOSTILE_ID]


def test_the_check_lines_print_a_metric_name_inert(tmp_path: Path) -> None:
    got = _run(tmp_path, "a", [_case("c", "t")], [{"type": "ToolCalls", "name": HOSTILE_METRIC}],
               assertions={"metrics": {"*": {"min_mean": 0.9}}})
    assert got.returncode == 1, got.stdout + got.stderr
    line = next(ln for ln in got.stdout.splitlines() if "min_mean" in ln)
    assert line.strip() == "FAIL tc\\x1b[41mRED\\x1b[0m min_mean: mean 0.0000 over 1 of 1 results, required >= 0.9"
    summary = json.loads((tmp_path / "runs/a/summary.json").read_text())
    assert summary["verdict"]["checks"][0]["name"] == f"{HOSTILE_METRIC} min_mean"  # summary.json keeps it exact
    # The summary table above the checks prints it inert too (an ESC there recoloured the terminal).
    assert "\x1b" not in got.stdout and "tc\\x1b[41mRED\\x1b[0m" in got.stdout.split("FAIL")[0], got.stdout


# (2) ------------------------------------------------------------------------------------------------------------------

VALUE_METRIC = "import tracejudge as tj\n\n\n@tj.metric\ndef val(case: tj.Case, trace: tj.Trace) -> float | None:\n    return case.metadata['v']\n"


def _valued(root: Path, name: str, values: list[float | None], **sections: Any) -> subprocess.CompletedProcess[str]:
    (root / "shown_values.py").write_text(VALUE_METRIC)
    cases = [{"id": f"c{i}", "input": "x", "metadata": {"v": v}, "trace": {"steps": [], "output": "o"}} for i, v in enumerate(values)]
    return _run(root, name, cases, [{"type": "shown_values:val", "threshold": 0.5}], **sections)


def _outputs(root: Path, name: str, proc: subprocess.CompletedProcess[str]) -> tuple[str, str, str]:
    """The failed checks' lines as the terminal, report.md and junit.xml's failure messages give them."""
    md = html.unescape((root / "runs" / name / "report.md").read_text())
    junit = ET.parse(root / "runs" / name / "junit.xml").getroot()
    messages = " | ".join(f.get("message", "") for f in junit.iter("failure"))
    return proc.stdout, md, messages


def test_a_failed_min_mean_never_prints_the_threshold_it_missed(tmp_path: Path) -> None:
    # "FAIL val min_mean: mean 0.7000 ..., required >= 0.7": the figure, rounded, said the check held.
    got = _valued(tmp_path, "g", [0.6998, 0.7, 0.7, 0.7, 0.7], assertions={"metrics": {"val": {"min_mean": 0.7}}})
    assert got.returncode == 1, got.stdout + got.stderr
    for text in _outputs(tmp_path, "g", got):
        assert "mean 0.69996 over 5 of 5 results, required >= 0.7" in text
        assert "mean 0.7000" not in text
    got = _valued(tmp_path, "h", [0.4999, 0.5, 0.5, 0.5, 0.5], assertions={"metrics": {"val": {"min_mean": 0.49999}}})
    assert got.returncode == 1 and "mean 0.49998 over 5 of 5 results, required >= 0.49999" in got.stdout, got.stdout
    got = _valued(tmp_path, "p", [0.7] * 5, assertions={"metrics": {"val": {"min_mean": 0.7}}})
    assert got.returncode == 0 and "mean 0.7000 over 5 of 5 results, required >= 0.7" in got.stdout, got.stdout  # held: 4 places


def test_pass_rate_error_share_and_invalid_share_carry_the_digits_that_failed_them(tmp_path: Path) -> None:
    # 2 of 3 passed, 0.666667: "pass rate 0.6667 (2/3) ..., required >= 0.66667" was a FAIL line.
    got = _valued(tmp_path, "r", [0.9, 0.9, 0.1], assertions={"metrics": {"val": {"min_pass_rate": 0.66667}}})
    assert got.returncode == 1, got.stdout + got.stderr
    for text in _outputs(tmp_path, "r", got):
        assert "pass rate 0.666667 (2/3) over 3 of 3 results, required >= 0.66667" in text
    # 1 of 3 not computed, 0.333333: "= 0.3333, allowed <= 0.33333" was a FAIL line.
    got = _valued(tmp_path, "e", [0.9, None, 0.9], assertions={"metrics": {"val": {"max_error_share": 0.33333}}})
    assert got.returncode == 1, got.stdout + got.stderr
    for text in _outputs(tmp_path, "e", got):
        assert "= 0.333333, allowed <= 0.33333" in text
    got = _valued(tmp_path, "k", [0.9, None, 0.9], assertions={"metrics": {"val": {"max_error_share": 0.34, "min_pass_rate": 0.5}}})
    assert got.returncode == 0 and "= 0.3333, allowed <= 0.34" in got.stdout and "pass rate 1.0000 (2/2)" in got.stdout, got.stdout
    # A share of records, as a percentage: "33.3%, allowed <= 33.3%" failed.
    (tmp_path / "bad.jsonl").write_text('{"id": "c0", "input": "x", "metadata": {"v": 1}, "trace": {"steps": []}}\n{broken\n'
                                        '{"id": "c2", "input": "x", "metadata": {"v": 1}, "trace": {"steps": []}}\n')
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({"dataset": {"path": "bad.jsonl", "format": "native"}, "metrics": [{"type": "shown_values:val"}],
                                                       "run": {"dir": "runs/bad"}, "assertions": {"max_invalid_share": 0.333}}))
    got = _tj(tmp_path, "run", "bad.yaml", "--no-progress")
    assert got.returncode == 1 and "= 33.33%, allowed <= 33.3% (assertions.max_invalid_share)" in got.stdout, got.stdout


def test_a_regression_drop_just_beyond_the_limit_shows_its_digits(tmp_path: Path) -> None:
    # delta -0.02001 printed "delta -0.0200; allowed drop 0.02" on a FAIL line.
    assert _valued(tmp_path, "base", [0.72] * 5).returncode == 0
    got = _valued(tmp_path, "cur", [0.7, 0.7, 0.7, 0.7, 0.69995],
                  assertions={"regression": {"baseline": "runs/base", "max_mean_drop": 0.02}})
    assert got.returncode == 1, got.stdout + got.stderr
    for text in _outputs(tmp_path, "cur", got):
        assert "delta -0.02001," in text and "allowed drop 0.02" in text


def test_the_regression_ci_never_reads_backwards(tmp_path: Path) -> None:
    # The lower bound had 4 places and the upper as many as it needed: `95% CI of delta [-0.0000, -0.00005]`.
    import re

    assert _valued(tmp_path, "base", [0.70001] * 5).returncode == 0
    got = _valued(tmp_path, "cur", [0.69996] * 5, assertions={"regression": {"baseline": "runs/base", "max_mean_drop": 0.0000499}})
    assert got.returncode == 1, got.stdout + got.stderr
    for text in _outputs(tmp_path, "cur", got):
        low, high = re.search(r"95% CI of delta \[([-+0-9.]+), ([-+0-9.]+)\]", text).groups()
        assert float(low) <= float(high) and len(low.partition(".")[2]) == len(high.partition(".")[2]), text


def test_figures_agree_with_the_check_in_every_direction() -> None:
    from tracejudge.stages.aggregate.gate import _kappa_check
    from tracejudge.stages.aggregate.gate_figures import figure, limit

    assert figure(0.69996, 0.7, False) == "0.69996" and figure(0.7, 0.7, True) == "0.7000"
    assert figure(0.7 - 1e-13, 0.7, True) == "0.7000"  # held within the tolerance: reads equal, not below
    assert figure(0.70004, 0.70005, False) == "0.7000"  # 4 places already show it
    assert figure(0.333334, 0.33333, False, at_least=False) == "0.333334"
    assert figure(-0.00004, 0.0, False, sign=True) == "-0.00004"  # a CI bound "beyond noise" is below 0 as printed
    assert figure(1 / 3, 0.333, False, at_least=False, places=1, percent=True) == "33.33%"
    assert (limit(0.0, percent=True), limit(0.05, percent=True), limit(0.3333, percent=True)) == ("0.0%", "5.0%", "33.33%")
    kappa = _kappa_check("m", 0.6, {"labels": {"metrics": {"m": {"kappa": 0.59999, "n": 40}}}})
    assert not kappa.ok and "kappa 0.59999 over 40" in kappa.detail


def test_a_pairwise_win_rate_below_its_minimum_shows_the_digits(tmp_path: Path) -> None:
    from rich.console import Console
    from tracejudge.stages.comparison.pairwise import PairwiseResult, print_pairwise

    res = PairwiseResult("a", "b", pairs=10, wins=5, ties=0, losses=5, win_rate=0.4996, win_rate_ci=[0.2, 0.8],
                         first_shown_win_rate=0.5, min_win_rate=0.5)
    console = Console(record=True, width=200)
    print_pairwise(res, console)
    text = console.export_text()
    assert "FAIL min_win_rate: B's win rate 0.4996, required >= 0.5" in text


# (3) ------------------------------------------------------------------------------------------------------------------

def test_the_regression_gate_warns_of_dropped_metrics_and_changed_options(tmp_path: Path) -> None:
    # `compare` said "A only: ToolCorrectness" and "options order: 'in_order' → 'exact'"; the gate said neither.
    cases = [_case(f"c{i}", "s") for i in range(6)]
    base = [{"type": "ToolCalls"}, {"type": "TrajectoryMatch"}, {"type": "ToolCorrectness"}]
    assert _run(tmp_path, "base", cases, base).returncode == 0
    now = [{"type": "ToolCalls"}, {"type": "TrajectoryMatch", "order": "exact"}, {"type": "MaxToolCalls", "max_calls": 3}]
    got = _run(tmp_path, "now", cases, now, assertions={"regression": {"baseline": "runs/base", "max_mean_drop": 0.01}})
    assert got.returncode == 0, got.stdout + got.stderr  # a warning, not a failure
    out = " ".join(got.stdout.split())
    assert "warn regression: dropped metrics: in the baseline " in out
    assert "runs/base but not scored in this run, so not compared (their regression is not checked): ToolCorrectness;" in out
    assert "not in the baseline, so not compared: MaxToolCalls" in out
    traj = next(ln for ln in got.stdout.splitlines() if "TrajectoryMatch regression" in ln)
    assert "warn" in traj and "options order: 'in_order' → 'exact'" in traj
    md = (tmp_path / "runs/now/report.md").read_text()
    assert "`regression: dropped metrics`: warning: in the baseline" in md and "ToolCorrectness" in md
    assert "options order: 'in_order' → 'exact'" in md
    junit = (tmp_path / "runs/now/junit.xml").read_text()
    assert 'name="regression: dropped metrics"' in junit and "warning: in the baseline" in junit
    assert "options order: &apos;in_order&apos; → &apos;exact&apos;" in junit or "options order: 'in_order' → 'exact'" in junit
    checks = json.loads((tmp_path / "runs/now/summary.json").read_text())["verdict"]["checks"]
    assert [c.get("warning", False) for c in checks if c["name"] == "regression: dropped metrics"] == [True]
    assert all("warning" not in c for c in checks if c["name"] == "ToolCalls regression")
    # `report RUN --baseline X` says the same.
    got = _tj(tmp_path, "report", "runs/now", "--baseline", "runs/base")
    assert got.returncode == 0 and "warn regression: dropped metrics" in got.stdout and "'in_order' → 'exact'" in got.stdout, got.stdout


# (4) ------------------------------------------------------------------------------------------------------------------

def test_compare_metric_scored_in_one_run_only_is_named_not_a_row_of_zero_pairs(tmp_path: Path) -> None:
    cases = [_case(f"c{i}", "s") for i in range(4)]
    assert _run(tmp_path, "a", cases, [{"type": "ToolCalls"}, {"type": "ToolCorrectness"}]).returncode == 0
    assert _run(tmp_path, "b", cases, [{"type": "ToolCalls"}, {"type": "TrajectoryMatch"}]).returncode == 0
    got = _tj(tmp_path, "compare", "runs/a", "runs/b", "--metric", "ToolCorrectness")
    assert got.returncode == 0, got.stderr
    assert "not compared (scored in one run only): A only: ToolCorrectness; B only: -" in got.stdout
    assert "no metric is scored in both runs: nothing to compare" in got.stdout and "0 pairs" not in got.stdout
    data = json.loads(_tj(tmp_path, "compare", "runs/a", "runs/b", "--metric", "ToolCorrectness", "--metric", "TrajectoryMatch",
                          "--metric", "ToolCalls", "--json").stdout)
    assert (data["metrics_only_a"], data["metrics_only_b"]) == (["ToolCorrectness"], ["TrajectoryMatch"])
    got = _tj(tmp_path, "compare", "runs/a", "runs/b", "--metric", "ToolCalls", "--metric", "TrajectoryMatch")
    assert "A only: -; B only: TrajectoryMatch" in got.stdout
    rows = [ln.split()[0] for ln in got.stdout.splitlines() if ln.split() and ln.split()[0] in ("ToolCalls", "TrajectoryMatch")]
    assert rows == ["ToolCalls"], got.stdout  # the one-sided metric is no row


def test_a_run_folders_name_and_a_bidi_id_are_written_inert(tmp_path: Path) -> None:
    # `tracejudge report` printed a run folder's name raw (an ESC recoloured the terminal) and report.md's title kept it;
    # junit.xml kept a bidirectional override in a case id raw (a CI page showed the name backwards).
    folder = "evil\x1b[31m\u202ex"
    got = _run(tmp_path, "a", [_case("ab\u202ecd", "t")], [{"type": "ToolCalls"}])
    assert got.returncode in (0, 1), got.stderr
    (tmp_path / "runs" / "a").rename(tmp_path / "runs" / folder)
    rep = _tj(tmp_path, "report", f"runs/{folder}")
    assert rep.returncode in (0, 1), rep.stderr
    assert not [c for c in RAW if c in rep.stdout + rep.stderr], rep.stdout
    assert "evil\\x1b[31m\\u{202e}x" in rep.stdout
    title = (tmp_path / "runs" / folder / "report.md").read_text().splitlines()[0]
    assert title == "# tracejudge report: evil\\x1b[31m\\u{202e}x", title
    junit = (tmp_path / "runs" / folder / "junit.xml").read_text()
    assert "\u202e" not in junit and 'name="ab\\u202ecd [trial 0, escaped]"' in junit


def test_compare_calls_a_deterministic_metric_s_changed_options_options_not_judges() -> None:
    # "TrajectoryMatch: the runs' judges differ (options order: 'in_order' → 'exact')": the metric has no judge.
    from tracejudge.stages.comparison.identity import warning_line

    assert warning_line("TrajectoryMatch", "options order: 'in_order' → 'exact'") == (
        "TrajectoryMatch: the runs scored it with different options (options order: 'in_order' → 'exact'); "
        "a delta may be the options', not the agent's")
    assert warning_line("quality", "model gpt-4o → gpt-4.1; options criteria: 'a' → 'b'").startswith("quality: the runs' judges differ (model")
