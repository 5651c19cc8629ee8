"""`DeepEvalToolCorrectness`: deepeval's `ToolCorrectnessMetric`, number for number.

Source: deepeval `deepeval/metrics/tool_correctness/tool_correctness.py`
(`_calculate_score`, `_calculate_exact_match_score`,
`_calculate_non_exact_match_score`, `_compute_weighted_lcs`,
`_compare_dicts`), read in deepeval 4.3; where its docs and its code differ,
this follows the code.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from tracejudge.core.records import Case, Score, ToolCall
from tracejudge.core.registry import register_metric
from tracejudge.stages.score.base import ToolMetric, expected_calls, make_score, no_expectation, no_trace
from tracejudge.stages.score.value_match import python_values

__all__ = ["DeepEvalToolCorrectness"]

_NOT_A_MAPPING = object()
_FIELDS = frozenset({"value", "passed", "reason", "details", "judge"})  # (as `Metric.verdict` marks them set)


@register_metric
class DeepEvalToolCorrectness(ToolMetric):
    """deepeval's tool-calling score of `expected_tool_calls` against the calls made, in [0, 1].

    Expected tool `i` is deepeval's `expected_tools[i]` (`name`,
    `arguments` as `input_parameters`, `result` as `output`); the calls of
    the trace in order are `tools_called`. A pair of an expected and a
    called tool scores when the names are equal, then:
      - `evaluation_params` contains `input_parameters`: times deepeval's
        partial credit for arguments — 1.0 when the mappings are equal,
        else for each key of the union, 1/len(union) if both have it with
        equal values, or that share of the same rule applied to two nested
        mappings (`should_exact_match`: equal or 0);
      - `evaluation_params` contains `output`: 0 unless `result` equals the
        call's result.
    Then, by mode:
      - default: for each expected tool in order, the best-scoring call not
        yet used (the first one on a tie); score = sum / len(expected). As
        in deepeval, "used" is decided by equality, so a second call equal
        to a used one (same name, arguments and result) is also used up:
        expected `[f(a), f(a)]` against called `[f(a), f(a)]` scores 0.5;
      - `should_consider_ordering`: deepeval's weighted LCS of the two lists
        (each aligned pair adds its score) / len(expected);
      - `should_exact_match`: 1.0 iff the lists have the same length and,
        position by position, the same names (and arguments / results when
        evaluated), else 0.0.
    No expected and no call → 1.0; no expected but calls → 0.0.
    `strict_mode: true` makes the threshold 1 and a score below it 0.
    `threshold` defaults to deepeval's 0.5; `passed` is `value >= threshold`.

    Values compare with Python `==` as deepeval does (`1 == 1.0 == True`),
    not the project's stricter rules; an expected `{"$python_eq": v}` is `v`
    (its own rule is that `==`), and an expected key whose value is
    `{"$absent": true}` is left out of `input_parameters` (`==` then wants the
    call without it, as the matcher does: deepeval, given the τ²-bench action
    the `tau2-bench` format reads it from, has no such key); no other matcher
    is read. Deliberate differences: deepeval's
    tool-selection judge (`available_tools`) is not run — the value is the
    one deepeval gives without `available_tools`; tool `type` (function vs
    MCP) is not compared; a call whose arguments were not recorded
    (`arguments_missing`) or are not a JSON object scores 0 where arguments
    are evaluated (deepeval would compare `{}` or raise); an expected call
    without `arguments` compares as `{}` (deepeval raises on `None` against
    a mapping). Failed calls count (`include_failed: true`): deepeval scores
    every call it is given. No `expected_tool_calls` → `value: null`; no
    trace → `value: null` and the case is `invalid_input`.
    `details`: `score`, `mode`, and `pairs` (`[expected_index,
    call_index, pair_score]`).
    """

    default_threshold: ClassVar[float] = 0.5
    evaluation_params: tuple[Literal["input_parameters", "output"], ...] = ()
    should_exact_match: bool = False
    should_consider_ordering: bool = False
    strict_mode: bool = False
    include_failed: bool = True

    @property
    def cutoff(self) -> float:
        """deepeval's threshold: 1 under `strict_mode`, else `threshold` (default 0.5)."""
        return 1.0 if self.strict_mode else super().cutoff

    def verdict(self, value: float, reason: str, details: dict[str, Any] | None = None) -> Score:
        """`Metric.verdict` against `cutoff` (under `strict_mode` 1, whatever `threshold` says, as deepeval decides `success`)."""
        return make_score(value, value >= self.cutoff, reason, details, _FIELDS)

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        exp = expected_calls(self, case)
        if exp is None:
            return no_expectation(case=case)
        # (`{"$python_eq": v}`, as the `tau2-bench` format writes an action's values, is `v` under deepeval's own `==`, and a
        # `compare_args` key the action lacks, `{"$absent": true}` there, is a key the action's parameters do not hold.)
        expected = [(e.name, python_values(e.arguments) if e.arguments is not None else {}, e.result) for _, e in exp]
        actual = self.actual_calls(case)
        called = [(c.name, _arguments(c), c.result) for _, c in actual]
        pairs: list[tuple[int, int, float]]
        if self.should_exact_match:
            mode, value, pairs = "exact match", self._exact(expected, called), []
        elif self.should_consider_ordering:
            mode = "ordering (weighted LCS)"
            pairs, total = self._weighted_lcs(expected, called)
            value = (1.0 if not called else 0.0) if not expected else total / len(expected)
        else:
            mode = "any order"
            pairs, total = self._best_matches(expected, called)
            value = (1.0 if not called else 0.0) if not expected else total / len(expected)
        if self.strict_mode and value < self.cutoff:
            value = 0.0
        details = {"score": value, "mode": mode, "pairs": [[exp[i][0], actual[j][0], s] for i, j, s in pairs]}
        names_e, names_c = [e[0] for e in expected], [c[0] for c in called]
        reason = f"deepeval tool correctness ({mode}, evaluation_params={list(self.evaluation_params)}): {value:.3f}; expected {names_e}, called {names_c}"
        return self.verdict(value, reason, details)

    def _pair(self, exp: tuple[str, Any, Any], call: tuple[str, Any, Any]) -> float:
        if exp[0] != call[0]:
            return 0.0
        score = 1.0
        if "input_parameters" in self.evaluation_params:
            score *= 0.0 if call[1] is _NOT_A_MAPPING else _compare(exp[1], call[1], self.should_exact_match)
        if "output" in self.evaluation_params and exp[2] != call[2]:
            score = 0.0
        return score

    def _exact(self, expected: list[tuple[str, Any, Any]], called: list[tuple[str, Any, Any]]) -> float:
        if len(expected) != len(called):
            return 0.0
        for e, c in zip(expected, called):
            if e[0] != c[0]:
                return 0.0
            if "input_parameters" in self.evaluation_params and (c[1] is _NOT_A_MAPPING or e[1] != c[1]):
                return 0.0
            if "output" in self.evaluation_params and e[2] != c[2]:
                return 0.0
        return 1.0

    def _best_matches(self, expected: list[tuple[str, Any, Any]], called: list[tuple[str, Any, Any]]) -> tuple[list[tuple[int, int, float]], float]:
        used: list[tuple[str, Any, Any]] = []
        pairs: list[tuple[int, int, float]] = []
        total = 0.0
        for i, e in enumerate(expected):
            best, best_j = 0.0, -1
            for j, c in enumerate(called):
                # deepeval keeps used calls in a set of ToolCall, equal by (name, arguments, output).
                if any(_same_call(c, u) for u in used):
                    continue
                s = self._pair(e, c)
                if s > best:
                    best, best_j = s, j
            if best > 0:
                total += best
                used.append(called[best_j])
                pairs.append((i, best_j, best))
        return pairs, total

    def _weighted_lcs(self, expected: list[tuple[str, Any, Any]], called: list[tuple[str, Any, Any]]) -> tuple[list[tuple[int, int, float]], float]:
        m, n = len(expected), len(called)
        dp = [[0.0] * (n + 1) for _ in range(m + 1)]
        for i in range(1, m + 1):
            for j in range(1, n + 1):
                s = self._pair(expected[i - 1], called[j - 1])
                if expected[i - 1][0] != called[j - 1][0]:
                    dp[i][j] = max(dp[i - 1][j], dp[i][j - 1])
                else:
                    dp[i][j] = max(dp[i - 1][j], dp[i][j - 1], dp[i - 1][j - 1] + s if s > 0 else 0)
        i, j, total = m, n, 0.0
        pairs: list[tuple[int, int, float]] = []
        while i > 0 and j > 0:
            if dp[i][j] == dp[i - 1][j]:
                i -= 1
            elif dp[i][j] == dp[i][j - 1]:
                j -= 1
            else:
                gain = dp[i][j] - dp[i - 1][j - 1]
                total += gain
                pairs.append((i - 1, j - 1, gain))
                i, j = i - 1, j - 1
        return pairs[::-1], total


