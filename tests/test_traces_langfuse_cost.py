"""Format `langfuse`: a cost some model requests recorded and others did not is unknown, not the sum of the known ones.

Recording: `tests/data/trace-faults/langfuse-partial-cost.json` (`tests/frameworks/record_trace_faults.py`, langfuse
5.2.0): the Langfuse SDK's own OTLP export of a loop whose generations the application records with `cost_details`
from its price table — `gpt-4o-mini` priced, the local model `llama-local` its second request went to not — turned
into `GET /api/public/traces/{id}` JSON by `tests/frameworks/langfuse_api.py` (the trace's `totalCost` the sum of
the costs given, as Langfuse sums what it has). Before, `usage.cost_usd` was that sum, half of the run's cost. A trace
none of whose requests Langfuse priced (its `totalCost` the 0 of no costs) was read as costing $0; its cost is unknown
too (`tests/stores/test_store_langfuse_cost_unknown.py`).
"""

from __future__ import annotations

import json
from pathlib import Path

from tracejudge.core.records import Case
from tracejudge import Cost

from helpers import extract_path

DATA = Path(__file__).parent / "data" / "trace-faults"
RECORDED = DATA / "langfuse-partial-cost.json"


def extract(path: Path) -> list[Case]:
    cases = extract_path(path, "langfuse")
    assert all(isinstance(c, Case) for c in cases), cases
    return cases


def test_a_cost_some_requests_lacked_is_unknown_and_says_how_many() -> None:
    (case,) = extract(RECORDED)
    costs = json.loads((DATA / "langfuse-partial-cost.outcome.json").read_text())["costs"]
    assert costs[0] > 0 and costs[1] is None  # what the application knew: one request priced, one not
    assert json.loads(RECORDED.read_text())["totalCost"] == costs[0]  # the trace's total: the priced request's alone
    usage = case.trace.usage
    assert usage.cost_usd is None and usage.requests == 2
    assert case.metadata["requests_without_cost"] == 1
    assert (usage.input_tokens, usage.output_tokens) == (201, 21)  # tokens were recorded for both: they stand
    score = Cost(max_usd=1.0).evaluate(case)
    assert score.value is None and score.passed is None


def test_every_request_priced_keeps_the_total_and_none_priced_is_unknown(tmp_path: Path) -> None:
    record = json.loads(RECORDED.read_text())
    local = next(o for o in record["observations"] if o.get("model") == "llama-local")
    priced = json.loads(json.dumps(record))
    next(o for o in priced["observations"] if o["id"] == local["id"])["costDetails"] = {"total": 0.00001}
    priced["totalCost"] = record["totalCost"] + 0.00001
    unpriced = json.loads(json.dumps(record))
    for o in unpriced["observations"]:
        o["costDetails"], o["calculatedTotalCost"] = {}, None
        o.pop("totalCost", None)
    unpriced["totalCost"] = 0.0  # what Langfuse answers for a trace it priced nothing of
    path = tmp_path / "traces.json"
    path.write_text(json.dumps(priced) + "\n" + json.dumps({**unpriced, "id": "t2"}) + "\n")
    both, neither = extract(path)
    assert both.trace.usage.cost_usd == priced["totalCost"] and "requests_without_cost" not in both.metadata
    # (0 there is the sum of no costs, not a price of $0: unknown, every request counted)
    assert neither.trace.usage.cost_usd is None and neither.metadata["requests_without_cost"] == 2
