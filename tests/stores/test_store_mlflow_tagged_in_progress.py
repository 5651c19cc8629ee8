"""An MLflow trace still in progress under a `filter_string` on a tag set at its end (`mlflow.update_current_trace`):
the server lists it only once it ends, so the read lists the window's traces in progress without the filter and holds
them (`mlflow_server._unfinished`); once the trace has ended, the next `start: last_run` night scores it, also when it
ran longer than `overlap_s`. A real `mlflow server` (tests/conftest.py) and a real traced process."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from tracejudge.entrypoints.cli import main

pytest.importorskip("mlflow")

SCRIPT = Path(__file__).resolve().parent / "slow_tagged_mlflow.py"


def _in_progress(url: str, experiment: str) -> list:
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=url)
    found = client.get_experiment_by_name(experiment)
    return [] if found is None else list(client.search_traces(locations=[found.experiment_id],
                                                              filter_string="trace.status = 'IN_PROGRESS'"))


def _case_ids(run: Path) -> list[str]:
    return [json.loads(line)["case_id"] for line in (run / "results.jsonl").read_text().splitlines()]


def test_a_trace_tagged_at_its_end_is_held_while_it_runs_and_scored_once_it_ends(mlflow_url, tmp_path, capsys):
    release = tmp_path / "release"
    proc = subprocess.Popen([sys.executable, str(SCRIPT), mlflow_url, "tagged", str(release)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        fast = proc.stdout.readline().split()[1]
        assert proc.stdout.readline().strip() == "running"
        while not (running := _in_progress(mlflow_url, "tagged")):
            assert proc.poll() is None
            time.sleep(0.1)
        # The night begins over a second after the trace did: a window of `start: last_run` from that night on (no
        # overlap_s) no longer holds the trace's start, which only its hold keeps in the next window.
        while time.time() * 1000 < running[0].info.request_time + 1500:
            time.sleep(0.1)
        cfg = tmp_path / "nightly.yaml"
        cfg.write_text(yaml.safe_dump({
            "dataset": {"format": "mlflow-server", "options": {"tracking_uri": mlflow_url, "experiment": "tagged", "start": "last_run",
                                                                "overlap_s": 0, "filter_string": "tags.env = 'prod'"}},
            "metrics": [{"type": "MaxToolCalls", "max_calls": 2}], "run": {"dir": str(tmp_path / "run")}}))
        assert main(["run", str(cfg), "--no-progress"]) == 0
        assert _case_ids(tmp_path / "run") == [fast]
        assert "skipped 1 trace(s) still in progress" in capsys.readouterr().err
        release.touch()
        slow = proc.stdout.readline().split()[1]
        assert proc.wait(60) == 0
    finally:
        release.touch()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert main(["run", str(cfg), "--no-progress"]) == 0
    assert _case_ids(tmp_path / "run") == [fast, slow]
