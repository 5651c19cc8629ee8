"""A smolagents `CodeAgent` read from a real `mlflow server` (SQLite, 127.0.0.1) as format `mlflow` reads its file.

`mlflow.smolagents.autolog()` writes each tool call a `CodeAgent`'s code makes as a trace of its own (the code runs in a
worker thread, where MLflow loses its context). Read from a file, those calls are joined to the run's case; read from the
server, each trace was a case: the run scored with no tool call, and every call (`final_answer` too) a case of its own.
The recordings' traces are copied into the server as MLflow copies a trace (new trace ids, their spans and times kept).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tracejudge.entrypoints.cli import main

pytest.importorskip("mlflow")
from stores.servers import sweep_config  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "data" / "mlflow-smolagents"
MANAGED = DATA.parent / "mlflow-smolagents-managed"


def _copied(url: str, experiment: str, recording: Path) -> list[str]:
    """Copy every trace of `recording` (`Trace.to_json()` lines) into a new `experiment`; their new ids, in order."""
    import mlflow
    from mlflow.tracing.utils.copy import copy_trace_to_experiment

    mlflow.set_tracking_uri(url)
    eid = mlflow.MlflowClient(tracking_uri=url).create_experiment(experiment)
    return [copy_trace_to_experiment(json.loads(x), experiment_id=eid) for x in recording.read_text().splitlines() if x.strip()]


def _cases(fmt: str, path: Path | None = None, **options) -> list[dict]:
    from tracejudge.core import registry
    from tracejudge.core.config import DatasetConfig
    from tracejudge.stages.extract import extract_record

    format_ = registry.format_for(fmt)
    ds = DatasetConfig(path=path, format=fmt, options=options)
    dumps = [extract_record(raw, format_, format_.prepare(ds) if format_.prepare else None).model_dump(mode="json") for raw in format_.read(ds)]
    for d in dumps:  # (the copies have trace ids of their own)
        d.pop("id")
        d["metadata"].pop("mlflow", None)
    return dumps


@pytest.mark.parametrize("name", ["code", "code-two-runs"])
def test_a_code_agents_calls_are_read_in_its_runs_case(mlflow_url, monkeypatch, name):
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    ids = _copied(mlflow_url, f"code-agent-{name}", DATA / f"{name}.mlflow.jsonl")
    got = _cases("mlflow-server", tracking_uri=mlflow_url, experiment=f"code-agent-{name}")
    want = _cases("mlflow", DATA / f"{name}.mlflow.jsonl", group_by="trace")
    assert len(got) == len(want) == len(ids) // 4  # a run and its three calls
    assert got == want


@pytest.mark.parametrize("name", ["code-manager", "tool-manager", "tool-manager-fails"])
def test_a_managed_code_agents_run_is_read_as_its_managers_call(mlflow_url, monkeypatch, name):
    """A managed `CodeAgent`'s run read from the server as format `mlflow` reads the file: the manager's call, its code's
    calls inside it. Under a `CodeAgent` manager (`code-manager`) its run, its code's calls and the manager's code's are
    each a trace of their own; before, the server read its run (with its calls) as a case of its own."""
    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    recording = MANAGED / f"{name}.mlflow.jsonl"
    _copied(mlflow_url, f"managed-{name}", recording)
    got = _cases("mlflow-server", tracking_uri=mlflow_url, experiment=f"managed-{name}")
    want = _cases("mlflow", recording, group_by="trace")
    assert len(want) == 1  # the manager's run, every call inside it
    assert got == want


def test_a_cap_counts_runs_not_their_calls_and_the_verdicts_go_on_the_runs_trace(mlflow_url, monkeypatch, tmp_path, capsys):
    import mlflow

    monkeypatch.setenv("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", "false")
    ids = _copied(mlflow_url, "code-agent-capped", DATA / "code-two-runs.mlflow.jsonl")
    cfg = sweep_config(tmp_path, "mlflow-server", {"tracking_uri": mlflow_url, "experiment": "code-agent-capped", "max_results": 1}, max_calls=2)
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    results = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [r["case_id"] for r in results] == [ids[0]]  # the first run, with its calls
    assert results[0]["scores"]["MaxToolCalls"]["details"]["count"] == 2  # get_weather twice (final_answer is the answer)
    capsys.readouterr()
    assert main(["export", str(tmp_path / "run"), "--to", "mlflow", "--tracking-uri", mlflow_url]) == 0
    client = mlflow.MlflowClient(tracking_uri=mlflow_url)
    assert sorted(a.name for a in client.get_trace(ids[0]).info.assessments) == ["MaxToolCalls", "TaskCompletion"]
    assert not any(client.get_trace(t).info.assessments for t in ids[1:4])
