"""A label made by a kind of source the reader does not know is kept among the others' labels, and said.

Each store names who made a label: Langfuse a score's `source` (`ANNOTATION`, `API`, `EVAL`), Phoenix an annotation's
`annotator_kind` (`HUMAN`, `LLM`, `CODE`), MLflow an assessment's `source.source_type` (`HUMAN`, `LLM_JUDGE`, `CODE`,
and `SOURCE_TYPE_UNSPECIFIED`, which MLflow's own `AssessmentSource` accepts). Before, a label of any other kind
(MLflow's unspecified source, a kind a store adds in a later version, MLflow's older name `AI_JUDGE` of a trace
logged before it was renamed) was dropped without a word. Now it is `metadata.other_labels.<name>` (never a person's:
who made it is not known), its source `unknown:<the store's word>` (`unknown` when it names none), and the first of
each kind is warned about (`store_labels.unknown_source`); `AI_JUDGE` is an `llm`'s.

Langfuse: a trace's API JSON (`tests/frameworks/langfuse_api.py` from recorded OTLP) with scores as `score_v1` lists
them; MLflow: a recorded trace (`tests/data/mlflow-agents`, `Trace.to_json()`) with assessments as MLflow's
`Feedback.to_dictionary()` writes them; Phoenix: annotations as its REST API lists them (`SpanAnnotation`), read by
the reader's own `_label` (a running Phoenix refuses a kind it does not know when the annotation is made).
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest
from helpers import extract_path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frameworks"))
try:
    from langfuse_api import score_v1, trace_with_full_details
finally:
    sys.path.pop(0)

DATA = Path(__file__).resolve().parents[1] / "data"


def _said(caplog: pytest.LogCaptureFixture, store: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and r.getMessage().startswith(f"{store}: a label made by")]


def test_langfuse_a_score_of_an_unknown_source_is_an_other_label(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("langfuse.api")
    caplog.set_level(logging.WARNING, logger="tracejudge")
    lines = (DATA / "langfuse-api-observe" / "lf-manual.otlp.jsonl").read_text().splitlines()
    (trace,) = trace_with_full_details([json.loads(x) for x in lines])
    trace["scores"] = [score_v1(trace["id"], "correct", True, "BOOLEAN", author="u1"),
                       score_v1(trace["id"], "correct", False, "BOOLEAN", source="REVIEW_QUEUE_V9"),
                       {**score_v1(trace["id"], "helpful", 3), "source": None}]
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(trace) + "\n")
    (case,) = extract_path(path, "langfuse")
    assert (case.metadata["labels"], case.metadata["label_sources"]) == ({"correct": True}, {"correct": "human"})
    assert case.metadata["other_labels"] == {"correct": False, "helpful": 3.0}
    assert case.metadata["other_label_sources"] == {"correct": "unknown:REVIEW_QUEUE_V9", "helpful": "unknown"}
    said = _said(caplog, "langfuse")
    assert len(said) == 2 and said[0].startswith("langfuse: a label made by 'REVIEW_QUEUE_V9', a kind tracejudge does not know "
                                                 "(ANNOTATION, API, EVAL are): kept in `metadata.other_labels` with source "
                                                 "'unknown:REVIEW_QUEUE_V9', not read as a person's"), said


def test_mlflow_unspecified_and_older_sources(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("mlflow")
    from mlflow.entities import AssessmentSource, Feedback

    caplog.set_level(logging.WARNING, logger="tracejudge")
    trace = json.loads((DATA / "mlflow-agents" / "agents-tools.mlflow.jsonl").read_text())
    tid = trace["info"]["trace_id"]
    older = Feedback(name="relevance", value=0.5, source=AssessmentSource(source_type="LLM_JUDGE", source_id="judge"), trace_id=tid).to_dictionary()
    older["source"]["source_type"] = "AI_JUDGE"  # (as a trace logged before MLflow renamed it keeps it)
    trace["info"]["assessments"] = [
        Feedback(name="correct", value=True, source=AssessmentSource(source_type="HUMAN", source_id="r@example.com"), trace_id=tid).to_dictionary(),
        Feedback(name="safe", value=True, source=AssessmentSource(source_type="SOURCE_TYPE_UNSPECIFIED", source_id="x"), trace_id=tid).to_dictionary(),
        older]
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(trace) + "\n")
    (case,) = extract_path(path, "mlflow")
    assert case.metadata["labels"] == {"correct": True}
    assert case.metadata["other_labels"] == {"safe": True, "relevance": 0.5}
    assert case.metadata["other_label_sources"] == {"safe": "unknown:SOURCE_TYPE_UNSPECIFIED", "relevance": "llm"}
    assert [s.split(",")[0] for s in _said(caplog, "mlflow")] == ["mlflow: a label made by 'SOURCE_TYPE_UNSPECIFIED'"]


def test_phoenix_an_annotation_of_an_unknown_kind_is_an_other_label(caplog: pytest.LogCaptureFixture) -> None:
    pytest.importorskip("httpx")
    from tracejudge.stages.extract.phoenix import _label
    from tracejudge.stages.extract.store_labels import label_metadata

    caplog.set_level(logging.WARNING, logger="tracejudge")

    def annotation(kind: str, name: str, label: str | None, score: float | None) -> dict:
        return {"id": f"a-{name}", "span_id": "5f1c", "name": name, "annotator_kind": kind, "result": {"label": label, "score": score,
                "explanation": None}, "metadata": {}, "identifier": "", "source": "API", "user_id": None,
                "created_at": "2025-06-01T12:00:00+00:00", "updated_at": "2025-06-01T12:00:00+00:00"}

    got = [_label(annotation("HUMAN", "correct", "yes", 1.0)), _label(annotation("REVIEWER", "correct", "no", 0.0)),
           _label(annotation("LLM", "relevance", None, 0.25))]
    assert all(g is not None for g in got)
    meta = label_metadata([g for g in got if g is not None])
    assert (meta["labels"], meta["other_labels"]) == ({"correct": 1.0}, {"correct": 0.0, "relevance": 0.25})
    assert meta["other_label_sources"] == {"correct": "unknown:REVIEWER", "relevance": "llm"}
    assert [s.split(",")[0] for s in _said(caplog, "phoenix")] == ["phoenix: a label made by 'REVIEWER'"]
