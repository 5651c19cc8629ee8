"""A run directory whose name holds a byte that is not UTF-8 (a Latin-1 folder name): Python reads it as a lone
surrogate, which no UTF-8 file can hold. The run writes its reports all the same, and an internal error whose message
holds such text still gets its one line and crash log, not a second traceback from writing it; `view` shows the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import urllib.request

import pytest
from _runs import view_process
from tracejudge.engine import runner
from tracejudge.entrypoints.cli import main
import _forkserver

CASE = {"id": "c1", "trace": {"steps": [{"tool_calls": [{"name": "get"}]}]}, "expected_tool_calls": [{"name": "get"}]}


def _config(tmp_path: Path) -> Path:
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASE) + "\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCorrectness}]\nrun: {dir: run}\n")
    return cfg


def test_a_run_directory_named_with_a_byte_that_is_not_utf8_gets_its_reports(tmp_path: Path) -> None:
    run_dir = os.fsdecode(bytes(tmp_path) + b"/caf\xe9")  # "café" as Latin-1 wrote it
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(_config(tmp_path)), "--run-dir", run_dir],
                          cwd=tmp_path, capture_output=True, timeout=120)
    assert proc.returncode == 0 and b"verdict: PASS" in proc.stdout, proc.stderr.decode(errors="replace")[-2000:]
    assert b"Traceback" not in proc.stderr
    report = Path(run_dir, "report.md").read_text(encoding="utf-8")
    assert report.startswith("# tracejudge report: caf\\udce9\n")  # the byte shown escaped
    assert all(Path(run_dir, name).is_file() for name in ("summary.json", "junit.xml", "report.html"))
    # `tracejudge view` shows it, its name escaped, where every page was a 500.
    with view_process(run_dir) as (base, _):
        for page in ("/", "/run/caf", "/run/caf/cases", "/run/caf/case?id=c1"):
            with urllib.request.urlopen(base + page, timeout=30) as r:
                assert r.status == 200 and "caf\\udce9" in r.read().decode("utf-8"), page


def test_an_internal_error_about_such_text_still_writes_its_crash_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    # Injected, as no real input makes tracejudge itself fail: an error whose message holds a lone surrogate.
    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError(f"cannot write {os.fsdecode(b'caf' + bytes([0xE9]))}")

    monkeypatch.setattr(runner, "run", broken)
    cfg = _config(tmp_path)
    (tmp_path / "run").mkdir()
    assert main(["run", str(cfg), "--no-progress"]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    crash = tmp_path / "run" / "crash.log"
    assert len(err) == 1 and err[0].startswith("internal error: RuntimeError: cannot write caf") and f"(traceback in {crash})" in err[0]
    assert "RuntimeError: cannot write caf\\udce9" in crash.read_text(encoding="utf-8")


def test_init_refuses_a_name_a_config_cannot_hold_in_one_line(tmp_path: Path) -> None:
    data = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9.jsonl"))
    data.write_text(json.dumps(CASE) + "\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASE) + "\n")
    for args, flag in ((["--dataset", str(data), "-o", "eval.yaml"], "--dataset"),
                       (["--dataset", "cases.jsonl", "-o", os.fsdecode(b"caf\xe9.yaml")], "-o")):
        proc = _forkserver.run([sys.executable, "-m", "tracejudge", "init", *args], cwd=tmp_path, capture_output=True, timeout=120)
        err = proc.stderr.decode("utf-8")
        assert proc.returncode == 2 and err.startswith(f"error: {flag} ") and "not UTF-8" in err and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["cases.jsonl", data.name])  # no config, not even an empty one
