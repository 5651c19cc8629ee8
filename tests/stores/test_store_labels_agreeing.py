"""Labels of one name that several reviewers gave a trace in a store: when they agree, they are the label.

Before, two reviewers' labels of one name were the list of their values whatever they said, and
`judge.labels.fields` refused any list (`[true, true] is not a label`): two people who agreed counted as a conflict,
and the case had no label. Now (`store_labels`, `judge.labels._field_value`):

- labels of one name that all give the same value are that value, `label_sources.<name>` listing one source each
  (`["human", "human"]`: two agreed), on one trace and across the traces of one conversation alike (formats
  `langfuse` and `mlflow`, built from the stores' own shapes: `score_v1` as Langfuse's API lists scores, assessments
  as MLflow's `Feedback.to_dictionary()` writes them);
- labels that differ stay the list, oldest first, and `judge.labels.fields` names the conflict with the case, the
  traces the labels came from and each value, taking no label from it;
- a list whose values read as the same label (`1.0` beside `"yes"`, as a Phoenix score beside a label) is that label.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import extract_path
from langfuse_traces import DATA, score_v1, trace_with_full_details
from tracejudge.stages.extract.store_labels import StoreLabel, label_metadata, merge_label_metadata
from tracejudge.stages.judge.labels import field_labels



def _traces() -> list[dict[str, Any]]:
    out = []
    for name in ("langfuse-api-observe/lf-args.otlp.jsonl", "langfuse-api-observe/lf-manual.otlp.jsonl"):
        out += trace_with_full_details([json.loads(x) for x in (DATA / name).read_text().splitlines()])
    return out


def test_labels_that_agree_are_the_label_and_say_how_many_agreed() -> None:
    got = label_metadata([StoreLabel("correct", True, "human", "2025-06-01T11:00"), StoreLabel("correct", True, "human", "2025-06-01T12:00"),
                          StoreLabel("verdict", "pass", "human", "2025-06-01T12:00"), StoreLabel("verdict", "fail", "human", "2025-06-01T11:00"),
                          StoreLabel("score", 1.0, "llm"), StoreLabel("score", 1.0, "api")])
    assert got["labels"] == {"correct": True, "verdict": ["fail", "pass"]}
    assert got["label_sources"] == {"correct": ["human", "human"], "verdict": ["human", "human"]}
    assert (got["other_labels"], got["other_label_sources"]) == ({"score": 1.0}, {"score": ["llm", "api"]})
    # `true` and `1` are not one value as the store holds them (the judge's labels reader may still read them alike)
    assert label_metadata([StoreLabel("x", True, "human"), StoreLabel("x", 1.0, "human")])["labels"] == {"x": [True, 1.0]}
    # across a conversation's traces: an agreed value stands for each of its sources
    merged = merge_label_metadata([got, label_metadata([StoreLabel("correct", True, "human")]), label_metadata([StoreLabel("score", 0.0, "llm")])])
    assert merged["labels"] == {"correct": True, "verdict": ["fail", "pass"]}
    assert merged["label_sources"]["correct"] == ["human", "human", "human"]
    assert (merged["other_labels"]["score"], merged["other_label_sources"]["score"]) == ([1.0, 1.0, 0.0], ["llm", "api", "llm"])


def _scored(tmp_path: Path, session: bool) -> tuple[Path, list[str]]:
    a, b = _traces()
    a["scores"] = [score_v1(a["id"], "correct", True, "BOOLEAN", when="2025-06-01T12:00:00.000Z", author="u1"),
                   score_v1(a["id"], "correct", True, "BOOLEAN", when="2025-06-01T12:05:00.000Z", author="u2"),
                   score_v1(a["id"], "verdict", "pass", "CATEGORICAL", when="2025-06-01T12:00:00.000Z", author="u1"),
                   score_v1(a["id"], "verdict", "fail", "CATEGORICAL", when="2025-06-01T12:05:00.000Z", author="u2")]
    b["scores"] = [score_v1(b["id"], "correct", True, "BOOLEAN", author="u3"), score_v1(b["id"], "verdict", "pass", "CATEGORICAL", author="u3")]
    if session:
        a["sessionId"] = b["sessionId"] = "s-1"
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in (a, b)))
    return path, [a["id"], b["id"]]


def test_langfuse_scores_that_agree_are_the_label_and_those_that_differ_are_named(tmp_path: Path) -> None:
    path, (a, b) = _scored(tmp_path, session=False)
    cases = {c.id: c for c in extract_path(path, "langfuse", {"group_by": "trace"})}
    meta = cases[a].metadata
    assert meta["labels"] == {"correct": True, "verdict": ["pass", "fail"]}
    assert meta["label_sources"] == {"correct": ["human", "human"], "verdict": ["human", "human"]}
    results = [{"case_id": c.id, "trial": 0, "metadata": c.metadata} for c in cases.values()]
    got = field_labels(results, {"TaskCompletion": "metadata.labels.correct"})
    assert [(lab.case_id, lab.value, lab.text) for lab in got.labels] == [(a, True, "true"), (b, True, "true")] and got.problems == []
    got = field_labels(results, {"TaskCompletion": "metadata.labels.verdict"})
    assert [lab.case_id for lab in got.labels] == [b]
    assert got.problems == [f"case {a!r} metadata.labels.verdict: label: the case's 2 labels of this name disagree: pass, fail; none is taken, "
                            "as with two conflicting lines of a labels file"]


def test_a_conversations_traces_that_agree_give_one_label_and_a_conflict_names_the_traces(tmp_path: Path) -> None:
    path, (a, b) = _scored(tmp_path, session=True)
    (case,) = extract_path(path, "langfuse")
    assert case.metadata["labels"] == {"correct": True, "verdict": ["pass", "fail", "pass"]}
    assert case.metadata["label_sources"]["correct"] == ["human", "human", "human"]
    results = [{"case_id": case.id, "trial": 0, "metadata": case.metadata}]
    assert [lab.value for lab in field_labels(results, {"TaskCompletion": "metadata.labels.correct"}).labels] == [True]
    assert field_labels(results, {"TaskCompletion": "metadata.labels.verdict"}).problems == [
        f"case 's-1' metadata.labels.verdict: label: the case's 3 labels of this name (from its traces {a}, {b}) disagree: pass, fail, pass; "
        "none is taken, as with two conflicting lines of a labels file"]


def test_mlflow_feedback_that_agrees_is_the_label(tmp_path: Path) -> None:
    from mlflow.entities import AssessmentSource, Feedback

    trace = json.loads((DATA / "mlflow-agents" / "agents-tools.mlflow.jsonl").read_text())
    tid = trace["info"]["trace_id"]
    people = [AssessmentSource(source_type="HUMAN", source_id=f"reviewer-{n}@example.com") for n in (1, 2)]
    trace["info"]["assessments"] = [Feedback(name="correct", value=True, source=people[0], trace_id=tid).to_dictionary(),
                                    Feedback(name="correct", value=True, source=people[1], trace_id=tid).to_dictionary(),
                                    Feedback(name="helpful", value=4, source=people[0], trace_id=tid).to_dictionary(),
                                    Feedback(name="helpful", value=2, source=people[1], trace_id=tid).to_dictionary()]
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(trace) + "\n")
    (case,) = extract_path(path, "mlflow")
    assert case.metadata["labels"] == {"correct": True, "helpful": [4.0, 2.0]}
    assert case.metadata["label_sources"] == {"correct": ["human", "human"], "helpful": ["human", "human"]}


def test_a_list_whose_values_read_as_one_label_is_that_label() -> None:
    results = [{"case_id": "t1", "metadata": {"labels": {"correct": [1.0, "yes"], "odd": ["maybe", True]}}}]
    got = field_labels(results, {"TaskCompletion": "metadata.labels.correct"})
    assert [(lab.value, lab.text) for lab in got.labels] == [(1.0, "1.0")] and got.problems == []
    assert field_labels(results, {"TaskCompletion": "metadata.labels.odd"}).problems == [
        "case 't1' metadata.labels.odd: label: [\"maybe\", true]: 'maybe' is not a label: expected true/false (yes/no, pass/fail) or a number"]
