"""Progress that says what it waits for: a total and an ETA in log lines, an ETA from the rate limit, the cases really in flight.

The runs are real (the judge simulator over 127.0.0.1); the terminal bar is read through a pty.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

from _pty import run_in_pty
from tracejudge.core.records import CaseResult, Score
from tracejudge.engine.live import LiveStatus
from tracejudge.engine.progress import ProgressState
import _forkserver

CASES, RPM = 36, 30  # the limiter lets 30 requests through at once, then one every 2 s: 6 cases wait on it


def _config(tmp: Path, tau_paths, *, n: int, rpm: int = 3000, max_in_flight: int = 64, latency_ms: int = 0) -> Path:
    trajectories, tasks = tau_paths
    cfg = tmp / "c.yaml"
    cfg.write_text(
        f"dataset: {{path: {json.dumps(str(trajectories))}, format: tau-bench, tasks: {json.dumps(str(tasks))}, limit: {n}}}\n"
        "metrics: [{type: TaskCompletion}]\n"
        f"judge: {{provider: simulator, model: gpt-4o-mini, stop_grace_s: 30, simulator: {{latency_ms: {latency_ms}}}}}\n"
        f"limits: {{rpm: {rpm}, tpm: 10000000, max_in_flight: {max_in_flight}}}\n"
        "cache: {enabled: false}\nrun: {dir: run}\n")
    return cfg


def test_the_eta_takes_the_rate_limit_over_early_results() -> None:
    state = ProgressState(total=100)
    state.live = LiveStatus(paces=[lambda: None, lambda: 0.5])
    for i in range(60):  # 60 results at once: the rate so far would promise the rest in a blink
        state.add(CaseResult(case_id=str(i), scores={"m": Score(value=1.0)}))
    assert state.eta_s == 80.0  # 40 to go at the 0.5 a second the limit admits
    state.live = LiveStatus()
    assert state.eta_s is not None and state.eta_s < 80.0  # without a limit, the rate seen so far


def test_log_lines_have_a_total_and_an_eta_from_the_limiter(tmp_path: Path, tau_paths) -> None:
    cfg = _config(tmp_path, tau_paths, n=CASES, rpm=RPM)
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--progress-every", "0.2"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    lines = [json.loads(x) for x in proc.stderr.splitlines() if x.startswith("{")]
    waiting = [x for x in lines if x["event"] == "progress" and RPM <= x["done"] < CASES]
    assert waiting, lines
    for x in waiting:
        assert x["total"] == CASES
        # One request a case, one request every 2 s: what is left takes 2 s a case, not what the burst promised.
        assert x["eta_s"] >= 2 * (CASES - x["done"]) * 0.95, x


def test_the_bar_in_a_terminal_shows_the_limiter_eta(tmp_path: Path, tau_paths) -> None:
    cfg = _config(tmp_path, tau_paths, n=CASES, rpm=RPM)
    text, code = run_in_pty([sys.executable, "-m", "tracejudge", "run", str(cfg)], tmp_path, columns=80)
    assert code in (0, 1), text[-2000:]
    frames = [(int(d), int(h) * 3600 + int(m) * 60 + int(s)) for d, h, m, s in re.findall(rf"(\d+)/{CASES} .*? ETA (\d):(\d\d):(\d\d)", text)]
    waiting = [(d, eta) for d, eta in frames if RPM <= d < CASES]
    assert waiting, text[-3000:]
    assert all(eta >= 2 * (CASES - d) - 2 for d, eta in waiting), waiting


def test_after_ctrl_c_in_flight_counts_cases_in_a_stages_hands(tmp_path: Path, tau_paths) -> None:
    # 40 cases, 8 judge workers on slow replies: the rest queue between stages and are dropped at once on a stop.
    cfg = _config(tmp_path, tau_paths, n=40, max_in_flight=4, latency_ms=3000)
    proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "run", str(cfg), "--progress-every", "0.2"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[str] = []
    try:
        assert proc.stderr is not None
        for raw in proc.stderr:  # wait until the judge is waiting on replies
            seen.append(raw)
            if '"waiting_on"' in raw and "replies pending" in raw:
                break
        proc.send_signal(signal.SIGINT)
        _, rest = proc.communicate(timeout=120)
    finally:
        proc.kill()
    said = re.search(r"SIGINT: no new cases; the (\d+) in flight", rest)
    assert said is not None, "".join(seen) + rest
    assert 1 <= int(said.group(1)) <= 8  # the judge's workers, not the 40 admitted
    stopping = [json.loads(x)["in_flight"] for x in rest.splitlines() if x.startswith('{"') and '"event": "stopping"' in x]
    assert stopping and stopping[0] <= 8 and stopping == sorted(stopping, reverse=True), stopping
