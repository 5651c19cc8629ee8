"""The tokens and dollars of Langfuse's API observations (`langfuse_api`): a generation's usage, an observation's cost as
the server lists it, a v2 page's total, and which model requests of a trace went unpriced.

Moved out of `langfuse_api` (which reads the traces) as one job: the figures a case's `usage` and its
`metadata.requests_without_cost` are built from.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.otel.conventions.langfuse import usage_pair
from tracejudge.stages.extract.otel.view import as_int

__all__ = ["number", "observation_cost", "page_cost", "pricing", "tokens", "trace_cost"]


def number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def tokens(obs: dict[str, Any]) -> dict[str, Any] | None:
    """Input and output tokens of a generation: `usageDetails`, else the older `usage`, else `promptTokens`/`completionTokens`
    (Langfuse's names with their detail counts added back: `conventions.langfuse.split_back`)."""
    for key in ("usageDetails", "usage"):
        usage = obs.get(key)
        if isinstance(usage, dict):
            ins, outs = usage_pair(usage)
            if ins is not None or outs is not None:
                return {"input": ins, "output": outs}
    ins, outs = as_int(obs.get("promptTokens")), as_int(obs.get("completionTokens"))
    return {"input": ins, "output": outs} if ins is not None or outs is not None else None


def observation_cost(obs: dict[str, Any]) -> float | None:
    """An observation's own cost: `costDetails.total`, else (an API without `costDetails`) `totalCost` / `calculatedTotalCost`.

    Langfuse's server lists `costDetails: {}` for an observation it has no cost for, and then `calculatedTotalCost: 0` (the
    `total` of no details, `reduceUsageOrCostDetails`): that 0 is no cost, or a request Langfuse could not price would
    read as free.
    """
    details = obs.get("costDetails")
    if isinstance(details, dict) and details:
        total = number(details.get("total"))
        if total is not None:
            return total
    elif isinstance(details, dict):
        return None
    return next((c for c in (number(obs.get("totalCost")), number(obs.get("calculatedTotalCost"))) if c is not None), None)


def page_cost(observations: list[dict[str, Any]]) -> float | None:
    """What `totalCost` of `GET /api/public/traces/{id}` would be for a v2 page: the sum of its observations' costs as the
    server gives them (`totalCost`: 0 for one it has none for), `None` when none says."""
    listed = [c for c in (number(o.get("totalCost", o.get("calculatedTotalCost"))) for o in observations) if c is not None]
    return sum(listed) if listed else None


def trace_cost(total: float | None, observations: list[dict[str, Any]], costs: list[float | None]) -> tuple[float | None, int, int]:
    """`(cost, requests without a cost, requests)` of one trace whose `totalCost` is `total` and whose observations'
    own costs are `costs` (`observation_cost`).

    The cost is `total`, else the observations' sum; unknown (`None`) when the trace has model requests and none of them
    has a cost, and `total` is 0 or missing: Langfuse answers `totalCost: 0` for a trace it priced nothing of (a model
    missing from its price table, an application that reports no cost), the sum of no costs, which is no price of $0.
    Then every request is one without a cost. A `total` above 0 stands (the server priced something these observations
    do not show). When some requests have a cost and others not, those are counted (`pricing`) and the case's cost is
    left unknown by `langfuse_api`."""
    known = [c for c in costs if c is not None]
    unpriced, requests = pricing(observations, costs)
    cost = total if total is not None else (sum(known) if known else None)
    gens = [c for o, c in zip(observations, costs) if o["type"] == "GENERATION"]
    if requests and all(c is None for c in gens) and not (total or 0) > 0:
        return None, requests, requests
    return cost, unpriced, requests


def pricing(observations: list[dict[str, Any]], costs: list[float | None]) -> tuple[int, int]:
    """`(requests without a cost while another has one, requests)` of one trace's model requests (0 unpriced when all or none
    have one; module docstring)."""
    gens = {str(o["id"]): c for o, c in zip(observations, costs) if o["type"] == "GENERATION"}
    parents = {str(o["id"]): str(o.get("parentObservationId")) for o in observations if o["type"] == "GENERATION"}
    priced: dict[str, bool] = {}
    for gid, cost in gens.items():
        top, hops = gid, 0
        while parents.get(top) in gens and hops < len(gens):  # a generation nested in another is the same request
            top, hops = parents[top], hops + 1
        priced[top] = priced.get(top, False) or cost is not None
    lacking = sum(1 for p in priced.values() if not p)
    return (lacking if lacking < len(priced) else 0), len(priced)
