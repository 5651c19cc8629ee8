"""Judge throughput against the simulator, where the token limit binds.

Scenario (issue "LLM judges"): the judge simulator (`tracejudge simulate`,
its own process) answers after 200 ms and allows 3,000 requests and
1,000,000 tokens per minute; 2,000 synthetic cases, each judged by
`TaskCompletion` with a prompt of about 1,800 tokens, go through the real
pipeline (`tracejudge run`'s runner, in this process) with the same limits
configured, 64 requests in flight and `max_tokens` 200.

Printed:

- efficiency = ideal span ÷ actual span, the actual span running from the
  first to the last request the simulator received. The ideal span is the
  shortest time in which the limits and the in-flight cap allow all
  requests, with tokens the prompt + completion tokens the simulator
  charged. Against the bucket-style simulator (token buckets that start
  full, the providers' model) the limits allow
  max((tokens − TPM) ÷ TPM/s, (requests − RPM) ÷ RPM/s, 0); with
  against the strict-window one (a 60-second sliding window) every full window of
  requests adds 60 s. The in-flight cap adds one latency per round of
  `max_in_flight` requests still to send once the limits allow them
  (the measured p50 latency), or, when the client is slower (a busy
  machine), what those requests take at the peak rate the simulator saw
  in any one second;
- achieved RPM and TPM as shares of the limits, over the whole span (above
  1.0 when the initial full bucket is a large part of the work) and after
  the first full bucket (the sustained rate); both n/a when all the work
  fits in the first minute's allowance (the span is then a few latencies,
  not a rate);
- 429s as a share of requests, p50/p95 provider latency, cases lost;
- a re-run of the same config into a fresh run directory with the warm
  cache: its wall time and how many requests reached the simulator.

Targets: efficiency ≥ 0.98, < 1 % of requests answered 429, no lost case,
cached re-run with 0 requests in under 2 s.

Run: `.venv/bin/python benchmarks/judge_throughput.py [--cases N] [--window both|bucket|strict]`
(the default `both` runs against a bucket-style and a strict-window
simulator and prints them side by side: about 6 minutes at the default size).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import anyio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _procs import guarded, started  # noqa: E402
from tracejudge.core.config import validate_config  # noqa: E402
from tracejudge.core.records import Case  # noqa: E402
from tracejudge.engine import runner  # noqa: E402
from tracejudge.stages.judge.client import build_request, request_tokens  # noqa: E402
from tracejudge.stages.judge.metrics import TaskCompletion  # noqa: E402

RPM, TPM, LATENCY_MS, MAX_TOKENS, IN_FLIGHT = 3000, 1_000_000, 200, 200, 64
WORDS = ("order refund flight booking passenger baggage seat upgrade policy cabin economy business reservation payment "
         "certificate insurance cancel change status pending delivered account membership gold silver airport date time").split()


def make_case(i: int, words: int) -> dict:
    rng = random.Random(i)
    steps = []
    for s in range(6):
        text = " ".join(rng.choice(WORDS) for _ in range(words))
        steps.append({"thought": f"step {s} of case {i}", "tool_calls": [{"name": f"tool_{s}", "arguments": {"id": f"{i}-{s}"}, "result": text}]})
    return {"id": f"case-{i}", "input": f"Please handle request number {i} for the customer.", "trace": {"steps": steps, "output": f"Done with request {i}."}}


def calibrate(target: int = 1800) -> int:
    """Words per tool result that give a ~`target`-token TaskCompletion prompt."""
    from tracejudge.core.config import JudgeConfig

    cfg = JudgeConfig(provider="openai", model="gpt-4o-mini", max_tokens=MAX_TOKENS)
    words = 200
    for _ in range(4):
        plan = TaskCompletion().plan(Case.model_validate(make_case(0, words)))
        tokens = request_tokens(build_request(plan, plan.questions, cfg))
        words = max(10, round(words * target / tokens))
    return words


def ideal_span(requests: int, tokens: int, window: str, latency_s: float, peak_rps: float) -> float:
    """Seconds from first to last request in the best schedule the limits, the in-flight cap and the client allow.

    `latency_s` is the measured provider latency and `peak_rps` the most
    requests the simulator received in one second: on a busy machine the
    client's own speed, not the limits, sets how fast a burst goes out.
    """
    if requests == 0:
        return 0.0

    def rounds(n: int) -> float:
        return max(max(0, math.ceil(n / IN_FLIGHT) - 1) * latency_s, (n - 1) / peak_rps if peak_rps else 0.0)

    if window == "bucket":
        return max((tokens - TPM) / (TPM / 60), (requests - RPM) / (RPM / 60), rounds(requests), 0.0)
    per_window = min(RPM, max(1, int(TPM // (tokens / requests))))
    windows = math.ceil(requests / per_window)
    return 60.0 * (windows - 1) + rounds(requests - (windows - 1) * per_window)


def sim_stats(url: str) -> dict:
    with urllib.request.urlopen(url + "/_sim/stats", timeout=10) as r:
        return json.loads(r.read())


def run_once(cfg_data: dict, run_dir: Path) -> tuple[float, dict]:
    config = validate_config(json.loads(json.dumps(cfg_data)))
    t0 = time.perf_counter()
    outcome = anyio.run(lambda: runner.run(config, run_dir=run_dir))
    return time.perf_counter() - t0, outcome.summary


def measure(window: str, cases: int, work: Path, cached_rerun: bool) -> list[tuple[str, str]]:
    """One run against a simulator counting its limits as `window` (its own process); the table's rows."""
    exe = Path(sys.executable).with_name("tracejudge")
    # `started` stops the simulator (SIGTERM, then SIGKILL) however this block ends: on a loaded
    # machine it may not exit within the grace period, and it must not outlive the benchmark.
    with started([str(exe), "simulate", "--port", "0", "--latency-ms", str(LATENCY_MS), "--rpm", str(RPM), "--tpm", str(TPM),
                  "--window", window], stdout=subprocess.PIPE, text=True) as proc:
        first = proc.stdout.readline()
        found = re.search(r"http://127\.0\.0\.1:\d+", first)
        if found is None:
            raise RuntimeError(f"the simulator did not print its address (exit code {proc.poll()}, first line {first!r})")
        url = found.group(0)
        cfg = {
            "dataset": {"path": str(work / "cases.jsonl"), "format": "native"},
            "metrics": [{"type": "TaskCompletion"}],
            "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": url + "/v1", "max_tokens": MAX_TOKENS},
            "limits": {"rpm": RPM, "tpm": TPM, "max_in_flight": IN_FLIGHT},
            "cache": {"dir": str(work / f"cache-{window}")},
            "run": {"dir": str(work / f"run-{window}"), "queue_size": 256},
        }
        wall, summary = run_once(cfg, work / f"run-{window}")
        s = sim_stats(url)
        before = s["requests"]
        if cached_rerun:
            cached_wall, cached_summary = run_once(cfg, work / f"rerun-{window}")
            cached_requests = sim_stats(url)["requests"] - before

    n, tokens = s["requests"], s["input_tokens"] + s["output_tokens"]
    span = s["last_request"] - s["first_request"]
    peak_rps = max(s["arrivals_per_s"].values(), default=0)
    ideal = ideal_span(s["answered"], tokens, window, summary["judge"]["latency_p50_s"], peak_rps)
    beyond_first_minute = tokens > TPM or s["answered"] > RPM
    judge = summary["judge"]
    ok = summary["status"].get("ok", 0)
    rows = [
        ("cases", f"{cases}"),
        ("mean prompt tokens", f"{s['input_tokens'] / max(1, s['answered']):,.0f}"),
        ("requests sent / answered", f"{n:,} / {s['answered']:,}"),
        ("tokens charged (prompt + completion)", f"{tokens:,}"),
        ("peak requests in one second", f"{peak_rps}"),
        ("ideal span the limits allow", f"{ideal:.1f} s"),
        ("actual span, first to last request", f"{span:.1f} s"),
        ("efficiency (ideal / actual)", f"{ideal / span:.3f}" if span else "n/a"),
        ("achieved RPM share (whole span)", f"{n / (span / 60) / RPM:.3f}" if span and beyond_first_minute else "n/a"),
        ("achieved TPM share (whole span)", f"{tokens / (span / 60) / TPM:.3f}" if span and beyond_first_minute else "n/a"),
        ("achieved TPM share after the first full bucket",
         f"{(tokens - TPM) / (span / 60) / TPM:.3f}" if span and tokens > TPM and window == "bucket" else "n/a"),
        ("429s / requests", f"{s['rate_limited']} / {n} = {s['rate_limited'] / max(1, n):.2%}"),
        ("client retries", f"{judge['retries']}"),
        ("provider latency p50 / p95", f"{judge['latency_p50_s'] * 1000:.0f} ms / {judge['latency_p95_s'] * 1000:.0f} ms"),
        ("time queued at the admission gate (sum)", f"{judge['queued_s']:.0f} s"),
        ("cases lost (not ok)", f"{cases - ok}"),
        ("run wall time", f"{wall:.1f} s"),
        ("cost at gpt-4o-mini prices", f"${judge['cost_usd']:.4f}"),
    ]
    if cached_rerun:
        rows += [
            ("cached re-run: wall time", f"{cached_wall:.2f} s"),
            ("cached re-run: requests to the simulator", f"{cached_requests}"),
            ("cached re-run: cache hits / saving", f"{cached_summary['judge']['cache_hits']} / ${cached_summary['judge']['saved_usd']:.4f}"),
        ]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--window", choices=("both", "bucket", "strict"), default="both",
                    help="how the simulator counts its limits (both: one run against each, side by side)")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="tj-bench-"))
    words = calibrate()
    with open(work / "cases.jsonl", "w") as fh:
        for i in range(args.cases):
            fh.write(json.dumps(make_case(i, words)) + "\n")
    windows = ["bucket", "strict"] if args.window == "both" else [args.window]
    tables: dict[str, dict[str, str]] = {}

    def measure_all() -> None:
        try:
            # The cached re-run measures the cache, not the limits: once is enough.
            for i, w in enumerate(windows):
                tables[w] = dict(measure(w, args.cases, work, cached_rerun=i == 0))
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def report() -> None:
        keys = list(dict.fromkeys(k for t in tables.values() for k in t))
        if not keys:
            return
        width = max(len(k) for k in keys)
        print(f"\njudge throughput: simulator {LATENCY_MS} ms, {RPM:,} RPM, {TPM:,} TPM; {IN_FLIGHT} in flight, max_tokens {MAX_TOKENS}\n")
        print(f"| {'figure'.ljust(width)} | " + " | ".join(f"{w} limits" for w in tables) + " |")
        print(f"| {'-' * width} | " + " | ".join("-" * len(f"{w} limits") for w in tables) + " |")
        for k in keys:
            print(f"| {k.ljust(width)} | " + " | ".join(tables[w].get(k, "n/a") for w in tables) + " |")

    guarded(measure_all, report)


if __name__ == "__main__":
    main()
