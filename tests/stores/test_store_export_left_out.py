"""`tracejudge export --to mlflow` / `--to phoenix` against real servers on 127.0.0.1: a results line edited by hand.

A line of results.jsonl whose score is NaN (a hand edit) holds no result the readers use (`result_shape`). `--to csv`
and `--to parquet` leave it out with a warning naming file, line and field; the store exports left it out unsaid, so
the store quietly lacked that trace's verdicts. They now warn the same way.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from tracejudge.entrypoints.cli import main

from stores.servers import phoenix_installed, run_loader, sweep_config

HERE = Path(__file__).resolve().parent
WARNING = "warning: 1 line(s) of results.jsonl are not results and were left out of the export: "


def _edit_second_line(run: Path) -> str:
    """Give the second result line's first score the value NaN; what the warning says of it (`FILE:2: field: …`)."""
    lines = (run / "results.jsonl").read_text().splitlines()
    second = json.loads(lines[1])
    name = next(iter(second["scores"]))
    second["scores"][name]["value"] = 12345.25  # a number no result holds, replaced by the edit's text
    lines[1] = json.dumps(second).replace("12345.25", "NaN")
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    return f"{run / 'results.jsonl'}:2: scores.{name}.value: NaN is not a number a score can hold"


def _export_edited(cfg: Path, run: Path, capsys: pytest.CaptureFixture[str], *export: str) -> None:
    """Run `cfg` into `run`, edit its second line, export it (`export`: `--to KIND …`): the warning names the line."""
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    where = _edit_second_line(run)
    capsys.readouterr()
    assert main(["export", str(run), *export]) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert WARNING in err and where in err, err
    # (the other trace's two verdicts; the edited line's none)
    assert f"exported 2 {'assessments to MLflow' if 'mlflow' in export else 'annotations to Phoenix'} (2 new," in err


def test_an_mlflow_export_names_a_line_it_leaves_out(mlflow_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("mlflow")
    pytest.importorskip("openai")
    run_loader(HERE / "load_mlflow.py", mlflow_url, "left-out", "sequence", "failing")
    cfg = sweep_config(tmp_path, "mlflow-server", {"tracking_uri": mlflow_url, "experiment": "left-out"}, max_calls=2)
    _export_edited(cfg, tmp_path / "run", capsys, "--to", "mlflow", "--tracking-uri", mlflow_url)


def test_a_phoenix_export_names_a_line_it_leaves_out(phoenix_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not phoenix_installed():
        pytest.skip("arize-phoenix (the stores extra) is not installed")
    pytest.importorskip("openinference.instrumentation.openai")
    import httpx

    project = "left-out"
    sent = json.loads(run_loader(HERE / "load_phoenix.py", phoenix_url, project, "sequence", "failing").strip().splitlines()[-1])
    deadline = time.monotonic() + 120
    while True:  # (Phoenix inserts what OTLP brings in the background)
        resp = httpx.get(f"{phoenix_url}/v1/projects/{project}/spans", params={"limit": 1000})
        if resp.status_code == 200 and len(resp.json()["data"]) >= sent["spans"]:
            break
        assert time.monotonic() < deadline
        time.sleep(0.2)
    cfg = sweep_config(tmp_path, "phoenix", {"url": phoenix_url, "project": project}, max_calls=1)
    _export_edited(cfg, tmp_path / "run", capsys, "--to", "phoenix", "--url", phoenix_url)
