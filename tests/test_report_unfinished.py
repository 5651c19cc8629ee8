"""`tracejudge report` (and `compare`, `export`, `view`) on a run that is not finished: one another `tracejudge run`
still writes, and one that was killed.

Real processes only: `tracejudge run` in a subprocess with a python target that
holds its third case until the test creates a file, `tracejudge report` in
another, the run killed with SIGKILL.
"""

from __future__ import annotations

import csv
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _runs import sigkill_when
import _forkserver

AGENT = '''
import os, time

HELD = "c2"

def respond(request):
    if request.case_id == HELD:  # held until the test lets it go (or the run is killed)
        open(os.path.join(os.path.dirname(__file__), "holding"), "w").close()
        while not os.path.exists(os.path.join(os.path.dirname(__file__), "release")):
            time.sleep(0.01)
    return {"output": "ok", "trace": {"steps": [{"tool_calls": [{"name": "a", "arguments": {}}]}], "output": "ok"}}
'''


def _tj(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _start_held(tmp_path: Path, held: str) -> subprocess.Popen[str]:
    """`tracejudge run c.yaml` over cases c0..c3 in `tmp_path`, its agent holding case `held` until `release` exists."""
    (tmp_path / "held_agent.py").write_text(AGENT.replace('HELD = "c2"', f"HELD = {held!r}"))
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "q", "expected_tool_calls": [{"name": "a"}]}) + "\n"
                                                  for i in range(4)))
    (tmp_path / "c.yaml").write_text("dataset: {path: cases.jsonl, format: native}\n"
                                     "target: {kind: python, callable: held_agent:respond, concurrency: 1}\n"
                                     "metrics: [{type: ToolCalls}]\nrun: {dir: run, flush_every: 1}\n")
    return _forkserver.popen([sys.executable, "-m", "tracejudge", "run", "c.yaml", "--no-progress"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def held_run(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """A `tracejudge run` with two results written and its third case held by the agent; yields (process, run dir)."""
    proc = _start_held(tmp_path, "c2")
    results = tmp_path / "run" / "results.jsonl"
    deadline = time.monotonic() + 60
    while not (results.exists() and len(results.read_text().splitlines()) >= 2):
        assert proc.poll() is None and time.monotonic() < deadline, "the run did not write its first two results"
        time.sleep(0.02)
    try:
        yield proc, tmp_path / "run"
    finally:
        (tmp_path / "release").touch()
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=60)


def test_a_run_still_being_written_is_reported_in_progress_not_interrupted(held_run: tuple[subprocess.Popen[str], Path]) -> None:
    proc, run_dir = held_run
    rep = _tj("report", str(run_dir), cwd=run_dir.parent)
    assert rep.returncode == 75, rep.stdout + rep.stderr
    out = " ".join(rep.stdout.split())
    assert "verdict: IN PROGRESS" in out and "INTERRUPTED" not in out and "interrupted" not in out
    assert f"still in progress (process {proc.pid} holds it)" in out
    assert "2 results: ok 2" in out  # what is there so far
    # Nothing is written into a run its owner is still writing: its summary and reports come at its end.
    assert not (run_dir / "summary.json").exists() and not (run_dir / "report.md").exists()

    (run_dir.parent / "release").touch()
    assert proc.wait(timeout=60) == 0
    done = _tj("report", str(run_dir), cwd=run_dir.parent)
    assert done.returncode == 0 and "verdict: PASS" in done.stdout and "4 results: ok 4" in done.stdout


def test_a_run_in_progress_without_a_result_yet_says_so(tmp_path: Path) -> None:
    from tracejudge.engine.run_lock import RunLock

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with RunLock(run_dir):  # this process stands for a run that has not written its first result
        rep = _tj("report", str(run_dir), cwd=tmp_path)
    assert rep.returncode == 75, rep.stdout + rep.stderr
    assert f"the run is in progress (process {os.getpid()} holds it) and has no result yet" in " ".join(rep.stderr.split())


def test_a_killed_run_is_reported_interrupted_with_the_command_that_resumes_it(held_run: tuple[subprocess.Popen[str], Path],
                                                                              tmp_path: Path) -> None:
    proc, run_dir = held_run
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    here = _tj("report", str(run_dir), cwd=run_dir.parent)
    assert here.returncode == 130, here.stdout + here.stderr
    assert here.stdout.splitlines()[-1] == "verdict: INTERRUPTED (resume with: tracejudge run c.yaml --no-progress)"
    # From another folder the command says where it is meant to run.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    there = _tj("report", str(run_dir), cwd=elsewhere)
    assert there.returncode == 130
    assert " ".join(there.stdout.split()).endswith(f"(resume with: cd {run_dir.parent} && tracejudge run c.yaml --no-progress)")
    # The command given resumes the run.
    (run_dir.parent / "release").touch()
    resumed = _tj("run", "c.yaml", "--no-progress", cwd=run_dir.parent)
    assert resumed.returncode == 0 and "already finished" in resumed.stdout, resumed.stdout + resumed.stderr


def test_the_summary_report_writes_for_a_killed_run_has_its_segments_as_the_resume_records_them(
        held_run: tuple[subprocess.Popen[str], Path]) -> None:
    proc, run_dir = held_run
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert _tj("report", str(run_dir), cwd=run_dir.parent).returncode == 130
    reported = json.loads((run_dir / "summary.json").read_text())
    (killed,) = reported["segments"]
    assert (killed["segment"], killed["results"], killed["ended"]) == (1, 2, "killed") and "command" not in killed
    assert reported["elapsed_s_total"] == killed["elapsed_s"] and "killed" in reported["elapsed_measured"]
    # How it ended, as a resume says it before its first new result: killed, no cause recorded, and how to go on.
    assert reported["complete"] is False and reported["stopped"] == {
        "how": "killed", "reason": "the run's last segment did not finish and wrote no reports: no process holds the run directory, "
                                   "so it was killed (SIGKILL, a CI timeout, os._exit); resume with: tracejudge run c.yaml --no-progress"}

    (run_dir.parent / "release").touch()
    assert _tj("run", "c.yaml", "--no-progress", cwd=run_dir.parent).returncode == 0
    resumed = json.loads((run_dir / "summary.json").read_text())
    # The sections of a finished run's summary, in its order (`stopped` no more), and the killed segment's record as the
    # resume keeps it.
    assert [k for k in reported if k != "stopped"] == list(resumed) and "stopped" not in resumed
    assert resumed["segments"][0] == killed
    assert {k: reported[k] for k in ("tracejudge_version", "config_hash")} == {k: resumed[k] for k in ("tracejudge_version", "config_hash")}


def test_a_run_killed_before_its_first_result_is_reported_interrupted_not_failed(tmp_path: Path) -> None:
    # A CI timeout often kills a slow agent's run before it has written anything: that is not "the agent regressed".
    proc = _start_held(tmp_path, "c0")
    sigkill_when(proc, (tmp_path / "holding").exists, "the agent was not called", timeout_s=60)
    run_dir = tmp_path / "run"
    assert (run_dir / "results.jsonl").read_text() == ""
    rep = _tj("report", "run", cwd=tmp_path)
    assert rep.returncode == 130, rep.stdout + rep.stderr
    assert "the run has no results: it was interrupted before its first one" in " ".join(rep.stdout.split())
    assert rep.stdout.splitlines()[-1] == "verdict: INTERRUPTED (resume with: tracejudge run c.yaml --no-progress)"
    reported = json.loads((run_dir / "summary.json").read_text())
    assert reported["verdict"]["verdict"] == "INTERRUPTED" and reported["stopped"]["how"] == "killed"
    # The command given resumes the run, which then finishes.
    (tmp_path / "release").touch()
    resumed = _tj("run", "c.yaml", "--no-progress", cwd=tmp_path)
    assert resumed.returncode == 0 and "verdict: PASS" in resumed.stdout, resumed.stdout + resumed.stderr
    assert _tj("report", "run", cwd=tmp_path).returncode == 0


def test_a_copy_of_one_run_says_it_copied_the_run(held_run: tuple[subprocess.Popen[str], Path], tmp_path: Path) -> None:
    proc, run_dir = held_run
    (tmp_path / "release").touch()
    assert proc.wait(timeout=60) == 0
    rep = _tj("report", "run", "--out", "copy", cwd=tmp_path)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    # One run copied, not shards merged.
    assert rep.stderr.splitlines() == ["copied the results of run into copy"], rep.stderr
    assert (tmp_path / "copy" / "report.md").exists()


def test_a_copy_of_a_killed_run_gives_the_command_that_resumes_the_run(held_run: tuple[subprocess.Popen[str], Path],
                                                                       tmp_path: Path) -> None:
    proc, run_dir = held_run
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    rep = _tj("report", "run", "--out", "copy", cwd=tmp_path)
    assert rep.returncode == 130, rep.stdout + rep.stderr
    # The copy resumes nothing: the command is the one that resumes the run it was made from.
    assert rep.stdout.splitlines()[-1] == "verdict: INTERRUPTED (resume with: tracejudge run c.yaml --no-progress)"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    there = _tj("report", str(run_dir), "--out", str(tmp_path / "copy2"), cwd=elsewhere)
    assert there.returncode == 130, there.stdout + there.stderr
    assert " ".join(there.stdout.split()).endswith(f"(resume with: cd {tmp_path} && tracejudge run c.yaml --no-progress)")


def _view_stderr(run_dir: Path) -> str:
    """The stderr of `tracejudge view RUN`, started until it serves, then stopped."""
    view = _forkserver.popen([sys.executable, "-m", "tracejudge", "view", str(run_dir), "--port", "0"], cwd=run_dir.parent,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert view.stdout is not None and view.stdout.readline().startswith("tracejudge view: http://127.0.0.1:")
        view.send_signal(signal.SIGINT)
        _, err = view.communicate(timeout=60)
    finally:
        if view.poll() is None:
            view.kill()
            view.communicate(timeout=60)
    return err


def test_compare_export_and_view_of_a_run_still_being_written_say_so_on_stderr(held_run: tuple[subprocess.Popen[str], Path],
                                                                              tmp_path: Path) -> None:
    proc, run_dir = held_run
    shutil.copytree(run_dir, tmp_path / "before", ignore=shutil.ignore_patterns(".lock"))  # a finished-looking run to compare with
    note = f"warning: run: the run is still in progress (process {proc.pid} holds it): "

    cmp = _tj("compare", "before", "run", cwd=tmp_path)
    assert cmp.returncode == 0, cmp.stdout + cmp.stderr
    assert note + "the comparison is of its results so far; compare again when it has finished" in cmp.stderr.splitlines(), cmp.stderr
    as_json = _tj("compare", "before", "run", "--json", cwd=tmp_path)
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["results_b"] == 2  # stdout stays JSON alone
    assert note + "the comparison is of its results so far; compare again when it has finished" in as_json.stderr.splitlines()

    exp = _tj("export", "run", "--to", "csv", "rows.csv", cwd=tmp_path)
    assert exp.returncode == 0, exp.stdout + exp.stderr
    assert note + "what is exported is its results so far; export again when it has finished" in exp.stderr.splitlines(), exp.stderr
    assert len(list(csv.DictReader((tmp_path / "rows.csv").open()))) == 2

    err = _view_stderr(run_dir)
    assert f"warning: {run_dir}: the run is still in progress (process {proc.pid} holds it): the pages show its results so far " \
           "and catch up as it writes" in err.splitlines(), err

    # Once the run has finished, nothing is said.
    (tmp_path / "release").touch()
    assert proc.wait(timeout=60) == 0
    for args in (("compare", "before", "run"), ("export", "run", "--to", "csv", "rows.csv", "--force")):
        done = _tj(*args, cwd=tmp_path)
        assert done.returncode == 0 and "in progress" not in done.stderr, done.stderr
    assert "in progress" not in _view_stderr(run_dir)


def _base_and_run(tmp_path: Path, gate: str = "") -> None:
    """Runs `base` and `run` (configs `base.yaml`, `run.yaml`) over the same three cases; `gate`: more of `run.yaml`."""
    call = {"name": "a", "arguments": {}}
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "expected_tool_calls": [call],
                                                              "trace": {"steps": [{"tool_calls": [call]}], "output": "ok"}}) + "\n"
                                                  for i in range(3)))
    for name in ("base", "run"):
        (tmp_path / f"{name}.yaml").write_text(f"dataset: {{path: cases.jsonl}}\nmetrics: [{{type: ToolCalls}}]\nrun: {{dir: {name}}}\n"
                                               + (gate if name == "run" else ""))
        made = _tj("run", f"{name}.yaml", "--no-progress", cwd=tmp_path)
        assert made.returncode == 0, made.stdout + made.stderr


