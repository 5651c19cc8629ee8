"""A run killed with SIGKILL and resumed reports its run-level telemetry as an unkilled one does: the killed segment's
time up to its last write, no saving for answers the run paid for itself, and, from `tracejudge report` on a run
without summary.json, the judge's spending rebuilt from judge_spend.jsonl.

One run killed while a case's second judge answer is pending (its first is paid and cached, its line not written) and
resumed, beside the same run uninterrupted, over real processes, the simulator over HTTP on 127.0.0.1 and real files.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import datetime
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _runs import sigkill_when
from tracejudge.simulator.server import SimConfig, SimulatorThread
import _forkserver

TJ = Path(sys.executable).with_name("tracejudge")
pytestmark = pytest.mark.xdist_group("telemetry_kill_resume")  # (one worker: the tests share one killed run)
METRICS = ("TaskCompletion", "TrajectoryEfficiency")
N = 16  # cases


def _config(tmp: Path, name: str, url: str, cache: str, metrics: tuple[str, ...] = METRICS, n: int = N) -> Path:
    """`n` cases, each judged by `metrics` one request at a time, results flushed one by one; the cache in `tmp/cache`."""
    cases = tmp / "cases.jsonl"
    with open(cases, "w") as fh:
        for i in range(n):
            steps = [{"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"q": f"item {i}"}, "result": f"found {i}"}]}]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i}", "trace": {"steps": steps, "output": f"Item {i} is found."}}) + "\n")
    cfg = {"dataset": {"path": str(cases), "format": "native"}, "metrics": [{"type": m} for m in metrics],
           "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": url + "/v1", "group": "none"},
           "limits": {"max_in_flight": 1}, "cache": {"dir": str(tmp / cache)}, "run": {"dir": str(tmp / name), "flush_every": 1}}
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(cfg))
    return path


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    done = _forkserver.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _cached(folder: Path) -> int:
    """How many judge answers the cache under `folder` holds (read beside the run writing it: diskcache is safe across processes)."""
    import diskcache

    total = 0
    for db in folder.rglob("cache.db"):
        with diskcache.Cache(str(db.parent)) as cache:
            total += sum(1 for key in cache.iterkeys() if str(key).startswith("v:"))
    return total


@pytest.fixture(scope="module")
def sim() -> Iterator[Any]:
    """One simulator for the module's runs (its URL is part of the cache keys: another would share no answer)."""
    # Slow enough that a case whose first answer is paid still waits for its second when the kill lands, on a busy machine too.
    started = SimulatorThread(SimConfig(latency_ms=600))
    yield started
    started.stop()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, sim: Any) -> dict[str, Any]:
    """The same `N` cases run whole (`whole`) and killed then resumed (`killed`), each with a cache of its own (empty at
    its start), and a copy of the killed run directory as the kill left it (`copy`, no summary.json)."""
    tmp = tmp_path_factory.mktemp("kill")
    _run([str(TJ), "run", str(_config(tmp, "whole", sim.url, "cache-whole")), "--no-progress"])
    args = [str(TJ), "run", str(_config(tmp, "killed", sim.url, "cache-killed")), "--no-progress"]
    run_dir = tmp / "killed"
    results = run_dir / "results.jsonl"
    proc = _forkserver.popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen: dict[str, float] = {}

    def ready() -> bool:
        # Past the segment's first checkpoint (its first result), with a case's first answer paid and cached (the spend
        # journal bills it just before the cache holds it: the cache itself is asked) and its second one pending: the
        # resume redoes that case, the first from the cache.
        written = _lines(results)
        if written >= 5 and _cached(tmp / "cache-killed") > len(METRICS) * written:
            seen["results_mtime"] = results.stat().st_mtime  # (a write of the segment: it was alive then)
            return True
        return False

    sigkill_when(proc, ready, "a case's first answer paid and its line not written")
    shutil.copytree(run_dir, tmp / "copy")
    resumed = _run(args)
    return {"tmp": tmp, "seen": seen, "resumed": resumed,
            "whole": json.loads((tmp / "whole" / "summary.json").read_text()),
            "killed": json.loads((run_dir / "summary.json").read_text())}


def test_a_killed_segment_counts_its_time_up_to_its_last_write(runs: dict[str, Any]) -> None:
    summary = runs["killed"]
    killed, last = summary["segments"][0], summary["segments"][-1]
    assert killed["ended"] == "killed" and last["ended"] == "finished" and summary["results"] == N
    # It wrote results.jsonl at that mtime (seen before the kill), so it ran at least that long; its first checkpoint, all
    # the old record counted, came after its first result.
    started = datetime.fromisoformat(killed["started_at"]).timestamp()
    assert killed["elapsed_s"] >= round(runs["seen"]["results_mtime"] - started, 3), killed
    assert killed["elapsed_until"] == "last_write"
    assert summary["elapsed_s_total"] == round(sum(s["elapsed_s"] for s in summary["segments"]), 3)
    # The summary says what the figure measures, and what it leaves out.
    note = summary["elapsed_measured"]
    assert "segment 1 (killed) from its start to its last write to the run directory" in note
    assert "the time between a killed segment's last write and the kill is not known" in note
    assert "elapsed_measured" not in runs["whole"] and "elapsed_until" not in runs["whole"]["segments"][0]


