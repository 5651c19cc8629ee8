"""Format `phoenix`: the annotations people made on a trace are the case's labels; tracejudge's own exported verdicts are not.

Against a real `phoenix serve` (SQLite) on 127.0.0.1: traces of the plain OpenAI loop (OTLP), judged, exported back
(`tracejudge export --to phoenix`: `TaskCompletion` `LLM`, `MaxToolCalls` `CODE`, on the root spans), then annotated
through Phoenix's own client as a team does: people (`HUMAN`) on the root span and on the trace, another evaluator
(`LLM`), a note. Before, the reader dropped every annotation: no `metadata.labels`.

- a `HUMAN` annotation of the root span or of the trace is `metadata.labels.<name>` (its score, else its label),
  `label_sources` `human`; an `LLM` one of another evaluator is `metadata.other_labels`; a note is none;
- the verdicts tracejudge exported (identifier `tracejudge:…`) come back as no label of any kind: calibrating the judge
  against its own past verdicts would be circular;
- two annotators' labels of one name that differ are a list, which `judge.labels.fields` names and takes no label from;
- end to end, `judge.labels.fields: {TaskCompletion: metadata.labels.correct}` pairs the label with the verdict.
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
PROJECT = "labelled"


def _spans(url: str) -> int:
    import httpx

    got = httpx.get(f"{url}/v1/projects/{PROJECT}/spans", params={"limit": 1000})
    return 0 if got.status_code == 404 else len(got.json()["data"])


@pytest.fixture(scope="module")
def server(phoenix_url):
    """The session's Phoenix server (tests/conftest.py) holding two traces (`sequence`, `failing`) in `PROJECT`, every span stored."""
    url = phoenix_url
    sent = json.loads(run_loader(LOADER, url, PROJECT, "sequence", "failing").strip().splitlines()[-1])
    deadline = time.monotonic() + 120
    while _spans(url) < sent["spans"]:
        assert time.monotonic() < deadline, "Phoenix did not store the spans sent"
        time.sleep(0.2)
    return url, sent["ids"]


def _results(run: Path) -> dict[str, dict]:
    return {r["case_id"]: r for r in (json.loads(x) for x in (run / "results.jsonl").read_text().splitlines())}


def test_peoples_annotations_are_labels_and_the_exported_verdicts_are_not(server, tmp_path, capsys):
    from phoenix.client import Client

    url, (first, second) = server
    night = tmp_path / "night"
    night.mkdir()
    assert main(["run", str(sweep_config(night, "phoenix", {"url": url, "project": PROJECT}, max_calls=1)), "--no-progress"]) in (0, 1)
    assert main(["export", str(night / "run"), "--to", "phoenix", "--url", url]) == 0
    assert "exported 4 annotations to Phoenix (4 new" in capsys.readouterr().err
    roots = {t: r["metadata"]["phoenix"]["root_span_id"] for t, r in _results(night / "run").items()}

    px = Client(base_url=url)
    px.spans.add_span_annotation(span_id=roots[first], annotation_name="correct", annotator_kind="HUMAN", label="yes", score=1.0,
                                 identifier="ann-1", sync=True)
    px.spans.add_span_annotation(span_id=roots[first], annotation_name="relevance", annotator_kind="LLM", score=0.25,
                                 explanation="another evaluator", sync=True)
    px.spans.add_span_note(span_id=roots[first], note="looked at this one")
    px.traces.add_trace_annotation(trace_id=first, annotation_name="verdict", annotator_kind="HUMAN", label="pass", sync=True)
    for who, label in (("ann-1", "pass"), ("ann-2", "fail")):  # two people, one name: both kept
        px.spans.add_span_annotation(span_id=roots[second], annotation_name="correct", annotator_kind="HUMAN", label=label,
                                     identifier=who, sync=True)

    # A new read (another run directory: the night's results keep what the store held then).
    cfg = sweep_config(tmp_path, "phoenix", {"url": url, "project": PROJECT}, max_calls=1)
    config = yaml.safe_load(cfg.read_text())
    config["judge"]["labels"] = {"fields": {"TaskCompletion": "metadata.labels.correct"}}
    cfg.write_text(yaml.safe_dump(config))
    assert main(["run", str(cfg), "--no-progress"]) in (0, 1)
    results = _results(tmp_path / "run")
    meta = results[first]["metadata"]
    assert meta["labels"] == {"correct": 1.0, "verdict": "pass"} and meta["label_sources"] == {"correct": "human", "verdict": "human"}
    assert meta["other_labels"] == {"relevance": 0.25} and meta["other_label_sources"] == {"relevance": "llm"}
    assert results[second]["metadata"]["labels"] == {"correct": ["pass", "fail"]}
    for r in results.values():  # the exported verdicts: no label of any kind
        assert not {"TaskCompletion", "MaxToolCalls"} & {*r["metadata"].get("labels", {}), *r["metadata"].get("other_labels", {})}
    block = json.loads((tmp_path / "run" / "summary.json").read_text())["labels"]
    assert (block["total_labels"], block["matched"]) == (1, 1)
    assert block["metrics"]["TaskCompletion"]["n"] == 1
    assert block["problems"] == [f"case {second!r} metadata.labels.correct: label: the case's 2 labels of this name disagree: pass, fail; "
                                 "none is taken, as with two conflicting lines of a labels file"]
