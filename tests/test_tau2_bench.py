"""The tau2-bench adapter on the developer files, and ToolCalls reproducing upstream's action checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import DATA
from tracejudge.core.records import Case
from tracejudge.core.registry import format_for
from tracejudge.stages.extract import extract_record
from tracejudge.stages.extract.tau2_bench import adapt, expected_from_action
from tracejudge.stages.score import MaxToolCalls, RecordedReward, ToolCalls

FILES = sorted((DATA / "tau2_bench").glob("**/*_1trials.json"))
pytestmark = pytest.mark.skipif(not FILES, reason="the tau2-bench developer files are not beside the repository")


class _Dataset:
    def __init__(self, path: Path) -> None:
        self.path, self.tasks, self.limit, self.options = path, None, None, {}


def cases_of(path: Path) -> list[Case]:
    fmt = format_for("tau2-bench")
    out = []
    for raw in fmt.read(_Dataset(path)):
        case = extract_record(raw, fmt, None)
        assert isinstance(case, Case), case
        out.append(case)
    return out


@pytest.fixture(scope="module")
def all_cases() -> dict[str, list[Case]]:
    return {p.name: cases_of(p) for p in FILES}


def test_every_simulation_becomes_a_case(all_cases):
    counts = {name: len(cases) for name, cases in all_cases.items()}
    assert sorted(counts.values()) == [20, 40, 40, 50]
    calls = {name: sum(len(c.trace.tool_calls()) for c in cases) for name, cases in all_cases.items()}
    # the README's tool-call totals: 148 / 299 / 689 / 371
    assert sorted(calls.values()) == [148, 299, 371, 689]
    telecom = next(v for k, v in all_cases.items() if "telecom" in k)
    assert sum(len(c.metadata["user_call_indices"]) for c in telecom) == 482


def test_compare_args_restrict_the_expected_arguments():
    base = {"name": "f", "arguments": {"a": 1, "b": 2}}
    assert expected_from_action({**base, "compare_args": None})["arguments"] == {"a": {"$python_eq": 1}, "b": {"$python_eq": 2}}
    assert expected_from_action({**base, "compare_args": ["a", "c"]})["arguments"] == {"a": {"$python_eq": 1}, "c": {"$absent": True}}
    assert expected_from_action({**base, "compare_args": []})["arguments"] is None


def test_error_flagged_results_are_failed_calls(all_cases):
    retail = next(v for k, v in all_cases.items() if "retail" in k)
    failed = [(c, call) for c in retail for call in c.trace.tool_calls() if call.failed]
    assert len(failed) == 12  # the README: 12 tool messages with "error": true in retail
    case, call = failed[0]
    assert call.error  # the result text is kept as the error
    n_failed = sum(c.failed for c in case.trace.tool_calls())
    counted = MaxToolCalls(max_calls=0).evaluate(case).details["count"]
    assert MaxToolCalls(max_calls=0, include_failed=False).evaluate(case).details["count"] == counted - n_failed


def _agreement(all_cases, metric: ToolCalls) -> tuple[int, int, list]:
    agree = total = 0
    wrong = []
    for name, cases in all_cases.items():
        for case in cases:
            checks = case.metadata["action_checks"]
            assert len(checks) == len(case.expected_tool_calls)
            paired = {e for e, _ in metric.evaluate(case).details["pairs"]}
            for i, check in enumerate(checks):
                total += 1
                if (i in paired) == check["action_match"]:
                    agree += 1
                else:
                    wrong.append((name, case.id, check["action_id"]))
    return agree, total, wrong


def test_tool_calls_reproduce_upstream_action_checks(all_cases):
    agree, total, wrong = _agreement(all_cases, ToolCalls(arguments="subset", pairing="reuse"))
    assert (agree, total) == (557, 557), wrong


def test_shallow_arguments_with_reuse_reproduce_upstream_action_checks(all_cases):
    # τ²'s own rule: listed top-level keys, each value equal in full.
    agree, total, wrong = _agreement(all_cases, ToolCalls(arguments="shallow", pairing="reuse"))
    assert (agree, total) == (557, 557), wrong


def test_json_text_argument_values_compare_as_text_as_upstream_compares_them():
    # banking_knowledge's discoverable tools take their own arguments as JSON text (task_015's expected action below).
    # τ²-bench compares action arguments with plain `==` (`Action.compare_with_tool_call`, sierra-research/tau2-bench
    # `src/tau2/data_model/tasks.py`, as of v1.0.1), so the same JSON spelled with other spaces or key order is no
    # match there; `_normalize_action_arg_value`, which would decode such text first, is only proposed (pull request
    # #401, not merged). Reproducing `action_match` means comparing the text as recorded.
    inner = '{"user_id": "890389b165", "card_name": "Platinum Rewards Card"}'
    action = {"action_id": "015_1", "requestor": "user", "name": "call_discoverable_user_tool",
              "arguments": {"discoverable_tool_name": "get_referral_link", "arguments": inner}, "compare_args": None}
    metric = ToolCalls(arguments="shallow", pairing="reuse", score="recall")

    def matched(text: str) -> float:
        call = {"name": action["name"], "arguments": {"discoverable_tool_name": "get_referral_link", "arguments": text}}
        case = Case.model_validate({"id": "015-0", "expected_tool_calls": [expected_from_action(action)],
                                    "trace": {"steps": [{"tool_calls": [call]}]}})
        return metric.evaluate(case).value

    assert matched(inner) == 1.0
    assert matched('{"user_id":"890389b165","card_name":"Platinum Rewards Card"}') == 0.0  # spaces
    assert matched('{"card_name": "Platinum Rewards Card", "user_id": "890389b165"}') == 0.0  # key order


@pytest.mark.parametrize("reason", ["max_steps", "too_many_errors", "timeout", "agent_error", "user_error"])
def test_a_simulation_ended_early_is_a_failed_case_with_no_upstream_action_checks(reason):
    # `evaluate_simulation` (sierra-research/tau2-bench `src/tau2/evaluator/evaluator.py`) gives any ending but
    # agent_stop / user_stop reward 0 with a note and checks no action (v0.x: max_steps and too_many_errors, the only
    # others then); the metrics count it as a failed trial. Only infrastructure_error is left out (an invalid_input).
    action = {"action_id": "0_0", "requestor": "assistant", "name": "get_user_details", "arguments": {"user_id": "u1"},
              "compare_args": None}
    sim = {"id": "s", "task_id": "0", "trial": 0, "termination_reason": reason,
           "reward_info": {"reward": 0.0, "reward_basis": None,
                           "info": {"note": f"Simulation terminated prematurely. Termination reason: {reason}"}},
           "messages": [{"role": "assistant", "content": "Hi! How can I help you today?"},
                        {"role": "user", "content": "I am u1."},
                        {"role": "assistant", "content": None, "tool_calls": [
                            {"id": "call_1", "name": "get_user_details", "arguments": {"user_id": "u1"}, "requestor": "assistant"}]},
                        {"role": "tool", "id": "call_1", "content": "{}", "requestor": "assistant", "error": False}]}
    task = {"id": "0", "evaluation_criteria": {"actions": [action], "reward_basis": ["DB"]}}
    case = adapt({"index": 0, "simulation": sim, "task": task, "domain": "airline"})
    assert case.metadata["termination_reason"] == reason and case.metadata["action_checks"] == []
    assert RecordedReward().evaluate(case).passed is False
    # The calls are still scored: upstream has no verdict here to reproduce, and `termination_reason` tells such cases apart.
    assert ToolCalls(arguments="shallow", pairing="reuse", score="recall").evaluate(case).value == 1.0


def test_one_to_one_pairing_differs_only_where_one_call_meets_two_expected_actions(all_cases):
    agree, total, wrong = _agreement(all_cases, ToolCalls(arguments="subset"))
    assert (agree, total) == (553, 557)
    assert sorted(w[1] for w in wrong) == ["32-0", "32-0", "32-0", "42-0"]


def test_a_results_file_cut_short_or_edited_by_hand_costs_only_its_broken_simulation(tmp_path):
    # Cut two thirds of the way through (a copy stopped at a size, a file still being written), the file was one
    # config error: no simulation scored. A comma doubled inside one simulation lost them all too.
    source = next(p for p in FILES if "airline" in p.name)
    fmt = format_for("tau2-bench")
    whole = list(fmt.read(_Dataset(source)))
    text = source.read_text(encoding="utf-8")
    cut = tmp_path / "cut.json"
    cut.write_text(text[: len(text) * 2 // 3], encoding="utf-8")
    got = list(fmt.read(_Dataset(cut)))
    assert 1 < len(got) < len(whole) and all(r.error is None for r in got[:-1])
    assert [r.payload["simulation"] for r in got[:-1]] == [r.payload["simulation"] for r in whole[: len(got) - 1]]
    assert got[-1].line == whole[len(got) - 1].line and got[-1].error.startswith(f"simulations[{len(got) - 1}]: invalid JSON: ")
    assert got[-1].error.endswith("; the file ends early (it looks truncated)")
    at = text.index('"termination_reason"', text.index('"simulations"'))
    edited = tmp_path / "edited.json"
    edited.write_text(text[:at] + ", " + text[at:], encoding="utf-8")  # `, , "termination_reason"` in the first simulation
    got = list(fmt.read(_Dataset(edited)))
    assert len(got) == len(whole) and [r.error is None for r in got] == [False] + [True] * (len(whole) - 1)
    assert got[0].error.startswith("simulations[0]: invalid JSON: Expecting property name enclosed in double quotes at line ")


def test_a_simulation_that_lost_a_quote_stops_the_read_there_and_says_so(tmp_path):
    # Read inside out, a simulation missing a quote would end somewhere in a later one, whose messages would read as
    # simulations of their own. The ones before it score; the error says the rest of the file is not read.
    source = next(p for p in FILES if "airline" in p.name)
    text = source.read_text(encoding="utf-8")
    at = text.index('"termination_reason": "', text.index('"simulations"'))
    at = text.index('"termination_reason": "', at + 1)  # the second simulation's
    broken = tmp_path / "quote.json"
    broken.write_text(text[:at] + '"termination_reason: "' + text[at + len('"termination_reason": "'):], encoding="utf-8")
    got = list(format_for("tau2-bench").read(_Dataset(broken)))
    assert len(got) == 2 and got[0].error is None
    assert got[1].error.startswith("simulations[1]: invalid JSON: ") and got[1].error.endswith(
        "a quote is missing in or near this simulation, so where it ends cannot be told; the rest of the file is not read")


def test_a_stray_brace_between_simulations_stops_the_read_and_never_hangs(tmp_path):
    # A `}` doubled after a simulation: the reader stepped over nothing and read the same `}` for ever (100% CPU, no run).
    from tracejudge.stages.extract.tau2_bench import read_results

    sim = '{"id": "s", "task_id": "1", "messages": []}'
    path = tmp_path / "r.json"
    path.write_text('{"tasks": [], "simulations": [' + sim + "}, " + sim + "]}")
    got = [r.error for r in read_results(path)]
    assert got == [None, "simulations[1]: expected ',' or ']' after a simulation, found '}'; the rest of the file is not read"]
    path.write_text('{"tasks": [], "simulations": [}, ' + sim + "]}")
    (only,) = [r.error for r in read_results(path)]
    assert only.startswith("simulations[0]: invalid JSON: ") and only.endswith("; the rest of the file is not read")


def test_a_file_cut_between_two_simulations_says_so(tmp_path):
    # Cut after a simulation's `},` the file read as whole: 29 of 50 simulations gone, no error, verdict PASS.
    from tracejudge.stages.extract.tau2_bench import read_results

    sim = '{"id": "s", "task_id": "1", "messages": []}'
    path = tmp_path / "r.json"
    for cut in ('{"tasks": [], "simulations": [' + sim + ",\n", '{"tasks": [], "simulations": [' + sim):
        path.write_text(cut)
        assert [r.error for r in read_results(path)] == [None, "simulations[1]: the file ends here, before the list's ']': the file "
                                                                "ends early (it looks truncated), and simulations after the cut are not in it"]


def test_a_tasks_file_given_as_results_is_named_as_such_not_as_broken_json(tmp_path):
    # A τ²-bench domain's tasks.json (valid JSON, an array) read as results said "invalid JSON … the file's JSON is broken
    # where the error says: mend it there".
    from tracejudge.core.config import load_config
    from tracejudge.core.errors import ConfigError
    from tracejudge.stages.extract.first_records import check_dataset
    from tracejudge.stages.extract.tau2_bench import read_results

    path = tmp_path / "tasks.json"
    path.write_text('[{"id": "0", "user_scenario": {}}]')
    (only,) = [r.error for r in read_results(path)]
    assert only == ("cannot read a tau2-bench results file: a JSON array, not a results object: a τ²-bench tasks file? "
                    "(a results file is one object with `tasks` and `simulations`)")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {path}, format: tau2-bench}}\nmetrics: [{{type: ToolCalls}}]\n")
    try:
        check_dataset(load_config(cfg, []))
    except ConfigError as exc:
        assert "tasks file?" in str(exc) and "mend it there" not in str(exc), str(exc)
    else:
        raise AssertionError("a tasks file read as results is a config error")


@pytest.mark.parametrize(("value", "why"), [
    ("oops", "expected a list of messages, got a string"),
    ({}, "expected a list of messages, got an object"),
    (None, "null where a list of messages is expected"),
    (..., "required message list is missing"),
])
def test_messages_of_the_wrong_type_are_named_as_such_not_as_missing(tmp_path, value, why):
    # (a string there was said to be a missing list: the list is there, of a type τ²-bench never writes)
    doc = json.loads(next(p for p in FILES if "airline" in p.name).read_text(encoding="utf-8"))
    if value is ...:
        del doc["simulations"][0]["messages"]
    else:
        doc["simulations"][0]["messages"] = value
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    fmt = format_for("tau2-bench")
    raws = list(fmt.read(_Dataset(edited)))
    got = extract_record(raws[0], fmt, None)
    assert isinstance(got, tuple), got
    assert got[1].message == f"simulations[0].messages: {why}" and got[1].field == "simulations[0].messages"
    assert isinstance(extract_record(raws[1], fmt, None), Case)
