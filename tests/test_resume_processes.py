"""Resume with real processes: `tracejudge run` killed, interrupted, locked out, and resumed.

The cases are the 200 τ-bench airline runs (../shared/data, converted to
native JSONL in-process), repeated with distinct ids up to 2,000 lines, plus
a few malformed lines and a duplicate id so that error results go through
resume too. Every test compares against one uninterrupted reference run.
"""

from __future__ import annotations

import json
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tracejudge.core import registry
from tracejudge.core.config import validate_config
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record
import _forkserver

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "tau_bench"
TRAJ = DATA / "historical_trajectories" / "gpt-4o-airline.json"
TASKS = DATA / "tasks" / "tasks_airline_test.json"
TJ = Path(sys.executable).with_name("tracejudge")
N = 2000

pytestmark = pytest.mark.skipif(not TRAJ.exists(), reason="τ-bench data not found next to the repository")

CONFIG = """\
dataset: {path: cases.jsonl, format: native}
metrics:
  - type: ToolCalls
    name: writes_exact
    arguments: exact
    exclude_tools: ["get_*", "search_*", "list_*", "calculate", "think", "transfer_*"]
  - {type: TrajectoryMatch, order: in_order}
  - {type: ToolCorrectness, allow_extra: true}
run: {dir: runs/main, flush_every: 32}
assertions: {max_invalid_share: 0.01}   # the workspace plants three unreadable records in 2,000
"""


def _tau_cases() -> list[str]:
    cfg = validate_config({"dataset": {"path": str(TRAJ), "format": "tau-bench", "tasks": str(TASKS)}})
    fmt = registry.format_for("tau-bench")
    ctx = fmt.prepare(cfg.dataset)
    out = []
    for raw in fmt.read(cfg.dataset):
        case = extract_record(raw, fmt, ctx)
        assert isinstance(case, Case)
        out.append(case.model_dump(mode="json", exclude_defaults=True))
    return out


