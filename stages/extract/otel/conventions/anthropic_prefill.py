"""Anthropic's assistant prefill: a request whose messages end with the assistant's own words is answered by their continuation.

The Messages API lets a request end with an assistant message (`{"role": "assistant", "content": "{\\"city\\": \\""}`)
that the model goes on from; the response holds only what the model added (`Oslo", "temp_c": -3}`), and the answer the
application has is the prefill followed by it (Anthropic's "Prefill Claude's response" guide). The instrumentations
record the request and the response as sent, OpenInference (`llm.provider` `anthropic`), OpenLLMetry
(`gen_ai.provider.name`, or the older `gen_ai.system`, `anthropic`) and MLflow's `mlflow.anthropic.autolog()`
(`mlflow.llm.provider`, or `mlflow.message.format`, `"anthropic"`: JSON text) alike, so the step's output would be the
continuation alone. `join_prefills` puts the prefill before the continuation in the request's output messages. Only on
Anthropic's spans: an assistant message last in another provider's request is history, never continued.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import View, unjson
from tracejudge.stages.extract.prefill import prefill_words, prefixed

__all__ = ["join_prefills", "prefill"]

_KEYS = ("gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system", "mlflow.llm.provider", "mlflow.message.format")


def _anthropic(span: Span) -> bool:
    """Whether the span names Anthropic as the request's provider (the first of `_KEYS` it carries; MLflow's are JSON
    strings)."""
    named = (unjson(span.attrs.get(k)) for k in _KEYS)
    provider = next((v for v in named if isinstance(v, str) and v), None)
    return isinstance(provider, str) and provider.lower() == "anthropic"


def prefill(inputs: list[dict[str, Any]] | None) -> str | None:
    """The text of a normalised request's last message when it is the assistant's words alone (no call, no reasoning),
    else `None`."""
    if not inputs or inputs[-1].get("role") != "assistant":
        return None
    return prefill_words(list(inputs[-1].get("parts") or []), "content")


def join_prefills(spans: list[Span], views: dict[str, View]) -> None:
    """Put each Anthropic model request's prefill before its output's first text (a text part of its own when the
    output starts with a call or holds no text). A request without recorded output is left as it is."""
    for span in spans:
        v = views.get(span.span_id)
        if v is None or v.role != "model" or not v.outputs or not _anthropic(span):
            continue
        words = prefill(v.inputs)
        if words is None:
            continue
        first = next((m for m in v.outputs if m.get("role") == "assistant"), None)
        if first is None:
            continue
        parts = prefixed(list(first.get("parts") or []), words, "content")
        v.outputs = [({**m, "parts": parts} if m is first else m) for m in v.outputs]
