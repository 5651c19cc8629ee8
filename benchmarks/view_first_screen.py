"""`tracejudge view` with 100,000 cases: time to the first screen of the Cases table.

A run directory holds N results (default 100,000; three metrics, each with a
reason of ~120 characters, a tenth of them failed, three tags). The viewer
runs as a real process (`python -m tracejudge view RUN_DIR --port 0`); each
row of the table is one page asked for over HTTP on 127.0.0.1:

- `cold`: the first request after start with no `view.idx` — the index is
  built once (all N lines parsed into SQLite), then the page is served;
- `warm`: the same page again (the index is current: one `stat`);
- `restart`: a new viewer process on the same run — `view.idx` is reused;
- filtered and sorted pages: failed cases, a metric below threshold, a text
  search, sorted by a metric descending, the last page.

With Debian's `chromium` and `chromedriver` installed (and selenium), the
first screen is also measured in the browser: navigation start to the load
event of the Cases page (Navigation Timing `loadEventEnd`), warm index.

Usage: python benchmarks/view_first_screen.py [--cases 100000] [--repeat 5]
Prints a markdown table of median milliseconds.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _procs import guarded, started  # noqa: E402


def write_run(run_dir: Path, n: int, seed: int = 0) -> None:
    """N synthetic results in `run_dir/results.jsonl` (the shape a run writes)."""
    rng = random.Random(seed)
    run_dir.mkdir(parents=True, exist_ok=True)
    tools = ["get_user_details", "search_direct_flight", "book_reservation", "cancel_reservation", "update_reservation_baggages"]
    with open(run_dir / "results.jsonl", "w", encoding="utf-8") as fh:
        for i in range(n):
            scores = {}
            for m in ("writes_exact", "TrajectoryMatch", "TaskCompletion"):
                v = 1.0 if rng.random() > 0.1 else round(rng.random() * 0.5, 3)
                scores[m] = {"value": v, "passed": v >= 0.5,
                             "reason": f"matched {int(v * 4)}/4 expected calls; missing: [1] {rng.choice(tools)}({{\"reservation_id\": \"R{i:06d}\"}})"}
            fh.write(json.dumps({"case_id": f"case-{i:06d}", "trial": 0, "status": "ok" if i % 97 else "target_error",
                                 "tags": [rng.choice(["airline", "retail", "telecom"])], "scores": scores,
                                 "error": None if i % 97 else {"kind": "target_error", "message": "timeout after 30 s"},
                                 "duration_s": round(rng.random() * 3, 3)}) + "\n")


@contextmanager
def serving(run_dir: Path) -> Iterator[str]:
    """`tracejudge view RUN_DIR` in its own process, stopped (SIGTERM, then SIGKILL) when the block ends; yields its base URL."""
    with started([sys.executable, "-m", "tracejudge", "view", str(run_dir), "--port", "0"], stdout=subprocess.PIPE, text=True) as proc:
        line = proc.stdout.readline() if proc.stdout else ""
        if len(line.split()) < 3:
            raise RuntimeError(f"tracejudge view did not print its address (exit code {proc.poll()}, first line {line!r})")
        page = urlsplit(line.split()[2])  # one run served: it prints that run's page; the base is the server
        yield f"{page.scheme}://{page.netloc}"


def get_ms(url: str) -> float:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=300) as resp:
        resp.read()
    return (time.perf_counter() - t0) * 1000


def browser_ms(url: str, repeat: int) -> float | None:
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver:
        return None
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None
    profile = tempfile.mkdtemp()
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", f"--user-data-dir={profile}", "--window-size=1400,1000"):
        opts.add_argument(flag)
    d = webdriver.Chrome(service=Service(driver), options=opts)
    try:
        times = []
        for _ in range(repeat):
            d.get(url)
            times.append(d.execute_script("const t = performance.getEntriesByType('navigation')[0]; return t.loadEventEnd - t.startTime;"))
        return statistics.median(times)
    finally:
        d.quit()
        shutil.rmtree(profile, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tj-view-bench-"))
    run_dir = tmp / "run"
    rows: list[tuple[str, float]] = []

    def measure() -> None:
        try:
            t0 = time.perf_counter()
            write_run(run_dir, args.cases)
            print(f"wrote {args.cases:,} results ({(run_dir / 'results.jsonl').stat().st_size / 1e6:.1f} MB) in {time.perf_counter() - t0:.1f} s\n")
            cases = "/run/run/cases"
            with serving(run_dir) as base:
                rows.append(("cold: build view.idx + first page (50 rows)", get_ms(base + cases)))
                pages = [("warm: first page", cases), ("failed cases", cases + "?status=failed"),
                         ("writes_exact below threshold", cases + "?below=writes_exact"),
                         ("search 'book_reservation'", cases + "?q=book_reservation"),
                         ("sorted by TaskCompletion, descending", cases + "?sort=TaskCompletion&desc=1"),
                         ("last page", cases + f"?page={args.cases // 50}"), ("run page", "/run/run")]
                for label, path in pages:
                    rows.append((label, statistics.median(get_ms(base + path) for _ in range(args.repeat))))
                in_browser = browser_ms(base + cases, args.repeat)
                if in_browser is not None:
                    rows.append(("Chromium: navigation to load event, first page", in_browser))
            with serving(run_dir) as base:
                rows.append(("restart: new process, view.idx reused, first page", get_ms(base + cases)))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def report() -> None:
        print(f"| {args.cases:,} cases | median ms |\n|---|---:|")
        for label, ms in rows:
            print(f"| {label} | {ms:,.0f} |")

    guarded(measure, report)

if __name__ == "__main__":
    main()
