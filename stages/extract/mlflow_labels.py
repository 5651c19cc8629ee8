"""The labels of an MLflow trace: its feedback (`info.assessments`, MLflow 3) as `store_labels` metadata, for `mlflow_trace`.

A `HUMAN` source's feedback is a label (`metadata.labels`), an `LLM_JUDGE`'s (`AI_JUDGE`, its older name) or `CODE`'s
another's (`metadata.other_labels`), and so is one of a source this reader does not know (`SOURCE_TYPE_UNSPECIFIED`, a
kind MLflow added since: `store_labels.unknown_source`); tracejudge's own exported verdicts never come back as either.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.store_labels import StoreLabel, label_metadata, plain_value, unknown_source

__all__ = ["trace_labels"]

_SOURCES = {"HUMAN": "human", "LLM_JUDGE": "llm", "AI_JUDGE": "llm", "CODE": "code"}  # (`source.source_type`: `store_labels`)


def trace_labels(info: dict[str, Any]) -> dict[str, Any]:
    """The `store_labels` metadata of a trace's feedback (`info.assessments`, MLflow 3): on the trace, not one of its spans
    (`span_id`), valid (an overridden one is not: the override stands), with a value (one that failed, `error`, has none),
    not one of tracejudge's exports (`tracejudge.run` in its metadata, and no `overrides`: a reviewer's override of one of
    ours is the reviewer's). Expectations (reference answers) are no verdict, and not read."""
    found = []
    assessments = info.get("assessments")
    for a in assessments if isinstance(assessments, list) else []:
        if not isinstance(a, dict) or not isinstance(a.get("feedback"), dict) or a.get("span_id") or a.get("valid") is False:
            continue
        meta: dict[str, Any] = a["metadata"] if isinstance(a.get("metadata"), dict) else {}
        if "tracejudge.run" in meta and not a.get("overrides"):
            continue  # a verdict `tracejudge export --to mlflow` wrote: the judge's own, no label
        source: dict[str, Any] = a["source"] if isinstance(a.get("source"), dict) else {}
        value = None if a["feedback"].get("error") else plain_value(a["feedback"].get("value"))
        name = a.get("assessment_name") or a.get("name")
        if value is not None and isinstance(name, str) and name:
            raw = source.get("source_type")
            kind = _SOURCES.get(str(raw or "").upper()) or unknown_source("mlflow", raw, "HUMAN, LLM_JUDGE, CODE")
            found.append(StoreLabel(name, value, kind, str(a.get("create_time") or "")))
    return label_metadata(found)
