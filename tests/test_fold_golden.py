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
