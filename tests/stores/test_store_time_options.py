"""`start`/`end` of `phoenix` and `mlflow-server` written unquoted in YAML (`start: 2026-12-08T00:51:27Z`), which YAML
reads as a datetime (a date for `2026-12-08`), or given by `--set`: read as the ISO 8601 text they are, a naive one as
UTC. Real servers on 127.0.0.1 (tests/conftest.py), real config files, the CLI in process."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tracejudge.entrypoints.cli import main

from stores.servers import phoenix_installed, run_loader

pytest.importorskip("mlflow")
pytest.importorskip("openai")

STORES = Path(__file__).resolve().parent


def _config(tmp_path: Path, fmt: str, where: str, start: str, end: str) -> Path:
    """A config whose `start`/`end` are written as given, unquoted."""
    path = tmp_path / "times.yaml"
    path.write_text(f"dataset:\n  format: {fmt}\n  options: {{{where}, start: {start}, end: {end}}}\n"
                    "metrics: [{type: MaxToolCalls, max_calls: 2}]\n"
                    f"run: {{dir: {tmp_path / 'run'}}}\n")
    return path


def _case_ids(tmp_path: Path) -> list[str]:
    return sorted(json.loads(line)["case_id"] for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines())


def _check(tmp_path: Path, fmt: str, where: str, ids: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    hour_ago, tomorrow = now - timedelta(hours=1), (now + timedelta(days=1)).date()
    # an aware time (`Z`) and a date: the window holds every trace just written
    cfg = _config(tmp_path, fmt, where, hour_ago.strftime("%Y-%m-%dT%H:%M:%SZ"), tomorrow.isoformat())
    assert main(["run", str(cfg), "--no-progress"]) == 0, capsys.readouterr().err
    assert _case_ids(tmp_path) == sorted(ids)
    # a naive time is UTC: an hour ago in UTC holds them, read as an hour ahead of UTC it would not
    out = tmp_path / "cases.jsonl"
    cfg = _config(tmp_path, fmt, where, hour_ago.replace(tzinfo=None).isoformat(), (now + timedelta(hours=2)).isoformat())
    assert main(["extract", str(cfg), "-o", str(out)]) == 0, capsys.readouterr().err
    assert len(out.read_text().splitlines()) == len(ids)
    # `--set` values are YAML too: a later window is a quiet night, not a config error
    out.unlink()
    capsys.readouterr()
    assert main(["extract", str(cfg), "-o", str(out), "--set", "dataset.options.start=2030-01-01T00:00:00Z",
                 "--set", "dataset.options.end=2030-01-02"]) == 0
    assert "no traces were in the window" in capsys.readouterr().err
    # the example the error for a word suggests works as written, unquoted
    assert main(["extract", str(cfg), "-o", str(out), "--force", "--set", "dataset.options.start=yesterday"]) == 2
    err = capsys.readouterr().err
    example = re.search(r"ISO\s+8601\s+time\s+\((\S+)\)", err)
    assert example is not None, err
    assert main(["extract", str(cfg), "-o", str(out), "--force", "--set", f"dataset.options.start={example.group(1)}",
                 "--set", f"dataset.options.end={tomorrow.isoformat()}"]) == 0, capsys.readouterr().err


def test_mlflow_server_times_written_unquoted(mlflow_url, tmp_path, capsys):
    ids = json.loads(run_loader(STORES / "load_mlflow.py", mlflow_url, "times", "sequence", "failing").strip().splitlines()[-1])
    _check(tmp_path, "mlflow-server", f'tracking_uri: "{mlflow_url}", experiment: times', ids, capsys)


@pytest.mark.skipif(not phoenix_installed(), reason="arize-phoenix (the stores extra) is not installed")
def test_phoenix_times_written_unquoted(phoenix_url, tmp_path, capsys):
    from stores.phoenix_recordings import held_spans

    sent = json.loads(run_loader(STORES / "load_phoenix.py", phoenix_url, "times", "sequence", "failing").strip().splitlines()[-1])
    import time

    deadline = time.monotonic() + 120
    while held_spans(phoenix_url, "times") < sent["spans"]:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    _check(tmp_path, "phoenix", f'url: "{phoenix_url}", project: times', sent["ids"], capsys)
