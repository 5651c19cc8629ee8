"""promptfoo's trajectory assertions (`trajectory:tool-used`, `…:tool-sequence`, `…:tool-args-match`, `…:step-count`, `not-…`).

The hand cases are promptfoo's own, from `test/assertions/trajectory.test.ts`: the same
values on the same trajectory, with promptfoo's expected pass, score and reason. promptfoo's
mock trace is spans; here it is the trace those spans normalize to (see
`stages/score/promptfoo_trajectory.py` for what maps to what): one model turn calling
`search_orders`, `search_inventory`, `compose_reply` and a shell `ls -la`, then a turn
with a thought. The turn-group cases (nested lists) are written from promptfoo's
`groupToolStepsByTurn` / `turnMatchesGroup`, which its released tests do not cover.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from tracejudge.core.records import Case
from tracejudge.core.registry import SpecError, build_metric, metric_types
from tracejudge.entrypoints.api import metric_spec
from tracejudge.stages.score.promptfoo_steps import (
    format_args,
    js_equal,
    js_number,
    matches_partial,
    matches_pattern,
    trajectory_steps,
)
import _forkserver

ORDERS = {"order_id": "123", "include_history": False}
REPLY = {"tone": "friendly", "citations": ["doc_1", "doc_2"]}
ALL_TOOLS = "tool:search_orders, tool:search_inventory, tool:compose_reply"


def case(*turns: list[Any], metadata: dict[str, Any] | None = None, thought_turn: bool = False, output: str | None = None) -> Case:
    """A case whose trace has one step per turn; a turn is a list of calls `(name, arguments)` or `(name,)` (none recorded)."""
    steps: list[dict[str, Any]] = []
    for turn in turns:
        calls = []
        for call in turn:
            calls.append({"name": call[0], "arguments_missing": True} if len(call) == 1 else {"name": call[0], "arguments": call[1]})
        steps.append({"tool_calls": calls})
    if thought_turn:
        steps.append({"thought": "plan"})
    return Case.model_validate({"id": "c", "metadata": metadata or {}, "trace": {"steps": steps, "output": output}})


# promptfoo's `mockTraceData`: chat span, three tools, a command, a reasoning span.
MOCK = case([("search_orders", ORDERS), ("search_inventory", {"query": "quantum computing", "limit": 3}),
             ("compose_reply", REPLY), ("shell", {"command": "ls -la"})], thought_turn=True)


def score(kind: str, value: Any, on: Case = MOCK) -> tuple[float | None, bool | None, str]:
    s = build_metric({"type": kind, "value": value}).evaluate(on)
    return s.value, s.passed, s.reason


def refused(kind: str, value: Any) -> str:
    """The config error of `value` as `KIND: WHERE: MESSAGE`, WHERE the place in the value (`value.mode`, `value[1].name`)
    its loc goes down to (so the error names the line of the key at fault)."""
    with pytest.raises(SpecError) as err:
        build_metric({"type": kind, "value": value})
    loc = err.value.loc
    assert loc[0] == "value", loc
    where = "value" + "".join(f"[{p}]" if str(p).isdigit() else f".{p}" for p in loc[1:])
    head, _, rest = err.value.msg.partition(": ")
    assert head == kind, err.value.msg
    return f"{kind}: {where}: {rest}"


# --- trajectory:tool-used ----------------------------------------------------------------------------------------------

TOOL_USED = [
    ("trajectory:tool-used", "search_orders", True, f"Observed required tool(s): search_orders. Actual tools: {ALL_TOOLS}"),
    ("trajectory:tool-used", {"pattern": "search*", "min": 2, "max": 2}, True,
     'Matched tool "search*" 2 time(s) (expected 2-2). Matches: tool:search_orders, tool:search_inventory'),
    ("trajectory:tool-used", {"pattern": "search*", "min": 1}, True,
     'Matched tool "search*" 2 time(s) (expected at least 1). Matches: tool:search_orders, tool:search_inventory'),
    ("not-trajectory:tool-used", "compose_reply", False, f"Forbidden tool(s) were used: compose_reply. Actual tools: {ALL_TOOLS}"),
    ("not-trajectory:tool-used", ["missing_tool", "compose_reply"], False,
     f"Forbidden tool(s) were used: compose_reply. Actual tools: {ALL_TOOLS}"),
    ("not-trajectory:tool-used", ["missing_tool"], True, "Forbidden tool(s) were not used: missing_tool"),
    ("not-trajectory:tool-used", {"name": "missing_tool", "min": 1}, True, 'Tool "missing_tool" did not satisfy the forbidden match condition'),
    ("trajectory:tool-used", ["search_orders", "missing_tool"], False, f"Missing required tool(s): missing_tool. Actual tools: {ALL_TOOLS}"),
    # (not promptfoo's test cases; what its code gives)
    ("trajectory:tool-used", "SEARCH_ORDERS", True, f"Observed required tool(s): SEARCH_ORDERS. Actual tools: {ALL_TOOLS}"),
    ("trajectory:tool-used", "shell", False, f"Missing required tool(s): shell. Actual tools: {ALL_TOOLS}"),  # a command, not a tool
    ("not-trajectory:tool-used", {"pattern": "search*", "max": 1}, True, 'Tool "search*" did not satisfy the forbidden match condition'),
    ("not-trajectory:tool-used", {"pattern": "*", "min": 3}, False, 'Tool "*" matched 3 time(s), which violates the inverse assertion'),
]


@pytest.mark.parametrize(("kind", "value", "passed", "reason"), TOOL_USED)
def test_tool_used_as_promptfoo_decides_it(kind: str, value: Any, passed: bool, reason: str) -> None:
    assert score(kind, value) == (1.0 if passed else 0.0, passed, reason)


def test_tool_used_refuses_what_promptfoo_refuses() -> None:
    assert "must have a string, string array, or object value" in refused("trajectory:tool-used", 123)
    assert "must include a name or pattern property" in refused("trajectory:tool-used", {"min": 1})
    assert "requires at least one expected tool" in refused("trajectory:tool-used", [])


def test_a_case_without_a_trace_is_not_scored() -> None:
    s = build_metric({"type": "trajectory:tool-used", "value": "search_orders"}).evaluate(Case(id="x"))
    assert s.value is None and s.passed is None and "no trace" in s.reason


# --- trajectory:tool-sequence ------------------------------------------------------------------------------------------

TWO_CALLS = case([("search_orders", {})], [("compose_reply", {})])

SEQUENCE = [
    ("trajectory:tool-sequence", ["search_orders", "compose_reply"], MOCK, True,
     f"Observed tool sequence in order: tool:search_orders, tool:compose_reply. Actual tools: {ALL_TOOLS}"),
    ("trajectory:tool-sequence", {"mode": "exact", "steps": ["search_orders", "compose_reply"]}, MOCK, False,
     f"Expected exact tool sequence of search_orders, compose_reply, but actual tools were {ALL_TOOLS}"),
    ("trajectory:tool-sequence", {"mode": "exact", "steps": ["search_orders", "compose_reply"]}, TWO_CALLS, True,
     "Observed exact tool sequence: tool:search_orders, tool:compose_reply"),
    ("trajectory:tool-sequence", ["compose_reply", "search_orders"], MOCK, False,
     f'Expected tool "search_orders" was not observed in order. Actual tools: {ALL_TOOLS}'),
    ("not-trajectory:tool-sequence", ["search_orders", "compose_reply"], MOCK, False,
     f"Forbidden tool sequence was observed. Actual tools: {ALL_TOOLS}"),
    ("not-trajectory:tool-sequence", ["compose_reply", "search_orders"], MOCK, True, "Forbidden tool sequence was not observed"),
]

# Turns: `a` and `b` asked for together, then `c` alone.
TURNS = case([("a", {}), ("b", {})], [("c", {})])

GROUPS = [
    ([["b", "a"], "c"], True, "Observed tool turns in order: [b + a], c. Actual turns: [tool:a + tool:b], tool:c"),
    ([["a"], "c"], False, "Expected tool turn a was not observed in order. Actual turns: [tool:a + tool:b], tool:c"),  # a turn holds a and b
    ([["a", "*"]], True, "Observed tool turns in order: [a + *]. Actual turns: [tool:a + tool:b], tool:c"),
    ([["c"]], True, "Observed tool turns in order: c. Actual turns: [tool:a + tool:b], tool:c"),
    ({"mode": "exact", "steps": [["a", "b"], ["c"]]}, True, "Observed expected tool turns: [tool:a + tool:b], tool:c"),
    ({"mode": "exact", "steps": [["a", "b"]]}, False, "Expected tool turns [a + b], but observed [tool:a + tool:b], tool:c"),
    ({"mode": "exact", "steps": [["a", "b"], "d"]}, False, "Expected tool turns [a + b], d, but observed [tool:a + tool:b], tool:c"),
    # `*` must take b, not a: the pairing backtracks
    ([[{"pattern": "*"}, "a"]], True, "Observed tool turns in order: [* + a]. Actual turns: [tool:a + tool:b], tool:c"),
]


@pytest.mark.parametrize(("kind", "value", "on", "passed", "reason"), SEQUENCE)
def test_tool_sequence_as_promptfoo_decides_it(kind: str, value: Any, on: Case, passed: bool, reason: str) -> None:
    assert score(kind, value, on) == (1.0 if passed else 0.0, passed, reason)


@pytest.mark.parametrize(("value", "passed", "reason"), GROUPS)
def test_nested_lists_are_tools_of_one_turn_in_any_order(value: Any, passed: bool, reason: str) -> None:
    assert score("trajectory:tool-sequence", value, TURNS) == (1.0 if passed else 0.0, passed, reason)


def test_without_groups_turns_do_not_matter() -> None:
    assert score("trajectory:tool-sequence", {"mode": "exact", "steps": ["a", "b", "c"]}, TURNS)[1] is True
    assert score("trajectory:tool-sequence", ["b", "c"], TURNS)[1] is True


def test_tool_sequence_refuses_what_promptfoo_refuses() -> None:
    assert "step 1 must include a name or pattern property" in refused("trajectory:tool-sequence", [{"type": "tool"}, "compose_reply"])
    assert "must have an array or object value" in refused("trajectory:tool-sequence", "search_orders")
    assert "requires at least one expected step" in refused("trajectory:tool-sequence", {"steps": []})
    assert "step group 1 must contain at least one tool" in refused("trajectory:tool-sequence", [[]])
    assert "step group 2 tool 1 must be a tool name or a matcher object" in refused("trajectory:tool-sequence", ["a", [["b"]]])
    assert "value[1]: step 2 must be a tool name or a matcher object" in refused("trajectory:tool-sequence", ["a", 5])


# --- trajectory:tool-args-match ----------------------------------------------------------------------------------------

ORDERS_ARGS = '{"order_id":"123","include_history":false}'
REPLY_ARGS = '{"tone":"friendly","citations":["doc_1","doc_2"]}'

ARGS = [
    ("trajectory:tool-args-match", {"name": "search_orders", "args": {"order_id": "123"}}, True,
     f'Tool "search_orders" matched expected arguments (partial) on tool:search_orders. Args: {ORDERS_ARGS}'),
    ("trajectory:tool-args-match", {"name": "compose_reply", "args": {"citations": ["doc_1", "doc_2"]}}, True,
     f'Tool "compose_reply" matched expected arguments (partial) on tool:compose_reply. Args: {REPLY_ARGS}'),
    ("trajectory:tool-args-match", {"pattern": "compose_*", "mode": "exact", "arguments": REPLY}, True,
     f'Tool "compose_*" matched expected arguments (exact) on tool:compose_reply. Args: {REPLY_ARGS}'),
    ("trajectory:tool-args-match", {"name": "search_orders", "args": {"order_id": "999"}}, False,
     f'No call to tool "search_orders" matched expected arguments (partial): {{"order_id":"999"}}. Observed args: {ORDERS_ARGS}'),
    ("trajectory:tool-args-match", {"name": "missing_tool", "args": {"order_id": "123"}}, False,
     f'No tool call matched "missing_tool". Actual tools: {ALL_TOOLS}'),
    ("not-trajectory:tool-args-match", {"name": "search_orders", "args": {"order_id": "123"}}, False,
     f'Forbidden argument match for tool "search_orders" was observed on tool:search_orders. Args: {ORDERS_ARGS}'),
    ("not-trajectory:tool-args-match", {"name": "missing_tool", "args": {"order_id": "123"}}, True,
     'Forbidden argument match for tool "missing_tool" was not observed because no tool call matched it'),
    ("trajectory:tool-args-match", {"name": "search_orders", "mode": "exact", "args": {"order_id": "123"}, "defaults": {"include_history": False}},
     True, f'Tool "search_orders" matched expected arguments (exact) on tool:search_orders. Args: {ORDERS_ARGS}. '
     "Ignored default argument(s): include_history"),
    ("trajectory:tool-args-match", {"name": "search_orders", "mode": "exact", "args": {"order_id": "123"}, "defaults": {}}, False,
     f'No call to tool "search_orders" matched expected arguments (exact): {{"order_id":"123"}}. Observed args: {ORDERS_ARGS}'),
    ("trajectory:tool-args-match", {"name": "search_orders", "args": {"order_id": "123"}, "defaults": {"include_history": False}}, True,
     f'Tool "search_orders" matched expected arguments (partial) on tool:search_orders. Args: {ORDERS_ARGS}. '
     "Ignored default argument(s): include_history"),
    ("trajectory:tool-args-match", {"name": "search_orders", "mode": "partial", "args": {"order_id": "123"}, "defaults": {"include_history": True}},
     True, f'Tool "search_orders" matched expected arguments (partial) on tool:search_orders. Args: {ORDERS_ARGS}'),
    ("trajectory:tool-args-match", {"name": "search_orders", "mode": "exact", "arguments": {"order_id": "123"}, "defaults": {"include_history": False}},
     True, f'Tool "search_orders" matched expected arguments (exact) on tool:search_orders. Args: {ORDERS_ARGS}. '
     "Ignored default argument(s): include_history"),
    ("not-trajectory:tool-args-match", {"name": "search_orders", "mode": "exact", "args": {"order_id": "123"}, "defaults": {"include_history": False}},
     False, f'Forbidden argument match for tool "search_orders" was observed on tool:search_orders. Args: {ORDERS_ARGS}'),
]


@pytest.mark.parametrize(("kind", "value", "passed", "reason"), ARGS)
def test_tool_args_match_as_promptfoo_decides_it(kind: str, value: Any, passed: bool, reason: str) -> None:
    assert score(kind, value) == (1.0 if passed else 0.0, passed, reason)


def test_a_call_without_recorded_arguments_has_none() -> None:
    on = case([("search_orders",)])
    assert score("trajectory:tool-args-match", {"name": "search_orders", "args": {"order_id": "123"}}, on) == (
        0.0, False, 'Tool "search_orders" was observed but no arguments were captured. Actual tools: tool:search_orders')


def orders(arguments: Any, value: dict[str, Any], kind: str = "trajectory:tool-args-match") -> tuple[bool | None, str]:
    s = build_metric({"type": kind, "value": {"name": "orders", **value}}).evaluate(case([("orders", arguments)]))
    return s.passed, s.reason


# promptfoo's `defaults` cases: (call arguments, value, passes)
DEFAULTS = [
    ({"status": "Q", "page": 1, "page_size": 5}, {"mode": "exact", "args": {"status": "Q"}, "defaults": {"page": 1, "page_size": 5}}, True),
    ({"status": "Q"}, {"mode": "exact", "args": {"status": "Q"}, "defaults": {"page": 1, "page_size": 5}}, True),
    ({"status": "Q", "page": 1, "delete_database": True}, {"mode": "exact", "args": {"status": "Q"}, "defaults": {"page": 1}}, False),
    ({"status": "Q", "sort": {"field": "created", "order": "desc"}},
     {"mode": "exact", "args": {"status": "Q"}, "defaults": {"sort": {"order": "desc", "field": "created"}}}, True),
    ({"status": "Q", "page": 1}, {"mode": "exact", "args": {"status": "Q"}, "defaults": {"page": 1, "page_size": 5}}, True),
    ({"status": "Q", "page": 2}, {"mode": "exact", "args": {"status": "Q"}, "defaults": {"page": 1, "page_size": 5}}, False),
    ({"status": "Q", "cursor": None}, {"mode": "exact", "args": {"status": "Q"}, "defaults": {"cursor": None}}, True),
    ({"status": "Q", "page": 1}, {"mode": "exact", "args": {"status": "Q", "page": 2}, "defaults": {"page": 1}}, False),
    ({"status": "Q", "pagination": {"page": 1}}, {"mode": "exact", "args": {"status": "Q"}, "defaults": {"page": 1}}, False),
    ({"status": "Q", "__proto__": {"polluted": True}}, {"mode": "exact", "args": {"status": "Q"}, "defaults": {"page": 1}}, False),
    ({"status": "Q", "page": 1}, {"args": {"status": "Q", "page": 1}, "defaults": {"page": 1}}, False),  # promptfoo's documented footgun
    ("[1,2,3]", {"mode": "exact", "args": [1, 2, 3], "defaults": {"page": 1}}, True),  # a JSON array payload, parsed as promptfoo parses it
    ({"status": "Q", "fields": "*"}, {"mode": "exact", "args": {"status": "Q"}, "defaults": {"fields": "*"}}, True),
    ({"status": "Q", "fields": "ssn,password"}, {"mode": "exact", "args": {"status": "Q"}, "defaults": {"fields": "*"}}, False),
]

# promptfoo's `ignore` cases
IGNORE = [
    ({"status": "Q", "request_id": "a"}, {"mode": "exact", "args": {"status": "Q"}, "ignore": ["request_id"]}, True),
    ({"status": "Q", "request_id": "z"}, {"mode": "exact", "args": {"status": "Q"}, "ignore": ["request_id"]}, True),
    ({"status": "Q", "cursor": {"page": 3}}, {"mode": "exact", "args": {"status": "Q"}, "ignore": ["cursor"]}, True),
    ({"status": "Q", "cursor": None}, {"mode": "exact", "args": {"status": "Q"}, "ignore": ["cursor"]}, True),
    ({"status": "Q", "request_id": "abc"}, {"mode": "exact", "args": {"status": "Q"}, "ignore": "request_id"}, True),
    ({"status": "Q", "request_id": "abc", "delete_database": True}, {"mode": "exact", "args": {"status": "Q"}, "ignore": ["request_id"]}, False),
    ({"status": "Q"}, {"mode": "exact", "args": {"status": "Q", "request_id": "expected"}, "ignore": ["request_id"]}, True),
    ({"status": "Q", "request_id": "abc"}, {"mode": "partial", "args": {"status": "Q"}, "ignore": ["request_id"]}, True),
    ('{"status":"Q","__proto__":{"polluted":true},"request_id":"abc"}', {"mode": "exact", "args": {"status": "Q"}, "ignore": ["request_id"]}, False),
    ('["a","b"]', {"mode": "exact", "args": ["a", "b"], "ignore": ["request_id"]}, True),
    ({"status": "Q", "request_id": "a1", "delete_database": True}, {"mode": "exact", "args": {"status": "Q"}, "ignore": ["*_id"]}, False),
    ({"status": "Q", "v1": "x"}, {"mode": "exact", "args": {"status": "Q"}, "ignore": ["v?"]}, True),
    ({"status": "Q", "request_id": "a1"}, {"mode": "exact", "args": {"status": "Q"}, "ignore": ["request"]}, False),
    ({"status": "Q", "Request_ID": "a1"}, {"mode": "exact", "args": {"status": "Q"}, "ignore": ["*_id"]}, True),  # a glob ignores case
    ({"status": "Q", "Request_ID": "a1"}, {"mode": "exact", "args": {"status": "Q"}, "ignore": ["request_id"]}, False),  # a name does not
]


@pytest.mark.parametrize(("arguments", "value", "passed"), DEFAULTS + IGNORE)
def test_defaults_and_ignore_as_promptfoo_reads_them(arguments: Any, value: dict[str, Any], passed: bool) -> None:
    assert orders(arguments, value)[0] is passed


def test_the_reason_names_what_was_ignored_and_defaulted() -> None:
    passed, reason = orders({"status": "Q", "page": 1, "request_id": "abc"},
                            {"mode": "exact", "args": {"status": "Q"}, "defaults": {"page": 1}, "ignore": ["request_id"]})
    assert passed and reason.endswith("Ignored argument(s): request_id. Ignored default argument(s): page")
    passed, reason = orders({"status": "Q", "request_id": "a1", "order_id": "b2"}, {"mode": "exact", "args": {"status": "Q"}, "ignore": ["*_id"]})
    assert passed and "Ignored argument(s): request_id, order_id" in reason
    passed, reason = orders({"status": "Q", "page": 1, "page_size": 5}, {"mode": "exact", "args": {"status": "Q"}, "defaults": {"page": 1, "page_size": 5}})
    assert passed and "Ignored default argument(s): page, page_size" in reason
    passed, reason = orders({"status": "Q", "page": 1, "delete_database": True}, {"mode": "exact", "args": {"status": "Q"}, "defaults": {"page": 1}})
    assert not passed and "delete_database" in reason
    passed, _ = orders({"status": "Q", "request_id": "abc"}, {"mode": "exact", "args": {"status": "Q"}, "ignore": ["request_id"]},
                       "not-trajectory:tool-args-match")
    assert passed is False


def test_tool_args_match_refuses_what_promptfoo_refuses() -> None:
    kind = "trajectory:tool-args-match"
    assert "must include an args or arguments property" in refused(kind, {"name": "search_orders"})
    assert 'mode must be "partial" or "exact"' in refused(kind, {"name": "search_orders", "mode": "excat", "args": {}})
    assert "must have an object value" in refused(kind, "search_orders")
    assert "must include a name or pattern property" in refused(kind, {"args": {"order_id": "123"}})
    for bad in (["include_history"], None, "include_history", 1):
        assert "defaults must be an object mapping argument names to default values" in refused(kind, {"name": "x", "args": {}, "defaults": bad})
    for bad in ([5], [""], [None], [{"request_id": True}], "", "\ufeff", [" \u3000"]):  # (blank as JavaScript's `trim` has it)
        assert "ignore must be a non-empty string or an array of non-empty strings" in refused(kind, {"name": "x", "args": {}, "ignore": bad})
    for taken in ("\x1c", ["\x85"]):  # not space to JavaScript (Python's `strip` removes them): promptfoo accepts these
        assert build_metric({"type": kind, "value": {"name": "x", "args": {}, "ignore": taken}})
    # `args: null` is a value, as there (`hasOwnProperty`)
    assert build_metric({"type": kind, "value": {"name": "x", "args": None}})


# --- trajectory:step-count ---------------------------------------------------------------------------------------------

STEP_COUNT = [
    ("trajectory:step-count", {"type": "command", "min": 1, "max": 1}, True,
     "Matched 1 trajectory step(s) for type=command (expected 1-1). Matches: command:ls -la"),
    # promptfoo names its reasoning step by the span (`reasoning:reasoning_plan`); a thought is named `reasoning` here.
    ("trajectory:step-count", {"pattern": "reasoning*", "min": 1}, True,
     "Matched 1 trajectory step(s) for pattern=reasoning* (expected at least 1). Matches: reasoning:reasoning"),
    ("trajectory:step-count", {"type": "tool", "max": 3}, True, f"Matched 3 trajectory step(s) for type=tool (expected at most 3). Matches: {ALL_TOOLS}"),
    ("not-trajectory:step-count", {"type": "tool", "min": 4}, True, "Trajectory step count did not satisfy the forbidden range"),
    ("not-trajectory:step-count", {"type": "tool", "min": 3}, False, "Trajectory step count satisfied the forbidden range"),
    ("trajectory:step-count", {"type": ["tool", "command"], "pattern": "s*", "min": 2.0}, True,
     "Matched 3 trajectory step(s) for type=tool|command, pattern=s* (expected at least 2). "
     "Matches: tool:search_orders, tool:search_inventory, command:ls -la"),
    ("trajectory:step-count", {"max": 6}, False, "Matched 7 trajectory step(s) (expected at most 6). Matches: span:chat, tool:search_orders, "
     "tool:search_inventory, tool:compose_reply, command:ls -la, span:chat, reasoning:reasoning"),
]


@pytest.mark.parametrize(("kind", "value", "passed", "reason"), STEP_COUNT)
def test_step_count_as_promptfoo_decides_it(kind: str, value: Any, passed: bool, reason: str) -> None:
    assert score(kind, value) == (1.0 if passed else 0.0, passed, reason)


def test_step_count_refuses_what_promptfoo_refuses() -> None:
    assert "must include a min or max property" in refused("trajectory:step-count", {"type": "tool"})
    assert "must have an object value" in refused("trajectory:step-count", "tool")


# --- refusals promptfoo does not make (each an assertion that could never match as written) -----------------------------


@pytest.mark.parametrize(("kind", "value", "says"), [
    ("trajectory:tool-used", {"patern": "search*"}, "value.patern: unknown key 'patern'; did you mean pattern?"),
    ("trajectory:tool-used", {"name": "x", "min": "2"}, "value.min: must be a number"),
    ("trajectory:tool-used", {"name": "x", "max": True}, "value.max: must be a number"),
    ("trajectory:step-count", {"type": "tools", "max": 1}, "value.type: 'tools' is no promptfoo step type"),
    ("trajectory:step-count", {"type": [], "max": 1}, "value.type: an empty list allows no step type"),
    ("trajectory:tool-sequence", {"mode": "strict", "steps": ["a"]}, "value.mode: must be 'in_order' or 'exact'"),
    ("trajectory:tool-sequence", {"steps": "a"}, "value.steps: must be a list of steps"),
    ("trajectory:tool-sequence", ["a", {"name": 5}], "value[1].name: must be a string"),
    ("trajectory:tool-args-match", {"name": "x", "args": {}, "min": 1}, "value.min: unknown key 'min'"),
])
def test_values_that_could_never_match_are_config_errors(kind: str, value: Any, says: str) -> None:
    assert says in refused(kind, value)


def test_threshold_does_not_apply() -> None:
    with pytest.raises(SpecError) as err:
        build_metric({"type": "trajectory:tool-used", "value": "x", "threshold": 0.5})
    assert err.value.loc == ("threshold",) and "threshold does not apply" in err.value.msg


# --- the steps ---------------------------------------------------------------------------------------------------------


def kinds(on: Case) -> list[tuple[str, str]]:
    return [(s.type, s.name) for s in trajectory_steps(on)]


def test_the_trace_maps_to_promptfoos_steps() -> None:
    assert kinds(MOCK) == [("span", "chat"), ("tool", "search_orders"), ("tool", "search_inventory"), ("tool", "compose_reply"),
                           ("command", "ls -la"), ("span", "chat"), ("reasoning", "reasoning")]
    steps = trajectory_steps(MOCK)
    assert "ls" in steps[4].aliases and "shell" in steps[4].aliases
    assert steps[1].args == ORDERS and steps[1].call == 0 and steps[4].call == 3
    said = Case.model_validate({"id": "c", "trace": {"steps": [{"output": "hi", "tool_calls": [{"name": "t"}]}], "output": "hi"}})
    assert kinds(said) == [("span", "chat"), ("message", "agent response"), ("tool", "t")]
    final = Case.model_validate({"id": "c", "trace": {"steps": [{"tool_calls": [{"name": "t"}]}], "output": "bye"}})
    assert kinds(final) == [("span", "chat"), ("tool", "t"), ("message", "agent response")]


# promptfoo's `trajectory utilities` cases: (tool, arguments, metadata, type, name)
SHELLS = [
    ("bash", {"cmd": "pytest tests/"}, {}, "tool", "bash"),
    ("bash", {"cmd": "pytest tests/"}, {"commandToolNames": ["bash"]}, "command", "pytest tests/"),
    ("bash", {"cmd": "ls -la"}, {"commandToolNames": ["BASH"]}, "command", "ls -la"),
    ("bash", {"cmd": "ls -la"}, {"commandToolNames": ["bash", 123, "", "  "]}, "command", "ls -la"),
    ("exec_command", {"cmd": "cat repo/tickets/TICKET-014.md", "workdir": "/tmp/ws"}, {}, "command", "cat repo/tickets/TICKET-014.md"),
    ("local_shell", {"command": "ls -la /tmp", "timeout": 30}, {}, "command", "ls -la /tmp"),
    ("shell", {"cmd": "echo hello"}, {}, "command", "echo hello"),
    ("shell", {"commands": ["cat skills/x/SKILL.md", "python3 skills/x/run.py repo"]}, {}, "command", "cat skills/x/SKILL.md; python3 skills/x/run.py repo"),
    ("exec_command", {"cmd": ["python", "-m", "pytest"], "workdir": "/ws"}, {}, "command", "python -m pytest"),
    ("exec_command", {"workdir": "/tmp"}, {}, "tool", "exec_command"),
    (" Shell ", {"cmd": "pwd"}, {}, "command", "pwd"),
    ("execute", {"command": "make"}, {}, "command", "make"),
    ("execute", {"query": "x"}, {}, "tool", "execute"),
]


@pytest.mark.parametrize(("tool", "arguments", "metadata", "kind", "name"), SHELLS)
def test_shell_tools_are_command_steps(tool: str, arguments: Any, metadata: dict[str, Any], kind: str, name: str) -> None:
    assert kinds(case([(tool, arguments)], metadata=metadata))[1] == (kind, name)


def test_command_aliases_include_the_executable() -> None:
    step = trajectory_steps(case([("exec_command", {"cmd": ["python", "-m", "pytest"]})]))[1]
    assert set(step.aliases) == {"python -m pytest", "exec_command", "python"}


# --- JavaScript's rules ------------------------------------------------------------------------------------------------


def test_globs_match_as_javascripts_case_insensitive_regexp() -> None:
    assert matches_pattern("search_orders", "SEARCH*") and matches_pattern("get.weather", "get?weather")
    assert not matches_pattern("getXweather", "get.weather")  # `.` is literal
    assert matches_pattern("a+b(c)", "a+b(c)") and matches_pattern("x", "*")
    assert not matches_pattern("a\nb", "a*b") and not matches_pattern("a\u2028b", "a?b")  # no wildcard crosses a line break
    assert not matches_pattern("ſearch", "search")  # no fold from non-ASCII to ASCII without the `u` flag
    assert matches_pattern("ÉCOLE", "école") and not matches_pattern("straße", "STRASSE")
    assert matches_pattern("a😀", "a??") and not matches_pattern("a😀", "a?")  # `?` is one UTF-16 unit
    assert not matches_pattern("search_orders\n", "search_orders")


def test_values_compare_as_is_deep_strict_equal() -> None:
    assert js_equal(1, 1.0) and js_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert not js_equal(True, 1) and not js_equal(0, -0.0) and js_equal(float("nan"), float("nan"))
    assert not js_equal({"a": 1}, {"a": 1, "b": 2}) and not js_equal([1], {"0": 1}) and not js_equal(None, False)
    assert matches_partial({"a": 1, "b": {"c": 2, "d": 3}}, {"b": {"c": 2}}) and not matches_partial({"l": [1, 2]}, {"l": [1]})


def test_arguments_are_written_as_json_stringify_writes_them() -> None:
    assert format_args({"b": 1.0, "10": True, "a": None, "2": 1e-7, "x": 1e21, "y": 0.000001, "z": -0.0}) == (
        '{"2":1e-7,"10":true,"b":1,"a":null,"x":1e+21,"y":0.000001,"z":0}')
    assert format_args([float("nan"), "é\n", 123456789.125]) == '[null,"é\\n",123456789.125]'
    assert [js_number(v) for v in (1.5, 100.0, 1e20, 1.2345e-5, 5e-324)] == ["1.5", "100", "100000000000000000000", "0.000012345", "5e-324"]


# --- the registry, the API, the command line ---------------------------------------------------------------------------


def test_registered_under_promptfoos_names() -> None:
    names = {"trajectory:tool-used", "trajectory:tool-sequence", "trajectory:tool-args-match", "trajectory:step-count"}
    for name in names | {"not-" + n for n in names}:
        cls = metric_types()[name]
        assert cls.__name__ == name and cls.__doc__
        metric = build_metric({"type": name, "value": {"name": "x", "args": {}} if "args" in name
                               else {"max": 1} if "step" in name else ["x"]})
        assert metric.key == name and build_metric(metric_spec(metric)) == metric


def write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def run_cli(tmp_path: Path, metrics: list[dict[str, Any]], cases: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    data = write(tmp_path / "cases.jsonl", cases)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(data), "format": "native"}, "metrics": metrics,
                                   "run": {"dir": str(tmp_path / "run")}, "cache": {"enabled": False}}), encoding="utf-8")
    return _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)


CASES = [
    {"id": "good", "trace": {"steps": [{"tool_calls": [{"name": "search_orders", "arguments": {"order_id": "123", "page": 1}},
                                                       {"name": "search_inventory", "arguments": {"query": "q"}}]},
                                       {"tool_calls": [{"name": "compose_reply", "arguments": {"tone": "friendly"}}]},
                                       {"output": "Your order ships today."}], "output": "Your order ships today."}},
    {"id": "bad", "trace": {"steps": [{"tool_calls": [{"name": "delete_account", "arguments": {"user": "u1"}}]},
                                      {"output": "Done."}], "output": "Done."}},
    {"id": "own", "trace": {"steps": [{"tool_calls": [{"name": "search_orders"}]}]},
     "metrics": [{"type": "trajectory:tool-used", "value": "search_*", "name": "case_level"}]},
]

METRICS = [
    {"type": "trajectory:tool-used", "value": ["search_orders", "compose_reply"]},
    {"type": "not-trajectory:tool-used", "value": "delete_*"},
    {"type": "trajectory:tool-sequence", "value": [["search_inventory", "search_orders"], "compose_reply"], "name": "turns"},
    {"type": "trajectory:tool-args-match", "value": {"name": "search_orders", "mode": "exact", "args": {"order_id": "123"}, "defaults": {"page": 1}}},
    {"type": "trajectory:step-count", "value": {"type": "tool", "max": 2}},
]


def test_end_to_end_through_the_command_line(tmp_path: Path) -> None:
    done = run_cli(tmp_path, METRICS, CASES)
    assert done.returncode == 0, done.stdout + done.stderr
    results = {r["case_id"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    values = {cid: {k: (s["value"], s["passed"]) for k, s in r["scores"].items()} for cid, r in results.items()}
    assert values["good"] == {"trajectory:tool-used": (1.0, True), "not-trajectory:tool-used": (1.0, True), "turns": (1.0, True),
                              "trajectory:tool-args-match": (1.0, True), "trajectory:step-count": (0.0, False)}
    assert values["bad"] == {"trajectory:tool-used": (0.0, False), "not-trajectory:tool-used": (0.0, False), "turns": (0.0, False),
                             "trajectory:tool-args-match": (0.0, False), "trajectory:step-count": (1.0, True)}
    assert values["own"]["case_level"] == (1.0, True)
    good, bad = results["good"]["scores"], results["bad"]["scores"]
    assert good["trajectory:tool-args-match"]["reason"] == ('Tool "search_orders" matched expected arguments (exact) on tool:search_orders. '
                                                            'Args: {"order_id":"123","page":1}. Ignored default argument(s): page')
    assert good["trajectory:tool-args-match"]["details"]["call"] == 0
    assert good["turns"]["reason"] == ("Observed tool turns in order: [search_inventory + search_orders], compose_reply. "
                                       "Actual turns: [tool:search_orders + tool:search_inventory], tool:compose_reply")
    assert bad["not-trajectory:tool-used"]["reason"] == "Forbidden tool(s) were used: delete_*. Actual tools: tool:delete_account"
    assert bad["trajectory:tool-args-match"]["reason"] == 'No tool call matched "search_orders". Actual tools: tool:delete_account'


def test_an_invalid_value_is_a_config_error_naming_the_field(tmp_path: Path) -> None:
    done = run_cli(tmp_path, [{"type": "trajectory:tool-sequence", "value": {"steps": ["a", {"patern": "b"}]}}], CASES[:1])
    assert done.returncode == 2, done.stdout + done.stderr
    text = " ".join(done.stderr.split())
    # The error names the step's own key path (and so its line), not the `value:` above the block.
    assert "metrics.0.value.steps.1.patern: trajectory:tool-sequence: unknown key 'patern'; did you mean pattern?" in text, text
    assert not (tmp_path / "run").exists()


def test_an_invalid_case_level_value_costs_that_metric_of_that_case(tmp_path: Path) -> None:
    bad = {**CASES[0], "id": "typo", "metrics": [{"type": "trajectory:step-count", "value": {"type": "tool"}}]}
    done = run_cli(tmp_path, METRICS[:1], [CASES[0], bad])
    assert done.returncode == 0, done.stdout + done.stderr
    results = {r["case_id"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    assert results["typo"]["scores"]["trajectory:tool-used"]["value"] == 1.0
    own = results["typo"]["scores"]["trajectory:step-count"]
    assert own["value"] is None and "metrics.0.value" in own["reason"] and "must include a min or max property" in own["reason"]


def test_the_readme_block_builds() -> None:
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = text[text.index("**promptfoo** (trace-based assertions"):].split("```yaml\n", 1)[1].split("```", 1)[0]
    specs = yaml.safe_load(block)["metrics"]
    assert len(specs) == 6 and all(build_metric(spec).evaluate(MOCK).value is not None for spec in specs)


@pytest.mark.parametrize("kind, value, message", [
    ("trajectory:tool-used", {"name": "a", "min": 3, "max": 1}, "min 3 is above max 1"),
    ("trajectory:tool-used", {"name": "a", "max": 0}, "min 1 (the default) is above max 0"),
    ("trajectory:tool-used", {"name": "a", "min": -1}, "must be a count, 0 or more"),
    ("trajectory:step-count", {"min": 5, "max": 2}, "min 5 is above max 2"),
    ("trajectory:step-count", {"max": -1}, "must be a count, 0 or more"),
    ("trajectory:tool-args-match", {"name": "a", "args": {"x": 1}, "arguments": {"x": 2}}, "give args or arguments, not both"),
])
def test_values_that_can_never_match_or_are_read_in_part_are_refused(kind: str, value: Any, message: str) -> None:
    assert message in refused(kind, value)
    assert build_metric({"type": "trajectory:tool-used", "value": {"name": "a", "min": 0, "max": 0}})  # never called: fine


def test_promptfoos_metric_key_is_the_name_and_explain_offers_no_threshold() -> None:
    from tracejudge.entrypoints.starter import describe_metric

    for kind, value in [("trajectory:tool-used", "a"), ("tool-call-f1", ["a"]), ("trajectory:goal-success", "Greet the user")]:
        assert build_metric({"type": kind, "value": value, "metric": "my_check"}).key == "my_check"
        with pytest.raises(SpecError, match="give name or metric"):
            build_metric({"type": kind, "value": value, "metric": "a", "name": "b"})
    assert "threshold" not in describe_metric("trajectory:tool-sequence") and "threshold" in describe_metric("tool-call-f1")


def test_numbers_compare_and_print_as_javascript_holds_them() -> None:
    # promptfoo's values are JavaScript numbers: doubles. An integer past 2**53 is rounded as `JSON.parse` rounds it,
    # so 9007199254740993 and 9007199254740992 are one number there, and 10**30 is 1e30 (promptfoo 0.123.1's `runAssertion`).
    passed, reason = orders({"k": 9007199254740992}, {"mode": "exact", "args": {"k": 9007199254740993}})
    assert passed is True and 'Args: {"k":9007199254740992}' in reason, reason
    assert orders({"k": 1e30}, {"mode": "exact", "args": {"k": 10**30}})[0] is True
    assert orders({"k": 1e30}, {"args": {"k": 10**30}})[0] is True  # partial
    assert orders({"k": 9007199254740990}, {"mode": "exact", "args": {"k": 9007199254740993}})[0] is False
    assert orders({"k": 10**400}, {"mode": "exact", "args": {"k": float("inf")}})[0] is True  # past the largest double: Infinity


def _block_config_errors(tmp_path: Path, last: str, rest: str) -> tuple[Path, str]:
    """The config file and its config error, for a first metric `trajectory:tool-args-match` whose block-style value
    ends with the line `last` (line 7), then the metrics `rest`."""
    from tracejudge.core.config import load_config
    from tracejudge.core.errors import ConfigError

    (tmp_path / "c.jsonl").write_text("")
    cfg = tmp_path / "a.yaml"
    cfg.write_text("dataset: {path: c.jsonl, format: native}\n"
                   "metrics:\n"
                   "  - type: trajectory:tool-args-match\n"
                   "    value:\n"
                   "      name: x\n"
                   "      args: {}\n"
                   f"      {last}\n" + rest)
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    return cfg, str(err.value)


def test_a_mistake_inside_a_block_value_names_its_own_line(tmp_path: Path) -> None:
    # The error named the `value:` line above the block (line 4), where the mistake is three lines further down.
    cfg, text = _block_config_errors(tmp_path, "mode: wrongish", "  - type: trajectory:tool-sequence\n"
                                                                  "    value:\n"
                                                                  "      steps:\n"
                                                                  "        - a\n"
                                                                  "        - {patern: b}\n")
    assert f'{cfg}:7: metrics.0.value.mode: trajectory:tool-args-match: mode must be "partial" or "exact"' in text, text
    assert f"{cfg}:12: metrics.1.value.steps.1.patern: trajectory:tool-sequence: unknown key 'patern'" in text, text
    # An unknown key names its own line, a list's bad item its own, and a near miss of a fixed value the one meant.
    cfg, text = _block_config_errors(tmp_path, "modee: exact", "  - type: trajectory:step-count\n"
                                                                "    value:\n"
                                                                "      min: 1\n"
                                                                "      type:\n"
                                                                "        - tool\n"
                                                                "        - comand\n"
                                                                "  - {type: trajectory:tool-args-match, value: {name: x, args: {}, mode: exakt}}\n")
    assert f"{cfg}:7: metrics.0.value.modee: trajectory:tool-args-match: unknown key 'modee'; did you mean mode?" in text, text
    assert f"{cfg}:13: metrics.1.value.type.1: trajectory:step-count: 'comand' is no promptfoo step type; did you mean command?" in text, text
    assert f'{cfg}:14: metrics.2.value.mode: trajectory:tool-args-match: mode must be "partial" or "exact"; did you mean exact?' in text, text
