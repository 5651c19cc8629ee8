"""Judge spend survives SIGKILL between a paid answer and its case's result line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
import _forkserver

TJ = Path(sys.executable).with_name("tracejudge")


def _config(tmp: Path, name: str, url: str) -> Path:
    cases = tmp / "cases.jsonl"
    steps = [{"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"q": "item 1"}, "result": "found 1"}]}]
    cases.write_text(json.dumps({"id": "case-1", "input": "Find item 1", "trace": {"steps": steps, "output": "Item 1 is found."}}) + "\n")
    cfg = {"dataset": {"path": str(cases), "format": "native"},
           "metrics": [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}],
           "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": url + "/v1", "group": "none"},  # two requests: one is answered before the kill
           "cache": {"dir": str(tmp / f"cache-{name}")}, "run": {"dir": str(tmp / name)}}
    path = tmp / f"{name}.json"
    path.write_text(json.dumps(cfg))
    return path


def _judge(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text())["judge"]


def test_an_answer_paid_before_a_kill_counts_after_the_resume(simulator, tmp_path):
    sim = simulator(hang_s=120)
    clean = _forkserver.run([str(TJ), "run", str(_config(tmp_path, "clean", sim.url)), "--no-progress"], capture_output=True, text=True, timeout=120)
    assert clean.returncode in (0, 1), clean.stderr

    # The case's two judge requests: one is answered (paid, cached), the other hangs; the kill comes in between.
    sim.set_script(["ok", "timeout"])
    args = [str(TJ), "run", str(_config(tmp_path, "killed", sim.url)), "--no-progress"]
    first = _forkserver.popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journal = tmp_path / "killed" / "judge_spend.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (journal.exists() and journal.read_bytes().count(b'"settles"') >= 1):
        time.sleep(0.02)
    time.sleep(1.0)  # the answer goes to the cache just after its spend line; the other request hangs for 120 s
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    results = tmp_path / "killed" / "results.jsonl"
    assert not results.exists() or results.read_text().strip() == ""  # the case had no result line yet

    resumed = _forkserver.run(args, capture_output=True, text=True, timeout=120)
    assert resumed.returncode in (0, 1), resumed.stderr
    want, got = _judge(tmp_path / "clean"), _judge(tmp_path / "killed")
    # The resume took the answer paid before the kill from the cache; it was paid all the same.
    assert got["cache_hits"] >= 1
    # The request hanging at the kill was sent (a paid API bills it) and sent again by the resume: it counts at its
    # estimated prompt, and the summary says so.
    stopped = got["in_flight_at_stop"]
    assert stopped["requests"] == 1 and got["requests"] == want["requests"] + 1
    assert (got["input_tokens"], got["output_tokens"]) == (want["input_tokens"] + stopped["input_tokens_estimated"], want["output_tokens"])
    assert abs(got["cost_usd"] - want["cost_usd"] - stopped["cost_usd_estimated"]) <= 3e-6  # each segment rounds dollars to 6 places
