"""The viewer's "Diff vs" links and a case page's "beside" runs between runs that read a trace store go only to runs of
the same store traces (server, experiment or project, filter: `remote.store_identity`), as `compare` pairs only those;
the other runs are listed with their datasets named, not `?`. Real runs against a real `mlflow server` (tests/conftest.py)
and a real `tracejudge view` over HTTP on 127.0.0.1."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest
import yaml
from tracejudge.entrypoints.cli import main

from _runs import http_get as get, view_server
from stores.servers import run_loader

pytest.importorskip("mlflow")
pytest.importorskip("openai")

LOADER = Path(__file__).resolve().parent / "load_mlflow.py"


def _run(runs: Path, name: str, url: str, experiment: str) -> list[str]:
    cfg = {"dataset": {"format": "mlflow-server", "options": {"tracking_uri": url, "experiment": experiment}},
           "metrics": [{"type": "MaxToolCalls", "max_calls": 2}], "run": {"dir": str(runs / name)}}
    path = runs.parent / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    assert main(["run", str(path), "--no-progress"]) in (0, 1)
    return [json.loads(line)["case_id"] for line in (runs / name / "results.jsonl").read_text().splitlines()]


def test_store_runs_pair_only_with_runs_of_the_same_store_traces(mlflow_url, tmp_path, capsys):
    for experiment in ("east", "west"):
        run_loader(LOADER, mlflow_url, experiment, "sequence")
    runs = tmp_path / "runs"
    runs.mkdir()
    ids = _run(runs, "east-1", mlflow_url, "east")
    assert _run(runs, "east-2", mlflow_url, "east") == ids
    _run(runs, "west", mlflow_url, "west")
    capsys.readouterr()
    assert main(["compare", str(runs / "west"), str(runs / "east-1")]) == 2  # (no trace of one is the other's)
    err = " ".join(capsys.readouterr().err.split())
    assert f"read mlflow-server traces at {mlflow_url}, experiment west" in err, err
    assert f"read mlflow-server traces at {mlflow_url}, experiment east" in err, err
    with view_server(str(runs)) as url:
        page = html.unescape(get(url + "/run/east-1")[1])
        assert re.findall(r"Diff vs ([\w-]+)", page) == ["east-2"], page
        west = re.search(r'<li data-run="west">([^<]*)</li>', page)
        assert west is not None, page
        assert "experiment west vs" in west.group(1) and "experiment east" in west.group(1) and "?" not in west.group(1)
        case = html.unescape(get(url + f"/run/east-1/case?id={ids[0]}")[1])
        assert re.findall(r'class="vs-link" href="[^"]*vs=([^"&]+)', case) == ["east-2"]
