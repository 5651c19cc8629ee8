"""A judge's telemetry (cache hits, what the cache saved) survives a SIGKILL: the killed segment's checkpoint keeps it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _runs import sigkill_when

TJ = Path(sys.executable).with_name("tracejudge")


def _config(tmp: Path, name: str, url: str, n: int) -> Path:
    cases = tmp / f"cases-{n}.jsonl"
    with open(cases, "w") as fh:
        for i in range(n):
            steps = [{"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"q": f"item {i}"}, "result": f"found {i}"}]}]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i}", "trace": {"steps": steps, "output": f"Item {i} is found."}}) + "\n")
    cfg = {"dataset": {"path": str(cases), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
           "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": url + "/v1", "group": "none"},
           "limits": {"max_in_flight": 1}, "cache": {"dir": str(tmp / "cache")},
           "run": {"dir": str(tmp / name), "flush_every": 1}}
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(cfg))
    return path


def test_cache_hits_counted_before_a_kill_stay_counted_after_the_resume(simulator, tmp_path):
    sim = simulator(latency_ms=150)
    warm = subprocess.run([str(TJ), "run", str(_config(tmp_path, "warm", sim.url, 10)), "--no-progress"], capture_output=True, text=True, timeout=120)
    assert warm.returncode in (0, 1), warm.stderr
    # Cases 0-9 are answered by the cache, 10-39 each wait 150 ms on the judge: killed among those.
    args = [str(TJ), "run", str(_config(tmp_path, "killed", sim.url, 40)), "--no-progress"]
    results = tmp_path / "killed" / "results.jsonl"
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sigkill_when(proc, lambda: results.exists() and results.read_bytes().count(b"\n") >= 15, "15 results")
    killed = json.loads((tmp_path / "killed" / "checkpoint.json").read_text())["segments"][-1]
    recorded = killed["usage"]["judge"]
    assert recorded["cache_hits"] >= 1 and recorded["saved_tokens"] > 0, killed  # (its first checkpoint came after a cache hit)

    resumed = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert resumed.returncode in (0, 1), resumed.stderr
    summary = json.loads((tmp_path / "killed" / "summary.json").read_text())
    last = summary["segments"][-1]["usage"].get("judge", {})
    # The resume's own hits plus those the killed segment had counted at its checkpoint (before: the resume's alone).
    assert summary["judge"]["cache_hits"] == recorded["cache_hits"] + last.get("cache_hits", 0), (summary["judge"], recorded, last)
    assert summary["judge"]["saved_tokens"] == recorded["saved_tokens"] + last.get("saved_tokens", 0)
    assert summary["results"] == 40 and summary["judge"]["cache_hits"] <= 40
