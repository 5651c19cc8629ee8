"""MLflow as a source and a sink, against a real `mlflow server` (SQLite) on 127.0.0.1.

Traces are made by the plain OpenAI loop under `mlflow.openai.autolog()` against the loopback fake
OpenAI server, read by `dataset.format: mlflow-server`, judged, and written back as assessments
that MLflow's own client reads.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tracejudge.entrypoints.cli import main

pytest.importorskip("mlflow")
pytest.importorskip("openai")
from stores.servers import free_port, sweep_config, mlflow_server  # noqa: E402

LOADER = Path(__file__).resolve().parent / "stores" / "load_mlflow.py"
TASKS = ["sequence", "failing", "parallel"]


def _load(url: str, *tasks: str) -> list[str]:
    out = subprocess.run([sys.executable, str(LOADER), url, "agents", *tasks], capture_output=True, text=True, timeout=180, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mlflow")
    with mlflow_server(folder) as url:
        yield url, _load(url, *TASKS)


def _config(tmp_path: Path, url: str, **options) -> Path:
    return sweep_config(tmp_path, "mlflow-server", {"tracking_uri": url, "experiment": "agents", **options}, max_calls=2)


def _assessments(url: str, trace_id: str) -> list:
    import mlflow

    return [a for a in mlflow.MlflowClient(tracking_uri=url).get_trace(trace_id).info.assessments if "tracejudge.run" in (a.metadata or {})]


def test_traces_in_verdicts_back_once(server, tmp_path, capsys):
    url, ids = server
    cfg = _config(tmp_path, url)
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["case_id"] for r in results) == sorted(ids)
    by_id = {r["case_id"]: r for r in results}
    assert by_id[ids[0]]["scores"]["MaxToolCalls"]["passed"] is True  # sequence: 2 calls
    assert all(r["status"] == "ok" for r in results)
    capsys.readouterr()
    assert main(["export", str(tmp_path / "run"), "--to", "mlflow", "--tracking-uri", url]) == 0
    assert "exported 6 assessments" in capsys.readouterr().err
    for tid in ids:
        got = {a.name: a for a in _assessments(url, tid)}
        assert set(got) == {"MaxToolCalls", "TaskCompletion"}
        want = by_id[tid]["scores"]
        assert got["TaskCompletion"].source.source_type == "LLM_JUDGE" and got["TaskCompletion"].source.source_id == "gpt-4o-mini"
        assert got["MaxToolCalls"].source.source_type == "CODE" and got["MaxToolCalls"].source.source_id == "tracejudge"
        assert got["MaxToolCalls"].value == want["MaxToolCalls"]["value"]
        assert got["TaskCompletion"].rationale == want["TaskCompletion"]["reason"]
    # Again: nothing is written twice.
    assert main(["export", str(tmp_path / "run"), "--to", "mlflow", "--tracking-uri", url]) == 0
    assert "exported 0 assessments to MLflow (6 already there" in capsys.readouterr().err
    assert all(len(_assessments(url, tid)) == 2 for tid in ids)


def test_nightly_sweep_reads_only_what_is_new(server, tmp_path):
    url, ids = server
    cfg = _config(tmp_path, url, start="last_run", overlap_s=0)
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    new = _load(url, "multiturn")
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [s["results"] for s in summary["segments"]] == [len(ids), 1]
    lines = [json.loads(x)["case_id"] for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert lines[-1] == new[0] and len(lines) == len(ids) + 1


def test_a_down_server_fails_in_one_line_with_exit_3(server, tmp_path, capsys, monkeypatch):
    url, _ = server
    assert main(["run", str(_config(tmp_path, f"http://user:s3cret@127.0.0.1:{free_port()}")), "--no-progress"]) == 2
    assert "written to manifest.json" in capsys.readouterr().err  # a token in the URL is refused, not recorded
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "s3cret")
    dead = f"http://127.0.0.1:{free_port()}"
    assert main(["run", str(_config(tmp_path, dead)), "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert "cannot be reached" in err and "s3cret" not in err
    assert not (tmp_path / "run" / "results.jsonl").exists() or not (tmp_path / "run" / "results.jsonl").read_text()
    assert main(["run", str(_config(tmp_path, url)), "--no-progress"]) in (0, 1)
    capsys.readouterr()
    assert main(["export", str(tmp_path / "run"), "--to", "mlflow", "--tracking-uri", dead]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: http://127.0.0.1:") and "s3cret" not in err
    assert not any("s3cret" in p.read_text(errors="replace") for p in (tmp_path / "run").rglob("*") if p.is_file())