def test_a_baseline_still_being_written_is_named_on_stderr(tmp_path: Path) -> None:
    # `report RUN --baseline BASE` while BASE's own run goes on: the comparison is made, but with figures that may
    # still change, and nothing said so.
    from tracejudge.engine.run_lock import RunLock

    _base_and_run(tmp_path)
    with RunLock(tmp_path / "base"):  # this process stands for the baseline's `tracejudge run`, still writing
        rep = _tj("report", "run", "--baseline", "base", cwd=tmp_path)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert (f"warning: base: the run is still in progress (process {os.getpid()} holds it): it is the baseline, so the comparison "
            "is with its results so far and its figures may change; report again when it has finished") in rep.stderr.splitlines(), rep.stderr
    assert "ToolCalls regression" in rep.stdout  # compared all the same
    done = _tj("report", "run", "--baseline", "base", cwd=tmp_path)
    assert done.returncode == 0 and "in progress" not in done.stderr, done.stderr


def test_a_configured_baseline_still_being_written_is_named_by_run_and_by_report(tmp_path: Path) -> None:
    # The baseline named in the config (`assertions.regression.baseline`): `run` and `report RUN` compared with it
    # as it stood and said nothing; only `report --baseline` warned.
    from tracejudge.engine.run_lock import RunLock

    _base_and_run(tmp_path, "assertions: {regression: {baseline: base}}\n")
    # (Paths in a config resolve against its folder: the note names them so.)
    note = (f"warning: {tmp_path / 'base'}: the run is still in progress (process {os.getpid()} holds it): it is the baseline, so the comparison "
            "is with its results so far and its figures may change; ")
    with RunLock(tmp_path / "base"):  # this process stands for the baseline's `tracejudge run`, still writing
        ran = _tj("run", "run.yaml", "--no-progress", "--force", cwd=tmp_path)
        rep = _tj("report", "run", cwd=tmp_path)
    assert ran.returncode == 0 and "ToolCalls regression" in ran.stdout, ran.stdout + ran.stderr
    assert note + f"compare again with `tracejudge report {tmp_path / 'run'}` when it has finished" in ran.stderr.splitlines(), ran.stderr
    assert rep.returncode == 0 and "ToolCalls regression" in rep.stdout, rep.stdout + rep.stderr
    assert note + "report again when it has finished" in rep.stderr.splitlines(), rep.stderr
    for args in (("run", "run.yaml", "--no-progress", "--force"), ("report", "run")):
        done = _tj(*args, cwd=tmp_path)
        assert done.returncode == 0 and "in progress" not in done.stderr, done.stderr


