"""`ArgumentCorrectness`: did one tool call receive the expected arguments?

Source: pydantic-evals `ArgumentCorrectness` (pydantic_evals/evaluators/agentic.py).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import Field, PrivateAttr
from tracejudge.core.records import Case, Score
from tracejudge.core.registry import register_metric
from tracejudge.llm.redact import MASK, masked_under, redact_details, redact_quoted
from tracejudge.stages.score.base import ToolMetric, call_steps, no_trace
from tracejudge.stages.score.value_match import ABSENT, match_value, render_call, short_json, short_pair, shown_expected

__all__ = ["ArgumentCorrectness"]


@register_metric
class ArgumentCorrectness(ToolMetric):
    """Pass (1.0) when the chosen call of `tool_name` has `expected_arguments`, else fail (0.0).

    - `match_mode: subset` (default): every expected *top-level* key is
      present and its value matches in full — a nested mapping must be equal,
      extra nested keys fail (pydantic-evals' rule); extra top-level keys are
      allowed. `exact`: deep equality, no extra key at any level.
    - `occurrence`: `first` (default), `last`, or a 0-based index among the
      calls of `tool_name` that count. Any other value is accepted, as
      pydantic-evals accepts it, and scores 0.0 with a reason when it selects
      no call (-1, an index past the end, `middle`, null, 1.5, and `true` —
      which pydantic-evals reads as index 1).
    - Failed calls do not count unless `include_failed: true`; then each
      attempt is an occurrence of its own.

    Values compare with the project's rules (`tracejudge.stages.score.value_match`):
    `1 == 1.0`, JSON-string arguments decoded, matchers allowed. Deliberate
    deviation from pydantic-evals, which uses Python `==`: `true` never
    equals `1`.

    Edge cases: the tool never called, or the occurrence does not exist →
    0.0 with the reason saying so; arguments that are not a JSON object →
    0.0, the reason telling text that is no JSON at all ("could not be
    parsed as JSON") from JSON of another kind ("not a JSON object"), as
    pydantic-evals does; arguments that were not recorded
    (`arguments_missing`, e.g. an OTel trace with content capture off) → 0.0, reason "arguments not
    recorded", whatever `expected_arguments` says (pydantic-evals: "arguments
    not available in span"). A case with no trace gets `value: null` and
    the case is `invalid_input`; pydantic-evals scores False ("No span tree
    available"). `expected_arguments` defaults to `{}` (any call of the tool passes
    in `subset` mode, only a call without arguments in `exact`). The reason
    lists every mismatching key; `details` give the trace call index and
    `mismatches` as `{key: {"expected": …, "actual": …}}` (an expected
    `{"$python_eq": v}` shown as `v` there and in the reason).
    """

    tool_name: str
    expected_arguments: dict[str, Any] = Field(default_factory=dict)
    match_mode: Literal["subset", "exact"] = "subset"
    occurrence: Any = "first"
    include_failed: bool = False

    # `tool_name` and `occurrence` as the reasons quote them (`repr`), a credential masked as in a case's text: built once.
    _named: tuple[str, str] = PrivateAttr(default=("", ""))

    def model_post_init(self, context: Any) -> None:
        self._named = (redact_quoted(repr(self.tool_name)), redact_quoted(repr(self.occurrence)))

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        matches = [(i, c) for i, c in self.actual_calls(case) if c.name == self.tool_name]
        if not matches:
            return self._fail(f"no call to tool {self._named[0]} was recorded", {})
        pick = _select(self.occurrence, len(matches))
        if pick is None:
            return self._fail(
                f"tool {self._named[0]} was called {len(matches)} time(s); occurrence={self._named[1]} selects none of them"
                " (it must be 'first', 'last' or a 0-based index; negative ones are not supported)",
                {},
            )
        index, call = matches[pick]
        where = f"call #{index} (step {call_steps(case)[index]}) {render_call(call.name, call.arguments)}"
        if call.arguments_missing:
            # (the likely cause named, as pydantic-evals names it: an instrumentation that captured no content)
            return self._fail(f"{where}: arguments not recorded (as when the instrumentation captures no content: pydantic-ai's "
                              "include_content=False), so they cannot be checked", {"call": index})
        args = call.arguments
        if not isinstance(args, dict):
            return self._fail(f"{where}: arguments {_not_an_object(args)}", {"call": index})

        mismatches: dict[str, dict[str, Any]] = {}
        problems: list[str] = []
        beside = (self.expected_arguments, args)  # (their other keys may show an authentication: `masked_under`)
        for key, exp in self.expected_arguments.items():
            got = args.get(key, ABSENT)
            if not match_value(exp, got, "exact"):
                shown = shown_expected(exp)  # (a `$python_eq` as the value it wraps, other matchers as written)
                mismatches[key] = {"expected": _shown(key, shown, beside), "actual": None if got is ABSENT else _shown(key, got, beside),
                                   "present": got is not ABSENT}
                problems.append(f"{key}: missing (expected {short_json(shown, key=key, beside=beside)})" if got is ABSENT
                                else "{}: expected {}, got {}".format(key, *short_pair(shown, got, key=key, beside=beside)))
        if self.match_mode == "exact":
            for key in args:
                if key not in self.expected_arguments:
                    mismatches[key] = {"expected": None, "actual": _shown(key, args[key], args), "present": True}
                    problems.append(f"{key}: unexpected argument {short_json(args[key], key=key, beside=args)}")
        details = {"call": index, "mismatches": mismatches}
        if problems:
            return self._fail(f"{where}: argument mismatch ({self.match_mode}): " + "; ".join(problems), details)
        return Score(value=1.0, passed=True, reason=f"{where} has the expected arguments ({self.match_mode})", details=details)

    @staticmethod
    def _fail(reason: str, details: dict[str, Any]) -> Score:
        return Score(value=0.0, passed=False, reason=reason, details=details or None)


def _shown(key: str, value: Any, beside: Any = None) -> Any:
    """`value` of the argument `key` as details keep it: `[REDACTED]` when its name hides it (`masked_under`, as the
    reason shows it; `beside`: the arguments it is one of), else with its credentials masked (`redact_details`: a string
    under a credential's key inside)."""
    return MASK if masked_under(key, value, beside) else redact_details(value)


def _not_an_object(args: Any) -> str:
    """What is wrong with arguments that are not a mapping, for a reason: the recorded text kept raw
    (`ToolCall.arguments_invalid`) either does not parse as JSON or holds another JSON value."""
    if isinstance(args, str):
        try:
            json.loads(args)
        except ValueError:
            return "could not be parsed as JSON"
    return "are not a JSON object"


def _select(occurrence: Any, count: int) -> int | None:
    """The index `occurrence` picks among `count` calls, or `None` when it picks none."""
    if occurrence == "first" and isinstance(occurrence, str):
        return 0
    if occurrence == "last" and isinstance(occurrence, str):
        return count - 1
    if isinstance(occurrence, int) and not isinstance(occurrence, bool) and 0 <= occurrence < count:
        return occurrence
    return None
