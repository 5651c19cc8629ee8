"""Property tests: ranges, identity, and invariance under reordering."""

from __future__ import annotations

from helpers import make_case
from hypothesis import given, settings
from hypothesis import strategies as st
from tracejudge.stages.score import ToolCallAccuracy, ToolCalls, ToolCorrectness, TrajectoryMatch

NAMES = st.sampled_from(["a", "b", "c", "d"])
VALUES = st.one_of(st.integers(-3, 3), st.booleans(), st.sampled_from(["x", "y"]), st.none())
ARGS = st.dictionaries(st.sampled_from(["k", "m", "n"]), VALUES, max_size=2)
CALL = st.builds(lambda name, args: {"name": name, "arguments": args}, NAMES, ARGS)
CALLS = st.lists(CALL, max_size=6)

METRICS = [
    ToolCallAccuracy(),
    ToolCallAccuracy(require_order=True),
    ToolCallAccuracy(require_order=True, penalize_unexpected=True),
    ToolCallAccuracy(penalize_unexpected=True),
    ToolCalls(),
    ToolCalls(arguments="exact", score="precision"),
    ToolCalls(order="in_order"),
    ToolCalls(pairing="reuse", score="recall"),
    ToolCorrectness(),
    TrajectoryMatch(),
    TrajectoryMatch(order="any_order", score="min"),
    TrajectoryMatch(order="exact"),
]

# Each test carries its settings: a profile loaded when this module is imported would become every later
# module's default too (under xdist every worker imports every test module, so the last one loaded won).
EXAMPLES = settings(max_examples=60, deadline=None)


@EXAMPLES
@given(CALLS, CALLS)
def test_scores_stay_in_unit_interval(expected, actual):
    case = make_case(expected, actual)
    for metric in METRICS:
        value = metric.evaluate(case).value
        assert value is not None and 0.0 <= value <= 1.0, (metric, value)


@EXAMPLES
@given(CALLS)
def test_identical_sequences_score_one(calls):
    case = make_case(calls, calls)
    for metric in METRICS:
        assert metric.evaluate(case).value == 1.0, metric


@EXAMPLES
@given(CALLS, CALLS, st.randoms(use_true_random=False))
def test_any_order_invariant_under_permutation_of_either_side(expected, actual, rnd):
    shuffled_e, shuffled_a = expected[:], actual[:]
    rnd.shuffle(shuffled_e)
    rnd.shuffle(shuffled_a)
    for metric in (TrajectoryMatch(order="any_order"), ToolCalls(), ToolCalls(arguments="exact"), ToolCorrectness(), ToolCallAccuracy()):
        base = metric.evaluate(make_case(expected, actual)).value
        assert metric.evaluate(make_case(shuffled_e, actual)).value == base
        assert metric.evaluate(make_case(expected, shuffled_a)).value == base


@EXAMPLES
@given(CALLS, CALLS, st.randoms(use_true_random=False))
def test_tool_calls_invariant_under_reordering_expected(expected, actual, rnd):
    shuffled = expected[:]
    rnd.shuffle(shuffled)
    for metric in (ToolCalls(), ToolCalls(score="recall"), ToolCalls(arguments="exact", score="precision"), ToolCalls(pairing="reuse")):
        a = metric.evaluate(make_case(expected, actual))
        b = metric.evaluate(make_case(shuffled, actual))
        assert a.value == b.value
        assert len(a.details["pairs"]) == len(b.details["pairs"])


@EXAMPLES
@given(CALLS, CALLS)
def test_tool_calls_pairs_are_one_to_one_and_compatible(expected, actual):
    s = ToolCalls().evaluate(make_case(expected, actual))
    pairs = s.details["pairs"]
    assert len({e for e, _ in pairs}) == len(pairs) == len({a for _, a in pairs})
    assert sorted([e for e, _ in pairs] + s.details["missing"]) == list(range(len(expected)))
    assert sorted([a for _, a in pairs] + s.details["unexpected"]) == list(range(len(actual)))
    for e, a in pairs:
        assert expected[e]["name"] == actual[a]["name"]


def _lcs_reference(a, b):
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            table[i + 1][j + 1] = table[i][j] + 1 if x == y else max(table[i][j + 1], table[i + 1][j])
    return table[-1][-1]


@EXAMPLES
@given(st.lists(NAMES, max_size=12), st.lists(NAMES, max_size=12))
def test_bit_parallel_lcs_equals_the_textbook_table(a, b):
    from tracejudge.stages.score.trajectory import lcs_length

    assert lcs_length(a, b) == _lcs_reference(a, b) == lcs_length(b, a)
