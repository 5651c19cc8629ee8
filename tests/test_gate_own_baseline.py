"""A regression baseline that is the run's own directory is refused before the run touches it.

Compared with itself, a run pairs every result with itself: every delta is 0 and the gate passed whatever the agent
did (saying the baseline "is still being written", by the run itself). Real `tracejudge run` commands, in process.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _runs import seven_and_three, write_config
from tracejudge.entrypoints.cli import main


def _files(run_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run_dir.iterdir()) if p.is_file()}


def test_a_baseline_naming_the_runs_own_directory_is_a_config_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = seven_and_three(tmp_path / "cases.jsonl")
    run = tmp_path / "runs" / "nightly"
    assert main(["run", str(write_config(tmp_path / "first.yaml", data, run)), "--no-progress"]) == 0
    before = _files(run)
    # The nightly config gates on "last night", written as the directory it runs in.
    own = {"max_invalid_share": 0.3, "regression": {"baseline": str(run), "max_mean_drop": 0.0}}
    cfg = write_config(tmp_path / "nightly.yaml", data, run, assertions=own)
    capsys.readouterr()
    assert main(["run", str(cfg), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"assertions.regression.baseline: {run} is this run's own directory" in err and "never regresses" in err, err
    assert _files(run) == before  # refused before the directory was touched
    # Named by its shards, and reached through --run-dir: refused alike.
    assert main(["run", str(cfg), "--no-progress", "--run-dir", str(run)]) == 2
    shard = tmp_path / "runs" / "sweep-shard-1-of-2"
    assert main(["run", str(write_config(tmp_path / "s.yaml", data, tmp_path / "runs" / "sweep")), "--no-progress", "--shard", "1/2"]) in (0, 1)
    on_shards = write_config(tmp_path / "s2.yaml", data, tmp_path / "runs" / "sweep",
                             assertions={**own, "regression": {"baseline": str(tmp_path / "runs" / "sweep")}})
    capsys.readouterr()
    assert main(["run", str(on_shards), "--no-progress", "--shard", "1/2"]) == 2
    assert "is this run's own directory" in capsys.readouterr().err and shard.is_dir()
    # Another directory gates on it as before.
    assert main(["run", str(cfg), "--no-progress", "--run-dir", str(tmp_path / "runs" / "tonight")]) == 0
    assert "traj regression" in capsys.readouterr().out
