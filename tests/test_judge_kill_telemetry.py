"""A judge's telemetry survives a SIGKILL: cache hits are counted from the killed segment's result lines, the counters no
line holds (retries, 429s, time queued, what the cache saved) from its last checkpoint, and the summary says what those
leave out."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _runs import sigkill_when
import _forkserver

TJ = Path(sys.executable).with_name("tracejudge")


def _config(tmp: Path, name: str, url: str, n: int, only: str = "", metrics: tuple[str, ...] = ("TaskCompletion",), **judge: Any) -> Path:
    """A run of cases 0..n-1 (`only="even"`: the even ones alone), each judged by `metrics`, one request in flight."""
    cases = tmp / f"cases-{n}{only}.jsonl"
    with open(cases, "w") as fh:
        for i in range(0, n, 2 if only == "even" else 1):
            steps = [{"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"q": f"item {i}"}, "result": f"found {i}"}]}]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i}", "trace": {"steps": steps, "output": f"Item {i} is found."}}) + "\n")
    cfg = {"dataset": {"path": str(cases), "format": "native"}, "metrics": [{"type": m} for m in metrics],
           "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": url + "/v1", "group": "none", **judge},
           "limits": {"max_in_flight": 1}, "cache": {"dir": str(tmp / "cache")},
           "run": {"dir": str(tmp / name), "flush_every": 1, "max_resume_retries": 0}}
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(cfg))
    return path


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    done = _forkserver.run(args, capture_output=True, text=True, timeout=180)
    assert done.returncode in (0, 1), done.stderr  # (1: the judge errors fail the gate)
    return done


def _killed_and_resumed(tmp: Path, url: str, n: int, at: int, **judge: Any) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run `n` cases, SIGKILL the run once `at` results are written, run the same command again; (the resume, its summary)."""
    args = [str(TJ), "run", str(_config(tmp, "killed", url, n, **judge)), "--no-progress"]
    results = tmp / "killed" / "results.jsonl"
    proc = _forkserver.popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sigkill_when(proc, lambda: results.exists() and results.read_bytes().count(b"\n") >= at, f"{at} results")
    resumed = _run(args)
    return resumed, json.loads((tmp / "killed" / "summary.json").read_text())


@pytest.mark.parametrize("items_per_request", [1, 4])
def test_a_killed_and_resumed_run_counts_the_cache_hits_of_an_unkilled_one(simulator, tmp_path, items_per_request):
    # Every case's TaskCompletion is in the cache; its TrajectoryEfficiency request gets a reply no parser reads (a judge
    # error, never cached) after 100 ms, so the hits come one case at a time all through the run. Wherever the kill lands,
    # no answer paid before it becomes a hit on resume: the hits are the 40 cases' whatever the run's history (before:
    # those after the killed segment's last checkpoint were lost, those of a case it had not written counted twice).
    sim = simulator(latency_ms=100)
    _run([str(TJ), "run", str(_config(tmp_path, "warm", sim.url, 40, items_per_request=items_per_request)), "--no-progress"])
    sim.set_script(["near_miss"] * 100_000)
    both = {"metrics": ("TaskCompletion", "TrajectoryEfficiency"), "items_per_request": items_per_request}
    _run([str(TJ), "run", str(_config(tmp_path, "whole", sim.url, 40, **both)), "--no-progress"])
    whole = json.loads((tmp_path / "whole" / "summary.json").read_text())["judge"]
    assert whole["cache_hits"] == 40 and "partial_counters" not in whole, whole

    _, summary = _killed_and_resumed(tmp_path, sim.url, 40, 15, **both)
    assert summary["segments"][0]["ended"] == "killed" and summary["results"] == 40
    assert summary["judge"]["cache_hits"] == whole["cache_hits"], (summary["judge"], summary["segments"])
    # One figure, one number: the top-level `usage` (the segments' records summed, the killed one's as of its last
    # checkpoint, which missed the hits after it) said fewer hits than the judge block beside it.
    assert summary["segments"][0]["usage"]["judge"].get("cache_hits", 0) < whole["cache_hits"] - summary["segments"][-1]["usage"]["judge"].get("cache_hits", 0)
    assert summary["usage"]["judge"]["cache_hits"] == summary["judge"]["cache_hits"], (summary["usage"], summary["judge"])


