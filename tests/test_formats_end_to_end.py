"""The new formats and metrics through the real CLI, in a subprocess, on the developer data."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import DATA
import _forkserver

AIRLINE = DATA / "tau2_bench" / "model_training_results" / "gpt-4.1_airline_default_gpt-4.1_1trials.json"


@pytest.mark.skipif(not AIRLINE.exists(), reason="the tau2-bench developer files are not beside the repository")
def test_tau2_bench_run_scores_every_simulation(tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(
        f"dataset: {{path: {json.dumps(str(AIRLINE))}, format: tau2-bench}}\n"
        "metrics:\n"
        "  - {type: ToolCalls, pairing: reuse, score: recall, name: action_recall}\n"
        "  - {type: ToolCallAccuracy, require_order: true}\n"
        "  - {type: MaxModelRequests, max_requests: 30}\n"
        f"run: {{dir: {json.dumps(str(tmp_path / 'run'))}}}\n"
    )
    proc = _forkserver.run(
        [sys.executable, "-c", "import sys; from tracejudge.entrypoints.cli import main; sys.exit(main())", "run", str(config)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert len(results) == 20 and all(r["status"] == "ok" for r in results)
    # recall with reuse pairing is the share of upstream's action checks that matched
    total = 0
    for r in results:
        checks = r["metadata"]["action_checks"]
        if checks:
            want = sum(c["action_match"] for c in checks) / len(checks)
            assert r["scores"]["action_recall"]["value"] == want  # (as computed, to the last bit)
            total += len(checks)
    assert total == 61
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["metrics"]["MaxModelRequests"]["scored"] == 20
