"""PassAtK as a config metric: validated against the run, computed in the aggregate, reported in summary.json."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _runs import native_case, write_config, write_dataset
from tracejudge.core.config import load_config
from tracejudge.core.errors import ConfigError
from tracejudge.entrypoints.cli import main


def _dataset(tmp_path: Path) -> Path:
    return write_dataset(tmp_path / "cases.jsonl", [native_case("a", ["x"], ["x"]), native_case("b", ["x"], ["y"]), native_case("c", ["x"], ["x"])])


def test_pass_at_k_k_larger_than_trials_is_refused_with_its_line(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "c.yaml", _dataset(tmp_path), tmp_path / "run",
                       metrics=[{"type": "ToolCorrectness", "name": "tc"}, {"type": "PassAtK", "metric": "tc", "k": 3}],
                       run={"trials": 2})
    with pytest.raises(ConfigError) as exc:
        load_config(cfg)
    assert re.search(r"c\.yaml:\d+: metrics\.1\.k: PassAtK: k=3 is larger than run\.trials=2", str(exc.value))


def test_pass_at_k_of_an_unknown_metric_is_refused(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "c.yaml", _dataset(tmp_path), tmp_path / "run",
                       metrics=[{"type": "ToolCorrectness", "name": "tc"}, {"type": "PassAtK", "metric": "tcc", "k": 1}])
    with pytest.raises(ConfigError, match=r"metrics\.1\.metric: PassAtK: 'tcc' is not a metric of this run; expected one of: tc"):
        load_config(cfg)


def test_two_pass_at_k_specs_get_distinct_default_names(tmp_path: Path) -> None:
    cfg = write_config(tmp_path / "c.yaml", _dataset(tmp_path), tmp_path / "run", run={"trials": 2},
                       metrics=[{"type": "ToolCorrectness", "name": "tc"}, {"type": "PassAtK", "metric": "tc", "k": 1},
                                {"type": "PassAtK", "metric": "tc", "k": 2}])
    assert len(load_config(cfg).metrics) == 3


def test_pass_at_k_run_with_trials_equals_the_pass_rate_and_gates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Recorded traces score the same on every trial, so pass@k equals the pass rate for every k.
    run_dir = tmp_path / "run"
    cfg = write_config(tmp_path / "c.yaml", _dataset(tmp_path), run_dir, run={"trials": 3},
                       metrics=[{"type": "ToolCorrectness", "name": "tc"}, {"type": "PassAtK", "metric": "tc", "k": 2}],
                       assertions={"metrics": {"pass@2(tc)": {"min_mean": 0.7}}})
    rc = main(["run", str(cfg), "--no-progress"])
    out = capsys.readouterr().out
    s = json.loads((run_dir / "summary.json").read_text())
    assert s["results"] == 9 and s["trials"] == 3
    assert "PassAtK" not in s["metrics"] and "pass@2(tc)" not in s["metrics"]  # not a per-result metric
    pk = s["pass_at_k"]["pass@2(tc)"]
    assert pk["value"] == pytest.approx(2 / 3, abs=1e-6) and pk["cases"] == 3 and pk["k"] == 2
    assert s["metrics"]["tc"]["pass_at_k"]["1"]["value"] == pytest.approx(s["metrics"]["tc"]["pass_rate"], abs=1e-6)
    assert "pass@2(tc)" in out and rc == 1 and "verdict: FAIL" in out  # 0.667 < 0.7


def test_a_pass_at_k_threshold_is_compared_exactly_as_a_metrics_own() -> None:
    """A trial scoring 0.49999999999999994 (six twelfths summed) fails a PassAtK threshold of 0.5, as it fails the metric's."""
    from tracejudge.core.records import Score
    from tracejudge.stages.score import PassAtK

    k = PassAtK(metric="m", k=1, threshold=0.5)
    assert not k.trial_passed(Score(value=sum([1 / 12] * 6), passed=False))
    assert k.trial_passed(Score(value=0.5, passed=True))


def test_pass_at_k_is_multivons_value_to_the_last_bit(tmp_path: Path) -> None:
    # One case, 7 trials, 2 passing, k=3: multivon's `suite_pass_k` (and cogitator's formula) gives 0.7142857142857143;
    # the summary said 0.714286 (rounded to 6 places).
    # (A module name of its own: the run imports it in this process, where another test's `agent` may be loaded.)
    (tmp_path / "passk_trials_agent.py").write_text(
        "def respond(request):\n    out = 'yes' if request.trial < 2 else 'no'\n    return {'output': out, 'trace': {'steps': [], 'output': out}}\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": "q", "expected_output": "yes"}) + "\n")
    (tmp_path / "c.yaml").write_text(
        "dataset: {path: cases.jsonl, format: native}\ntarget: {kind: python, callable: 'passk_trials_agent:respond'}\n"
        "run: {trials: 7, dir: run}\nmetrics:\n  - {type: ExactMatch, name: em}\n  - {type: PassAtK, metric: em, k: 3}\n")
    import os
    import sys

    sys.path.insert(0, str(tmp_path))
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        main(["run", "c.yaml", "--no-progress"])
    finally:
        os.chdir(cwd)
        sys.path.remove(str(tmp_path))
        sys.modules.pop("passk_trials_agent", None)
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    from math import comb

    assert s["pass_at_k"]["pass@3(em)"]["value"] == 1.0 - comb(5, 3) / comb(7, 3) == 0.7142857142857143
    multivon = pytest.importorskip("multivon_eval.passk")
    assert s["pass_at_k"]["pass@3(em)"]["value"] == multivon.pass_at_k(7, 2, 3)
