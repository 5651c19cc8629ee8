"""The checks' and the rendering's shortcuts give what their general paths give.

Each shortcut is compared with the general rule it stands for, on generated values: argument
matching (`value_match`) with its plain-mapping and plain-string loops against the rules written
out in full here; `ToolCalls`' table of compatible pairs against `matching.match_table` with the
metric's own compatibility test (including the order in which pairs are tested); the call
filter against `_by_name`; the case's calls, their count and one call's step (walked to) against the
trace's own lists; the XML escaping check against its regular expression, over every
code point; a call's text for reasons, encoded key by key up to its cut, against `json.dumps` of
the whole arguments, cut; a list of names' text and a rounded ratio, built once per value, against `repr` and `round`.
"""

from __future__ import annotations

import re
from xml.sax.saxutils import quoteattr

import pytest
from helpers import make_case
from hypothesis import assume, given, settings
from hypothesis import strategies as st
import tracejudge.stages.score.tool_calls as tool_calls
from tracejudge.llm.redact_patterns import _HINT
from tracejudge.core.inert_text import visible
from tracejudge.engine import rendered
from tracejudge.stages.score import ToolCalls, ToolCorrectness, TrajectoryMatch
from tracejudge.stages.score.base import _by_name
from tracejudge.stages.score.matching import match_table
from tracejudge.stages.score.reasons import names_repr
from tracejudge.stages.score.value_match import ABSENT, _dumps, _match_matcher, _matcher_key, match_arguments, match_value, render_call
from tracejudge.stages.score.views import CaseViews

# Each test carries its settings: a profile loaded when this module is imported would become every later
# module's default too (under xdist every worker imports every test module, so the last one loaded won).
EXAMPLES = settings(max_examples=300, deadline=None)

SCALARS = st.one_of(st.sampled_from(["x", "y", ""]), st.integers(-2, 2), st.sampled_from([0.0, 1.0, 2.5]), st.booleans(), st.none())
MATCHERS = st.one_of(
    st.builds(lambda v: {"$any_of": v}, st.lists(SCALARS, max_size=3)),
    st.builds(lambda p: {"$regex": p}, st.sampled_from(["x", "^y$", "."])),
    st.builds(lambda x: {"$approx": x, "tol": 0.6}, st.sampled_from([1, 2.0])),
    st.builds(lambda b: {"$absent": b}, st.booleans()),
)
KEYS = st.sampled_from(["a", "b", "c", "$any_of", "$regex", "tol"])
VALUES = st.recursive(SCALARS | MATCHERS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4), max_leaves=12)
MAPS = st.dictionaries(KEYS, VALUES, max_size=4)


def _reference(expected, actual, mode):  # type: ignore[no-untyped-def]
    """The argument rules of `value_match`'s docstring, written out with no shortcut."""
    matcher = _matcher_key(expected) if isinstance(expected, dict) else None
    if matcher is not None:
        return _match_matcher(matcher, expected, actual, mode)
    if isinstance(expected, dict):
        return (isinstance(actual, dict) and all(_reference(v, actual.get(k, ABSENT), mode) for k, v in expected.items())
                and (mode != "exact" or all(k in expected for k in actual)))
    if actual is ABSENT or _kind(expected) != _kind(actual):
        return False
    if type(expected) is list:
        return len(expected) == len(actual) and all(_reference(e, a, mode) for e, a in zip(expected, actual))
    return expected == actual


def _kind(value):  # type: ignore[no-untyped-def]
    # bool is never a number; int and float are one kind (1 == 1.0)
    return "number" if type(value) in (int, float) else type(value)


def _outcome(fn, *args):  # type: ignore[no-untyped-def]
    # A `$regex` generated from a mapping is no pattern: both sides must raise, and the same error.
    try:
        return fn(*args)
    except Exception as exc:
        return type(exc), str(exc)


@EXAMPLES
@given(VALUES, VALUES, st.sampled_from(["subset", "exact"]))
def test_match_value_is_the_rules_written_out(expected, actual, mode):
    assert _outcome(match_value, expected, actual, mode) == _outcome(_reference, expected, actual, mode)
    assert _outcome(match_value, expected, expected, mode) == _outcome(_reference, expected, expected, mode)


