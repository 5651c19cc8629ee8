"""configs/demo.yaml's checks mean what its comments say, for either τ-bench domain a user points it at."""

from __future__ import annotations

from pathlib import Path

from tracejudge.core.config import load_config
from tracejudge.core.records import Case
from tracejudge.core.registry import build_metric

DEMO = Path(__file__).resolve().parent.parent / "configs" / "demo.yaml"


def _writes_exact():
    spec = next(m for m in load_config(DEMO).metrics if m.get("name") == "writes_exact")
    return build_metric(spec)


def _case(calls: list[tuple[str, dict]], expected: list[tuple[str, dict]]) -> Case:
    return Case.model_validate({
        "id": "c", "expected_tool_calls": [{"name": n, "arguments": a} for n, a in expected],
        "trace": {"steps": [{"tool_calls": [{"name": n, "arguments": a}]} for n, a in calls], "output": "done"},
    })


def test_writes_exact_leaves_out_the_reads_of_a_retail_run():
    # Retail looks its user up with find_user_id_by_email or find_user_id_by_name_zip, and its tasks list the lookup
    # among the expected actions. Read as a write, a run that found its user the other way (the database ends the
    # same: tau-bench's reward is 1) matched half its writes.
    cancel = ("cancel_pending_order", {"order_id": "#W1", "reason": "no longer needed"})
    case = _case([("find_user_id_by_email", {"email": "a@b.c"}), ("get_order_details", {"order_id": "#W1"}), cancel],
                 [("find_user_id_by_name_zip", {"first_name": "A", "last_name": "B", "zip": "12345"}), cancel])
    score = _writes_exact().evaluate(case)
    assert score.value == 1.0, score.reason


def test_writes_exact_still_scores_the_airline_writes():
    book = ("book_reservation", {"user_id": "u1", "flights": [{"flight_number": "HAT1"}]})
    case = _case([("get_user_details", {"user_id": "u1"}), ("search_direct_flight", {}), book, ("think", {})],
                 [book, ("cancel_reservation", {"reservation_id": "R1"})])
    score = _writes_exact().evaluate(case)
    assert score.details["pairs"] == [[0, 2]] and score.details["missing"] == [1] and score.details["unexpected"] == []
