"""The fast fold, bootstrap and reports give what the code before them gave on a τ-bench run.

The golden was made by `tests/fold_golden.py` from the code before the
rewrite; CI bounds (bootstrap draws) and per-result durations (clock readings)
are the only things left out of the comparison.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from fold_golden import GOLDEN, TAU, digest, folded_state, normal_junit, run_once

pytestmark = pytest.mark.skipif(not TAU.exists(), reason="the τ-bench data is not there")


def test_summary_reports_and_folded_state_match_the_golden(tmp_path: Path) -> None:
    want = json.loads(GOLDEN.read_text(encoding="utf-8"))
    run_dir = run_once(tmp_path)
    got = digest(run_dir)
    assert got["summary"] == want["summary"]
    assert got["report_md"] == want["report_md"]
    assert got["junit_sha256"] == want["junit_sha256"], normal_junit(run_dir)[:2000]
    assert got["state_sha256"] == want["state_sha256"], hashlib.sha256(json.dumps(folded_state(run_dir)).encode()).hexdigest()


def test_reports_from_the_run_equal_reports_from_rereading_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The run collects its reports' material as it writes results; finishing the same run again
    # without it (re-reading results.jsonl, the reports' only way before) must give the same bytes,
    # durations included.
    from tracejudge.core.config import load_config
    from tracejudge.stages.reports import REPORT_FILES, finish, finish_run

    reread = []
    real = finish.collect_cases
    monkeypatch.setattr(finish, "collect_cases", lambda *a, **kw: reread.append(1) or real(*a, **kw))
    run_dir = run_once(tmp_path)
    assert not reread  # the run's reports came from what it collected
    first = {name: (run_dir / name).read_bytes() for name in (*REPORT_FILES, "summary.json")}
    summary = json.loads(first["summary.json"])
    summary.pop("verdict")
    for name in REPORT_FILES:
        (run_dir / name).unlink()
    finish_run(run_dir, summary, load_config(tmp_path / "golden.yaml"))
    assert reread == [1]
    for name in (*REPORT_FILES, "summary.json"):
        assert (run_dir / name).read_bytes() == first[name], name
