"""`tracejudge run` / `extract` as a user runs them: real processes, real files, real signals."""

from __future__ import annotations

import json
import re
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
import _forkserver

REPO = Path(__file__).resolve().parent.parent


def cli(*args: str, cwd: Path, **kw) -> subprocess.CompletedProcess:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], capture_output=True, text=True, cwd=cwd, **kw)


def test_demo_from_another_directory_scores_all_200_runs(tmp_path):
    proc = cli("run", str(REPO / "configs" / "demo.yaml"), "--run-dir", str(tmp_path / "demo"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "200 results: ok 200" in proc.stdout and "writes_exact" in proc.stdout
    lines = (tmp_path / "demo" / "results.jsonl").read_text().splitlines()
    assert len(lines) == 200
    first = json.loads(lines[0])
    assert set(first) == {"case_id", "trial", "status", "tags", "metadata", "scores", "error", "duration_s"}
    assert first["metadata"]["reward"] in (0.0, 1.0) and set(first["scores"]) == {"writes_exact", "TrajectoryMatch", "ToolCorrectness", "TaskCompletion", "ToolCallNecessity"}
    assert first["scores"]["TaskCompletion"]["judge"]["model"] == "gpt-4o-mini"
    manifest = json.loads((tmp_path / "demo" / "manifest.json").read_text())
    assert {"config_hash", "dataset_fingerprint", "tracejudge_version", "config"} <= set(manifest)
    summary = json.loads((tmp_path / "demo" / "summary.json").read_text())
    assert summary["metrics"]["writes_exact"]["scored"] == 200 and summary["complete"] is True

    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (tmp_path / "demo").iterdir()}
    again = cli("run", str(REPO / "configs" / "demo.yaml"), "--run-dir", str(tmp_path / "demo"), cwd=tmp_path)
    assert again.returncode == 0 and "0 new results, 200 already finished" in again.stdout
    # Resuming a finished run, judge metrics included, writes nothing at all.
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in (tmp_path / "demo").iterdir()} == before
    assert len((tmp_path / "demo" / "results.jsonl").read_text().splitlines()) == 200


