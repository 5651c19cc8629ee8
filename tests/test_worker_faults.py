"""Dead worker processes: an infrastructure fault, never a final result (real processes, SIGKILL).

A worker killed from outside (what the OOM killer does) costs nothing: its chunk is tried once
more in a fresh worker. A chunk whose worker dies every time is split until the death is pinned
on the records causing it: those alone are written as provisional `worker_error` results under
the cases' real ids, which the next run redoes and supersedes, so no `file:line` result is left
behind and the gate passes once the cases are scored; the chunk's other cases are scored. A worker
that dies on every record costs a bounded number of worker starts, not one per record.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ray_procs import running  # noqa: E402
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")
N = 600

METRIC = textwrap.dedent("""\
    import os, signal, time
    import tracejudge

    @tracejudge.metric
    def slow(case, trace) -> bool:
        time.sleep(float(os.environ.get("SLOW_S", "0")))
        if os.path.exists(os.environ.get("DIE_WHEN", os.devnull + "/none")):
            os.kill(os.getpid(), signal.SIGKILL)  # a death the test times: once this file exists
        doom = os.environ.get("DOOM_CASE", "").split(",")  # ids, or "*": every case
        if case.id in doom or "*" in doom:
            with open(os.environ.get("DEATHS", os.devnull), "a") as fh:
                fh.write(f"{os.getpid()}\\n")
            if os.environ.get("DOOM_EXIT"):
                os._exit(int(os.environ["DOOM_EXIT"]))  # an exit of its own, as a crash in native code may end it
            os.kill(os.getpid(), signal.SIGKILL)  # this worker dies on this case, every time
        return True
