"""Format `mlflow-server`: feedback people logged on a trace is the case's labels; tracejudge's own exported verdicts are not.

Against a real `mlflow server` (SQLite) on 127.0.0.1: traces of the plain OpenAI loop under `mlflow.openai.autolog()`,
judged, exported back (`tracejudge export --to mlflow`: `TaskCompletion` `LLM_JUDGE`, `MaxToolCalls` `CODE`, metadata
`tracejudge.run`), then assessed through MLflow's own API as a team does: `mlflow.log_feedback` with a `HUMAN` source,
another judge's `LLM_JUDGE` feedback, and a reviewer's `mlflow.override_feedback` of one of ours. Before, the reader
dropped every assessment: no `metadata.labels`.

- `HUMAN` feedback is `metadata.labels.<name>` (`label_sources` `human`); another judge's is `metadata.other_labels`;
- tracejudge's exported verdicts come back as no label of any kind (circular); a reviewer's override of one is the
  reviewer's label, and the verdict it overrode (marked invalid) is none;
- two reviewers' feedback of one name that differs is a list, which `judge.labels.fields` names and takes no label from;
- end to end, `tracejudge calibrate --labels-field TaskCompletion=metadata.labels.correct` pairs the label with the verdict.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tracejudge.entrypoints.cli import main

pytest.importorskip("mlflow")
pytest.importorskip("openai")
from stores.servers import run_loader, sweep_config  # noqa: E402

LOADER = Path(__file__).resolve().parent / "load_mlflow.py"


@pytest.fixture(scope="module")
def server(mlflow_url):
    """The session's MLflow server (tests/conftest.py) and two traces in its experiment `labelled`."""
    return mlflow_url, json.loads(run_loader(LOADER, mlflow_url, "labelled", "sequence", "failing").strip().splitlines()[-1])


def _results(run: Path) -> dict[str, dict]:
    return {r["case_id"]: r for r in (json.loads(x) for x in (run / "results.jsonl").read_text().splitlines())}


def test_peoples_feedback_is_labels_and_the_exported_verdicts_are_not(server, tmp_path, capsys):
    import mlflow
    from mlflow.entities import AssessmentSource

    url, (first, second) = server
    night = tmp_path / "night"
    night.mkdir()
    assert main(["run", str(sweep_config(night, "mlflow-server", {"tracking_uri": url, "experiment": "labelled"}, max_calls=1)),
                 "--no-progress"]) in (0, 1)
    assert main(["export", str(night / "run"), "--to", "mlflow", "--tracking-uri", url]) == 0
    assert "exported 4 assessments to MLflow (4 new" in capsys.readouterr().err

    mlflow.set_tracking_uri(url)
    person = [AssessmentSource(source_type="HUMAN", source_id=f"reviewer-{n}@example.com") for n in (1, 2)]
    mlflow.log_feedback(trace_id=first, name="correct", value=True, source=person[0], rationale="answered the question")
    mlflow.log_feedback(trace_id=first, name="relevance", value=0.25, source=AssessmentSource(source_type="LLM_JUDGE", source_id="other-judge"))
    ours = next(a for a in mlflow.get_trace(first).info.assessments if a.name == "TaskCompletion")
    assert ours.metadata["tracejudge.run"]  # (the export's mark)
    mlflow.override_feedback(trace_id=first, assessment_id=ours.assessment_id, value=False, source=person[0], rationale="it did not")
    mlflow.log_feedback(trace_id=second, name="correct", value=False, source=person[0])
    mlflow.log_feedback(trace_id=second, name="correct", value=True, source=person[1])

    # A new read (another run directory: the night's results keep what the store held then).
    cfg = sweep_config(tmp_path, "mlflow-server", {"tracking_uri": url, "experiment": "labelled"}, max_calls=1)
    out = tmp_path / "calibrate.json"
    capsys.readouterr()
    code = main(["calibrate", str(cfg), "--labels-field", "TaskCompletion=metadata.labels.correct", "--json", str(out)])
    assert code in (0, 1), capsys.readouterr()
    results = _results(tmp_path / "run")
    meta = results[first]["metadata"]
    assert meta["labels"] == {"correct": True, "TaskCompletion": False}  # the reviewer's override, not the verdict it overrode
    assert meta["label_sources"] == {"correct": "human", "TaskCompletion": "human"}
    assert meta["other_labels"] == {"relevance": 0.25} and meta["other_label_sources"] == {"relevance": "llm"}
    assert results[second]["metadata"]["labels"] == {"correct": [False, True]}
    assert "MaxToolCalls" not in results[first]["metadata"].get("other_labels", {})
    assert not {"TaskCompletion", "MaxToolCalls"} & {*results[second]["metadata"].get("labels", {}),
                                                    *results[second]["metadata"].get("other_labels", {})}
    got = json.loads(out.read_text())
    assert got["metrics"]["TaskCompletion"]["n"] == 1
    assert f"case {second!r} metadata.labels.correct: label: the case's 2 labels of this name disagree: false, true; none is taken, " \
           "as with two conflicting lines of a labels file" in got["problems"]