def test_extract_writes_native_cases_that_score_the_same(tmp_path):
    out = tmp_path / "cases.jsonl"
    proc = cli("extract", str(REPO / "configs" / "demo.yaml"), "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "wrote 200 cases" in proc.stderr
    cfg = tmp_path / "native.yaml"
    demo = (REPO / "configs" / "demo.yaml").read_text()
    metrics = demo[demo.index("metrics:") : demo.index("limits:")]
    cfg.write_text(f"dataset: {{path: cases.jsonl, format: native}}\n{metrics}run: {{dir: native-run}}\n")
    assert cli("run", str(cfg), cwd=tmp_path).returncode == 0
    assert cli("run", str(REPO / "configs" / "demo.yaml"), "--run-dir", str(tmp_path / "tau-run"), cwd=tmp_path).returncode == 0

    def scores(run: str) -> dict:
        rows = [json.loads(x) for x in (tmp_path / run / "results.jsonl").read_text().splitlines()]
        # A judge verdict's provenance (cache hit, latency) differs between the runs; the verdict may not.
        return {r["case_id"]: {k: {**v, "judge": None} for k, v in r["scores"].items()} for r in rows}

    assert scores("native-run") == scores("tau-run")


def test_sigint_stops_cleanly_and_the_same_command_resumes(tmp_path):
    # 5,000 cases made from one real run: the run lasts seconds, long enough to interrupt after its first
    # few dozen results (the signal, not the size, is the point).
    cases = tmp_path / "cases.jsonl"
    assert cli("extract", str(REPO / "configs" / "demo.yaml"), "--set", "dataset.limit=1", "-o", str(cases), cwd=tmp_path).returncode == 0
    one = json.loads(cases.read_text())
    with open(cases, "w") as fh:
        for i in range(5_000):
            one["id"] = f"c{i}"
            fh.write(json.dumps(one) + "\n")
    cfg = tmp_path / "big.yaml"
    cfg.write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}, {type: TrajectoryMatch}]\nrun: {dir: run}\n")
    proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "run", str(cfg)], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = tmp_path / "run" / "results.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not results.exists() or results.stat().st_size < 20_000):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Resume with:" in err and f"run {cfg}" in err
    assert f"verdict: INTERRUPTED (resume with: tracejudge run {cfg})" in out
    lines = results.read_text().splitlines()
    assert 0 < len(lines) < 5_000
    assert all(json.loads(x)["status"] == "ok" for x in lines)  # every written line is whole
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["complete"] is False and summary["results"] == len(lines)
    assert not (tmp_path / "run" / ".lock").exists()

    done = cli("run", str(cfg), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ids = [json.loads(x)["case_id"] for x in results.read_text().splitlines()]
    assert len(ids) == 5_000 and len(set(ids)) == 5_000
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["complete"] is True


def test_second_process_on_the_same_run_dir_is_refused(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    holder = _forkserver.popen(
        [sys.executable, "-c", "import sys, time; from tracejudge.engine.store import RunLock; from pathlib import Path; "
         "RunLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(60)", str(run_dir)],
        stdout=subprocess.PIPE, text=True, cwd=REPO,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        proc = cli("run", str(REPO / "configs" / "demo.yaml"), "--run-dir", str(run_dir), cwd=tmp_path)
        assert proc.returncode == 2 and f"in use by process {holder.pid}" in proc.stderr
    finally:
        holder.kill()
        holder.wait()
    # The holder is dead now: the kernel released its lock, so the run goes ahead.
    proc = cli("run", str(REPO / "configs" / "demo.yaml"), "--run-dir", str(run_dir), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert os.path.exists(run_dir / "results.jsonl")


def test_a_directory_dataset_runs(tmp_path, data_dir):
    cfg = tmp_path / "otel.yaml"
    cfg.write_text(
        f"dataset: {{path: {data_dir / 'otel_genai'}, format: otel, options: {{exclude: ['*.truth.json']}}}}\n"
        "metrics: [{type: MaxToolCalls, max_calls: 20}]\nrun: {dir: run}\n"
    )
    proc = cli("run", str(cfg), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len((tmp_path / "run" / "results.jsonl").read_text().splitlines()) == 7
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["dataset"]["path"]["sha256"] and manifest["dataset"]["path"]["size"] > 0


def test_extract_reports_a_duplicate_id_once_and_writes_it_once(tmp_path):
    case = {"id": "dup", "input": "q", "trace": {"steps": [], "output": "a"}}
    data = tmp_path / "in.jsonl"
    data.write_text("\n".join(json.dumps(c) for c in (case, {**case, "id": "other"}, {**case, "input": "second"})) + "\n")
    (tmp_path / "c.yaml").write_text("dataset: {path: in.jsonl, format: native}\nmetrics: [{type: ToolCalls}]\nrun: {dir: run}\n")
    out = tmp_path / "cases.jsonl"
    proc = cli("extract", "c.yaml", "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # a record was invalid: extract says so by its status
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["dup", "other"]
    said = " ".join(proc.stderr.split())  # the terminal wraps long lines
    assert said.count("duplicate case id 'dup'") == 1
    assert re.search(r"first at \S*in\.jsonl:1, again at \S*in\.jsonl:3", said), said


def _one_case(tmp_path):
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "trace": {"steps": [], "output": "done"}}) + "\n")


def _one_case_run(tmp_path):
    """`c.yaml` in `tmp_path`: one case that passes its one check, into `run/`."""
    _one_case(tmp_path)
    (tmp_path / "c.yaml").write_text("dataset: {path: cases.jsonl, format: native}\nmetrics:\n  - {type: MaxToolCalls, max_calls: 5}\nrun: {dir: run}\n")


def _python(tmp_path, at_exit, code, *args, env=None):
    """`code` run by a fresh python in `tmp_path` (`args` its command line), after an atexit handler that writes the
    f-string `at_exit` to stderr; `gc`, `sys`, `threading` and `time` are imported for it."""
    prelude = f"import atexit, gc, sys, threading, time\natexit.register(lambda: sys.stderr.write(f{at_exit!r} + '\\n'))\n"
    return _forkserver.run([sys.executable, "-c", prelude + code, *args], capture_output=True, text=True, cwd=tmp_path,
                          timeout=300, env=env)


def test_what_a_command_leaves_alive_at_exit_is_not_collected_again(tmp_path):
    # The interpreter's last collections would traverse every module and object the command left alive (tens of ms
    # of a short command): the CLI freezes them first. The exit status and the output are the command's own.
    _one_case_run(tmp_path)
    done = _python(tmp_path, "frozen at exit: {gc.get_freeze_count() > 0}",
                   "sys.argv = ['tracejudge', 'run', 'c.yaml', '--no-progress']\n"
                   "from tracejudge.entrypoints.cli import console_main\n"
                   "console_main()\n")
    assert done.returncode == 0 and "verdict: PASS" in done.stdout, done.stderr[-2000:]
    assert "frozen at exit: True" in done.stderr


def test_the_command_ends_without_the_interpreters_teardown_yet_runs_its_exit_handlers_once(tmp_path):
    # Freeing every object still alive one by one is skipped (the OS takes the memory back), not what the interpreter
    # does before it: exit handlers run once each, the output is whole, the status is the command's own (1: the gate
    # failed), and what the command printed last is flushed before the process ends.
    _one_case(tmp_path)
    (tmp_path / "c.yaml").write_text("dataset: {path: cases.jsonl, format: native}\n"
                                     "metrics:\n  - {type: Contains, value: absent}\nrun: {dir: run}\n"
                                     "assertions:\n  metrics:\n    Contains: {min_mean: 1}\n")
    done = _python(tmp_path, "handler ran",
                   "atexit.register(lambda: print('printed by a handler', end=''))\n"
                   "sys.argv = ['tracejudge', 'run', 'c.yaml', '--no-progress']\n"
                   "from tracejudge.entrypoints.launch import console_main\n"
                   "console_main()\n")
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "verdict: FAIL" in done.stdout and done.stdout.endswith("printed by a handler")
    assert done.stderr.count("handler ran") == 1


def test_the_collector_paused_for_start_up_runs_again_during_a_run_and_other_commands(tmp_path):
    # The command line starts with the cyclic collector off (start-up's objects all live to the end); a metric, an
    # agent or a report must still run with it on, or a long run of code that makes cycles would only grow.
    (tmp_path / "probe.py").write_text(
        "import gc\n"
        "import tracejudge\n"
        "from tracejudge.core.records import Score\n"
        "@tracejudge.metric\n"
        "def collector_on(case, trace):\n"
        "    return Score(value=1.0 if gc.isenabled() else 0.0, reason=f'collector on: {gc.isenabled()}')\n")
    _one_case(tmp_path)
    (tmp_path / "c.yaml").write_text("dataset: {path: cases.jsonl, format: native}\n"
                                     "metrics:\n  - {type: 'probe:collector_on', name: collector}\nrun: {dir: run, processes: 1}\n")
    launch = ("sys.argv = ['tracejudge', *sys.argv[1:]]\n"
              "from tracejudge.entrypoints.launch import console_main\n"
              "console_main()\n")
    done = _python(tmp_path, "on after the command: {gc.isenabled()}", launch, "run", "c.yaml", "--no-progress",
                   env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads((tmp_path / "run" / "results.jsonl").read_text().splitlines()[0])
    assert result["scores"]["collector"]["reason"] == "collector on: True"
    report = _python(tmp_path, "on after the command: {gc.isenabled()}", launch, "report", "run")
    assert report.returncode == 0, report.stderr[-2000:]
    assert "on after the command: True" in report.stderr


def test_a_thread_ending_just_after_the_command_does_not_skip_exit_handlers(tmp_path):
    # An event loop's idle worker thread still ending as the command returned sent it out through os._exit (kept for
    # a python target's thread that ignores its timeout), and atexit handlers, a coverage tool's among them, never ran.
    _one_case_run(tmp_path)
    done = _python(tmp_path, "exit handlers ran",
                   "from tracejudge.entrypoints import cli\n"
                   "real = cli.main\n"
                   "def main():\n"
                   "    code = real()\n"
                   "    threading.Thread(target=time.sleep, args=(0.05,)).start()  # still ending as the command returns\n"
                   "    return code\n"
                   "cli.main = main\n"
                   "sys.argv = ['tracejudge', 'run', 'c.yaml', '--no-progress']\n"
                   "cli.console_main()\n")
    assert done.returncode == 0 and "verdict: PASS" in done.stdout, done.stderr[-2000:]
    assert "exit handlers ran" in done.stderr