def _killed_judged_run(tmp_path: Path, tau_paths, once: str) -> None:
    """Start a judged run whose judge answers after 30 s, and SIGKILL it as soon as `RUN_DIR/once` exists."""
    trajectories, tasks = tau_paths
    (tmp_path / "j.yaml").write_text(
        f"dataset: {{path: {json.dumps(str(trajectories))}, format: tau-bench, tasks: {json.dumps(str(tasks))}, limit: 4}}\n"
        "metrics: [{type: TaskCompletion}]\n"
        "judge: {provider: simulator, model: gpt-4o-mini, simulator: {latency_ms: 30000}}\ncache: {enabled: false}\nrun: {dir: run}\n")
    proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "run", "j.yaml", "--no-progress"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "run" / once).exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        proc.kill()


def test_report_on_a_judged_run_killed_before_its_first_result_says_interrupted(tmp_path: Path, tau_paths) -> None:
    # The judge answers after 30 s, so the run is killed with nothing in results.jsonl. `report` then rebuilt the judge's
    # block from no result at all and crashed (`KeyError: 'judged_results'`, exit 3) where it should say INTERRUPTED.
    _killed_judged_run(tmp_path, tau_paths, "manifest.json")
    # (Killed before it made results.jsonl, on a loaded machine, or with it empty: either way no result is written.)
    results = tmp_path / "run" / "results.jsonl"
    assert not results.exists() or results.read_bytes() == b""
    got = _tj("report", "run", cwd=tmp_path)
    assert got.returncode == 130, got.stderr
    assert "verdict: INTERRUPTED (resume with: tracejudge run j.yaml" in got.stdout + got.stderr
    judge = json.loads((tmp_path / "run" / "summary.json").read_text())["judge"]
    assert (judge["judged_results"], judge["judge_error_results"], judge["error_share"]) == (0, 0, 0.0)


