"""Which MLflow trace a result's verdicts go on, and which session they name (`stages.export.mlflow_sink.target`)."""

from __future__ import annotations

from tracejudge.stages.export.mlflow_sink import target


def test_a_conversation_names_its_session_as_recorded_not_its_quoted_case_id() -> None:
    # A session id with a space at its end is a conversation of its own, its case id quoted to show it
    # (`conversation_groups.case_id_of`); MLflow groups by the exact text, so the verdict names that text.
    result = {"case_id": '"thread-1 "', "metadata": {"mlflow": {"session": "thread-1 ", "traces": ["tr-1", "tr-2"]}}}
    assert target(result) == ("tr-1", "thread-1 ")


def test_a_conversation_without_its_recorded_session_names_its_case_id_and_a_trace_its_own_id() -> None:
    assert target({"case_id": "sess-42", "metadata": {"mlflow": {"traces": ["tr-1", "tr-2"]}}}) == ("tr-1", "sess-42")
    assert target({"case_id": "tr-9", "metadata": {"mlflow": {"traces": ["tr-9"], "session": "s"}}}) == ("tr-9", None)
    assert target({"case_id": "tr-9", "metadata": {}}) == ("tr-9", None)
