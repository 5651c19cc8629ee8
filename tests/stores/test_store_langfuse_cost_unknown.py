"""Langfuse's cost of a run: unknown is not $0, and format `otel` reads the cost Langfuse's SDK recorded.

Recordings: `tests/data/trace-faults/langfuse-partial-cost.*` (langfuse 5.2.0: an `@observe` loop whose application
records each generation's `cost_details` from its price table, `gpt-4o-mini` priced, `llama-local` not) and
`tests/data/langfuse-api-observe/lf-manual.*` (the application sets both generations' `cost_details`, `input` and
`output` without a `total`), each as the SDK's OTLP export (format `otel`) and as `GET /api/public/traces/{id}` JSON
(format `langfuse`).

- format `langfuse`: a trace none of whose model requests Langfuse priced (each `costDetails: {}`, `totalCost` 0, as
  the server answers for a model missing from its price table) read as `cost_usd: 0.0`, and `Cost(max_usd=…)` passed
  it; the 0 is the sum of no costs, so the cost is now unknown (`null`) and `metadata.requests_without_cost` counts
  every request, in a conversation too. A trace with no model request at all spent $0; a `totalCost` above 0 stands.
- format `otel`: the SDK writes a generation's `cost_details` as the span attribute `langfuse.observation.cost_details`
  (JSON text; `LangfuseOtelSpanAttributes.OBSERVATION_COST_DETAILS`), which was not read: every case had no cost.
  Now it is, the parts summed when there is no `total` (as Langfuse adds them up), and a cost some requests lack is
  unknown with the same count as format `langfuse` gives.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import extract_path
from tracejudge import Cost

DATA = Path(__file__).resolve().parents[1] / "data"
PARTIAL = DATA / "trace-faults" / "langfuse-partial-cost"
MANUAL = DATA / "langfuse-api-observe" / "lf-manual"


def _unpriced(record: dict[str, Any], tid: str) -> dict[str, Any]:
    """`record` as Langfuse's API answers when it priced none of its observations."""
    record = json.loads(json.dumps(record))
    for o in record["observations"]:
        o["costDetails"], o["calculatedTotalCost"] = {}, 0
        o.pop("totalCost", None)
    return {**record, "id": tid, "totalCost": 0.0}


def test_a_trace_langfuse_priced_nothing_of_has_no_known_cost(tmp_path: Path) -> None:
    record = json.loads(PARTIAL.with_suffix(".json").read_text())
    none = _unpriced(record, "t-none")
    toolless = {**_unpriced(record, "t-no-request"), "observations": [o for o in record["observations"] if o["type"] != "GENERATION"]}
    above = {**_unpriced(record, "t-total"), "totalCost": 0.004}  # (the server priced something the observations do not show)
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (none, toolless, above)))
    cases = {c.id: c for c in extract_path(path, "langfuse", {"group_by": "trace"})}
    case = cases["t-none"]
    assert case.trace.usage.cost_usd is None and case.metadata["requests_without_cost"] == 2
    assert (case.trace.usage.input_tokens, case.trace.usage.output_tokens) == (201, 21)  # (tokens were recorded: they stand)
    score = Cost(max_usd=0.01).evaluate(case)
    assert score.value is None and score.passed is None
    assert cases["t-no-request"].trace.usage.cost_usd == 0.0 and "requests_without_cost" not in cases["t-no-request"].metadata
    assert cases["t-total"].trace.usage.cost_usd == 0.004 and "requests_without_cost" not in cases["t-total"].metadata


def test_a_conversation_with_an_unpriced_trace_has_no_known_cost(tmp_path: Path) -> None:
    priced = json.loads(MANUAL.with_suffix(".json").read_text())
    unpriced = _unpriced(json.loads(PARTIAL.with_suffix(".json").read_text()), "t-later")
    unpriced["timestamp"] = "2030-01-01T00:00:00.000Z"
    for o in unpriced["observations"]:
        o["traceId"] = "t-later"
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps({**priced, "sessionId": "s-1"}) + "\n" + json.dumps({**unpriced, "sessionId": "s-1"}) + "\n")
    (case,) = extract_path(path, "langfuse")
    assert case.metadata["langfuse"]["traces"] == [priced["id"], "t-later"]
    assert case.trace.usage.cost_usd is None and case.metadata["requests_without_cost"] == 2


def test_otel_reads_the_cost_langfuses_sdk_recorded() -> None:
    want = json.loads(MANUAL.with_suffix(".truth.json").read_text())["cost_usd"]
    (otel,) = extract_path(MANUAL.with_suffix(".otlp.jsonl"), "otel")
    (api,) = extract_path(MANUAL.with_suffix(".json"), "langfuse")
    assert otel.trace.usage.cost_usd == api.trace.usage.cost_usd == want and "requests_without_cost" not in otel.metadata
    (partial,) = extract_path(PARTIAL.with_suffix(".otlp.jsonl"), "otel")
    costs = json.loads(PARTIAL.with_name(PARTIAL.name + ".outcome.json").read_text())["costs"]
    assert costs[0] > 0 and costs[1] is None  # what the application knew: one request priced, one not
    assert partial.trace.usage.cost_usd is None and partial.metadata["requests_without_cost"] == 1
    assert Cost(max_usd=1.0).evaluate(partial).passed is None


def test_otel_without_langfuse_costs_reads_as_before(tmp_path: Path) -> None:
    lines = PARTIAL.with_suffix(".otlp.jsonl").read_text().splitlines()
    path = tmp_path / "trace.otlp.jsonl"
    path.write_text("".join(x.replace("langfuse.observation.cost_details", "app.cost_details") + "\n" for x in lines))
    (case,) = extract_path(path, "otel")
    assert case.trace.usage.cost_usd is None and "requests_without_cost" not in case.metadata
    assert (case.trace.usage.input_tokens, case.trace.usage.output_tokens, case.trace.usage.requests) == (201, 21, 2)
