"""An async metric that cancels its own task and returns without awaiting is that metric's failure, and a metric's
reason names the metric's own frame, never one of the standard library's with the interpreter's path.

- `asyncio.current_task().cancel()` then `return 1.0`: the metric scored 1.0, its task ended cancelled, which cancelled
  the case's task group, and the next async metric was blamed (`metric failed: metric fine_async ended without a score
  (its task was cancelled, not by the run)`). It is `metric raised CancelledError`, the others unharmed;
- a metric cancelled inside `asyncio.sleep` (or raising inside `json.loads`) said `(at <the interpreter's
  path>/asyncio/tasks.py:634, in __sleep0)`: it names the metric's line, `(at …checks.py:N, in self_cancel)`.

Real runs of a real metric file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
from pathlib import Path
import _forkserver

CHECKS = '''\
import asyncio
import json
import tracejudge as tj


def _bad(case):
    return case.id.startswith("bad")


@tj.metric
async def cancel_no_await(case, trace):
    if _bad(case):
        asyncio.current_task().cancel()
    return 1.0


@tj.metric
async def fine_async(case, trace):
    await asyncio.sleep(0.001)
    return 1.0


@tj.metric
async def self_cancel(case, trace):
    if _bad(case):
        asyncio.current_task().cancel()
        await asyncio.sleep(0)  # raises: self_cancel
    return 1.0


@tj.metric
def json_bad(case, trace):
    return 1.0 if not _bad(case) else json.loads("{not json")  # raises: json_bad
'''

METRICS = ["cancel_no_await", "fine_async", "self_cancel", "json_bad"]
IDS = ["ok-0", "bad-1", "ok-2", "bad-3"]


def _line(marker: str) -> int:
    return next(n for n, line in enumerate(CHECKS.splitlines(), 1) if line.endswith(f"# raises: {marker}"))


def _run(tmp_path: Path) -> tuple[subprocess.CompletedProcess, dict[str, dict], dict]:
    (tmp_path / "checks.py").write_text(CHECKS)
    case = {"trace": {"steps": [{"tool_calls": [{"name": "t", "arguments": {"a": 1}}]}], "output": "ok"}}
    (tmp_path / "data.jsonl").write_text("".join(json.dumps({"id": i, **case}) + "\n" for i in IDS))
    specs = ", ".join(f'{{type: "checks:{m}"}}' for m in METRICS)
    (tmp_path / "eval.yaml").write_text(f"dataset: {{path: data.jsonl, format: native}}\nmetrics: [{specs}]\n"
                                        "run: {dir: runs/eval, processes: 1}\n")
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "eval.yaml", "--no-progress"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    run_dir = tmp_path / "runs" / "eval"
    results = {r["case_id"]: r for r in map(json.loads, (run_dir / "results.jsonl").read_text().splitlines())}
    return proc, results, json.loads((run_dir / "summary.json").read_text())


def test_a_metric_returning_with_its_own_cancel_pending_is_the_one_that_raised(tmp_path: Path) -> None:
    proc, results, summary = _run(tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "verdict: FAIL" in proc.stdout, out  # the gate's FAIL, not an internal error (3)
    assert "internal error" not in out and "Traceback" not in proc.stderr and "ended without a score" not in out, out
    assert sorted(results) == sorted(IDS) and {r["status"] for r in results.values()} == {"ok"}
    for key, raised in {"cancel_no_await": 2, "fine_async": 0, "self_cancel": 2, "json_bad": 2}.items():
        assert summary["metrics"][key].get("raised", 0) == raised, (key, summary["metrics"][key])
    for cid in IDS:
        scores = results[cid]["scores"]
        assert scores["fine_async"]["value"] == 1.0, scores["fine_async"]  # the metric awaited beside it is unharmed
        if cid.startswith("ok"):
            assert all(scores[k]["value"] == 1.0 for k in METRICS), scores
            continue
        own = scores["cancel_no_await"]
        assert own["value"] is None and own["reason"].startswith("metric raised CancelledError"), own
        assert own["details"] == {"exception": "CancelledError"}


def test_a_reason_names_the_metrics_own_frame_not_the_standard_librarys(tmp_path: Path) -> None:
    _, results, _ = _run(tmp_path)
    stdlib = sysconfig.get_paths()["stdlib"]
    for cid in ("bad-1", "bad-3"):
        scores = results[cid]["scores"]
        cancelled, decoded = scores["self_cancel"]["reason"], scores["json_bad"]["reason"]
        assert cancelled.startswith("metric raised CancelledError (at ") and cancelled.endswith(
            f"checks.py:{_line('self_cancel')}, in self_cancel)"), cancelled
        assert decoded.startswith("metric raised JSONDecodeError: ") and decoded.endswith(
            f"checks.py:{_line('json_bad')}, in json_bad)"), decoded
        for score in scores.values():
            reason = score["reason"] or ""
            assert stdlib not in reason and "site-packages" not in reason and "__sleep0" not in reason, reason
