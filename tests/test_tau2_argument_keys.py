"""Which argument keys τ²-bench's action check compares, on small results files of each release.

`Action.compare_with_tool_call` (sierra-research/tau2-bench `src/tau2/data_model/tasks.py`) is the same in every
release, v0.1.0 (2025-06-10) to v1.0.1 (2026-07-16): the keys compared are `compare_args`, else the keys the *call*
carries, so a call omitting an action's key matches and one adding a key does not. A results file names the commit
that wrote it (`info.git_commit`); the verdicts here do not depend on it, as upstream's do not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tracejudge.core.records import Case
from tracejudge.core.registry import format_for
from tracejudge.stages.extract import extract_record
from tracejudge.stages.score import ToolCallAccuracy, ToolCalls

# The commit each release tag names (`git rev-parse <tag>^{commit}`), as `info.git_commit` records it.
RELEASES = {
    "v0.1.0": "37199f36924c8896f5e048360691f8476cd89ba1",
    "v0.1.3": "5ba9e3e56db57c5e4114bf7f901291f09b2c5619",
    "v0.2.0": "f8de30c298689cbe0117d76a378e7315a17e5bd8",
    "v1.0.1": "fc0055dc4e0a316c3f83133267fbd6faaa770992",
}

# (action name, action arguments, compare_args, the call's arguments, upstream's `action_match`). Each action has a
# tool of its own, so no other call of the simulation can meet it.
ACTIONS: list[tuple[str, dict[str, Any], list[str] | None, dict[str, Any], bool]] = [
    ("omits_key", {"a": 1, "b": 2}, None, {"a": 1}, True),  # an expected key the call omits is not compared
    ("extra_key", {"a": 1}, None, {"a": 1, "c": 3}, False),  # a key the call adds differs
    ("no_args", {"a": 1}, None, {}, True),  # a call with no arguments: no key to compare
    ("other_value", {"a": 1, "b": 2}, None, {"a": 1, "b": 3}, False),
    ("listed", {"a": 1, "b": 2}, ["a"], {"a": 1, "b": 9, "c": 3}, True),  # compare_args given: its keys alone
    ("listed_absent", {"a": 1}, ["a", "z"], {"a": 1, "z": 0}, False),  # a listed key only the call carries
    ("listed_none", {"a": 1}, [], {"x": 9}, True),  # compare_args empty: the name alone
]


def _results(tmp_path: Path, commit: str, table: list[tuple[str, dict[str, Any], list[str] | None, dict[str, Any], bool]] = ACTIONS) -> Path:
    """A one-simulation τ²-bench results file whose task expects `table`'s actions (`ACTIONS`), each called once, with
    upstream's checks."""
    actions = [{"action_id": f"0_{i}", "requestor": "assistant", "name": name, "arguments": args, "info": None,
                "compare_args": keys} for i, (name, args, keys, _, _) in enumerate(table)]
    calls = [{"id": f"call_{i}", "name": name, "arguments": got, "requestor": "assistant"}
             for i, (name, _, _, got, _) in enumerate(table)]
    messages = [{"role": "assistant", "content": "Hi! How can I help you today?"},
                {"role": "user", "content": "Please do it."},
                {"role": "assistant", "content": None, "tool_calls": calls}]
    messages += [{"role": "tool", "id": c["id"], "content": "{}", "requestor": "assistant", "error": False} for c in calls]
    checks = [{"action": a, "action_match": match, "action_reward": float(match)} for a, (*_, match) in zip(actions, table)]
    sim = {"id": "s0", "task_id": "0", "trial": 0, "termination_reason": "agent_stop", "messages": messages,
           "reward_info": {"reward": 0.0, "action_checks": checks}}
    data = {"info": {"git_commit": commit, "num_trials": 1, "max_steps": 100, "max_errors": 10,
                     "environment_info": {"domain_name": "mock"}},
            "tasks": [{"id": "0", "evaluation_criteria": {"actions": actions, "reward_basis": ["ACTION"]}}],
            "simulations": [sim]}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _case(path: Path) -> Case:
    class _Dataset:
        tasks, limit, options = None, None, {}

    _Dataset.path = path
    fmt = format_for("tau2-bench")
    (case,) = [extract_record(raw, fmt, None) for raw in fmt.read(_Dataset())]
    assert isinstance(case, Case), case
    return case


@pytest.mark.parametrize("release", sorted(RELEASES))
@pytest.mark.parametrize("arguments", ["shallow", "subset"])
def test_each_action_gets_upstreams_action_match(tmp_path, release, arguments):
    case = _case(_results(tmp_path, RELEASES[release]))
    score = ToolCalls(arguments=arguments, pairing="reuse", score="recall").evaluate(case)
    paired = {e for e, _ in score.details["pairs"]}
    ours = {name: i in paired for i, (name, *_) in enumerate(ACTIONS)}
    recorded = {name: check["action_match"] for (name, *_), check in zip(ACTIONS, case.metadata["action_checks"])}
    assert ours == recorded == {name: match for name, *_, match in ACTIONS}
    assert score.value == pytest.approx(4 / 7)


def test_the_expectations_say_which_keys_they_compare(tmp_path):
    expected = {e.name: e for e in _case(_results(tmp_path, RELEASES["v1.0.1"])).expected_tool_calls}
    assert expected["omits_key"].argument_keys == "call"
    assert expected["omits_key"].arguments == {"a": {"$python_eq": 1}, "b": {"$python_eq": 2}}
    assert expected["listed"].argument_keys == "expected" and expected["listed"].arguments == {"a": {"$python_eq": 1}}
    assert expected["listed_absent"].arguments == {"a": {"$python_eq": 1}, "z": {"$absent": True}}
    assert expected["listed_none"].arguments is None


