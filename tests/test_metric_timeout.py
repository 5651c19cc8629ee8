"""A metric that never returns costs its score on that case, not the run (`run.metric_timeout_s`; real processes)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

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


@pytest.mark.parametrize("metric", ["hangs", "ahangs"])
def test_a_metric_that_never_returns_is_cut_and_the_run_goes_on(tmp_path, metric):
    (tmp_path / "hangmetric.py").write_text(METRICS)
    with open(tmp_path / "cases.jsonl", "w") as fh:
        for i in range(N):
            fh.write(json.dumps({"id": f"c{i}", "trace": {"steps": [], "output": "hi"}}) + "\n")
    (tmp_path / "run.yaml").write_text(
        f"dataset: {{path: cases.jsonl}}\nmetrics:\n  - {{type: 'hangmetric:{metric}'}}\n"
        "run: {dir: out, processes: 2, metric_timeout_s: 1}\n"
    )
    cmd = [str(TRACEJUDGE), "run", "run.yaml", "--no-progress"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    results = {r["case_id"]: r for r in map(json.loads, (tmp_path / "out" / "results.jsonl").read_text().splitlines())}
    assert len(results) == N
    cut = results["c7"]["scores"][metric]
    assert cut["value"] is None and cut["reason"].startswith("metric_timeout:") and metric in cut["reason"]
    assert all(r["scores"][metric]["value"] == 1.0 for cid, r in results.items() if cid != "c7")
    warned = [line for line in proc.stderr.splitlines() if "metric timed out" in line]
    assert len(warned) == 1 and '"c7"' in warned[0] and f'"{metric}"' in warned[0], proc.stderr
    # The resume does not hang on the case either: it is finished.
    again = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and len((tmp_path / "out" / "results.jsonl").read_text().splitlines()) == N