""")


def _workspace(root: Path, n: int = N) -> None:
    (root / "faultmetric.py").write_text(METRIC)
    with open(root / "cases.jsonl", "w") as fh:
        for i in range(n):
            fh.write(json.dumps({"id": f"case-{i:04d}", "input": "hi", "trace": {"steps": [{"thought": "ok"}], "output": "hello"}}) + "\n")
    (root / "run.yaml").write_text(
        "dataset: {path: cases.jsonl}\nmetrics:\n  - {type: 'faultmetric:slow'}\n"
        "run: {dir: out, processes: 2, executor: processes}\nassertions: {max_invalid_share: 0.0}\n"
    )


def _run(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=root, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=240)


def _lines(root: Path) -> list[dict]:
    return [json.loads(x) for x in (root / "out" / "results.jsonl").read_text().splitlines()]


def _wait_for_a_result(root: Path, proc: subprocess.Popen[str]) -> None:
    # Until the run wrote its first result line (it must still be running then).
    results = root / "out" / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and not (results.exists() and results.stat().st_size):
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before a result was written"


def _children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(d.name))
    return out


def _report(root: Path) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([str(TRACEJUDGE), "report", "out"], cwd=root, capture_output=True, text=True, timeout=120)


def test_a_worker_killed_from_outside_costs_nothing(tmp_path):
    _workspace(tmp_path)
    proc = _forkserver.popen([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=tmp_path,
                            env={**os.environ, "SLOW_S": "0.01"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and time.monotonic() < deadline and proc.poll() is None:
        # Not a child started as the `tracejudge` command; by the program's own name, since a checkout (and its
        # `.venv/bin/python3`, as README sets it up) may sit in a folder named tracejudge.
        workers = [c for c in _children(proc.pid) if b"tracejudge" not in os.path.basename(_cmdline(c).split(b"\0")[0])]
        # Kill one while the workers compute (results are coming), not while they start.
        if workers and (tmp_path / "out" / "results.jsonl").exists():
            killed = workers[0]
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.05)
    _, err = proc.communicate(timeout=240)
    assert killed is not None, err
    assert proc.returncode == 0, err
    assert "tried once more in a fresh worker" in err
    got = _lines(tmp_path)
    assert len(got) == N and {r["status"] for r in got} == {"ok"}, err
    assert all(r["case_id"].startswith("case-") for r in got)


def test_a_worker_dying_on_every_try_leaves_provisional_results_that_the_resume_replaces(tmp_path):
    _workspace(tmp_path)
    first = _run(tmp_path, {"DOOM_CASE": "case-0300"})
    lines = _lines(tmp_path)
    dead = [r for r in lines if r["error"] and r["error"]["kind"] == "worker_error"]
    # The chunk is split until the death is pinned on its case: the other cases of the chunk are scored.
    assert [r["case_id"] for r in dead] == ["case-0300"], first.stderr
    assert dead[0]["error"]["message"].startswith("the worker process died while scoring this case: "), dead[0]
    assert len(lines) == N and sum(r["status"] == "ok" for r in lines) == N - 1
    assert all(r["case_id"].startswith("case-") for r in lines), "a dead worker's cases are keyed by their real ids"
    assert first.returncode == 1  # the gate counts them while they stand
    assert "worker process died" in first.stderr
    again = _run(tmp_path, {})
    assert again.returncode == 0, again.stderr
    lines = _lines(tmp_path)
    assert len(lines) == N + len(dead)  # append-only: the provisional lines stay, superseded
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["results"] == N and summary["status"] == {"ok": N}
    rep = _report(tmp_path)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    third = _run(tmp_path, {})
    assert third.returncode == 0 and len(_lines(tmp_path)) == N + len(dead)


def test_each_case_a_worker_dies_on_is_pinned_and_the_resume_redoes_only_those(tmp_path):
    _workspace(tmp_path)
    doomed = ["case-0130", "case-0200", "case-0201"]  # one chunk holds all three, the last two side by side
    first = _run(tmp_path, {"DOOM_CASE": ",".join(doomed)})
    assert first.returncode == 1, first.stderr
    lines = _lines(tmp_path)
    dead = sorted(r["case_id"] for r in lines if r["error"] and r["error"]["kind"] == "worker_error")
    assert dead == doomed, first.stderr
    assert len(lines) == N
    again = _run(tmp_path, {"DOOM_CASE": "case-0130"})  # still fatal to a worker: it stands, provisional, alone
    lines = _lines(tmp_path)
    assert len(lines) == N + 3
    assert [r["case_id"] for r in lines[N:] if r["status"] != "ok"] == ["case-0130"], again.stderr


def test_a_worker_dying_on_every_record_costs_a_bounded_number_of_workers(tmp_path):
    # What the machine running out of memory does: no record is to blame. The chunk is split a few times (about
    # log2 of its 40 records), not once per record; every case stays provisional and the resume scores them all.
    n = 40
    _workspace(tmp_path, n)
    first = _run(tmp_path, {"DOOM_CASE": "*", "DEATHS": str(tmp_path / "deaths")})
    assert first.returncode == 1, first.stderr
    lines = _lines(tmp_path)
    assert len(lines) == n and all(r["error"]["kind"] == "worker_error" for r in lines), first.stderr
    deaths = len((tmp_path / "deaths").read_text().split())
    assert 2 < deaths <= 2 + 7, first.stderr  # twice the whole chunk, then at most ceil(log2(40)) + 1 parts
    again = _run(tmp_path, {})
    assert again.returncode == 0, again.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["results"] == n and summary["status"] == {"ok": n}


def test_workers_end_when_their_head_is_killed(tmp_path):
    _workspace(tmp_path)
    proc = _forkserver.popen([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=tmp_path,
                            env={**os.environ, "SLOW_S": "0.05"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    workers: list[int] = []
    while len(workers) < 2 and time.monotonic() < deadline and proc.poll() is None:
        workers = _children(proc.pid)
        time.sleep(0.1)
    assert len(workers) >= 2
    time.sleep(1.0)  # computing chunks, not idle
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 30
    alive = workers
    while alive and time.monotonic() < deadline:
        alive = [w for w in workers if running(w)]
        time.sleep(0.1)
    assert not alive, f"orphaned workers still running: {alive}"


def test_ctrl_c_while_spawned_workers_start_prints_no_traceback(tmp_path):
    # A user's metric goes to spawned workers from the first record. A terminal's Ctrl-C reaches the whole
    # process group; one that lands while the workers are still starting (before their first chunk) must be
    # ignored by them as by a worker at work: the head stops the run, nothing prints a traceback.
    _workspace(tmp_path)
    proc = _forkserver.popen([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=tmp_path, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "SLOW_S": "0.05"})
    deadline = time.monotonic() + 120
    started: list[int] = []
    while not started and time.monotonic() < deadline and proc.poll() is None:
        started = [p for p in _children(proc.pid) if b"anyio.to_process" in _cmdline(p)]
        time.sleep(0.002)
    assert started, "no spawned worker was seen"
    os.killpg(proc.pid, signal.SIGINT)  # at once: the worker is still starting its interpreter
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err and "died" not in err, err
    assert "INTERRUPTED" in out + err, out + err
    again = _run(tmp_path, {})
    assert again.returncode == 0, again.stderr
    assert len(_lines(tmp_path)) == N


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_a_worker_dying_while_the_run_stops_leaves_its_chunk_to_the_resume(tmp_path):
    # A stop kills what still computes after its grace; a worker that ends during a stop (a stand-in killed while
    # it started, a death the stop raced with) is no fault: its chunk is not retried in a fresh worker nor
    # warned about as a death, and the resume redoes it. Here the workers die once the head has said it stops.
    _workspace(tmp_path)
    flag = tmp_path / "die-now"
    proc = _forkserver.popen([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "SLOW_S": "0.02", "DIE_WHEN": str(flag)})
    _wait_for_a_result(tmp_path, proc)
    os.kill(proc.pid, signal.SIGINT)
    said = []
    for line in proc.stderr:  # (the stop is set by the time the head prints this line)
        said.append(line)
        if "no new cases" in line:
            break
    flag.touch()
    out, err = proc.communicate(timeout=240)
    err = "".join(said) + err
    assert proc.returncode == 130, out + err
    assert "died" not in err and "tried once more" not in err and "Traceback" not in err, err
    flag.unlink()
    again = _run(tmp_path, {})
    assert again.returncode == 0, again.stderr
    assert len({(r["case_id"], r["trial"]) for r in _lines(tmp_path)}) == N


def test_the_stop_message_counts_the_records_workers_are_computing(tmp_path):
    # Slow chunks in two spawned workers and nothing after the executor: at a Ctrl-C no case is in a stage's
    # hands, but whole chunks are in the workers'. The stop message must say so, not "the 0 in flight".
    _workspace(tmp_path)
    proc = _forkserver.popen([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "SLOW_S": "0.02"})
    _wait_for_a_result(tmp_path, proc)
    os.kill(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 130, out + err
    said = [line for line in err.splitlines() if line.startswith("SIGINT: no new cases")]
    assert len(said) == 1, err
    got = re.search(r"\((\d+) records? still being extracted (is|are) left to the resume\)", said[0])
    assert got is not None and int(got.group(1)) > 0, said[0]
    again = _run(tmp_path, {})
    assert again.returncode == 0, again.stderr
    assert len({(r["case_id"], r["trial"]) for r in _lines(tmp_path)}) == N


def test_the_terminal_names_a_worker_death_as_one_not_as_a_transient_failure(tmp_path):
    # A worker that died is no judge, target or provider failing: the end of the run says what ended the
    # cases and that the same command retries them, and the resume says what it retried.
    n = 40
    _workspace(tmp_path, n)
    first = _run(tmp_path, {"DOOM_CASE": "case-0007"})
    assert first.returncode == 1, first.stderr
    err = " ".join(first.stderr.split())
    assert "1 results ended because the worker process scoring them died" in err, err
    assert "the same command retries them" in err and "tracejudge run run.yaml --no-progress" in err
    assert "transient failure" not in err and "judge, target or provider)" not in err
    again = _run(tmp_path, {})
    assert again.returncode == 0, again.stderr
    out = " ".join(again.stdout.split())
    assert f"(1 new results, {n - 1} already finished, 1 retried after the worker process scoring them died)" in out, out
    assert "transient failure" not in out + again.stderr


def test_a_dead_workers_results_and_log_lines_say_how_it_died(tmp_path):
    # "The stream was closed before the read operation could be completed" said nothing of why the worker ended:
    # its exit status does (the OOM killer's SIGKILL, a crash's signal, an exit code).
    n = 40
    _workspace(tmp_path, n)
    for env, how in (({}, "killed by signal SIGKILL (9)"), ({"DOOM_EXIT": "7"}, "exit code 7")):
        got = _run(tmp_path, {"DOOM_CASE": "case-0007", **env})
        assert got.returncode == 1, got.stderr
        dead = [r for r in _lines(tmp_path) if r["error"] and r["error"]["kind"] == "worker_error"]
        assert [r["error"]["message"] for r in dead] == [f"the worker process died while scoring this case: {how}"], got.stderr
        logged = [json.loads(x) for x in got.stderr.splitlines() if x.startswith("{") and "worker process died" in x]
        assert logged and all(how in x["error"] for x in logged), got.stderr
        assert "Unknown child process" not in got.stderr, got.stderr
        shutil.rmtree(tmp_path / "out")
