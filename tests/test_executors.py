"""Executors: worker processes give the in-process results; stops cut through stuck metrics; long traces keep the loop free."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest
import tracejudge
from tracejudge import Case, Trace
from tracejudge.core.config import load_config
from tracejudge.engine import runner
from tracejudge.engine.executors import CpuJob, open_executor
from tracejudge.engine.executors import processes as processes_mod
from tracejudge.engine.executors.inprocess import InProcessExecutor
from tracejudge.engine.executors.processes import ProcessExecutor
import _forkserver

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "configs" / "demo.yaml"
TRACEJUDGE = Path(sys.executable).with_name("tracejudge")


def _results(run_dir: Path) -> dict[tuple[str, int], dict]:
    """Results by (case, trial), with the timings (duration, judge latency) taken out."""
    out = {}
    for line in (run_dir / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        r.pop("duration_s", None)
        for score in r["scores"].values():
            if score.get("judge"):
                score["judge"].pop("latency_s", None)
                # How much of a prompt the provider's prefix cache serves depends on which identical
                # prompt (another trial's, another case's) reached it first: an order, not a result.
                score["judge"].pop("cached_input_tokens", None)
                score["judge"].pop("cost_usd", None)
        out[(r["case_id"], r["trial"])] = r
    return out


def _rounded(value):
    # The judge stage finishes cases in any order, under either executor: means summed in another
    # order differ in the last bits, and the breakdowns' bootstrap intervals resample in arrival order.
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items() if k != "ci95"}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def test_two_worker_processes_give_the_single_process_results(tmp_path, monkeypatch):
    # Every chunk goes to a worker (no in-process start), so the comparison is processes vs. loop.
    monkeypatch.setattr(processes_mod, "INLINE_RECORDS", 0)
    # 140 of the demo's 200 traces, 2 trials each: still more than one chunk of records per worker (64 or 128 a trip).
    summaries = {}
    for n in (1, 2):
        cfg = load_config(DEMO, [f"run.dir={tmp_path / f'p{n}'}", f"run.processes={n}", "cache.enabled=false", "run.trials=2", "dataset.limit=140",
                                 "limits.rpm=1000000", "limits.tpm=1000000000", "budget.max_judge_tokens=null", "budget.max_cost_usd=null"])
        cfg.metrics = [m for m in cfg.metrics if m["type"] != "ToolCallNecessity"]
        out = anyio.run(runner.run, cfg)
        assert out.new_results == 280 and not out.interrupted
        summaries[n] = _rounded({k: out.summary[k] for k in ("results", "status", "trials", "metrics", "pass_at_k", "breakdowns")})
    one, two = _results(tmp_path / "p1"), _results(tmp_path / "p2")
    assert len(one) == 280 and one == two
    assert summaries[1] == summaries[2]


def _write_stuck_metric(folder: Path) -> None:
    (folder / "stuckmetric.py").write_text(textwrap.dedent("""
        import os, re
        import tracejudge

        @tracejudge.metric
        def stuck(case, trace):
            # `re` backtracks in C holding the GIL: only killing the process stops it.
            if os.environ.get("STUCK_METRIC") == "1":
                re.search(r"^(a+)+$", "a" * 64 + "b")
            return True
    """))


def _native(path: Path, n: int, output: str) -> None:
    with open(path, "w") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"c{i}", "trace": {"steps": [{"tool_calls": [{"name": "t", "arguments": {}}]}], "output": output}}) + "\n")


def _sigterm_after(cmd: list[str], cwd: Path, env: dict[str, str], ready: Path | None, settle_s: float) -> tuple[subprocess.Popen, float]:
    proc = _forkserver.popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while ready is not None and not ready.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(settle_s)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGTERM)
    t0 = time.monotonic()
    try:
        # The run stops within a second or two; the bound holds on a machine 10x slower than that.
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("SIGTERM did not stop the run within 30 s")
    return proc, time.monotonic() - t0


def test_sigterm_stops_a_catastrophic_regex_within_seconds_and_resume_finishes(tmp_path):
    # Each case burns its full 1 s regex time limit, one after another (a dataset this small is scored in-process): the
    # stop 2 s after the run starts lands with cases left to do.
    _native(tmp_path / "cases.jsonl", 5, "a" * 200_000 + "b")
    (tmp_path / "run.yaml").write_text(
        "dataset: {path: cases.jsonl}\nmetrics:\n  - {type: Regex, pattern: '^(a+)+$'}\nrun: {dir: out, processes: 2}\n"
    )
    cmd = [str(TRACEJUDGE), "run", "run.yaml", "--no-progress"]
    proc, _ = _sigterm_after(cmd, tmp_path, dict(os.environ), tmp_path / "out" / "manifest.json", 2.0)
    assert proc.returncode == 130, proc.communicate()
    done_before = len(_results(tmp_path / "out"))
    assert done_before < 5
    again = _forkserver.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    results = _results(tmp_path / "out")
    assert len(results) == 5, again.stderr
    score = results[("c0", 0)]["scores"]["Regex"]
    assert score["value"] is None and score["reason"].startswith("regex_timeout:")


def test_sigterm_kills_a_worker_stuck_in_a_c_call_and_resume_redoes_its_cases(tmp_path):
    _write_stuck_metric(tmp_path)
    _native(tmp_path / "cases.jsonl", 6, "done")
    (tmp_path / "run.yaml").write_text("dataset: {path: cases.jsonl}\nmetrics:\n  - {type: 'stuckmetric:stuck'}\nrun: {dir: out, processes: 2}\n")
    cmd = [str(TRACEJUDGE), "run", "run.yaml", "--no-progress"]
    env = {**os.environ, "STUCK_METRIC": "1"}
    # The run has started once its manifest is written; give the workers a moment to get stuck.
    proc, _ = _sigterm_after(cmd, tmp_path, env, tmp_path / "out" / "manifest.json", 3.0)
    assert proc.returncode == 130, proc.communicate()
    results = tmp_path / "out" / "results.jsonl"
    assert not results.exists() or results.read_text() == ""  # the stuck cases were not written
    env["STUCK_METRIC"] = "0"
    again = _forkserver.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    got = _results(tmp_path / "out")
    assert len(got) == 6 and all(r["scores"]["stuck"]["value"] == 1.0 for r in got.values())


def test_a_2m_token_trace_is_truncated_off_the_loop_while_other_cases_flow(tmp_path):
    rng = random.Random(0)
    words = [f"w{i}x" for i in range(5000)]

    def text(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    huge = {"id": "huge", "input": "find it", "trace": {"steps": [
        {"thought": text(200), "tool_calls": [{"name": "lookup", "arguments": {"q": f"item {i}"}, "result": text(250)}]} for i in range(1200)
    ], "output": "done"}}
    with open(tmp_path / "cases.jsonl", "w") as fh:
        fh.write(json.dumps(huge) + "\n")
        for i in range(30):
            fh.write(json.dumps({"id": f"small{i}", "input": "hi", "trace": {"steps": [{"thought": "ok"}], "output": "hello"}}) + "\n")
    (tmp_path / "run.yaml").write_text(
        "dataset: {path: cases.jsonl}\nmetrics:\n  - {type: TaskCompletion}\njudge: {provider: simulator, too_long: truncate}\n"
        "cache: {enabled: false}\nrun: {dir: out}\n"
    )
    out = anyio.run(runner.run, load_config(tmp_path / "run.yaml"))
    assert out.new_results == 31
    lines = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    order = [r["case_id"] for r in lines]
    big = next(r for r in lines if r["case_id"] == "huge")
    assert big["scores"]["TaskCompletion"]["value"] is not None
    assert "middle steps left out to fit the judge's context" in big["scores"]["TaskCompletion"]["reason"]
    assert out.summary["judge"]["truncated_prompts"] == 1
    # The huge case was read first, yet the small ones were judged while it was being fitted.
    assert order.index("huge") > 0


@tracejudge.metric
def module_level_metric(case: Case, trace: Trace) -> bool:
    return True


def test_jobs_that_cannot_travel_run_in_process_and_say_why():
    @tracejudge.metric
    def local_metric(case: Case, trace: Trace) -> bool:
        return True

    cfg = load_config(DEMO, ["run.processes=2"])
    local = CpuJob(format_name="native", dataset=cfg.dataset, metric_specs=None, metrics=[local_metric()], merge=runner._merge_case_metrics,
                   score=True, keep_case=False)
    assert "define it at module level" in (local.portable() or "")
    assert isinstance(open_executor(cfg, local), InProcessExecutor)
    fine = CpuJob(format_name="native", dataset=cfg.dataset, metric_specs=None, metrics=[module_level_metric()], merge=runner._merge_case_metrics,
                  score=True, keep_case=False)
    assert fine.portable() is None and isinstance(open_executor(cfg, fine), ProcessExecutor)
    one = load_config(DEMO, ["run.processes=1"])
    assert isinstance(open_executor(one, fine), InProcessExecutor)


def test_run_workers_is_deprecated_and_a_run_that_sets_it_says_what_to_set_instead(tmp_path):
    from tracejudge.core.config import WORKERS_DEPRECATED

    cases = tmp_path / "cases.jsonl"
    _native(cases, 3, "done")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {cases}, format: native}}\nmetrics: [{{type: Contains, value: done}}]\nrun: {{dir: {tmp_path / 'run'}}}\n")
    plain = _forkserver.run([str(TRACEJUDGE), "run", str(cfg)], capture_output=True, text=True, cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    assert "run.workers" not in plain.stderr
    old = _forkserver.run([str(TRACEJUDGE), "run", str(cfg), "--set", "run.workers=8", "--set", f"run.dir={tmp_path / 'run2'}"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert old.returncode == 0, old.stderr  # accepted, inert
    assert WORKERS_DEPRECATED in old.stderr and "warning" in old.stderr
    assert len((tmp_path / "run2" / "results.jsonl").read_text().splitlines()) == 3
    assert "run.processes" in WORKERS_DEPRECATED and "target.concurrency" in WORKERS_DEPRECATED


_SCRIPT_HEAD = """\
import anyio
from tracejudge.core.config import load_config
from tracejudge.engine.runner import run
"""


def _script_run(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    # A Regex metric goes to worker processes from the first record, and workers import the parent's script.
    _native(tmp_path / "cases.jsonl", 6, "done")
    (tmp_path / "run.yaml").write_text("dataset: {path: cases.jsonl}\nmetrics:\n  - {type: Regex, pattern: 'do.e'}\nrun: {dir: out, processes: 2}\n")
    (tmp_path / "script.py").write_text(_SCRIPT_HEAD + textwrap.dedent(body))
    return _forkserver.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_a_script_that_starts_a_run_at_its_top_level_is_told_to_guard_it(tmp_path):
    proc = _script_run(tmp_path, """\
        from tracejudge.core.errors import UnguardedScript
        try:
            anyio.run(run, load_config("run.yaml"))
        except UnguardedScript as exc:  # the error itself, not nested in exception groups
            if __name__ == "__mp_main__":
                raise  # in the worker, fail as any unguarded script would
            print("caught:", exc)
        """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("caught: a tracejudge run was started while a worker process imported your script")
    assert 'put the call under `if __name__ == "__main__":`' in proc.stdout
    assert all(r["error"]["kind"] != "worker_error" for r in _results(tmp_path / "out").values() if r.get("error"))


def test_workers_that_cannot_import_the_script_leave_the_run_in_process(tmp_path):
    proc = _script_run(tmp_path, """\
        if __name__ == "__mp_main__":
            raise RuntimeError("this script only runs as the parent")
        if __name__ == "__main__":
            print(anyio.run(run, load_config("run.yaml")).new_results)
        """)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["6"]
    assert "worker processes cannot start" in proc.stderr and "this script only runs as the parent" in proc.stderr
    assert {r["status"] for r in _results(tmp_path / "out").values()} == {"ok"}


def test_a_script_calling_the_command_line_at_its_top_level_is_told_to_guard_it(tmp_path):
    # Each spawned worker imports the script again; `main` there used to meet the worker's own argv and exit
    # in argparse, so the run went in-process with a warning about "SystemExit: 2" and never the advice.
    proc = _script_run(tmp_path, """\
        from tracejudge.entrypoints.cli import main
        raise SystemExit(main(["run", "run.yaml", "--no-progress"]))
        """)
    assert proc.returncode != 0
    assert 'put the call under `if __name__ == "__main__":`' in proc.stdout + proc.stderr, proc.stderr[-2000:]
    assert "SystemExit" not in proc.stderr


def test_a_worker_death_with_no_word_of_how_still_says_it_died():
    # A stand-in killed while it started ends before anyio reads its exit status: the exception carries no text, and
    # the warning and the results said `error: ""`.
    import anyio
    from tracejudge.engine.executors.processes import _died

    assert _died(anyio.BrokenWorkerProcess()) == "the worker process ended before it said how (killed or crashed while starting)"
    assert _died(anyio.BrokenWorkerProcess("killed by signal SIGKILL (9)")) == "killed by signal SIGKILL (9)"
