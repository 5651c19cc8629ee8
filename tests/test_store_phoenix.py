"""Phoenix as a source and a sink, against a real `phoenix serve` (SQLite) on 127.0.0.1.

Traces are made by the plain OpenAI loop under OpenInference (OTLP/HTTP into Phoenix), read by
`dataset.format: phoenix`, judged, and written back as span annotations on each trace's root span,
read back through `arize-phoenix-client`.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tracejudge.entrypoints.cli import main

if importlib.util.find_spec("phoenix") is None or importlib.util.find_spec("phoenix.server") is None:
    pytest.skip("arize-phoenix (the stores extra) is not installed", allow_module_level=True)
pytest.importorskip("openinference.instrumentation.openai")
from stores.servers import free_port, sweep_config, phoenix_server  # noqa: E402

LOADER = Path(__file__).resolve().parent / "stores" / "load_phoenix.py"


def _spans(url: str) -> int:
    """Spans Phoenix holds in the project (0 before its first span made it)."""
    import httpx
    from phoenix.client import Client

    try:
        return len(Client(base_url=url).spans.get_spans(project_identifier="agents", limit=10_000))
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code == 404:
            return 0
        raise


def _load(url: str, *tasks: str) -> list[str]:
    """Trace `tasks` into Phoenix and wait until it has stored every span: it takes OTLP in and inserts in the background."""
    before = _spans(url)
    out = subprocess.run([sys.executable, str(LOADER), url, "agents", *tasks], capture_output=True, text=True, timeout=180, check=True)
    sent = json.loads(out.stdout.strip().splitlines()[-1])
    deadline = time.monotonic() + 120
    while (held := _spans(url)) < before + sent["spans"]:
        assert time.monotonic() < deadline, f"Phoenix holds {held} spans, {before + sent['spans']} were sent"
        time.sleep(0.2)
    return sent["ids"]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with phoenix_server(tmp_path_factory.mktemp("phoenix")) as url:
        yield url, _load(url, "sequence", "failing", "parallel")


def _config(tmp_path: Path, url: str, **options) -> Path:
    return sweep_config(tmp_path, "phoenix", {"url": url, "project": "agents", **options}, max_calls=1)


def test_spans_in_annotations_back_on_the_root_spans_once(server, tmp_path, capsys):
    from phoenix.client import Client

    url, ids = server
    assert main(["run", str(_config(tmp_path, url, page_size=2)), "--no-progress"]) in (0, 1)  # two pages of roots
    results = {json.loads(x)["case_id"]: json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()}
    assert sorted(results) == sorted(ids)
    calls = {cid: r["scores"]["MaxToolCalls"]["details"]["count"] for cid, r in results.items()}
    assert [calls[i] for i in ids] == [2, 1, 2]  # sequence, failing, parallel: read from the tool spans
    capsys.readouterr()
    assert main(["export", str(tmp_path / "run"), "--to", "phoenix", "--url", url]) == 0
    assert "exported 6 annotations to Phoenix (0 already there, 0 traces not found)" in capsys.readouterr().err
    px = Client(base_url=url)
    roots = {s["context"]["trace_id"]: s["context"]["span_id"] for s in px.spans.get_spans(project_identifier="agents", parent_id="null", limit=100)}
    for cid, r in results.items():
        got = {a["name"]: a for a in px.spans.get_span_annotations(span_ids=[roots[cid]], project_identifier="agents")}
        assert set(got) == {"MaxToolCalls", "TaskCompletion"}
        for name, score in r["scores"].items():
            assert got[name]["result"]["score"] == score["value"]
            assert got[name]["result"]["label"] == ("pass" if score["passed"] else "fail")
            assert got[name]["result"]["explanation"] == score["reason"]
        assert got["TaskCompletion"]["annotator_kind"] == "LLM" and got["MaxToolCalls"]["annotator_kind"] == "CODE"
    assert main(["export", str(tmp_path / "run"), "--to", "phoenix", "--url", url]) == 0
    assert "exported 0 annotations to Phoenix (6 already there" in capsys.readouterr().err
    assert len(px.spans.get_span_annotations(span_ids=list(roots.values()), project_identifier="agents")) == 6


def test_nightly_sweep_reads_only_what_is_new(server, tmp_path):
    url, ids = server
    cfg = _config(tmp_path, url, start="last_run", overlap_s=0)
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    new = _load(url, "multiturn")
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    segments = json.loads((tmp_path / "run" / "summary.json").read_text())["segments"]
    assert [s["results"] for s in segments] == [len(ids), 1]
    assert json.loads((tmp_path / "run" / "results.jsonl").read_text().splitlines()[-1])["case_id"] == new[0]


def test_a_down_phoenix_is_one_line_and_exit_3(server, tmp_path, capsys, monkeypatch):
    url, _ = server
    monkeypatch.setenv("PHOENIX_API_KEY", "px-secret-key")
    dead = f"http://127.0.0.1:{free_port()}"
    assert main(["run", str(_config(tmp_path, dead)), "--no-progress"]) == 3
    err = capsys.readouterr().err
    assert f"{dead} cannot be reached" in err and "px-secret-key" not in err
    assert main(["run", str(_config(tmp_path, url, project="no-such-project")), "--no-progress"]) == 3  # an error answer, not zero cases
    assert "answered HTTP 404" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "run"), "--to", "phoenix", "--url", dead]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "px-secret-key" not in err
    assert not any("px-secret-key" in p.read_text(errors="replace") for p in (tmp_path / "run").rglob("*") if p.is_file())


def test_a_span_listed_twice_is_read_once(server):
    # As the `otel` format reads a span exported twice (an exporter's retry, an export copied): once, not two calls.
    # Phoenix's own store holds a span id once, so the copy is made here, in the listing `read` groups (`trace_group`).
    from tracejudge.stages.extract import otel, phoenix

    url, ids = server
    px, _ = phoenix.client(url)
    listed = phoenix.get(px, url, "v1/projects/agents/spans", {"limit": 1000, "trace_id": [ids[0]]})["data"]  # as `read` lists them
    where = f"{url}/projects/agents"
    single = phoenix.adapt(phoenix.trace_group(ids[0], [phoenix.to_span(s, where, 1) for s in listed], 1), otel.Options())
    twice = phoenix.adapt(phoenix.trace_group(ids[0], [phoenix.to_span(s, where, 1) for s in listed * 2], 1), otel.Options())
    assert [c.name for c in twice.trace.tool_calls()] == ["get_weather", "convert_temperature"]  # the `sequence` recording's
    assert twice.model_dump() == single.model_dump()
    assert "duplicates" not in twice.metadata["otel"]