def _arguments(call: ToolCall) -> Any:
    if call.arguments_missing or not isinstance(call.arguments, dict):
        return _NOT_A_MAPPING
    return call.arguments


def _same_call(a: tuple[str, Any, Any], b: tuple[str, Any, Any]) -> bool:
    return a[0] == b[0] and a[1] == b[1] and a[2] == b[2]


def _compare(expected: dict[str, Any], actual: dict[str, Any], exact: bool) -> float:
    """deepeval's `_compare_dicts`: 1.0 if equal, else the share of keys of the union with equal values (nested mappings recurse)."""
    if expected == actual:
        return 1.0
    if exact:
        return 0.0
    # deepeval sums over a set of keys, in an order string hashing sets anew in every process (PYTHONHASHSEED): with
    # nested mappings the terms differ and the float sum's last bit, even `passed` at 0.5, changed from run to run
    # (0.49999999999999994 or 0.5 for one case). Summed here in key order: the same value every run. Where every term
    # is the same (no nested mapping partly equal), any order gives deepeval's value to the last bit.
    union = set(expected.keys()).union(set(actual.keys()))
    score = 0.0
    for key in sorted(set(expected.keys()).intersection(set(actual.keys())), key=str):
        if expected[key] == actual[key]:
            score += 1 / len(union)
        elif isinstance(expected[key], dict) and isinstance(actual[key], dict):
            score += _compare(expected[key], actual[key], exact) / len(union)
    return score
