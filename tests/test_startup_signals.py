"""Ctrl-C during start-up is never lost: a double SIGINT at several moments of start-up ends the run (real processes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")
N = 4000  # at 2 ms a case, a run that went on would take 8 s more and write every result

METRIC = textwrap.dedent("""\
    import time
    import tracejudge

    @tracejudge.metric
    def slowish(case, trace) -> bool:
        time.sleep(0.002)
        return True
""")


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sigint")
    (root / "slowmetric.py").write_text(METRIC)
    with open(root / "cases.jsonl", "w") as fh:
        for i in range(N):
            fh.write(json.dumps({"id": f"c{i}", "trace": {"steps": [], "output": "hi"}}) + "\n")
    return root


def _wait_for_imports(pid: int, timeout: float = 60) -> None:
    # The CLI's imports have begun once pydantic-core's extension is mapped: the interpreter's own start-up
    # (site, before any tracejudge code) is over. A signal before then is Python's to handle, not ours.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if "pydantic_core" in Path(f"/proc/{pid}/maps").read_text():
                return
        except OSError:
            return
        time.sleep(0.005)


@pytest.mark.parametrize("after_s", [0.0, 0.15, 0.4, 0.8, 1.5, 2.5])
def test_a_double_sigint_during_start_up_ends_the_run(workspace, tmp_path, after_s):
    run_dir = tmp_path / "out"
    (tmp_path / "run.yaml").write_text(
        f"dataset: {{path: {workspace / 'cases.jsonl'}}}\nmetrics:\n  - {{type: 'slowmetric:slowish'}}\nrun: {{dir: {run_dir}, processes: 1}}\n"
    )
    env = {**os.environ, "PYTHONPATH": str(workspace)}
    # The command gets SIGINT at its default, as from a terminal: a suite started in the background by a
    # non-interactive shell (`pytest &`) runs with SIGINT ignored, which every child would inherit, and a
    # command rightly leaves an inherited SIG_IGN alone until its run installs its own handling.
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, inherited)
    _wait_for_imports(proc.pid)
    time.sleep(after_s)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    results = run_dir / "results.jsonl"
    written = len(results.read_text().splitlines()) if results.exists() else 0
    assert written < N, "the run went on after two Ctrl-C"


SWALLOWED = textwrap.dedent("""\
    import signal
    import weakref

    import tracejudge

    class _Gone:
        pass

    # The Ctrl-C lands inside a weakref callback, as it can inside the one that drops an import's module lock: the
    # KeyboardInterrupt raised there is only printed by Python ("Exception ignored in …"), and the import goes on.
    _kept = weakref.ref(_Gone(), lambda _ref: signal.raise_signal(signal.SIGINT))

    @tracejudge.metric
    def swallowed(case, trace) -> bool:
        return True
""")


def test_a_ctrl_c_an_import_callback_swallowed_still_stops_the_run(workspace, tmp_path):
    # The interrupt was lost: SIGINT was ignored from the first one on, so the run scored every case and exited 0,
    # with "Exception ignored in … KeyboardInterrupt" on the terminal.
    (tmp_path / "swallow.py").write_text(SWALLOWED)
    run_dir = tmp_path / "out"
    (tmp_path / "run.yaml").write_text(
        f"dataset: {{path: {workspace / 'cases.jsonl'}}}\nmetrics:\n  - {{type: 'swallow:swallowed'}}\nrun: {{dir: {run_dir}, processes: 1}}\n"
    )
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)  # (as from a terminal: see above)
    try:
        proc = subprocess.run([str(TRACEJUDGE), "run", "run.yaml", "--no-progress"], cwd=tmp_path, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))},
                              timeout=300)
    finally:
        signal.signal(signal.SIGINT, inherited)
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    results = run_dir / "results.jsonl"
    assert not results.exists() or not results.read_text(), "the run scored cases after the Ctrl-C"