def test_the_summary_says_how_many_results_the_killed_segments_counters_leave_out(simulator, tmp_path):
    # Odd cases get a 429, then replies no parser reads: retries and 429s that only the segment's counters hold.
    sim = simulator(latency_ms=100, fault_retry_after_s=0.05)
    _run([str(TJ), "run", str(_config(tmp_path, "warm", sim.url, 40, only="even")), "--no-progress"])
    sim.set_script(["429", "near_miss", "near_miss"] * 10_000)
    resumed, summary = _killed_and_resumed(tmp_path, sim.url, 40, 15)
    killed = summary["segments"][0]
    # The killed segment's lines that start past results.jsonl's size when its counters were last recorded.
    at = killed["usage"]["judge"].get("results_bytes", 0)  # (none recorded: every line is after them)
    starts = [0]
    for line in (tmp_path / "killed" / "results.jsonl").read_bytes().splitlines(keepends=True)[:killed["results"]]:
        starts.append(starts[-1] + len(line))
    after = sum(start >= at for start in starts[:-1])
    # (the run's first checkpoint follows its first result, the next one 30 s later: the kill falls between them)
    assert killed["ended"] == "killed" and after > 0, killed
    partial = summary["judge"]["partial_counters"]
    assert partial["segments"] == [killed["segment"]]
    assert partial["results_left_out"] == after  # (every result of the run went through the judge)
    assert partial["judged_results"] == summary["judge"]["judged_results"] == 40
    assert partial["results_counted"] == 40 - partial["results_left_out"]
    assert {"retries", "rate_limited", "queued_s", "saved_tokens", "saved_usd"} <= set(partial["counters"])
    assert "cache_hits" not in partial["counters"]
    assert f"judge counters cover {partial['results_counted']:,} of the run's 40 judged results" in partial["note"]
    # Said once on the terminal with the run's summary, and by `report` on the run directory.
    assert (resumed.stdout + resumed.stderr).count(partial["note"]) == 1, resumed.stdout + resumed.stderr
    assert partial["note"] in _run([str(TJ), "report", str(tmp_path / "killed")]).stdout.replace("\n", " ")


def test_cache_hits_counted_before_a_kill_stay_counted_after_the_resume(simulator, tmp_path):
    sim = simulator(latency_ms=150)
    _run([str(TJ), "run", str(_config(tmp_path, "warm", sim.url, 10)), "--no-progress"])
    # Cases 0-9 are answered by the cache, 10-39 each wait 150 ms on the judge: killed among those.
    _, summary = _killed_and_resumed(tmp_path, sim.url, 40, 15)
    killed, last = summary["segments"][0], summary["segments"][-1]["usage"].get("judge", {})
    lines = (tmp_path / "killed" / "results.jsonl").read_text().splitlines()[:killed["results"]]
    on_lines = sum(s["judge"]["cached_requests"] for line in lines for s in json.loads(line)["scores"].values())
    # The killed segment's hits are those on the lines it wrote (an answer paid just before the kill, whose case the resume
    # redid from the cache, is the resume's); what the cache saved, which no line holds, as its checkpoint recorded it.
    assert summary["judge"]["cache_hits"] == on_lines + last.get("cache_hits", 0), (summary["judge"], killed, last)
    assert summary["judge"]["saved_tokens"] == killed["usage"]["judge"]["saved_tokens"] + last.get("saved_tokens", 0)
    assert summary["results"] == 40 and summary["judge"]["cache_hits"] <= 40
    assert summary["usage"]["judge"]["cache_hits"] == summary["judge"]["cache_hits"], (summary["usage"], summary["judge"])


def test_a_resume_carries_on_from_the_dollars_paid_not_from_the_rounded_summary(tmp_path: Path) -> None:
    # Each segment's summary rounds dollars to 6 places; a resume added its spending to that rounded figure, so a run
    # stopped twice ended up to a millionth a segment away from the same run unstopped (1.961144 against 1.961145).
    import json

    from tracejudge.engine.run_summary import _prior_judge

    run = tmp_path / "run"
    run.mkdir()
    costs = ["0.00027450", "0.00027455", "0.00000045"] * 5  # the journal's own decimals (`SpendJournal.add`: 8 places)
    (run / "judge_spend.jsonl").write_text("".join(json.dumps({"input_tokens": 100, "output_tokens": 10, "cost_usd": float(c)}) + "\n"
                                                   for c in costs))
    exact = sum(map(float, costs))
    (run / "summary.json").write_text(json.dumps({"judge": {"requests": 15, "input_tokens": 1500, "output_tokens": 150,
                                                            "cost_usd": round(exact, 6), "sync_equivalent_usd": round(exact, 6)}}))
    prior = _prior_judge(run, {"input_tokens": 1500, "output_tokens": 150, "requests": 15})
    assert round(exact, 6) != exact and prior["cost_usd"] == pytest.approx(exact, abs=1e-15) == prior["sync_equivalent_usd"], prior
    # A summary whose dollars the journal does not hold (another price, a batch discount): its own figure stands.
    (run / "summary.json").write_text(json.dumps({"judge": {"requests": 15, "input_tokens": 1500, "output_tokens": 150, "cost_usd": 0.5}}))
    assert _prior_judge(run, {"input_tokens": 1500, "output_tokens": 150, "requests": 15})["cost_usd"] == 0.5