@pytest.fixture(scope="session")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with `cases.jsonl` (2,000 lines), `config.yaml` and a finished reference run."""
    root = tmp_path_factory.mktemp("resume")
    base = _tau_cases()
    lines = []
    for i in range(N):
        case = dict(base[i % len(base)])
        case["id"] = f"{case['id']}-r{i // len(base)}"
        lines.append(json.dumps(case))
    lines[500] = json.dumps({"id": "broken-trace", "trace": {"steps": "not a list"}})
    lines[1200] = "this line is not JSON"
    lines[1700] = lines[10]  # a duplicate id: an invalid_input result of its own
    (root / "cases.jsonl").write_text("\n".join(lines) + "\n")
    (root / "config.yaml").write_text(CONFIG)
    proc = _run(root, "--run-dir", "runs/reference")
    assert proc.returncode == 0, proc.stderr
    return root


def _cmd(*args: str) -> list[str]:
    return [str(TJ), "--log-level", "info", "run", "config.yaml", "--no-progress", *args]


def _run(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return _forkserver.run(_cmd(*args), cwd=root, capture_output=True, text=True, timeout=timeout)


def _start(root: Path, *args: str) -> subprocess.Popen[str]:
    return _forkserver.popen(_cmd(*args), cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _results(run_dir: Path) -> list[dict]:
    with open(run_dir / "results.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _by_key(results: list[dict]) -> dict[tuple[str, int], dict]:
    out = {}
    for r in results:
        key = (r["case_id"], r["trial"])
        assert key not in out, f"duplicate result for {key}"
        r = dict(r)
        r.pop("duration_s")
        out[key] = r
    return out


def _assert_same_as_reference(root: Path, run_dir: Path, limit: int | None = None) -> None:
    """Every result equals the reference run's (ignoring duration_s); with `limit`, the first `limit` lines' results."""
    reference = _results(root / "runs" / "reference")  # one worker: in dataset order
    got = _by_key(_results(run_dir))
    want = _by_key(reference[:limit] if limit else reference)
    assert len(got) == (limit or N)
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == want[key], key
    a = json.loads((run_dir / "summary.json").read_text())
    assert a["complete"] is True and a["results"] == (limit or N)
    if limit:
        return
    b = json.loads((root / "runs" / "reference" / "summary.json").read_text())
    assert (a["results"], a["status"]) == (b["results"], b["status"]) == (N, {"invalid_input": 3, "ok": N - 3})
    for key, m in b["metrics"].items():
        for field, value in m.items():
            assert a["metrics"][key][field] == (pytest.approx(value, abs=2e-6) if field == "mean" else value), (key, field)


def _wait_for_bytes(proc: subprocess.Popen[str], path: Path, at_least: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return
        try:
            if path.stat().st_size >= at_least:
                return
        except FileNotFoundError:
            pass
        time.sleep(0.002)
    raise AssertionError(f"{path} did not reach {at_least} bytes")


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _resume_logs(stderr: str) -> list[dict]:
    out = []
    for line in stderr.splitlines():
        if line.startswith("{"):
            rec = json.loads(line)
            if rec.get("event") == "resuming":
                out.append(rec)
    return out


def test_five_sigkills_then_finish_equals_uninterrupted_run(workspace: Path) -> None:
    seed = int(os.environ.get("TRACEJUDGE_KILL_SEED", time.time_ns() % 100_000))
    rng = random.Random(seed)
    run_dir = workspace / "runs" / "killed5"
    results = run_dir / "results.jsonl"
    figures = []
    avg_line = 1550  # bytes per result line for these cases, roughly
    lines = 0
    for k in range(5):
        before = _size(results)
        workers = rng.choice([1, 2, 4, 8])
        proc = _start(workspace, "--run-dir", str(run_dir), "--set", f"run.workers={workers}")
        # Kill after a random amount of new work (50–300 results, and at most a share of what is left, so that the
        # results written between the threshold and the kill do not finish the run), at a random instant after that.
        share = (N - lines) // (6 - k)
        _wait_for_bytes(proc, results, before + rng.randint(min(50, share), min(300, share)) * avg_line)
        time.sleep(rng.uniform(0, 0.02))
        proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
        if proc.returncode == 0 and k >= 3:
            # A fast machine wrote the last results between the threshold and the kill: that resume is the final one.
            final: subprocess.CompletedProcess[str] | None = subprocess.CompletedProcess(proc.args, 0, out, err)
            break
        assert proc.returncode == -signal.SIGKILL, f"seed {seed}: segment {k + 1} ended before its kill\n{err}"
        lines = sum(1 for _ in open(results, "rb"))
        logs = _resume_logs(err)
        if k:
            assert logs and logs[0]["rebuilt"] is False, f"seed {seed}: resume fell back to a full rebuild: {logs}"
        figures.append((k + 1, workers, lines, logs[0]["tail_results"] if logs else 0, logs[0]["torn_bytes"] if logs else 0))
    else:
        final = _run(workspace, "--run-dir", str(run_dir), "--set", "run.workers=3")
    assert final is not None
    assert final.returncode == 0, f"seed {seed}: {final.stderr}"
    logs = _resume_logs(final.stderr)
    assert logs[0]["rebuilt"] is False
    print(f"\nkill test seed {seed}: (segment, workers, result lines after kill, results recovered past checkpoint, torn bytes cut)")
    for row in figures:
        print("  ", row)
    m = re.search(r"\((\d+) new results, (\d+) already finished\)", final.stdout)
    assert m is not None and int(m.group(1)) + int(m.group(2)) == N
    print(f"   final segment: {m.group(1)} new, {m.group(2)} already finished; recovered {logs[0]['tail_results']}")
    _assert_same_as_reference(workspace, run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    segs = summary["segments"]
    ended = [s["ended"] for s in segs]
    if not (lines == N and ended == ["killed"] * (len(figures) - 1) + ["finished"]):
        # (Else the last kill landed after its segment had finished and said so: nothing was left to record.)
        assert ended == ["killed"] * len(figures) + ["finished"], f"seed {seed}: {ended}"
    assert sum(s["results"] for s in segs) == N
    assert summary["elapsed_s_total"] == pytest.approx(sum(s["elapsed_s"] or 0 for s in segs), abs=1e-3)


def test_kill_one_second_after_start_loses_nothing(workspace: Path) -> None:
    run_dir = workspace / "runs" / "kill1s"
    results = run_dir / "results.jsonl"
    # 8,000 results, and each segment is killed once it has written some (not after a fixed time, which a faster
    # run outgrew): the kills land mid-run however fast the machine is.
    t = 4
    trials = ["--set", f"run.trials={t}"]
    first = _start(workspace, "--run-dir", str(run_dir), *trials)
    _wait_for_bytes(first, results, 400 * 1550)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=30)
    data = results.read_bytes()
    kept = data[: data.rfind(b"\n") + 1]  # the complete lines the first segment finished
    assert kept.count(b"\n") >= 200
    report = _forkserver.run([str(TJ), "report", str(run_dir)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 130 and "verdict: INTERRUPTED" in report.stdout, report.stdout  # killed: never PASS on part of a run
    (run_dir / "summary.json").unlink()  # (what the killed segment left: `report` wrote one)

    second = _start(workspace, "--run-dir", str(run_dir), *trials)
    _wait_for_bytes(second, results, len(data) + 100 * 1550)
    second.send_signal(signal.SIGKILL)
    second.communicate(timeout=30)
    assert second.returncode == -signal.SIGKILL
    assert results.read_bytes().startswith(kept)

    third = _run(workspace, "--run-dir", str(run_dir), *trials)
    assert third.returncode == 0, third.stderr
    final = results.read_bytes()
    assert final.startswith(kept)
    got = _by_key(_results(run_dir))
    expected = t * N - 3 * (t - 1)  # the three malformed lines give one result each, not one per trial
    assert len(got) == expected
    assert json.loads((run_dir / "summary.json").read_text())["results"] == expected


def test_resume_with_other_concurrency(workspace: Path) -> None:
    run_dir = workspace / "runs" / "workers"
    proc = _start(workspace, "--run-dir", str(run_dir), "--set", "run.workers=8")
    _wait_for_bytes(proc, run_dir / "results.jsonl", 500 * 1550)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    done = _run(workspace, "--run-dir", str(run_dir), "--set", "run.workers=2", "--set", "run.queue_size=4")
    assert done.returncode == 0, done.stderr
    _assert_same_as_reference(workspace, run_dir)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_cleanly_and_prints_the_resume_command(workspace: Path, signum: int) -> None:
    run_dir = workspace / "runs" / f"signal-{signum}"
    n = N  # the whole file: the stop lands with most cases not yet taken, however fast the run goes
    proc = _start(workspace, "--run-dir", str(run_dir), "--set", "run.workers=2", "--set", f"dataset.limit={n}")
    _wait_for_bytes(proc, run_dir / "results.jsonl", 150 * 1550)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    expected = f"tracejudge --log-level info run config.yaml --run-dir {run_dir} --set run.workers=2 --set dataset.limit={n} --no-progress"
    assert f"Resume with:\n  {expected}\n" in err
    written = int(re.search(r"\((\d+) new results, 0 already finished\)", out).group(1))
    assert 0 < written < n
    assert len(_results(run_dir)) == written  # every case taken was finished and flushed
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["complete"] is False and summary["results"] == written
    assert [s["ended"] for s in summary["segments"]] == ["interrupted"]

    argv = shlex.split(expected)
    argv[0] = str(TJ)
    resumed = _forkserver.run(argv, cwd=workspace, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert f"({n - written} new results, {written} already finished)" in resumed.stdout
    _assert_same_as_reference(workspace, run_dir, limit=n)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert [s["ended"] for s in summary["segments"]] == ["interrupted", "finished"]
    assert [s["results"] for s in summary["segments"]] == [written, n - written]


def test_resuming_a_finished_run_changes_nothing(workspace: Path) -> None:
    ref = workspace / "runs" / "reference"
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in ref.iterdir()}
    again = _run(workspace, "--run-dir", "runs/reference")
    assert again.returncode == 0, again.stderr
    assert f"(0 new results, {N} already finished)" in again.stdout
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in ref.iterdir()}
    assert after == before  # not one byte written, not even an identical rewrite
    assert set(before) == {"manifest.json", "results.jsonl", "results.idx", "configs.jsonl", "checkpoint.json", "summary.json", "report.md", "junit.xml", "report.html",
                           "cursor.json", "cursor.ids"}


def test_manifest_mismatch_names_what_changed_and_force_and_fresh(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(CONFIG)
    cases = (workspace / "cases.jsonl").read_text().splitlines(keepends=True)[:300]
    (tmp_path / "cases.jsonl").write_text("".join(cases))
    assert _run(tmp_path).returncode == 0
    results = tmp_path / "runs" / "main" / "results.jsonl"
    snapshot = results.read_bytes()

    changed = _run(tmp_path, "--set", "metrics.0.arguments=subset", "--set", "run.trials=2", "--set", "run.processes=1")
    assert changed.returncode == 2
    assert 'config metrics.0.arguments: "exact" → "subset"' in changed.stderr
    assert "config run.trials: 1 → 2" in changed.stderr
    assert "run.processes" not in changed.stderr  # concurrency never blocks a resume

    extra = json.loads(cases[0])
    extra["id"] = "one-more"
    with open(tmp_path / "cases.jsonl", "a") as fh:
        fh.write(json.dumps(extra) + "\n")
    new_size = (tmp_path / "cases.jsonl").stat().st_size
    grown = _run(tmp_path)
    assert grown.returncode == 2
    assert f"dataset.path: file {tmp_path / 'cases.jsonl'} changed: size " in grown.stderr
    assert f"→ {new_size} bytes" in grown.stderr
    assert "--force" in grown.stderr and "--fresh" in grown.stderr
    assert results.read_bytes() == snapshot  # refused before writing anything

    forced = _run(tmp_path, "--force")
    assert forced.returncode == 0, forced.stderr
    assert "(1 new results, 300 already finished)" in forced.stdout
    assert results.read_bytes().startswith(snapshot)
    assert _run(tmp_path).returncode == 0  # the forced config is now the run's own

    fresh = _run(tmp_path, "--fresh")
    assert fresh.returncode == 0, fresh.stderr
    assert f"fresh run directory: {tmp_path / 'runs' / 'main-2'}" in fresh.stderr
    assert len(_results(tmp_path / "runs" / "main-2")) == 301


def test_stale_lock_is_taken_over(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(CONFIG)
    (tmp_path / "cases.jsonl").write_text("".join((workspace / "cases.jsonl").read_text().splitlines(keepends=True)[:50]))
    dead = _forkserver.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    run_dir = tmp_path / "runs" / "main"
    run_dir.mkdir(parents=True)
    (run_dir / ".lock").write_text(f"{pid}\n")
    proc = _run(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(_results(run_dir)) == 50
    assert not (run_dir / ".lock").exists()


def test_live_lock_refuses_at_once(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(CONFIG)
    (tmp_path / "cases.jsonl").write_text("".join((workspace / "cases.jsonl").read_text().splitlines(keepends=True)[:50]))
    run_dir = tmp_path / "runs" / "main"
    run_dir.mkdir(parents=True)
    holder = _forkserver.popen(
        [sys.executable, "-c", "import sys, time; from tracejudge.engine.store import RunLock; RunLock(sys.argv[1]).acquire(); print('held', flush=True); time.sleep(60)", str(run_dir)],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        t0 = time.monotonic()
        proc = _run(tmp_path)
        took = time.monotonic() - t0
        assert proc.returncode == 2
        assert f"run directory is in use by process {holder.pid}" in proc.stderr
        assert took < 10  # refused at once, not after waiting (process start-up included)
        assert not (run_dir / "results.jsonl").exists()
    finally:
        holder.kill()
        holder.wait()
    assert _run(tmp_path).returncode == 0  # the holder's death released the lock


def test_torn_last_line_is_discarded(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(CONFIG)
    (tmp_path / "cases.jsonl").write_text("".join((workspace / "cases.jsonl").read_text().splitlines(keepends=True)[:200]))
    assert _run(tmp_path).returncode == 0
    run_dir = tmp_path / "runs" / "main"
    results = run_dir / "results.jsonl"
    full = results.read_bytes()
    summary = (run_dir / "summary.json").read_bytes()

    # A crash in the middle of writing a group after the last checkpoint.
    with open(results, "ab") as fh:
        fh.write(b'{"case_id":"0-0-r0","trial":0,"status":"o')
    again = _run(tmp_path)
    assert again.returncode == 0, again.stderr
    assert results.read_bytes() == full
    assert _resume_logs(again.stderr)[0]["torn_bytes"] == 41
    assert (run_dir / "summary.json").read_bytes() == summary

    # A torn line inside what the checkpoint covered (the checkpoint no longer matches):
    # the index is rebuilt from results.jsonl and only the lost case is redone.
    results.write_bytes(full[:-300])
    lost = json.loads(full[full.rfind(b"\n", 0, len(full) - 1) + 1 :])
    again = _run(tmp_path)
    assert again.returncode == 0, again.stderr
    assert _resume_logs(again.stderr)[0]["rebuilt"] is True
    assert "(1 new results, 199 already finished)" in again.stdout
    redone = _results(run_dir)[-1]
    assert (redone["case_id"], redone["scores"]) == (lost["case_id"], lost["scores"])
