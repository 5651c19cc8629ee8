"""What an OpenInference `RETRIEVER` span retrieved and was asked: its passages (`retrieval.documents.{i}.document.*`)
and its question (`input.value`), as `openinference.read` gives them to the span's `View`."""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.view import present, unjson

__all__ = ["passage", "question"]


def passage(item: dict[str, Any]) -> dict[str, Any]:
    """One passage; `document.id` / `document.score`, else the id and score a LangChain retriever left in `document.metadata`.

    The LangChain instrumentation writes a `Document`'s metadata whole and no `document.id` / `score` keys:
    the reading of the same run by Langfuse or MLflow (`payloads.documents`) keeps them, so this one does too.
    """
    doc = item["document"]
    meta = unjson(doc.get("metadata"))
    meta = meta if isinstance(meta, dict) else {}
    out: dict[str, Any] = {"content": str(doc.get("content") or "")}
    ident = doc.get("id") if doc.get("id") is not None else next((meta[k] for k in ("chunk_id", "id") if meta.get(k) is not None), None)
    if ident is not None:
        out["id"] = str(ident)
    score = doc.get("score") if _number(doc.get("score")) else meta.get("score")
    if _number(score):
        out["score"] = float(score)
    if isinstance(meta.get("source"), str):
        out["source"] = meta["source"]
    return out


def question(raw: Any) -> str | None:
    """A retriever's question: its `input.value` as text (or the `query` / `input` / `question` of a JSON object)."""
    decoded = unjson(raw)
    if isinstance(decoded, dict):
        decoded = next((decoded[k] for k in ("query", "input", "question") if isinstance(decoded.get(k), str)), None)
    text = decoded if isinstance(decoded, str) else raw if isinstance(raw, str) else None
    return text if text is not None and text.strip() and present(text) else None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
