"""`tracejudge report` on a killed run does not change what the resume then says the judge spent, and a resume that
recovers the spending from the files keeps the batch price.

`report` on a run killed before its first summary rebuilds the judge's spending from the spend journal, which holds
no sync-equivalent dollars, so the summary.json it wrote had none. The resume read that missing figure as $0: in
synchronous mode, `judge.sync_equivalent_usd` came out as the resume's own spending alone ($0.0746 beside $0.0975
paid, on the demo's 200 runs), where the same kill and resume without the report gives $0.0975 = $0.0975.

A batch run whose summary is gone (killed after its last result line, or the file deleted) had its spending rebuilt
from the result lines' tokens, priced synchronously: twice the dollars paid, which the spend journal holds.

`report` on a killed run wrote a judge block without what a resumed run's has (the retries and 429s the killed
segment's record kept, `partial_counters`, `mode`, `sync_equivalent_usd`) and no `retries_spent`: it now writes the
block the resume computes from the same files, and the resume after it writes what it writes without it.

Real processes: `tracejudge run` killed with SIGKILL once results are on disk and a judge request hangs, the killed
run directory copied (with its cache) so that one copy gets `tracejudge report` and the other not, both resumed
against the judge simulator over HTTP on 127.0.0.1.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _runs import sigkill_when
import _forkserver

TJ = Path(sys.executable).with_name("tracejudge")
CASES = 5


def _config(folder: Path, url: str, judge: dict | None = None, **run: object) -> Path:
    """A config in `folder` judging `CASES` native cases one request each, in synchronous mode, one request at a time
    (`judge`, `run`: more settings of those sections)."""
    steps = [{"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"q": "item"}, "result": "found"}]}]
    with open(folder / "cases.jsonl", "w", encoding="utf-8") as fh:
        for i in range(CASES):
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i}", "trace": {"steps": steps, "output": f"Item {i} is found."}}) + "\n")
    cfg = {"dataset": {"path": "cases.jsonl", "format": "native"},
           "metrics": [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}],
           "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": url + "/v1", "mode": "sync", **(judge or {})},
           "limits": {"max_in_flight": 1}, "cache": {"dir": "cache"}, "run": {"dir": "run", "flush_every": 1, **run}}
    (folder / "c.json").write_text(json.dumps(cfg))
    return folder / "c.json"


def _reported_and_plain(tmp_path: Path, killed: Path) -> tuple[Path, Path, dict]:
    """Two copies of the `killed` folder, `tracejudge report` run on the first, then both resumed; (the copy reported, the
    other, the summary.json `report` wrote)."""
    reported, plain = tmp_path / "reported", tmp_path / "plain"
    shutil.copytree(killed, reported)
    shutil.copytree(killed, plain)
    report = _forkserver.run([str(TJ), "report", "run"], cwd=reported, capture_output=True, text=True, timeout=120)
    assert report.returncode == 130, report.stdout + report.stderr
    written = json.loads((reported / "run" / "summary.json").read_text())
    for folder in (reported, plain):
        resumed = _forkserver.run([str(TJ), "run", "c.json", "--no-progress"], cwd=folder, capture_output=True, text=True, timeout=120)
        assert resumed.returncode in (0, 1), resumed.stderr
    return reported, plain, written


def _judge(folder: Path) -> dict:
    return json.loads((folder / "run" / "summary.json").read_text())["judge"]


def test_a_report_on_a_killed_run_leaves_the_resumes_sync_equivalent_dollars_as_without_it(simulator, tmp_path: Path) -> None:
    sim = simulator(hang_s=120)
    sim.set_script(["ok", "ok", "ok", "timeout"])  # three cases judged and written; the fourth request hangs at the kill
    killed = tmp_path / "killed"
    killed.mkdir()
    _config(killed, sim.url)
    proc = _forkserver.popen([str(TJ), "run", "c.json", "--no-progress"], cwd=killed, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = killed / "run" / "results.jsonl"
    sigkill_when(proc, lambda: results.exists() and results.read_bytes().count(b"\n") >= 3 and sim.stats.requests >= 4,
                 "three results written and the fourth request sent")
    assert not (killed / "run" / "summary.json").exists()
    sim.set_script([])
    reported, plain, _ = _reported_and_plain(tmp_path, killed)

    got, want = _judge(reported), _judge(plain)
    keys = ("requests", "input_tokens", "output_tokens", "cost_usd", "sync_equivalent_usd")
    assert {k: got[k] for k in keys} == {k: want[k] for k in keys}
    # Synchronous mode has no batch discount: what the same work costs synchronously is what was paid.
    assert got["cost_usd"] > 0
    assert got["sync_equivalent_usd"] == pytest.approx(got["cost_usd"], abs=2e-6)


def test_a_batch_run_whose_summary_is_gone_keeps_the_batch_price_on_resume(tmp_path: Path) -> None:
    # A run killed after its last result line and before its summary (or whose summary.json was deleted) has its
    # spending recovered from the result lines and the spend journal. The lines hold the tokens; the journal the
    # dollars paid, at the batch price: the resume priced the tokens at the synchronous price instead (twice the paid).
    _config(tmp_path, "")
    cfg = json.loads((tmp_path / "c.json").read_text())
    cfg["judge"] = {"provider": "simulator", "model": "gpt-4o-mini", "mode": "batch", "batch": {"flush_after_s": 0, "poll_interval_s": 0.1},
                    "simulator": {"batch_completion_s": 0}}
    (tmp_path / "c.json").write_text(json.dumps(cfg))
    args = [str(TJ), "run", "c.json", "--no-progress"]
    first = _forkserver.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert first.returncode in (0, 1), first.stderr
    want = _judge(tmp_path)
    assert want["mode"] == "batch" and want["sync_equivalent_usd"] > want["cost_usd"] > 0  # (the batch discount)

    (tmp_path / "run" / "summary.json").unlink()
    report = _forkserver.run([str(TJ), "report", "run"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert report.returncode in (0, 1), report.stdout + report.stderr
    assert _judge(tmp_path)["cost_usd"] == want["cost_usd"]  # (`report` takes the journal's dollars)
    (tmp_path / "run" / "summary.json").unlink()
    again = _forkserver.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert again.returncode in (0, 1), again.stderr
    got = _judge(tmp_path)
    assert (got["input_tokens"], got["output_tokens"]) == (want["input_tokens"], want["output_tokens"])
    assert got["cost_usd"] == pytest.approx(want["cost_usd"], abs=2e-6)
    assert got["sync_equivalent_usd"] == pytest.approx(want["sync_equivalent_usd"], abs=2e-6)


# What a resumed run's judge block has that only the segments' records and the files give, timing apart.
_TIMED = ("latency_p50_s", "latency_p95_s", "queued_s", "slept_s")


def _untimed(summary: dict) -> dict:
    """`summary` without the figures that measure time (each process's own)."""
    out = {k: v for k, v in summary.items() if k not in ("elapsed_s_total", "segments", "usage")}
    out["judge"] = {k: v for k, v in summary["judge"].items() if k not in _TIMED}
    return out


def test_report_on_a_killed_run_writes_the_judge_block_a_resume_writes(simulator, tmp_path: Path) -> None:
    # Five cases, two requests each, one at a time: a 429 then an answer, a 5xx then an answer (a retry), a refusal (a
    # judge error, final at once: run.max_resume_retries 0), answers; the twelfth request hangs when the run is killed.
    sim = simulator(hang_s=120, fault_retry_after_s=0.05)
    sim.set_script(["429", "ok", "500", "ok", "400"] + ["ok"] * 6 + ["timeout"] * 100)
    killed = tmp_path / "killed"
    killed.mkdir()
    _config(killed, sim.url, {"max_attempts": 2, "group": "none"}, max_resume_retries=0)
    proc = _forkserver.popen([str(TJ), "run", "c.json", "--no-progress"], cwd=killed, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = killed / "run" / "results.jsonl"
    sigkill_when(proc, lambda: results.exists() and results.read_bytes().count(b"\n") >= CASES - 1 and sim.stats.timeouts >= 1,
                 "four results written and the last request hanging")
    sim.set_script([])
    reported, plain, written = _reported_and_plain(tmp_path, killed)
    resumed = json.loads((plain / "run" / "summary.json").read_text())

    # The judge block of a resumed run, for the four results present: the killed segment's counters as its last
    # checkpoint recorded them, said partial, its dollars priced, the settings the run judged with.
    judge, (segment,) = written["judge"], written["segments"]
    assert set(judge) == set(resumed["judge"])
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    failed = sum(line["status"] == "judge_error" for line in lines)
    assert (judge["mode"], judge["judged_results"], judge["judge_error_results"]) == ("sync", len(lines), failed) and failed
    assert judge["sync_equivalent_usd"] == pytest.approx(judge["cost_usd"], abs=2e-6) and judge["cost_usd"] > 0
    assert judge["in_flight_at_stop"]["requests"] == 1
    for k in ("rate_limited", "retries", "server_errors"):
        assert judge[k] == segment["usage"]["judge"].get(k, 0), (k, judge, segment)
    # The failure past its retries, as the resume counts it.
    assert written["retries_spent"] == resumed["retries_spent"] == {"results": failed, "max_resume_retries": 0}
    # And the resume computes what it computes without the report.
    assert _untimed(json.loads((reported / "run" / "summary.json").read_text())) == _untimed(resumed)