@EXAMPLES
@given(MAPS, MAPS, st.sampled_from(["subset", "exact"]))
def test_match_arguments_is_the_rules_written_out(expected, actual, mode):
    def whole(expected, actual, mode):  # type: ignore[no-untyped-def]
        # The top level is a mapping of arguments, never a matcher.
        ok = all(_reference(v, actual.get(k, ABSENT), mode) for k, v in expected.items())
        return ok and (mode != "exact" or all(k in expected for k in actual))

    assert _outcome(match_arguments, expected, actual, mode) == _outcome(whole, expected, actual, mode)


NAMES = st.sampled_from(["get_a", "set_b", "set_c", "think"])
ARGS = st.dictionaries(st.sampled_from(["k", "m"]), st.one_of(st.sampled_from(["x", "y"]), st.integers(0, 1), st.booleans()), max_size=2)
CALL = st.builds(lambda name, args: {"name": name, "arguments": args}, NAMES, ARGS)
FAILED = st.builds(lambda name, args, err: {"name": name, "arguments": args, **({"error": "boom"} if err else {})}, NAMES, ARGS, st.booleans())
TOOL_CALLS = [ToolCalls(arguments=a, order=o, include_failed=f, exclude_tools=x)
              for a in ("subset", "shallow", "exact", "ignore") for o in ("any_order", "in_order")
              for f in (True, False) for x in ((), ("get_*", "think"))]


@EXAMPLES
@given(st.lists(CALL, max_size=5), st.lists(FAILED, max_size=6))
def test_toolcalls_table_is_match_table(expected, actual):
    case = make_case(expected, actual)
    for metric in TOOL_CALLS:
        exp = [(i, e) for i, e in enumerate(case.expected_tool_calls or [])]
        act = metric.counted_calls(case)
        for backwards in (False, True):
            tested: list[tuple[int, int]] = []

            def compatible(e, a, tested=tested):  # type: ignore[no-untyped-def]
                tested.append((id(e), id(a)))
                return tool_calls._compatible(metric.arguments, e, a)

            want = match_table([e for _, e in exp], [c for _, c in act], compatible, backwards=backwards)
            seen: list[tuple[int, int]] = []
            original = tool_calls._compatible
            try:
                tool_calls._compatible = lambda arguments, e, a: (seen.append((id(e), id(a))), original(arguments, e, a))[1]
                got = tool_calls._table(metric.arguments, exp, act, backwards)
            finally:
                tool_calls._compatible = original
            assert got == want
            if metric.arguments != "ignore":  # pairs of equal names are tested in the general path's order
                names = {id(c): c.name for _, c in exp + act}
                assert seen == [p for p in tested if names[p[0]] == names[p[1]]]


@EXAMPLES
@given(st.lists(FAILED, max_size=8))
def test_call_filter_is_by_name_over_the_calls_that_count(actual):
    case = make_case([], actual)
    calls = case.trace.tool_calls()
    for metric in TOOL_CALLS + [ToolCorrectness(exclude_tools=("set_*",)), TrajectoryMatch(include_tools=("set_*", "think"), include_failed=True)]:
        kept = [(i, c) for i, c in enumerate(calls) if metric.include_failed or c.error is None]
        assert metric._keep(calls) == _by_name(kept, metric.include_tools, metric.exclude_tools)
        assert metric.counted_names(CaseViews(case)) == [c.name for _, c in metric._keep(calls)]



STEP_CALLS = st.lists(st.lists(st.sampled_from(["get_a", "set_b"]), max_size=3), max_size=8)


@EXAMPLES
@given(STEP_CALLS)
def test_calls_and_the_step_of_a_call_are_what_the_trace_lists(per_step):
    from tracejudge.core.records import Case

    case = Case.model_validate({"id": "c", "trace": {"steps": [{"tool_calls": [{"name": n} for n in names]} for names in per_step]}})
    everywhere = [s for s, names in enumerate(per_step) for _ in names]
    assert CaseViews(case).calls == case.trace.tool_calls()
    assert CaseViews(case).call_count == len(everywhere)
    assert CaseViews(case).steps == everywhere
    for i in range(len(everywhere)):
        views = CaseViews(case)
        assert views.step_of(i) == everywhere[i]  # walked: the list is not built
        assert views.steps and views.step_of(i) == everywhere[i]  # read from the list
    for built in (False, True):  # an index past the calls, walked to or read from the list
        views = CaseViews(case)
        if built:
            views.steps  # noqa: B018
        with pytest.raises(IndexError, match="list index out of range"):
            views.step_of(len(everywhere))

