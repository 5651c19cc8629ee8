"""A metric that never returns costs its score on that case, not the run (`run.metric_timeout_s`; real processes)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")
N = 300

METRICS = textwrap.dedent("""\
    import time, anyio
    import tracejudge

    @tracejudge.metric
    def hangs(case, trace) -> bool:
        if case.id == "c7":
            while True:  # never returns, and swallows what it can
                try:
                    time.sleep(3600)
                except Exception:
                    pass
        return True

    @tracejudge.metric
    async def ahangs(case, trace) -> bool:
        if case.id == "c7":
            await anyio.sleep(3600)
        return True
""")


# In workers (processes 2) and in the main process: `processes: 1`, or an async metric beside the sync one
# (an async metric keeps every metric in-process, where the sync one ran on the loop with no alarm and hung the run).
@pytest.mark.parametrize(("metrics", "processes"), [(["hangs"], 2), (["ahangs"], 2), (["hangs"], 1), (["hangs", "ahangs"], 2)])
def test_a_metric_that_never_returns_is_cut_and_the_run_goes_on(tmp_path, metrics, processes):
    (tmp_path / "hangmetric.py").write_text(METRICS)
    with open(tmp_path / "cases.jsonl", "w") as fh:
        for i in range(N):
            fh.write(json.dumps({"id": f"c{i}", "trace": {"steps": [], "output": "hi"}}) + "\n")
    listed = "".join(f"  - {{type: 'hangmetric:{m}'}}\n" for m in metrics)
    (tmp_path / "run.yaml").write_text(
        f"dataset: {{path: cases.jsonl}}\nmetrics:\n{listed}"
        f"run: {{dir: out, processes: {processes}, metric_timeout_s: 1}}\n"
        # One case in 300 cut: allowed here (by default a metric that timed out fails the gate).
        "assertions: {max_metric_error_share: 0.01}\n"
    )
    cmd = [str(TRACEJUDGE), "run", "run.yaml", "--no-progress"]
    proc = _forkserver.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert {m: (summary["metrics"][m]["not_computed"], summary["metrics"][m].get("raised")) for m in metrics} == {m: (1, 1) for m in metrics}
    assert f"ok   {metrics[0]} max_metric_error_share: metric {metrics[0]!r} raised or timed out on 1 of 300 results" in proc.stdout
    results = {r["case_id"]: r for r in map(json.loads, (tmp_path / "out" / "results.jsonl").read_text().splitlines())}
    assert len(results) == N
    for metric in metrics:
        cut = results["c7"]["scores"][metric]
        assert cut["value"] is None and cut["reason"].startswith("metric_timeout:") and metric in cut["reason"]
        assert all(r["scores"][metric]["value"] == 1.0 for cid, r in results.items() if cid != "c7")
    warned = [line for line in proc.stderr.splitlines() if "metric timed out" in line]
    assert len(warned) == len(metrics) and all('"c7"' in w for w in warned), proc.stderr
    assert {m for m in metrics for w in warned if f'"{m}"' in w} == set(metrics), proc.stderr
    # The resume does not hang on the case either: it is finished.
    again = _forkserver.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and len((tmp_path / "out" / "results.jsonl").read_text().splitlines()) == N
