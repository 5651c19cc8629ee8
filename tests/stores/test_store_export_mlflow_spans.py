"""`tracejudge export --to mlflow` against a real `mlflow server` (SQLite) on 127.0.0.1: a verdict needs a trace's info, not its spans.

The export read each trace whole (`get_trace`: every span) to find the assessments already on it. Span
data is the bulk of a trace (an agent run's prompts and tool outputs), so a run of thousands of traces
downloaded all of it again, and a trace whose span data could not be read (gone from the artifact
store, or a store this machine cannot read) ended the export. It now reads the trace's info only.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tracejudge.entrypoints.cli import main

pytest.importorskip("mlflow")
pytest.importorskip("openai")
from stores.fault_proxy import FaultProxy  # noqa: E402
from stores.servers import run_loader, sweep_config  # noqa: E402

LOADER = Path(__file__).resolve().parent / "load_mlflow.py"
SPANS = "/mlflow/traces/get"  # (MLflow's span read, `get_trace`; a trace's info is `GET …/traces/<id>`)


def test_an_export_reads_no_span_data_and_a_trace_whose_spans_are_unreadable_gets_its_verdicts(mlflow_url, tmp_path, capsys):
    import mlflow

    ids = json.loads(run_loader(LOADER, mlflow_url, "span-reads", "sequence", "failing").strip().splitlines()[-1])
    cfg = sweep_config(tmp_path, "mlflow-server", {"tracking_uri": mlflow_url, "experiment": "span-reads"}, max_calls=2)
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    capsys.readouterr()
    with FaultProxy(mlflow_url) as proxy:
        proxy.set(match=SPANS, method="GET", mode="garbage")  # span data this machine cannot read
        assert main(["export", str(tmp_path / "run"), "--to", "mlflow", "--tracking-uri", proxy.url]) == 0
        assert "exported 4 assessments to MLflow (4 new, 0 updated, 0 already there, 0 traces not found)" in capsys.readouterr().err
        assert not [p for _, p in proxy.requests if SPANS in p]
        assert main(["export", str(tmp_path / "run"), "--to", "mlflow", "--tracking-uri", proxy.url]) == 0
        assert "exported 0 assessments to MLflow (0 new, 0 updated, 4 already there" in capsys.readouterr().err
    client = mlflow.MlflowClient(tracking_uri=mlflow_url)
    for tid in ids:
        ours = [a for a in client.get_trace(tid).info.assessments if "tracejudge.run" in (a.metadata or {})]
        assert sorted(a.name for a in ours) == ["MaxToolCalls", "TaskCompletion"]
