"""Phoenix faults found by a round trip against a real `phoenix serve` (SQLite) on 127.0.0.1, each fixed and kept so.

- `run --force` keeps the run key: an export after it writes no annotation twice;
- the health probe sends `PHOENIX_API_KEY` (a Phoenix behind an auth proxy);
- project names with `#`, `?`, `/` or a space are read and annotated;
- `Latency` is computed from the root span's start and end.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest
from tracejudge.entrypoints.cli import main

from stores.servers import phoenix_installed, run_loader, sweep_config

if not phoenix_installed():
    pytest.skip("arize-phoenix (the stores extra) is not installed", allow_module_level=True)
pytest.importorskip("openinference.instrumentation.openai")
from stores.fault_proxy import AuthProxy  # noqa: E402

LOADER = Path(__file__).resolve().parent / "load_phoenix.py"
PROJECTS = ["demo#staging", "team/agents", "demo?x=1", "my project"]


def _spans(url: str, project: str) -> int:
    """Spans Phoenix holds in `project` (0 before its first span made it), the project named by its id: no name escape
    reaches a project with `/` in its name, and Phoenix's client does not escape `#` or `?`."""
    import httpx

    found = [p["id"] for p in httpx.get(f"{url}/v1/projects", params={"limit": 1000}).json()["data"] if p["name"] == project]
    if not found:
        return 0
    return len(httpx.get(f"{url}/v1/projects/{found[0]}/spans", params={"limit": 1000}).json()["data"])


def _load(url: str, *tasks: str, project: str) -> list[str]:
    """Trace `tasks` into Phoenix's `project` and wait until it has stored every span (it inserts in the background)."""
    before = _spans(url, project)
    sent = json.loads(run_loader(LOADER, url, project, *tasks).strip().splitlines()[-1])
    deadline = time.monotonic() + 120
    while _spans(url, project) < before + sent["spans"]:
        assert time.monotonic() < deadline, f"Phoenix did not store the {sent['spans']} spans sent"
        time.sleep(0.2)
    return sent["ids"]


@pytest.fixture
def url(phoenix_url):
    """The session's Phoenix server (tests/conftest.py): these tests trace into projects of their own names."""
    return phoenix_url


def _results(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]


def _annotations(url: str, project: str, run: Path) -> list[dict]:
    """The annotations on the root spans of `run`'s results (the project named by its id, as in `_spans`)."""
    import httpx

    roots = sorted({r["metadata"]["phoenix"]["root_span_id"] for r in _results(run)})
    pid = next(p["id"] for p in httpx.get(f"{url}/v1/projects", params={"limit": 1000}).json()["data"] if p["name"] == project)
    return list(httpx.get(f"{url}/v1/projects/{pid}/span_annotations", params={"span_ids": roots, "limit": 1000}).json()["data"])


def test_a_forced_resume_writes_no_annotation_twice(url, tmp_path, capsys):
    _load(url, "sequence", "failing", project="forced")
    run = tmp_path / "run"
    cfg = sweep_config(tmp_path, "phoenix", {"url": url, "project": "forced"}, max_calls=1)
    assert main(["run", str(cfg), "--no-progress", "--set", "dataset.limit=1"]) in (0, 1)
    assert main(["export", str(run), "--to", "phoenix", "--url", url]) == 0
    assert main(["run", str(cfg), "--no-progress", "--force"]) in (0, 1)
    capsys.readouterr()
    assert main(["export", str(run), "--to", "phoenix", "--url", url]) == 0
    assert "exported 2 annotations to Phoenix (2 new, 0 updated, 2 already there" in capsys.readouterr().err
    per = Counter((a["span_id"], a["name"]) for a in _annotations(url, "forced", run))
    assert len(per) == 4 and set(per.values()) == {1}


def test_the_probe_sends_the_api_key(url, tmp_path, capsys, monkeypatch):
    _load(url, "sequence", project="authed")
    with AuthProxy(url, "px-key") as proxy:
        cfg = sweep_config(tmp_path, "phoenix", {"url": proxy.url, "project": "authed"}, max_calls=1)
        monkeypatch.setenv("PHOENIX_API_KEY", "px-key")
        assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
        assert main(["export", str(tmp_path / "run"), "--to", "phoenix", "--url", proxy.url]) == 0
    assert "exported 2 annotations to Phoenix (2 new" in capsys.readouterr().err


@pytest.mark.parametrize("project", PROJECTS)
def test_project_names_with_reserved_characters_are_read_and_annotated(url, tmp_path, capsys, project):
    ids = _load(url, "sequence", project=project)
    run = tmp_path / "run"
    cfg = sweep_config(tmp_path, "phoenix", {"url": url, "project": project}, max_calls=1)
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    results = _results(run)
    assert [r["case_id"] for r in results] == ids and results[0]["metadata"]["phoenix"]["project"] == project
    capsys.readouterr()
    assert main(["export", str(run), "--to", "phoenix", "--url", url]) == 0
    assert "exported 2 annotations to Phoenix (2 new" in capsys.readouterr().err
    assert len(_annotations(url, project, run)) == 2


def test_latency_is_the_root_spans_duration(url, tmp_path):
    import yaml
    from phoenix.client import Client

    ids = _load(url, "sequence", "parallel", project="timed")
    cfg = sweep_config(tmp_path, "phoenix", {"url": url, "project": "timed"}, max_calls=1)
    config = yaml.safe_load(cfg.read_text())
    cfg.write_text(yaml.safe_dump({**config, "metrics": [{"type": "Latency", "max_seconds": 100}]}))
    assert main(["run", str(cfg), "--no-progress"]) == 0
    roots = {s["context"]["trace_id"]: s for s in Client(base_url=url).spans.get_spans(project_identifier="timed", parent_id="null", limit=100)}
    assert sorted(roots) == sorted(ids)
    for r in _results(tmp_path / "run"):
        root = roots[r["case_id"]]
        took = (datetime.fromisoformat(root["end_time"]) - datetime.fromisoformat(root["start_time"])).total_seconds()
        assert r["scores"]["Latency"]["passed"] is True
        assert r["scores"]["Latency"]["details"]["latency_s"] == pytest.approx(took, abs=1e-3)
