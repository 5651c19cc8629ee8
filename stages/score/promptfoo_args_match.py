"""promptfoo's `trajectory:tool-args-match` and its `not-` inverse (see `tracejudge.stages.score.promptfoo_trajectory`
for what promptfoo's steps are here and the differences that cannot be avoided).

Source: promptfoo `src/assertions/trajectory.ts` (`handleTrajectoryToolArgsMatch`, `stripIgnoredArgs`,
`stripDefaults`, `matchesToolArgs`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from tracejudge.stages.score.promptfoo_steps import MISSING, TrajectoryStep, format_step, js_equal, matches_partial, matches_pattern
from tracejudge.stages.score.promptfoo_trajectory import PromptfooTrajectoryAssertion, _args_text, _promptfoo_type, _steps
from tracejudge.stages.score.promptfoo_values import ArgsMatchSpec, parse_args_match

__all__ = ["NotTrajectoryToolArgsMatch", "TrajectoryToolArgsMatch"]


@_promptfoo_type("trajectory:tool-args-match")
class TrajectoryToolArgsMatch(PromptfooTrajectoryAssertion):
    """promptfoo's `trajectory:tool-args-match` (`handleTrajectoryToolArgsMatch`): some call of a tool had these arguments.

    `value`: `{name | pattern, args | arguments, mode: partial | exact, defaults, ignore}`.
    Passes when some call the matcher selects has arguments that match: `partial`
    (default) — every expected key is there with a matching value, at every depth (lists
    item by item, as long); `exact` — deep equality. First the `ignore`d keys (names, or
    globs with `*`/`?`) are dropped from both sides, top level only; then a call's
    top-level key whose value equals its `defaults` entry is dropped from the call.
    `not-trajectory:tool-args-match` passes when no call matches.
    Example: `{name: search_orders, args: {order_id: "123"}}` on a call with
    `{"order_id": "123", "include_history": false}` scores 1.
    """

    assertion: ClassVar[str] = "trajectory:tool-args-match"
    parse: ClassVar[Callable[[Any], Any]] = staticmethod(parse_args_match)

    def check(self, steps: list[TrajectoryStep]) -> tuple[bool, str, dict[str, Any]]:
        spec: ArgsMatchSpec = self._spec
        tools = [s for s in steps if s.type == "tool"]
        actual = [format_step(s) for s in tools]
        label = spec.matcher.label
        selected = [s for s in tools if spec.matcher.matches(s)]
        with_args = [s for s in selected if s.args is not MISSING]
        hit = next((s for s in with_args if _args_match(s.args, spec)), None)
        base = hit is not None
        observed = ", ".join(_args_text(s.args) for s in with_args) if with_args else "(none)"
        mode = spec.mode
        if self.inverse:
            if hit is not None:
                reason = (f'Forbidden argument match for tool "{label}" was observed on {format_step(hit)}. '
                          f"Args: {_args_text(hit.args)}")
            elif not selected:
                reason = f'Forbidden argument match for tool "{label}" was not observed because no tool call matched it'
            else:
                reason = f'Forbidden argument match for tool "{label}" was not observed. Observed args: {observed}'
        elif hit is not None:
            kept, ignored = _strip_ignored(hit.args, spec.ignore)
            _, defaulted = _strip_defaults(kept, spec.defaults)
            reason = f'Tool "{label}" matched expected arguments ({mode}) on {format_step(hit)}. Args: {_args_text(hit.args)}'
            if ignored:
                reason += f". Ignored argument(s): {', '.join(ignored)}"
            if defaulted:
                reason += f". Ignored default argument(s): {', '.join(defaulted)}"
        elif not selected:
            reason = f'No tool call matched "{label}". Actual tools: {_steps(actual)}'
        elif not with_args:
            reason = f'Tool "{label}" was observed but no arguments were captured. Actual tools: {_steps(actual)}'
        else:
            reason = (f'No call to tool "{label}" matched expected arguments ({mode}): {_args_text(spec.expected)}. '
                      f"Observed args: {observed}")
        details = {"mode": mode, "selected": [s.call for s in selected], "call": None if hit is None else hit.call}
        return base != self.inverse, reason, details


def _strip_ignored(value: Any, ignore: tuple[str, ...]) -> tuple[Any, list[str]]:
    """promptfoo's `stripIgnoredArgs`: the top-level keys an `ignore` entry names (exactly, or as a glob) dropped."""
    if not ignore or not isinstance(value, dict):
        return value, []
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for key, item in value.items():
        if any(e == key or (("*" in e or "?" in e) and matches_pattern(key, e)) for e in ignore):
            dropped.append(key)
        else:
            kept[key] = item
    return kept, dropped


def _strip_defaults(value: Any, defaults: dict[str, Any] | None) -> tuple[Any, list[str]]:
    """promptfoo's `stripDefaults`: the top-level keys whose value equals their declared default dropped."""
    if defaults is None or not isinstance(value, dict):
        return value, []
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for key, item in value.items():
        if key in defaults and js_equal(item, defaults[key]):
            dropped.append(key)
        else:
            kept[key] = item
    return kept, dropped


def _args_match(args: Any, spec: ArgsMatchSpec) -> bool:
    """promptfoo's `matchesToolArgs`: `ignore` applies to both sides, `defaults` to the call's only."""
    actual = _strip_defaults(_strip_ignored(args, spec.ignore)[0], spec.defaults)[0]
    expected = _strip_ignored(spec.expected, spec.ignore)[0]
    return js_equal(actual, expected) if spec.mode == "exact" else matches_partial(actual, expected)


@_promptfoo_type("not-trajectory:tool-args-match")
class NotTrajectoryToolArgsMatch(TrajectoryToolArgsMatch):
    """promptfoo's `not-trajectory:tool-args-match`: `trajectory:tool-args-match` inverted (see there)."""

    inverse: ClassVar[bool] = True
