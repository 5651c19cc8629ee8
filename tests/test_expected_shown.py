"""An expected value as a user reads it: a `{"$python_eq": v}` (how the `tau2-bench` format says an action's value
compares, with Python's `==`) is shown as `v` in reasons, the reports, JUnit and the viewer's case page; every other
matcher is shown as written."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
import yaml
from _runs import view_server
from helpers import DATA, make_case
from tracejudge.entrypoints.assertions import assert_called_tool
from tracejudge.entrypoints.cli import main
from tracejudge.stages.score import ArgumentCorrectness, ExactMatch, ToolCalls
from tracejudge.stages.score.value_match import first_difference, shown_expected

AIRLINE = DATA / "tau2_bench" / "model_training_results" / "gpt-4.1_airline_default_gpt-4.1_1trials.json"

# Task 2 of the airline file expects `send_certificate` with `amount: 50`, which the agent never calls.
CERTIFICATE = 'send_certificate({"amount":50,"user_id":"noah_muller_9847"})'


def test_shown_expected_reads_only_the_python_eq_matchers():
    plain = {"a": [1, {"b": "x"}], "c": None, "d": {"$regex": "^A"}}
    assert shown_expected(plain) is plain  # (nothing to show otherwise: the same object, no copy)
    assert shown_expected({
        "n": {"$python_eq": 50}, "l": [{"$python_eq": True}, "x"], "m": {"k": {"$python_eq": {"z": 1}}},
        "any": {"$any_of": [{"$python_eq": 2}, {"$regex": "^A"}]}, "absent": {"$absent": True}, "strict": {"$strict": 5},
        "approx": {"$approx": 3.0, "tol": 0.1}, "inside": {"$strict": {"$python_eq": 1}}, "twice": {"$python_eq": {"$python_eq": 1}},
    }) == {
        "n": 50, "l": [True, "x"], "m": {"k": {"z": 1}}, "any": {"$any_of": [2, {"$regex": "^A"}]}, "absent": {"$absent": True},
        "strict": {"$strict": 5}, "approx": {"$approx": 3.0, "tol": 0.1},
        "inside": {"$strict": {"$python_eq": 1}},  # ($strict's value is compared as it is: no matcher inside)
        # (nor inside a $python_eq: its value is the value, `$` keys and all, so it keeps its wrapper, not read as one)
        "twice": {"$python_eq": {"$python_eq": 1}},
    }


def test_a_literal_value_shaped_as_a_matcher_keeps_its_wrapper_in_a_reason():
    # Shown bare, `expected {"$regex":"^A"}` read as a regex matcher, though the value was compared with `==`.
    from tracejudge.stages.score import ToolCalls
    from tracejudge.stages.extract.tau2_expected import expected_from_action
    from helpers import make_case

    literal = {"$python_eq": {"$regex": "^A"}}
    assert first_difference({"q": literal}, {"q": "Abc"}) == 'q: expected {"$python_eq":{"$regex":"^A"}}, got "Abc"'
    assert first_difference({"q": {"$python_eq": [{"f": {"$regex": "^A"}}]}}, {"q": []}) == \
        'q: expected {"$python_eq":[{"f":{"$regex":"^A"}}]}, got []'
    assert first_difference({"q": {"$python_eq": {"f": {"$regex": "^A"}, "g": 1}}}, {"q": 1}).startswith('q: expected {"$python_eq":')
    assert first_difference({"q": {"$python_eq": {"f": "^A"}}}, {"q": 1}) == 'q: expected {"f":"^A"}, got 1'  # (no matcher: bare)
    action = {"name": "find", "arguments": {"q": {"$regex": "^A"}}, "compare_args": None}
    case = make_case([expected_from_action(action)], [{"name": "find", "arguments": {"q": "Abc"}}])
    score = ToolCalls(arguments="shallow", pairing="reuse", score="recall").evaluate(case)
    assert score.value == 0.0 and '{"$python_eq":{"$regex":"^A"}}' in score.reason, score.reason


def test_a_difference_inside_a_list_or_an_any_of_shows_the_value_bare():
    assert first_difference({"xs": [{"$python_eq": 1}, 2]}, {"xs": [3, 2]}) == "xs: expected [1,2], got [3,2]"
    assert first_difference({"n": {"$any_of": [{"$python_eq": 1}, {"$regex": "^A"}]}}, {"n": 3}) == \
        'n: expected {"$any_of":[1,{"$regex":"^A"}]}, got 3'
    assert first_difference({"n": {"$strict": 5}}, {"n": 5.0}) == 'n: expected {"$strict":5}, got 5.0'  # (as today)


def test_tool_calls_reasons_show_the_calls_expected_values_bare():
    expected = [{"name": "pay", "arguments": {"amount": {"$python_eq": 50}, "to": {"$regex": "^acc_"}, "memo": {"$absent": True}}},
                {"name": "notify", "arguments": {"ids": {"$python_eq": [1, 2]}}}]
    case = make_case(expected, [{"name": "pay", "arguments": {"amount": 40, "to": "acc_1"}}])
    reason = ToolCalls(arguments="exact", order="in_order").evaluate(case).reason
    shown = 'pay({"amount":50,"memo":{"$absent":true},"to":{"$regex":"^acc_"}})'
    assert f"missing: [0] {shown} (closest: call #0, step 0: amount: expected 50, got 40); [1] notify({{\"ids\":[1,2]}})" in reason, reason
    assert f"expected [0] {shown}, got pay(" in reason, reason
    assert "$python_eq" not in reason
    ended = ToolCalls(arguments="exact", order="in_order").evaluate(make_case(expected, [{"name": "pay", "arguments": {"amount": 50, "to": "acc_1"}}]))
    assert 'next expected [1] notify({"ids":[1,2]})' in ended.reason, ended.reason


def test_argument_correctness_exact_match_and_assert_called_tool_show_values_bare():
    case = make_case(["pay"], [{"name": "pay", "arguments": {"amount": 40, "tags": [1]}}], trace={"output": '{"total": 7}'})
    score = ArgumentCorrectness(tool_name="pay", expected_arguments={"amount": {"$python_eq": 50}, "tags": [{"$python_eq": 2}],
                                                                     "to": {"$python_eq": 3}}).evaluate(case)
    assert "amount: expected 50, got 40; tags: expected [2], got [1]; to: missing (expected 3)" in score.reason, score.reason
    assert [m["expected"] for m in score.details["mismatches"].values()] == [50, [2], 3]
    assert "expected [8], got {" in ExactMatch(expected=[{"$python_eq": 8}]).evaluate(case).reason
    with pytest.raises(AssertionError) as raised:
        assert_called_tool(case, "pay", {"amount": {"$python_eq": 50}, "to": {"$regex": "^acc_"}})
    assert 'expected a call pay({"amount":50,"to":{"$regex":"^acc_"}})' in str(raised.value)
    assert "$python_eq" not in str(raised.value)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.read().decode()


@pytest.mark.skipif(not AIRLINE.exists(), reason="the tau2-bench developer files are not beside the repository")
def test_a_tau2_run_shows_the_actions_values_bare_in_every_file_and_the_case_page(tmp_path: Path):
    cfg = tmp_path / "tau2.yaml"
    cfg.write_text(yaml.safe_dump({
        "dataset": {"path": str(AIRLINE), "format": "tau2-bench"},
        "metrics": [{"type": "ToolCalls", "arguments": "shallow", "pairing": "reuse", "score": "recall", "name": "action_recall"},
                    {"type": "ToolCalls", "arguments": "exact", "order": "in_order", "name": "in_order"}],
        "run": {"dir": str(tmp_path / "run")}, "cache": {"dir": str(tmp_path / "cache")}}), encoding="utf-8")
    assert main(["run", str(cfg), "--no-progress"]) == 0
    run_dir = tmp_path / "run"
    results = {r["case_id"]: r["scores"] for r in map(json.loads, (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines())}
    assert f"missing: [3] {CERTIFICATE} (closest:" in results["2-0"]["action_recall"]["reason"]
    assert f"expected [3] {CERTIFICATE}, got get_flight_status(" in results["2-0"]["in_order"]["reason"]
    baggage = results["22-0"]["action_recall"]["reason"]
    assert 'update_reservation_baggages({"nonfree_baggages":0,"payment_id":"gift_card_8190333","reservation_id":"FQ8APE","total_baggages":3})' in baggage
    for name in ("results.jsonl", "report.md", "report.html", "junit.xml"):
        text = (run_dir / name).read_text(encoding="utf-8")
        assert "$python_eq" not in text, name
    assert CERTIFICATE in (run_dir / "junit.xml").read_text(encoding="utf-8").replace("&quot;", '"')
    with view_server(str(run_dir)) as url:
        page = _get(f"{url}/run/run/case?id=2-0")
    assert "$python_eq" not in page
    assert "<b class=\"tool\">send_certificate</b><pre class=\"args\">{\n  &quot;user_id&quot;: &quot;noah_muller_9847&quot;,\n  &quot;amount&quot;: 50\n}" in page
