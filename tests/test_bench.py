"""`tracejudge bench` as a user runs it (a real process) against the judge simulator over loopback."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import _forkserver

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "configs" / "demo.yaml"


def bench(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess, dict | None]:
    out = cwd / "bench.json"
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "bench", *args, "--json", str(out)], capture_output=True, text=True, cwd=cwd, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads(out.read_text()) if out.exists() else None


def reference_latency(url: str, n: int = 15) -> float:
    """p50 seconds of `n` one-at-a-time requests sent directly to the simulator."""
    body = json.dumps({"model": "gpt-4o-mini", "max_tokens": 50, "messages": [{"role": "user", "content": "judge this"}]}).encode()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        with urllib.request.urlopen(urllib.request.Request(url + "/v1/chat/completions", data=body, headers={"content-type": "application/json"}), timeout=10) as r:
            r.read()
        times.append(time.perf_counter() - t0)
    return sorted(times)[n // 2]


def synthetic(url: str, *more: str) -> list[str]:
    return ["--synthetic", "--provider", "openai", "--base-url", url + "/v1", "--prompt-tokens", "100", "--max-tokens", "50", *more]


def test_rate_limited_endpoint_sustained_rate_and_latency(simulator, tmp_path):
    sim = simulator(rpm=600, tpm=200_000, latency_ms=100)
    # 150-token requests: 600 of them use 90,000 of the 200,000 tokens, so requests bind.
    _, report = bench(*synthetic(sim.url, "--requests", "2000", "--duration", "4"), cwd=tmp_path)
    m = report["measured"]
    assert sim.stats.requests == report["requests_sent"]
    assert report["headers"] == {"present": True, "limit_requests": 600, "limit_tokens": 200_000}
    # The sustained rate never reads above the provider's limit (a burst of its leftover allowance is
    # taken out); below it, a busy machine may not keep 10 requests a second going, so the floor is loose.
    assert 300 <= m["rpm"] <= 660, m
    # The simulator answers after 100 ms (a floor that holds however loaded the machine is). The bound
    # above only says the figure is the request's own latency, not time queued at the rate limiter
    # (seconds here): 10x what a plain client sees right now, so it holds on a machine 10x slower.
    assert 0.100 <= m["latency_p50_s"] <= 10 * max(0.100, reference_latency(sim.url)), m
    assert sim.stats.rate_limited <= 0.01 * sim.stats.requests  # paced by the headers: no 429 storm
    assert report["recommended_limits"]["rpm"] == 600 and report["recommended_limits"]["tpm"] == 200_000


def test_knee_of_a_server_without_rate_headers(simulator, tmp_path):
    # 300 ms a request: the server's whole capacity (8 at once, 27 answers a second) is a rate even a machine
    # busy with other work keeps up with, so the knee is the server's, not the client's. (At 100 ms, 80 a second,
    # a loaded machine could not fill 8 in flight, and throughput still grew at 16.)
    sim = simulator(rate_headers=False, max_concurrency=8, latency_ms=300)
    _, report = bench(*synthetic(sim.url, "--requests", "600", "--duration", "1"), cwd=tmp_path)
    assert report["headers"] == {"present": False}
    # The server serves 8 at once. The knee is never past it by more than the ramp's step, and the ramp
    # went past serial; where exactly below 8 it settles depends on the machine's load, not on the bench.
    assert 2 <= report["best_level"] <= 10, report["ramp"]
    assert report["recommended_limits"]["max_in_flight"] == report["best_level"]


def test_cost_cap_stops_the_bench(simulator, tmp_path):
    sim = simulator(latency_ms=5)
    # gpt-4o-mini: a 1,000-token prompt with max_tokens 100 is at most $0.00021.
    proc, report = bench("--synthetic", "--provider", "openai", "--base-url", sim.url + "/v1", "--prompt-tokens", "1000", "--max-tokens", "100",
                         "--max-cost-usd", "0.001", "--requests", "500", cwd=tmp_path)
    assert "can cost at most $0.0010" in proc.stdout
    assert report["stopped_by"] == "cost cap"
    assert 0 < report["spent_usd"] <= 0.001
    assert sim.stats.requests == report["requests_sent"] < 10


def test_dry_run_sends_nothing(simulator, tmp_path):
    sim = simulator()
    proc, report = bench(*synthetic(sim.url, "--dry-run"), cwd=tmp_path)
    assert "the bench can cost at most $" in proc.stdout and "nothing sent" in proc.stdout
    assert report is None and sim.stats.requests == 0


def test_projection_of_the_demo_is_what_the_demo_then_costs(tmp_path, data_dir):
    if not (data_dir / "tau_bench").exists():
        pytest.skip("the demo's tau-bench data is not here")
    # 60 of the demo's 200 traces: a projection that is exact for 60 is exact for 200; the run it is checked against costs a third.
    cache = ["--set", f"cache.dir={tmp_path / 'cache'}", "--set", "dataset.limit=60"]
    proc, report = bench(str(DEMO), *cache, "--sample", "10", "--requests", "60", "--duration", "1", cwd=tmp_path)
    projected = report["projection"]
    assert "full sweep" in proc.stdout and projected["cases"] == 60  # 60 traces, each judged once (it was 120: one a metric)
    run = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(DEMO), *cache, "--run-dir", str(tmp_path / "run"), "--no-progress"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr
    judge = json.loads((tmp_path / "run" / "summary.json").read_text())["judge"]
    assert judge["requests"] == projected["requests"]
    assert abs(judge["input_tokens"] - projected["input_tokens"]) <= 0.02 * judge["input_tokens"]
    assert abs(judge["output_tokens"] - projected["output_tokens"]) <= 0.02 * judge["output_tokens"]
    assert abs(judge["cost_usd"] - projected["modes"]["sync"]["usd"]) <= 0.02 * judge["cost_usd"]

    # With the cache now warm, the projection says what the cache covers instead of projecting paid requests for it.
    proc, warm = bench(str(DEMO), *cache, "--sample", "10", "--requests", "20", "--duration", "1", cwd=tmp_path)
    w = warm["projection"]
    assert w["requests"] == 0 and w["cache_hits"] == judge["requests"] + judge["cache_hits"] and w["cold_cache_requests"] == projected["requests"]
    assert w["modes"]["sync"]["requests"] == 0 and w["modes"]["batch"]["requests"] == 0
    flat = " ".join(proc.stdout.replace("│", " ").split())
    assert f"the judge cache answers {w['cache_hits']:,} of their requests (free; a cold cache would need {projected['requests']:,}), 0 requests to send" in flat


def test_nothing_answered_recommends_no_limits(tmp_path):
    from tracejudge.simulator.server import free_port

    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    out = tmp_path / "bench.json"
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "bench", *synthetic(url, "--requests", "4", "--duration", "0.2"), "--json", str(out)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode != 0 and "no request was answered" in proc.stderr
    assert "limits: none to recommend" in proc.stdout and "rpm: 1," not in proc.stdout
    assert json.loads(out.read_text())["recommended_limits"] is None


def test_running_out_of_requests_mid_ramp_recommends_only_a_level_measured_in_full(simulator, tmp_path):
    sim = simulator(rate_headers=False, latency_ms=20)
    # 13 requests: level 1 takes (up to) 12, the next level gets what is left, far too few to measure it.
    proc, report = bench(*synthetic(sim.url, "--requests", "13", "--duration", "1"), cwd=tmp_path)
    steps = {s["level"]: s for s in report["ramp"]}
    last = report["ramp"][-1]
    assert len(steps) >= 2 and last["answered"] < 8 and report["best_level"] != last["level"], report["ramp"]
    assert "ran out of requests (--requests)" in report["ramp_stopped"] and "raise --requests" in report["ramp_stopped"]
    lim = report["recommended_limits"]
    if lim is None:  # on a machine so loaded that level 1 answered fewer than 8 in its step
        assert steps[report["best_level"]]["answered"] < 8 and "none to recommend" in proc.stdout
    else:
        assert lim["max_in_flight"] == report["best_level"] and steps[report["best_level"]]["answered"] >= 8


def test_dry_run_of_a_config_needs_no_api_key(tmp_path):
    import os

    from _runs import native_case, write_dataset

    write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i}", ["a"], ["a"]) for i in range(5)])
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"dataset": {"path": "cases.jsonl", "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
                               "judge": {"provider": "openai", "model": "gpt-4o-mini", "api_key_env": "TRACEJUDGE_TEST_NO_SUCH_KEY"}}))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "bench", str(cfg), "--dry-run"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=120, env=env)
    assert proc.returncode == 0 and "nothing sent" in proc.stdout, proc.stderr
    run = _forkserver.run([sys.executable, "-m", "tracejudge", "bench", str(cfg), "--requests", "1"], capture_output=True, text=True, cwd=tmp_path,
                         timeout=120, env=env)
    assert run.returncode == 2 and "TRACEJUDGE_TEST_NO_SUCH_KEY" in run.stdout + run.stderr  # a real bench does need it


def test_replies_without_usage_are_estimated_not_counted_as_zero_tokens(tmp_path):
    # A server that reports no usage (some local servers and gateways): the bench measured 0 tokens/min and 0 output
    # tokens per request, and projected a sweep on that. It estimates them as a run bills them, and says so.
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _loopback import Loopback, completion

    def respond(headers, body):
        reply = completion(json.dumps({"answer": "yes", "reason": "a reply of a few words"}))
        del reply["usage"]
        return 200, reply

    with Loopback(respond) as server:
        proc, report = bench(*synthetic(server.url, "--requests", "20", "--duration", "0.5"), cwd=tmp_path)
    m = report["measured"]
    assert m["answered"] > 0 and m["usage_estimated"] == m["answered"], m
    assert m["output_tokens_per_request"] > 0 and m["input_tpm"] > 0, m
    assert all(a["usage_estimated"] and a["input_tokens"] > 0 for a in report["attempts"] if a["outcome"] == "ok")
    # The sentence wraps inside the table's cell, where the column's width follows the measured rates: read it without the rules.
    assert "others' tokens are estimated" in " ".join(proc.stdout.replace("│", " ").split()), proc.stdout


def test_a_panel_is_benched_one_member_at_a_time(tmp_path):
    # With judge.models the bench measured and priced the section's own model (gpt-4o-mini by default), which the run
    # never asks, and projected the sweep from it: a panel of gpt-4o alone read as gpt-4o-mini's throughput and dollars.
    from _runs import native_case, write_dataset

    write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i}", ["a"], [f"tool_{i}"]) for i in range(5)])  # (5 distinct prompts)
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"dataset": {"path": "cases.jsonl", "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
                               "judge": {"provider": "simulator", "models": ["simulator:gpt-4o"]}, "cache": {"dir": "cache"}}))
    whole = _forkserver.run([sys.executable, "-m", "tracejudge", "bench", str(cfg), "--dry-run"], capture_output=True, text=True, cwd=tmp_path,
                           timeout=120)
    assert whole.returncode == 2 and "judge.models is a panel (simulator:gpt-4o)" in whole.stdout + whole.stderr, whole.stdout + whole.stderr
    _, report = bench(str(cfg), "--model", "simulator:gpt-4o", "--requests", "6", "--duration", "1", cwd=tmp_path)
    assert report["model"] == "gpt-4o" and report["projection"]["requests"] == 5, report["projection"]
    assert report["projection"]["modes"]["sync"]["usd"] > 0.0005  # gpt-4o's $2.50 per M input tokens, not gpt-4o-mini's $0.15


def test_a_sampled_judges_bench_requests_carry_the_prefix_cache_hint_the_run_sends(tmp_path):
    # Each sample asks a grouped trace again, so the run marks it for the provider's prefix cache; the bench built its
    # requests without the mark, measuring another cached-token share than the run gets.
    from _runs import native_case, write_dataset
    from tracejudge.core.config import load_config
    from tracejudge.entrypoints.judge_bench.requests import build_sample

    write_dataset(tmp_path / "cases.jsonl", [native_case(f"c{i}", ["a"], [f"tool_{i}"]) for i in range(3)])
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"dataset": {"path": "cases.jsonl", "format": "native"},
                               "metrics": [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}],
                               "judge": {"provider": "simulator", "model": "gpt-4o-mini", "samples": 2, "temperature": 0.7}}))
    requests = build_sample(load_config(cfg), 3)
    assert requests and all(r.request.cache_prefix > 0 for r in requests), [r.request.cache_prefix for r in requests]
