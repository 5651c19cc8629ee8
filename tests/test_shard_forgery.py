"""A shard merge trusts no label: every result is checked by the hash that assigned it, and repeats are refused."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")
N = 300


def _tj(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([str(TRACEJUDGE), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shards")
    with open(root / "cases.jsonl", "w") as fh:
        for i in range(N):
            fh.write(json.dumps({"id": f"c{i}", "input": "hi", "expected_output": "hello",
                                 "trace": {"steps": [{"thought": "ok"}], "output": "hello"}}) + "\n")
    (root / "run.yaml").write_text("dataset: {path: cases.jsonl}\nmetrics:\n  - {type: ExactMatch}\nrun: {dir: sweep, processes: 1}\n")
    for i in (1, 2):
        proc = _tj(root, "run", "run.yaml", "--no-progress", "--shard", f"{i}/2")
        assert proc.returncode == 0, proc.stderr
    return root


def _copy(sweep: Path, tmp: Path) -> tuple[Path, Path]:
    a, b = tmp / "sweep-shard-1-of-2", tmp / "sweep-shard-2-of-2"
    shutil.copytree(sweep / a.name, a)
    shutil.copytree(sweep / b.name, b)
    return a, b


def test_the_honest_merge_passes_with_every_case(sweep, tmp_path):
    a, b = _copy(sweep, tmp_path)
    rep = _tj(tmp_path, "report", str(a), str(b))
    assert rep.returncode == 0, rep.stdout + rep.stderr
    merged = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    assert merged["results"] == N and merged["complete"] is True


def test_a_copy_of_shard_1_relabelled_2_of_2_is_refused(sweep, tmp_path):
    a, b = _copy(sweep, tmp_path)
    shutil.rmtree(b)
    shutil.copytree(a, b)
    manifest = json.loads((b / "manifest.json").read_text())
    manifest["config"]["run"]["shard"] = "2/2"
    (b / "manifest.json").write_text(json.dumps(manifest))
    rep = _tj(tmp_path, "report", str(a), str(b))
    assert rep.returncode == 2, rep.stdout
    assert "belongs to shard 1/2" in rep.stderr + rep.stdout and "sweep-shard-2-of-2/results.jsonl:1" in rep.stderr + rep.stdout


def test_shard_2_results_in_shard_1_directory_are_refused(sweep, tmp_path):
    a, b = _copy(sweep, tmp_path)
    shutil.copy(b / "results.jsonl", a / "results.jsonl")
    rep = _tj(tmp_path, "report", str(a), str(b))
    assert rep.returncode == 2, rep.stdout
    assert "belongs to shard 2/2" in rep.stderr + rep.stdout


def test_a_repeated_line_is_refused_and_named(sweep, tmp_path):
    a, b = _copy(sweep, tmp_path)
    lines = (a / "results.jsonl").read_text().splitlines(keepends=True)
    with open(a / "results.jsonl", "a") as fh:
        fh.write(lines[3])
    rep = _tj(tmp_path, "report", str(a), str(b))
    out = rep.stderr + rep.stdout
    assert rep.returncode == 2, rep.stdout
    assert f"results.jsonl:{len(lines) + 1}" in out and "is repeated (first at" in out and "results.jsonl:4)" in out