def test_report_on_a_run_killed_before_it_made_results_jsonl_says_interrupted(tmp_path: Path, tau_paths) -> None:
    # Killed between writing manifest.json and creating results.jsonl: `report` said "no results.jsonl here (is this a run
    # directory?)", exit 2, on a directory the same `run` command resumes.
    _killed_judged_run(tmp_path, tau_paths, "results.jsonl")
    for name in ("results.jsonl", "results.idx"):  # the state of a kill a moment earlier
        (tmp_path / "run" / name).unlink(missing_ok=True)
    got = _tj("report", "run", cwd=tmp_path)
    assert got.returncode == 130, got.stderr
    assert "verdict: INTERRUPTED (resume with: tracejudge run j.yaml" in got.stdout + got.stderr


def test_a_run_killed_before_its_first_checkpoint_is_interrupted_not_an_empty_dataset(tmp_path: Path, tau_paths) -> None:
    # On a loaded machine the kill can land between manifest.json and the segment's first checkpoint: the directory
    # then holds a manifest alone, which only a started run writes. `report` said "the dataset is empty" (exit 1).
    _killed_judged_run(tmp_path, tau_paths, "manifest.json")
    for name in ("checkpoint.json", "results.jsonl", "summary.json"):
        (tmp_path / "run" / name).unlink(missing_ok=True)  # as the kill left it when it came before them
    got = _tj("report", "run", cwd=tmp_path)
    assert got.returncode == 130, got.stdout + got.stderr
    # The manifest records the command line too: CONFIG was left to fill in, though the run was started by `run j.yaml`.
    assert "verdict: INTERRUPTED (resume with: tracejudge run j.yaml" in got.stdout + got.stderr, got.stdout


