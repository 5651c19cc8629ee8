"""Format `otel`: the dollars Langfuse's SDK recorded on its observations (`langfuse.observation.cost_details`).

Langfuse's Python SDK (3 on) writes a generation's `cost_details` as the span attribute
`langfuse.observation.cost_details`, JSON text (`{"input": 1.5e-05, "output": 6e-05}`, or with a `total`), when the
application gives one (`update(cost_details=…)`, `start_as_current_observation(…, cost_details=…)`; the SDK's OpenAI
wrapper when the provider reports one, OpenRouter's `usage.cost`, and `0` on a request that failed). What Langfuse's
server prices from its own model table afterwards is not in the export. An observation's cost is its `total`, else the
sum of its parts, as the server adds them up.

The case's cost (`usage.cost_usd`) is the sum over its model requests (a generation nested in another is the same
request: the outer one's cost, else the nested ones') and the other observations that carry one (an `embedding`). When
some requests carry a cost and others none, the cost is unknown, not the priced ones' sum, and
`metadata.requests_without_cost` counts those without, as format `langfuse` reads the same run from Langfuse's API
(`langfuse_usage`). A trace none of whose spans carries the attribute has no cost, as before (unknown).
"""

from __future__ import annotations

import math
from typing import Any

from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import unjson

__all__ = ["langfuse_cost", "span_cost"]

_ATTR = "langfuse.observation.cost_details"


def span_cost(span: Span) -> float | None:
    """The cost a span's `langfuse.observation.cost_details` records: its `total`, else the sum of its parts; `None` when
    it records none (no attribute, an empty or unreadable one)."""
    details = unjson(span.attrs.get(_ATTR))
    if not isinstance(details, dict):
        return None
    numbers = {k: float(v) for k, v in details.items()
               if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0}
    if "total" in numbers:
        return numbers["total"]
    return sum(numbers.values()) if numbers else None


def _generation(span: Span) -> bool:
    return str(span.attrs.get("langfuse.observation.type") or "").lower() == "generation"


def langfuse_cost(built: dict[str, Any], spans: list[Span]) -> None:
    """Set `built`'s (the case mapping of `spans`) `trace.usage.cost_usd`, and `metadata.requests_without_cost` when some
    model requests lack a cost, from the costs Langfuse's SDK recorded (module docstring). In place; nothing when no span
    carries one."""
    costed = {s.span_id: c for s in spans if (c := span_cost(s)) is not None}
    if not costed:
        return
    index = {s.span_id: s for s in spans}
    own: dict[str, float | None] = {}  # each request (its outermost generation): its own cost
    nested: dict[str, list[float]] = {}  # and those of the generations nested in it
    total = 0.0
    for span in spans:
        if not _generation(span):
            total += costed.get(span.span_id, 0.0)
            continue
        top, parent, seen = span.span_id, span.parent_id, {span.span_id}
        while parent in index and parent not in seen:  # (the outermost generation above it, through any other span)
            seen.add(parent)
            if _generation(index[parent]):
                top = parent
            parent = index[parent].parent_id
        if top == span.span_id:
            own[top] = costed.get(top)
        elif span.span_id in costed:
            nested.setdefault(top, []).append(costed[span.span_id])
    lacking = 0
    for request, cost in own.items():
        if cost is None and request not in nested:
            lacking += 1
        total += cost if cost is not None else sum(nested.get(request, []))
    usage = built.setdefault("trace", {}).setdefault("usage", {})
    if lacking:
        usage["cost_usd"] = None
        built.setdefault("metadata", {})["requests_without_cost"] = lacking
    else:
        usage["cost_usd"] = total