def test_a_resume_does_not_count_as_saved_the_answers_its_killed_segment_paid_for(runs: dict[str, Any]) -> None:
    whole, summary = runs["whole"]["judge"], runs["killed"]["judge"]
    # Each run's cache was empty at its start: every answer it used, it paid for once, so the cache saved it nothing.
    assert whole["saved_tokens"] == 0 and whole["saved_usd"] == 0.0
    assert (summary["saved_tokens"], summary["saved_usd"]) == (whole["saved_tokens"], whole["saved_usd"]), summary
    # The resume read the answer the killed segment paid for from the cache: a hit, counted as such, not a saving.
    assert summary["cache_hits"] >= 1 and summary["hits_paid_by_this_run"] == summary["cache_hits"]
    # The run paid for each answer once, as the unkilled run did, and for the request in flight at the kill (sent again by
    # the resume) at its estimated prompt.
    stopped = summary.get("in_flight_at_stop") or {"input_tokens_estimated": 0}
    assert summary["input_tokens"] + summary["output_tokens"] == whole["input_tokens"] + whole["output_tokens"] + stopped["input_tokens_estimated"]


def test_answers_another_run_paid_for_are_savings(runs: dict[str, Any], sim: Any) -> None:
    # A new run (its own directory) over the killed run's cache: every answer was paid by another run, so each hit saves
    # what that answer cost.
    tmp = runs["tmp"]
    _run([str(TJ), "run", str(_config(tmp, "again", sim.url, "cache-killed")), "--no-progress"])
    judge = json.loads((tmp / "again" / "summary.json").read_text())["judge"]
    paid = runs["whole"]["judge"]
    assert judge["cache_hits"] == N * len(METRICS) and judge["hits_paid_by_this_run"] == 0 and judge["requests"] == 0
    assert judge["saved_tokens"] == paid["input_tokens"] + paid["output_tokens"]
    assert judge["saved_usd"] == pytest.approx(paid["cost_usd"], abs=1e-5)


def test_report_without_summary_rebuilds_the_judges_spending_from_the_spend_journal(runs: dict[str, Any]) -> None:
    copy = runs["tmp"] / "copy"
    assert not (copy / "summary.json").exists()  # (killed before its first summary)
    lines = [json.loads(line) for line in (copy / "judge_spend.jsonl").read_text().splitlines()]
    sent, paid = [x for x in lines if "sent" in x], [x for x in lines if "sent" not in x]
    settled = {x["settles"] for x in paid}
    flying = [x for x in sent if x["sent"] not in settled]  # (one segment: its numbers name its attempts)
    done = _forkserver.run([str(TJ), "report", str(copy)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 130, done.stdout + done.stderr  # (interrupted: the resume command is given)
    judge = json.loads((copy / "summary.json").read_text())["judge"]
    assert judge["requests"] == len(sent)
    assert judge["input_tokens"] == sum(p["input_tokens"] for p in paid) + sum(x["input_tokens_estimated"] for x in flying)
    assert judge["output_tokens"] == sum(p["output_tokens"] for p in paid)
    assert judge["cost_usd"] == pytest.approx(sum(p["cost_usd"] for p in paid) + sum(x["cost_usd_estimated"] for x in flying), abs=1e-6)
    assert judge.get("in_flight_at_stop", {}).get("requests", 0) == len(flying)
    # More than the result lines show: the answer paid for the case the kill cut before its line was written.
    lines = [json.loads(line) for line in (copy / "results.jsonl").read_text().splitlines()]
    on_lines = sum(s["judge"]["input_tokens"] + s["judge"]["output_tokens"] for r in lines for s in r["scores"].values())
    assert judge["input_tokens"] + judge["output_tokens"] > on_lines
    # The block a resume gives for these results, with nothing said to be missing: the counters no result line holds
    # come from the killed segment's record (`partial_counters` says what that leaves out), not left out.
    assert "spend_source" not in judge and "spend_note" not in judge and "retries" in judge and "mode" in judge
    out = done.stdout.replace("\n", " ")
    assert f"judge: {len(sent)} requests" in out
    if flying:
        assert f"{len(flying)} judge request{'s were' if len(flying) > 1 else ' was'} in flight at a stop (sent, then the run was killed" in out