def test_without_a_recorded_command_the_resume_command_leaves_config_to_fill_in(tmp_path: Path) -> None:
    # A run started from the Python API records no command line, in its manifest or its checkpoint.
    from tracejudge.engine.run_state import resume_command

    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(json.dumps({"config_hash": "x", "config": {"run": {"shard": "1/2"}}}))
    assert resume_command(run) == (f"tracejudge run CONFIG --run-dir {run} --shard 1/2 "
                                   "(CONFIG: the config the run was started with)")
    (run / "checkpoint.json").write_text(json.dumps({"segments": [{"segment": 1, "ended": "running"}]}))
    assert resume_command(run).startswith("tracejudge run CONFIG")
    # A command in the manifest (a run killed before its first checkpoint) or in the last segment is given, the segment's first.
    cwd = str(tmp_path)
    (run / "manifest.json").write_text(json.dumps({"config_hash": "x", "command": {"line": "tracejudge run a.yaml", "cwd": cwd}}))
    assert resume_command(run) == f"cd {shlex.quote(cwd)} && tracejudge run a.yaml"
    (run / "checkpoint.json").write_text(json.dumps({"segments": [{"segment": 1, "command": {"line": "tracejudge run b.yaml", "cwd": cwd}}]}))
    assert resume_command(run).endswith("tracejudge run b.yaml")


def test_a_run_killed_before_its_config_journal_is_resumed_with_its_command(tmp_path: Path, tau_paths, monkeypatch) -> None:
    # A kill between configs.jsonl and manifest.json left a directory `report` took for no run at all ("no results.jsonl
    # here", exit 2): a fresh directory now gets its manifest, with the command, first. The kill is this process stopping
    # as the config journal is written.
    from tracejudge.core.config import load_config
    from tracejudge.engine import config_journal, runner

    trajectories, tasks = tau_paths
    (tmp_path / "j.yaml").write_text(
        f"dataset: {{path: {json.dumps(str(trajectories))}, format: tau-bench, tasks: {json.dumps(str(tasks))}, limit: 4}}\n"
        "metrics: [{type: TaskCompletion}]\njudge: {provider: simulator, model: gpt-4o-mini}\nrun: {dir: run}\n")
    monkeypatch.chdir(tmp_path)

    def killed(*_args: object) -> None:
        raise KeyboardInterrupt  # (no later file is written)

    monkeypatch.setattr(config_journal, "append", killed)
    (tmp_path / "run").mkdir()
    with pytest.raises(KeyboardInterrupt):
        runner._write_manifest(tmp_path / "run", load_config(tmp_path / "j.yaml"), None, False,
                               command={"line": "tracejudge run j.yaml", "cwd": str(tmp_path)})
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["manifest.json"]
    got = _tj("report", "run", cwd=tmp_path)
    assert got.returncode == 130, got.stdout + got.stderr
    assert "verdict: INTERRUPTED (resume with: tracejudge run j.yaml)" in got.stdout + got.stderr, got.stdout
