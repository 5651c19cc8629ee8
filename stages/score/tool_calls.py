"""`ToolCalls`: expected calls with arguments against the actual calls.

Source: cogitator evals `toolCalls()` (docs: cogitator.app/docs/evals/agents,
"Tool Calls"): both sides are multisets, paired by a maximum matching.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any, Literal

from pydantic import model_validator
from tracejudge.core.records import Case, ExpectedToolCall, Score, ToolCall, decode_arguments
from tracejudge.core.registry import register_metric
from tracejudge.stages.score.base import ToolMetric, _by_name, call_steps, no_expectation, no_trace
from tracejudge.stages.score.matching import max_matching_of, ordered_matching_of
from tracejudge.stages.score.reasons import ordinal
from tracejudge.stages.score.value_match import first_difference, match_arguments, match_top_level
from tracejudge.stages.score.views import CaseViews, case_views

__all__ = ["ToolCalls"]

# An expected key's value saying the call must not carry it (`_on_call_keys`).
_ABSENT = {"$absent": True}


@lru_cache(maxsize=4096)
def _summary(k: int, n_expected: int, n_paired: int, n_actual: int, score: str, arguments: str, order: str
             ) -> tuple[float, float, float, float, str, str]:
    """`(value, precision, recall, f1 (those three for details, as computed), the reason's opening up to its options, its
    figures after them)` of a pairing: a function of small counts and options, so computed and formatted once, not once a case."""
    recall = k / n_expected
    precision = n_paired / n_actual if n_actual else 0.0
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    value = f1 if score == "f1" else recall if score == "recall" else precision
    return (value, precision, recall, f1,
            f"matched {k}/{n_expected} expected and {n_paired}/{n_actual} actual calls (arguments={arguments}, {order}",
            f"): precision={precision:.3f}, recall={recall:.3f}, F1={f1:.3f}")


def _compatible(arguments: str, exp: ExpectedToolCall, act: ToolCall) -> bool:
    """Does call `act` meet expected call `exp` under the `arguments` option (`ToolCalls`)?"""
    if exp.name != act.name:
        return False
    if arguments == "ignore" or exp.arguments is None:
        return True
    if act.arguments_missing:
        return False
    want, got = _on_keys(exp, act.arguments)
    if arguments == "shallow":
        return match_top_level(want, got, "subset")
    return match_arguments(want, got, arguments)


def _on_keys(exp: ExpectedToolCall, got: Any) -> tuple[Any, Any]:
    """`(expected arguments, call arguments)` over the top-level keys `exp.argument_keys` says are compared: the
    expectation's own (None, every key of both in `exact`), the call's (`call`), or the expectation's only, a call's
    other keys not compared in any mode (`expected`: τ²-bench's rule for an action with `compare_args`, which reads the
    listed keys of each side and ignores the rest)."""
    if exp.argument_keys is None or exp.arguments is None:
        return exp.arguments, got
    if exp.argument_keys == "call":
        return _on_call_keys(exp.arguments, got), got
    decoded, ok = decode_arguments(got)
    if not ok or not isinstance(decoded, dict):
        return exp.arguments, got
    return exp.arguments, {k: v for k, v in decoded.items() if k in exp.arguments}


def _on_call_keys(want: dict[str, Any], got: dict[str, Any] | str) -> dict[str, Any]:
    """The expected arguments over the top-level keys call arguments `got` carry (`argument_keys: call`).

    τ²-bench's `Action.compare_with_tool_call`, with `compare_args` absent, compares the keys of the call
    (`tool_call.arguments.keys()`), in every release: an expected key the call omits is not compared, and a key
    the call adds, absent from the action, differs (`$absent` here, so the reason names it).
    """
    got, ok = decode_arguments(got)
    if not ok or not isinstance(got, dict):
        return want  # (arguments that are no JSON object meet no expectation with arguments anyway)
    return {k: want[k] if k in want else _ABSENT for k in got}


@register_metric
class ToolCalls(ToolMetric):
    """Pair expected calls (name + arguments) with actual calls; score the pairing.

    A pair needs equal names and, per `arguments`:
      - `subset` (default): every expected argument is present in the call
        and matches, extra arguments allowed (nested mappings key by key,
        lists item by item, matchers allowed — see `tracejudge.stages.score.value_match`);
      - `shallow`: every expected *top-level* key is present and its value
        equals the call's in full (a nested mapping or list item with extra
        keys fails), extra top-level keys allowed, matchers allowed at any
        depth — τ²-bench's action rule and pydantic-evals'
        `ArgumentCorrectness(match_mode="subset")`;
      - `exact`: the arguments are equal (same keys at every depth);
      - `ignore`: names only.
    An expected call with `argument_keys: call` compares the top-level keys
    the call carries instead of its own (one the call omits is not compared,
    one it adds fails: τ²-bench's rule for an action without `compare_args`);
    with `argument_keys: expected`, its own keys only, in every mode (a key
    only the call has is not compared, in `exact` too: τ²-bench's rule for an
    action with `compare_args`).
    An expected call without `arguments` matches on its name alone. A call
    whose arguments were not recorded (`arguments_missing`) pairs with no
    expected call that has `arguments` unless `arguments: ignore`; the reason
    says "arguments not recorded".

    Pairing (`pairing: one_to_one`, the default) is a maximum matching: each
    actual call pairs with at most one expected call, so
    `[search(q=a), search(q=a)]` called twice scores 1.0 and called once
    0.667, and the score does not change when the expected list is
    reordered. With k pairs: recall = k/len(expected), precision =
    k/len(actual), and `score` picks `f1` (default), `recall` or `precision`.

    `order: in_order` pairs in order instead: the longest alignment of the
    two call lists that keeps both orders (an LCS under the same
    compatibility), so `[weather(NY), weather(SH)]` called as
    `[weather(SH), weather(NY)]` scores 1.0 with the default `any_order` and
    0.5 in order. It cannot be combined with `pairing: reuse`.

    `pairing: first_fit` is BFCL's parallel check (`parallel_function_checker_no_order` in its
    `ast_checker`): each expected call, in list order, takes the first call not yet paired that meets
    it, and no pair is undone, so an expected call that accepts several calls can take the one a later
    expected call needed, which then goes unmet (a maximum matching would have paired both).

    `pairing: reuse` with `arguments: shallow` is τ²-bench's action check (`evaluate_actions`): an
    expected call is met when *any* call is compatible, a call may meet
    several expected calls; recall = expected calls met / len(expected),
    precision = calls that meet some expected call / len(actual). `pairs`
    then give, for each expected call met, the first call meeting it.

    Edge cases: expected `[]` → recall 1.0 (nothing expected is missed),
    precision and f1 1.0 iff no call counts, else 0.0 — the value is the
    one `score` names, so `score: recall` gives 1.0 whatever was called
    (τ²-bench's action reward with no expected action); expected non-empty
    and no call → 0.0. A case without `expected_tool_calls` gets
    `value: null` (cogitator scores it 0 with "no expected tool calls
    provided"; we keep it out of the mean instead of counting it as a
    failure). A case with no trace gets `value: null` and the case is
    `invalid_input` (pydantic-evals scores its evaluators False or 0.0, "No
    span tree available").
    Failed calls count by default (`include_failed: true`), as
    cogitator records every call of the run. Arguments that were not valid
    JSON never match a call that expects arguments. `threshold` defaults to
    1.0: only a full match passes.

    `details`: `pairs` `[[expected_index, actual_index], …]`, `missing`
    (expected indices) and `unexpected` (actual indices) — indices into the
    case's expected list and into the trace's calls in order — plus
    `precision`, `recall`, `f1`.
    """

    arguments: Literal["subset", "shallow", "exact", "ignore"] = "subset"
    score: Literal["f1", "recall", "precision"] = "f1"
    pairing: Literal["one_to_one", "first_fit", "reuse"] = "one_to_one"
    order: Literal["any_order", "in_order"] = "any_order"
    include_failed: bool = True

    @model_validator(mode="after")
    def _compatible_options(self) -> "ToolCalls":
        if self.order == "in_order" and self.pairing != "one_to_one":
            raise ValueError(f"order: in_order cannot be combined with pairing: {self.pairing}")
        return self

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        # The options, read from the fields' dict: each read on a pydantic model goes through its `__getattr__` hook
        # (so do its method look-ups: the helpers below are functions given the options they read).
        p = self.__dict__
        score, arguments, order, pairing = p["score"], p["arguments"], p["order"], p["pairing"]
        include, exclude = p["include_tools"], p["exclude_tools"]
        given = case.expected_tool_calls  # (`expected_calls`, with the filter read above)
        if given is None:
            return no_expectation(case=case)
        expected = list(enumerate(given)) if include is None and not exclude else _by_name(enumerate(given), include, exclude)
        views = case_views(case)
        actual = views.selected((include, exclude, p["include_failed"]), self._keep)  # (`counted_calls`)

        if not expected:
            unexpected = [i for i, _ in actual] if actual else []
            details: dict[str, Any] = {"pairs": [], "missing": [], "unexpected": unexpected, "precision": 1.0 if not actual else 0.0, "recall": 1.0, "f1": 1.0 if not actual else 0.0}
            if not actual:
                return self.verdict(1.0, "no call expected and none made", details)
            step_of = views.steps
            listed = "; ".join([f"#{i} (step {step_of[i]}) {views.rendered(c)}" for i, c in actual[:5]])
            # The value is the figure `score` names, as in details: an empty expectation is fully recalled.
            return self.verdict(details[score], f"no call expected, but {len(actual)} made: {listed}", details)

        # Each (expected, actual) pair is tested once; the pairing and the reason read the table.
        in_order = order == "in_order"
        adj = _table(arguments, expected, actual, in_order)
        if pairing == "first_fit":
            pairs_local, paired_a = [], set()
            for i, hits in enumerate(adj):
                j = next((j for j in hits if j not in paired_a), None)
                if j is not None:
                    pairs_local.append((i, j))
                    paired_a.add(j)
        elif pairing == "reuse":
            pairs_local, paired_a = [], set()
            for i, hits in enumerate(adj):
                if hits:
                    pairs_local.append((i, hits[0]))
                    paired_a.update(hits)
        else:
            pairs_local = (ordered_matching_of if in_order else max_matching_of)(adj, len(actual))
            paired_a = {j for _, j in pairs_local} if pairs_local else set()
        k = len(pairs_local)
        value, precision, recall, f1, opening, figures = _summary(k, len(expected), len(paired_a), len(actual), score,
                                                                  arguments, order)
        # (Most cases pair every expected call, or every actual one: that side's list is empty without a scan. A
        # comprehension makes a function each time, which costs more than the few items most of these lists hold.)
        if k == len(expected):
            missing_local: list[int] = []
        else:
            paired_e = {i for i, _ in pairs_local}
            missing_local = [i for i in range(len(expected)) if i not in paired_e]
        unexpected_local = [j for j in range(len(actual)) if j not in paired_a] if len(paired_a) < len(actual) else []
        pairs = []
        in_place = k == len(expected) == len(actual)
        for i, j in pairs_local:
            pairs.append([expected[i][0], actual[j][0]])
            if i != j:
                in_place = False
        details = {
            "pairs": pairs,
            "missing": [expected[i][0] for i in missing_local] if missing_local else [],
            "unexpected": [actual[j][0] for j in unexpected_local] if unexpected_local else [],
            "precision": precision,
            "recall": recall,
            "f1": f1,
        }
        if pairing == "reuse":
            # τ²-bench's rule, kept as τ² computes it: every compatible call counts as matched, so a
            # repeated call is credited though no expectation of its own asked for it. Said, and counted.
            credited = len(paired_a - {j for _, j in pairs_local})
            details["duplicates_credited"] = credited
            opening += f", pairing=reuse (τ²-bench: a call may meet several expectations; {credited} duplicate call(s) credited as matched)"
        if pairing == "first_fit":
            opening += ", pairing=first_fit"
        parts = [opening + figures]
        if in_place:
            return self.verdict(value, parts[0], details)  # every call paired in place: nothing to point at
        # A call is often named in `missing`, `unexpected` and the divergence alike: each is rendered
        # once a case (`views.rendered`), and each argument difference once a pair.
        differences: dict[tuple[int, int], str | None] = {}
        step_of = views.steps

        def difference(i: int, j: int) -> str | None:
            if (i, j) not in differences:
                differences[(i, j)] = _difference(arguments, expected[i][1], actual[j][1])
            return differences[(i, j)]

        if missing_local:
            items = []
            for i in missing_local[:5]:
                idx, exp = expected[i]
                text = f"[{idx}] {views.rendered(exp, expected=True)}"
                near = _nearest(arguments, i, exp, unexpected_local, actual, difference)
                if near is not None:
                    j, diff = near
                    text += f" (closest: call #{j}, step {step_of[j]}: {diff})"
                items.append(text)
            more = f" … and {len(missing_local) - 5} more" if len(missing_local) > 5 else ""
            parts.append("missing: " + "; ".join(items) + more)
        if unexpected_local:
            items = [f"#{actual[j][0]} (step {step_of[actual[j][0]]}) {views.rendered(actual[j][1])}" for j in unexpected_local[:5]]
            more = f" … and {len(unexpected_local) - 5} more" if len(unexpected_local) > 5 else ""
            parts.append("unexpected: " + "; ".join(items) + more)
        div = _ordered_divergence(expected, actual, adj, step_of, views, difference)
        if div:
            parts.append(div)
        return self.verdict(value, "; ".join(parts), details)


def _table(arguments: str, expected: list[tuple[int, ExpectedToolCall]], actual: list[tuple[int, ToolCall]],
           backwards: bool) -> list[list[int]]:
    """`match_table(expected calls, actual calls, _compatible under `arguments`, backwards)`, testing only the pairs of
    equal names.

    `_compatible` is False for a pair of different names without looking further, so the table
    is the same, and the pairs of equal names are tested in the same order (none raising earlier or later).
    """
    by_name: dict[str, list[int]] = {}
    for j, (_, call) in enumerate(actual):
        got = by_name.get(call.name)
        if got is None:
            by_name[call.name] = [j]
        else:
            got.append(j)
    get = by_name.get
    table: list[list[int]] = []
    if arguments == "ignore":
        for _, e in expected:
            table.append(list(get(e.name, ())))
        return table
    # (Loops, not nested comprehensions: each inner one made a function for every expected call.)
    for _, e in (reversed(expected) if backwards else expected):
        row = []
        for j in (reversed(get(e.name, ())) if backwards else get(e.name, ())):
            if _compatible(arguments, e, actual[j][1]):
                row.append(j)
        table.append(row[::-1] if backwards else row)
    if backwards:
        table.reverse()
    return table


def _nearest(arguments: str, i: int, exp: ExpectedToolCall, unexpected: list[int], actual: list[tuple[int, ToolCall]],
             difference: Callable[[int, int], str | None]) -> tuple[int, str] | None:
    """The first unexpected call (`actual[j]` for j in `unexpected`) of the same tool and how its arguments differ
    from expected call `i`'s."""
    if arguments == "ignore":
        return None
    name = exp.name
    for j in unexpected:
        idx, call = actual[j]
        if call.name == name:
            if call.arguments_missing and exp.arguments is not None:
                return idx, "arguments not recorded"
            diff = difference(i, j)
            if diff:
                return idx, diff
    return None


def _difference(arguments: str, exp: ExpectedToolCall, call: ToolCall) -> str | None:
    want, got = _on_keys(exp, call.arguments)
    if arguments == "shallow":
        return first_difference(want, got, "subset", nested_mode="exact")
    return first_difference(want, got, "exact" if arguments == "exact" else "subset")


def _ordered_divergence(expected: list[tuple[int, ExpectedToolCall]], actual: list[tuple[int, ToolCall]], adj: list[list[int]],
                        step_of: list[int], views: CaseViews, difference: Callable[[int, int], str | None]) -> str | None:
    """Where the calls, read side by side in order, first stop agreeing (for the reason only)."""
    for pos, ((ei, e), (ai, a)) in enumerate(zip(expected, actual)):
        if pos not in adj[pos]:
            what = f"expected [{ei}] {views.rendered(e, expected=True)}, got {views.rendered(a)}"
            if e.name == a.name:
                what += f" ({'arguments not recorded' if a.arguments_missing else difference(pos, pos)})"
            return f"in order, first divergence at the {ordinal(pos + 1)} call (trace call #{ai}, step {step_of[ai]}, tool {a.name!r}): {what}"
    if len(actual) < len(expected):
        ei, e = expected[len(actual)]
        return f"in order, the calls end after {len(actual)} call{'' if len(actual) == 1 else 's'}; next expected [{ei}] {views.rendered(e, expected=True)}"
    if len(actual) > len(expected):
        ai, a = actual[len(expected)]
        return f"in order, an extra {ordinal(len(expected) + 1)} call (trace call #{ai}, step {step_of[ai]}): {views.rendered(a)}"
    return None