def _upstream_match(arguments: dict[str, Any], compare_args: list[str] | None, got: dict[str, Any]) -> bool:
    """`Action.compare_with_tool_call` (v0.1.0 to v1.0.1) once the names are equal, line for line."""
    keys = got.keys() if compare_args is None else compare_args
    if len(keys) == 0:
        return True
    return {k: v for k, v in got.items() if k in keys} == {k: v for k, v in arguments.items() if k in keys}


# (the action's value, the call's): upstream compares them with Python's `==`, where `True == 1 == 1.0`, and a list or a
# mapping compares whole by `==` too. The project's own rules (a bool never a number, a nested mapping key by key in
# `subset`, a `$`-keyed mapping a matcher) gave the opposite verdict on the first eight.
VALUES: list[tuple[Any, Any]] = [
    (True, 1), (1, True), (0, False), (1.0, True), ({"a": 1}, {"a": True}), ([1, 2], [True, 2.0]),
    ({"a": 1}, {"a": 1, "b": 2}),  # a mapping with a key more: `==` says no, `subset` said yes
    ({"$regex": "^A"}, "Abc"),  # an action's own `$`-keyed value: a value, not a pattern
    ({"$regex": "^A"}, {"$regex": "^A"}), ([{"n": "x"}], [{"n": "x", "p": 1}]), (1, 1.0), (2.5, 2.5), (2, 3), (True, 2),
    ("1", 1), (None, None), (None, "None"), (["a", None], ["a", None]), (["a"], ["a", "b"]), ("x", "x"),
]


@pytest.mark.parametrize("arguments", ["shallow", "subset", "exact"])
@pytest.mark.parametrize("compare_args", [None, ["x"]])
def test_argument_values_compare_as_pythons_equality_as_upstream_compares_them(tmp_path, arguments, compare_args):
    table = [(f"t{i}", {"x": want, "y": "kept"}, compare_args, {"x": got} if compare_args is None else {"x": got, "y": "other"},
              _upstream_match({"x": want, "y": "kept"}, compare_args, {"x": got} if compare_args is None else {"x": got, "y": "other"}))
             for i, (want, got) in enumerate(VALUES)]
    assert sum(match for *_, match in table) == 12  # (the verdicts themselves: upstream's, not this test's reading of them)
    case = _case(_results(tmp_path, RELEASES["v1.0.1"], table))
    if arguments == "exact" and compare_args is not None:
        # (`exact` refuses the call's key the action's `compare_args` leave out: a mode upstream has no counterpart of)
        case.trace.steps[-1].tool_calls[:] = [c.model_copy(update={"arguments": {"x": c.arguments["x"]}}) for c in case.trace.steps[-1].tool_calls]
    score = ToolCalls(arguments=arguments, pairing="reuse", score="recall").evaluate(case)
    paired = {e for e, _ in score.details["pairs"]}
    assert {name: i in paired for i, (name, *_) in enumerate(table)} == {name: match for name, *_, match in table}


def test_a_value_compared_with_pythons_equality_is_shown_bare_in_a_reason():
    from tracejudge.stages.extract.tau2_bench import expected_from_action

    action = {"name": "book", "arguments": {"nights": 2, "guest": {"name": "Ann", "age": 30, "vip": 1}, "room": "A"}, "compare_args": None}
    expected = expected_from_action(action)
    assert expected["arguments"]["room"] == "A"  # (a string compares alike under both rules: kept as it is)

    def reason(got: dict[str, Any]) -> str:
        case = Case.model_validate({"id": "c", "expected_tool_calls": [expected], "trace": {"steps": [{"tool_calls": [{"name": "book", "arguments": got}]}]}})
        return ToolCalls(arguments="shallow", pairing="reuse", score="recall").evaluate(case).reason

    assert "nights: expected 2, got 3" in reason({"nights": 3})
    assert "guest.age: expected 30, got 31" in reason({"guest": {"name": "Ann", "age": 31, "vip": 1}})
    # (`vip: true` is `1` by `==`: the key the guest has more is the difference)
    assert "guest.seat: unexpected argument 4" in reason({"guest": {"name": "Ann", "age": 30, "vip": True, "seat": 4}})
    assert ToolCalls(arguments="shallow").evaluate(Case.model_validate(
        {"id": "c", "expected_tool_calls": [expected], "trace": {"steps": [{"tool_calls": [{"name": "book", "arguments": {"guest": {"name": "Ann", "age": 30.0, "vip": True}}}]}]}})).value == 1.0


@pytest.mark.parametrize("metric", [ToolCallAccuracy(), ToolCallAccuracy(require_order=True)])
def test_name_metrics_give_the_same_value_whatever_the_expected_arguments_and_their_keys(tmp_path, metric):
    # `ToolCallAccuracy` compares names only (multivon-eval's): `argument_keys`, which says which argument keys
    # `ToolCalls` compares, has no argument comparison to reach there.
    case = _case(_results(tmp_path, RELEASES["v1.0.1"]))
    assert any(e.argument_keys == "call" for e in case.expected_tool_calls)
    bare = case.model_copy(update={"expected_tool_calls": [e.model_copy(update={"arguments": None, "argument_keys": None})
                                                           for e in case.expected_tool_calls]})
    assert metric.evaluate(case).value == metric.evaluate(bare).value == 1.0  # (every action's tool is called, in order)
