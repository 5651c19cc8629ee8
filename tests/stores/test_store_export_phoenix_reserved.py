"""`tracejudge export --to phoenix` against a real `phoenix serve` (SQLite) on 127.0.0.1: a metric named `note`.

Phoenix keeps the annotation name `note` for its span notes and answers 400 to a whole batch of
annotations holding one. Every export of a run with a metric named `note` (French for a grade) failed,
the other metrics unwritten, and said that the same command would resume. Now that metric is not sent,
said in one line, and the others are annotated.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml
from tracejudge.entrypoints.cli import main

from stores.servers import phoenix_installed, run_loader, sweep_config

if not phoenix_installed():
    pytest.skip("arize-phoenix (the stores extra) is not installed", allow_module_level=True)
pytest.importorskip("openinference.instrumentation.openai")

LOADER = Path(__file__).resolve().parent / "load_phoenix.py"
PROJECT = "reserved-names"


def _spans(url: str) -> list[dict]:
    import httpx

    resp = httpx.get(f"{url}/v1/projects/{PROJECT}/spans", params={"limit": 1000})
    return [] if resp.status_code == 404 else list(resp.json()["data"])


def test_a_metric_named_note_is_not_sent_and_the_others_are_annotated(phoenix_url, tmp_path, capsys):
    import httpx

    sent = json.loads(run_loader(LOADER, phoenix_url, PROJECT, "sequence", "failing").strip().splitlines()[-1])
    deadline = time.monotonic() + 120
    while len(_spans(phoenix_url)) < sent["spans"]:  # (Phoenix inserts what OTLP brings in the background)
        assert time.monotonic() < deadline
        time.sleep(0.2)
    cfg = sweep_config(tmp_path, "phoenix", {"url": phoenix_url, "project": PROJECT}, max_calls=1)
    data = yaml.safe_load(cfg.read_text())
    data["metrics"][1]["name"] = "note"  # TaskCompletion's scores under the key `note`
    cfg.write_text(yaml.safe_dump(data))
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    run = tmp_path / "run"
    capsys.readouterr()
    assert main(["export", str(run), "--to", "phoenix", "--url", phoenix_url]) == 0
    err = capsys.readouterr().err
    assert ("exported 2 annotations to Phoenix (2 new, 0 updated, 0 already there, 0 traces not found, "
            "2 of a metric named 'note' not sent") in err, err
    roots = sorted({json.loads(x)["metadata"]["phoenix"]["root_span_id"] for x in (run / "results.jsonl").read_text().splitlines()})
    got = httpx.get(f"{phoenix_url}/v1/projects/{PROJECT}/span_annotations", params={"span_ids": roots, "limit": 1000}).json()["data"]
    assert sorted((a["span_id"], a["name"]) for a in got) == [(span, "MaxToolCalls") for span in roots]
    assert main(["export", str(run), "--to", "phoenix", "--url", phoenix_url]) == 0
    assert "exported 0 annotations to Phoenix (0 new, 0 updated, 2 already there" in capsys.readouterr().err
