"""The label counts calibrate prints first say what became of every label given, the values that are no label too.

A field holding two annotators' labels (a list) or a `"NaN"`, or a labels-file line that holds no label, is named among
the problems; the counts line said `labels: 7` for ten labelled cases, those three in no count.
"""

from __future__ import annotations

from pathlib import Path

from tracejudge.stages.judge.agreement import agreement_block
from tracejudge.stages.judge.labels import field_labels, load_label_file
from tracejudge.stages.reports.judge_lines import label_counts


def _result(cid: str, label: object) -> dict:
    return {"case_id": cid, "trial": 0, "status": "ok", "metadata": {"labels": {"correct": label}},
            "scores": {"TaskCompletion": {"value": 1.0, "passed": True, "reason": "ok"}}}


def test_field_values_that_are_no_label_are_counted() -> None:
    results = [_result("a", True), _result("b", False), _result("c", [True, False]), _result("d", "NaN"), _result("e", None)]
    labels = field_labels(results, {"TaskCompletion": "metadata.labels.correct"})
    block = agreement_block(results, labels, resamples=50)
    assert block["total_labels"] == 2 and block["not_labels"] == 2 and block["problem_count"] == 2
    assert label_counts(block).endswith("; besides, not a label: 2")


def test_a_labels_file_line_that_holds_no_label_is_counted(tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"case_id": "a", "metric": "TaskCompletion", "label": true}\n'
                    '{"case_id": "b", "metric": "TaskCompletion", "label": "maybe"}\n'
                    '{"case_id": "a", "metric": "TaskCompletion", "label": true}\n')  # (a repeat: counted once, no "not a label")
    labels = load_label_file(path)
    block = agreement_block([_result("a", None), _result("b", None)], labels, resamples=50)
    assert block["total_labels"] == 1 and block["not_labels"] == 1
    assert "not a label: 1" in label_counts(block)


def test_no_such_count_when_every_value_is_a_label() -> None:
    results = [_result("a", True), _result("b", False)]
    block = agreement_block(results, field_labels(results, {"TaskCompletion": "metadata.labels.correct"}), resamples=50)
    assert "not_labels" not in block and "not a label" not in label_counts(block)