def test_plain_text_check_is_the_escaping_pattern_for_every_code_point():
    special = rendered._SPECIAL
    for cp in range(0x110000):
        ch = chr(cp)
        for s in (ch, "reason … 'x' \"y\" " + ch + " τ"):
            assert rendered._plain(s) == (special.search(s) is None), hex(cp)


# What XML 1.0 cannot carry (its `Char` production), surrogates apart: dropped before quoting.
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@EXAMPLES
@given(st.text(max_size=40), st.sampled_from([None, 0.0, 0.5, 1.0]), st.sampled_from([None, True, False]))
def test_testcase_end_escapes_as_quoteattr(reason, value, passed):
    end = rendered.testcase_end(value, passed, reason)
    reason = visible(reason)  # (shown as report.md shows it: a control character as `\xNN`, an invisible one as `\u{NNNN}`)
    if value is None:
        assert end == f">\n      <skipped message={quoteattr(_ILLEGAL.sub('', reason))}/>\n    </testcase>\n"
        return
    msg = quoteattr(_ILLEGAL.sub("", f"value {value}: {reason}"))
    if passed is False:  # below threshold: not a failure of the run (the gate decides), said in the text
        assert end == f">\n      <system-out>below threshold: {msg[1:-1]}</system-out>\n    </testcase>\n"
    else:
        assert end == f">\n      <system-out>{msg[1:-1]}</system-out>\n    </testcase>\n"


def _render_call_in_full(name, arguments, limit=120):  # type: ignore[no-untyped-def]
    # `render_call` as documented: `json.dumps` of the whole arguments (keys sorted), cut to `limit`.
    import json

    if arguments is None:
        return f"{name}(…)"
    text = json.dumps(arguments, default=str, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"{name}({text})"


LONG = st.one_of(st.text(max_size=90), st.floats(allow_nan=True), st.integers(-(10**30), 10**30), st.booleans(), st.none())
ARGS = st.dictionaries(st.text(max_size=12), st.recursive(LONG, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                                                          max_leaves=10), max_size=8)


def _outcome(fn, *args):  # type: ignore[no-untyped-def]
    try:
        return fn(*args)
    except Exception as exc:
        return type(exc), str(exc)


@EXAMPLES
@given(arguments=ARGS, limit=st.sampled_from([120, 60, 1, 0, -2, 10_000]))
def test_call_text_encoded_up_to_its_cut_is_json_dumps_of_the_whole_arguments_cut(arguments, limit):
    # Arguments showing a credential's name or shape are masked before the cut (test_redact_reasons.py and below):
    # the generated keys hit one now and then (`{"APIKEY": []}`), which this comparison with plain JSON is not about.
    assume(_HINT.search(_render_call_in_full("f", arguments, 10**9)) is None)
    assert render_call("f", arguments, limit) == _render_call_in_full("f", arguments, limit)


def test_call_text_masks_a_credential_keys_value_whatever_its_shape():
    assert render_call("f", {"APIKEY": []}) == 'f({"APIKEY":[REDACTED]})'
    assert render_call("f", {"api_key": "sk-abc", "q": 1}) == 'f({"api_key":"[REDACTED]","q":1})'


def test_call_text_of_arguments_json_cannot_encode_as_json_dumps_gives_it():
    looped: dict = {"a": 1}
    looped["z"] = looped
    for arguments in ({1: "a", 2: "b"}, {"a": 1, 2: "b"}, {"a": object(), "b": "x" * 200}, {"b": "x" * 200, "a": [{1: 2}]}, looped):
        assert _outcome(render_call, "f", arguments) == _outcome(_render_call_in_full, "f", arguments), arguments
    assert _outcome(_dumps, looped) == (ValueError, "Circular reference detected")  # as `json.dumps`, with the shared encoders


ODD_NAMES = st.sampled_from(["book_reservation", "it's", 'say "hi"', "a\\b", "tab\there", "\u2028", "é", "", "'", "\x7f"])


@EXAMPLES
@given(st.lists(st.one_of(st.text(max_size=12), ODD_NAMES), max_size=8))
def test_names_text_is_repr_of_the_list(names):
    assert names_repr(names) == repr(names)


def test_names_text_of_items_that_are_not_str_is_repr():
    assert names_repr([1, "a"]) == repr([1, "a"])
