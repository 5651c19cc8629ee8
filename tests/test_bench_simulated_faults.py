"""`tracejudge bench` names the cause of each fault the judge simulator injects (`--error-rate`: a 500, a hang, a reply
cut in half), not a setting that cannot fix it.

The simulator's cut reply (`finish_reason: length` on half a verdict, far under max_tokens) was said to have "stopped at
max_tokens: raise judge.max_tokens", and its hang (a request held `--hang-s` while the others took milliseconds) "a
slow server: raise judge.timeout_s". A real process benches the simulator over HTTP on 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _runs import native_case, write_dataset
import _forkserver


def _config(tmp: Path, **judge: object) -> Path:
    write_dataset(tmp / "cases.jsonl", [native_case(f"c{i}", ["a"], [f"tool_{i}"]) for i in range(4)])
    cfg = tmp / "cfg.json"
    cfg.write_text(json.dumps({"dataset": {"path": "cases.jsonl", "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
                               "judge": {"provider": "simulator", "model": "gpt-4o-mini", "timeout_s": 1, **judge}, "cache": {"dir": "cache"}}))
    return cfg


def test_the_simulators_faults_are_each_named_for_their_cause(simulator, tmp_path: Path) -> None:
    # The faults `--error-rate` draws (`Sim.next_fault`: 500, timeout, truncated), staged in order so each surely occurs.
    sim = simulator(script=["truncated", "timeout", "500", "truncated"], hang_s=3)
    out = tmp_path / "bench.json"
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "bench", str(_config(tmp_path)), "--provider", "openai", "--base-url",
                           sim.url + "/v1", "--requests", "16", "--duration", "0.5", "--json", str(out)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    text = " ".join(proc.stdout.replace("│", " ").split())
    replies = report["replies"]
    assert replies["truncated"] == replies["cut_short"] == 2, replies
    # Cut in half, far under max_tokens: the server's doing, and no advice to raise max_tokens.
    assert "the server cut it short itself" in replies["messages"]["truncated"], replies["messages"]
    assert "stopped at max_tokens" not in text and "raise judge.max_tokens" not in text, proc.stdout
    assert "2 were cut short by the server itself" in text and "raising judge.max_tokens does not help" in text, proc.stdout
    # Held while every other request was answered in milliseconds: a hang, not a slow server.
    assert "the server left them hanging" in report["error_messages"]["timeout"], report["error_messages"]
    assert "for a slow server" not in text and "raising judge.timeout_s only waits longer" in text, proc.stdout
    # The 500 is the server's own failure, named with its message.
    assert "simulated server error" in report["error_messages"]["server"]
    assert any(h.startswith("the server failed requests itself (HTTP 500") for h in report["hints"]), report["hints"]


def test_a_server_cap_over_half_of_max_tokens_is_named_as_the_run_names_it(simulator, tmp_path: Path) -> None:
    # llama.cpp's --n-predict 20 under judge.max_tokens 30: the server counted 20 of the 30 asked, so the server cut them
    # (`reply_notes.server_cut`, the run's rule); the bench's own "under half" count said "raise judge.max_tokens".
    sim = simulator(max_reply_tokens=20)
    out = tmp_path / "bench.json"
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "bench", str(_config(tmp_path, max_tokens=30)), "--provider", "openai",
                           "--base-url", sim.url + "/v1", "--requests", "3", "--duration", "0.2", "--json", str(out)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    replies = json.loads(out.read_text())["replies"]
    assert replies["truncated"] == replies["cut_short"] == replies["answered"] > 0, replies
    assert "the server counted 20 completion tokens, under max_tokens 30" in replies["messages"]["truncated"], replies["messages"]
    text = " ".join(proc.stdout.replace("│", " ").split())
    assert "raise judge.max_tokens" not in text and "raising judge.max_tokens does not help" in text, proc.stdout


def test_a_slow_server_is_still_told_to_raise_timeout_s(simulator, tmp_path: Path) -> None:
    # Every request slower than the timeout: raising judge.timeout_s is the fix, and the bench still says so.
    sim = simulator(latency_ms=1500)
    out = tmp_path / "bench.json"
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "bench", str(_config(tmp_path)), "--provider", "openai", "--base-url",
                           sim.url + "/v1", "--requests", "2", "--duration", "0.2", "--json", str(out)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # (nothing answered)
    assert "raise judge.timeout_s (now 1 s) for a slow server" in proc.stdout + proc.stderr, proc.stdout + proc.stderr
