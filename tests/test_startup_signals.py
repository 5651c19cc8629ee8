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
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")
# Both ways in: the console script and `python -m tracejudge`, which went past the script's start-up handling.
COMMANDS = {"script": [str(TRACEJUDGE)], "module": [sys.executable, "-m", "tracejudge"]}
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


@pytest.mark.parametrize("way,after_s", [("script", s) for s in (0.0, 0.15, 0.4, 0.8, 1.5, 2.5)] + [("module", 0.4)])
def test_a_double_sigint_during_start_up_ends_the_run(workspace, tmp_path, way, after_s):
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
        proc = _forkserver.popen([*COMMANDS[way], "run", "run.yaml", "--no-progress"], cwd=tmp_path, env=env,
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


# The modules `python -m tracejudge` imports before the CLI's own: the package, and the entry point whose handling is
# in place once it is imported (`entrypoints.launch`). The first other one is the CLI's slow imports under way.
BEFORE_THE_CLI = {"tracejudge", "tracejudge.core", "tracejudge.core.version", "tracejudge.entrypoints", "tracejudge.entrypoints.launch"}


def test_python_m_tracejudge_interrupted_as_the_cli_imports_begin_exits_130_in_one_line(workspace, tmp_path):
    # `python -m tracejudge` called the CLI's entry point, not the script's: a Ctrl-C during its imports was a
    # KeyboardInterrupt traceback (exit -2), not "interrupted" and 130. `-X importtime` names each module as its import
    # ends, so the SIGINT is sent as the first of the CLI's own imports ends, with a second of them still to come.
    (tmp_path / "run.yaml").write_text(f"dataset: {{path: {workspace / 'cases.jsonl'}}}\nmetrics:\n  - {{type: ToolCalls}}\n"
                                       f"run: {{dir: {tmp_path / 'out'}}}\n")
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)  # (as from a terminal: see above)
    try:
        proc = _forkserver.popen([sys.executable, "-X", "importtime", "-m", "tracejudge", "run", "run.yaml", "--no-progress"],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, inherited)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        module = line.rpartition("|")[2].strip()
        if module.startswith("tracejudge.") and module not in BEFORE_THE_CLI:
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    err = "".join(seen) + err
    assert proc.returncode == 130 and err.endswith("interrupted\n"), err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]


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


@pytest.mark.parametrize("way", list(COMMANDS))
def test_a_ctrl_c_an_import_callback_swallowed_still_stops_the_run(workspace, tmp_path, way):
    # The interrupt was lost: SIGINT was ignored from the first one on, so the run scored every case and exited 0,
    # with "Exception ignored in … KeyboardInterrupt" on the terminal.
    (tmp_path / "swallow.py").write_text(SWALLOWED)
    run_dir = tmp_path / "out"
    (tmp_path / "run.yaml").write_text(
        f"dataset: {{path: {workspace / 'cases.jsonl'}}}\nmetrics:\n  - {{type: 'swallow:swallowed'}}\nrun: {{dir: {run_dir}, processes: 1}}\n"
    )
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)  # (as from a terminal: see above)
    try:
        proc = _forkserver.run([*COMMANDS[way], "run", "run.yaml", "--no-progress"], cwd=tmp_path, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))},
                              timeout=300)
    finally:
        signal.signal(signal.SIGINT, inherited)
    assert proc.returncode == 130, proc.stderr
    assert "Traceback" not in proc.stderr and "KeyboardInterrupt" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    results = run_dir / "results.jsonl"
    assert not results.exists() or not results.read_text(), "the run scored cases after the Ctrl-C"
