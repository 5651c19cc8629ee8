"""The `value`s promptfoo's trajectory assertions accept, read into typed specs when the config loads.

Source: promptfoo `src/assertions/trajectory.ts` (`resolveToolMatchers`,
`resolveSequenceValue`, `resolveSequenceMatcherGroups`, `resolveToolArgsMatchValue`
and its `resolveToolArgsMatch*` helpers, `resolveStepCountValue`,
`resolveGoalSuccessValue`) and `src/assertions/trajectoryUtils.ts`
(`normalizeTrajectoryMatcher`). Every value promptfoo refuses is refused here, with
promptfoo's reason and where in the value it is; so are a few it takes without effect,
each a config error rather than an assertion that silently never matches:

- a key a matcher or value does not have (`patern:`, `args:` on `tool-used`), where
  promptfoo ignores it;
- a `type` that is no step type (`tool`, `command`, `search`, `reasoning`,
  `message`, `span`), where promptfoo matches no step;
- `min`/`max` that is not a finite number (`"2"`, `true`), where promptfoo drops it, one below 0, or `min`
  above `max` (no count is in that range);
- `args` and `arguments` both given, where promptfoo reads `args` alone;
- `name`/`pattern` that is not a string, where promptfoo raises as it compares;
- a `tool-sequence` `mode` other than `in_order`/`exact` (promptfoo runs `in_order`)
  or `steps` that is not a list (promptfoo raises as it reads it).

Each `parse_*` raises `PydanticCustomError` (type `promptfoo_value`) whose message
starts with the place in the value (`value.steps[1]`), so a metric's field validator
reports it as a config error naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import BaseModel, field_validator, model_validator
from pydantic_core import PydanticCustomError
from tracejudge.core import suggest
from tracejudge.stages.score.promptfoo_steps import _JS_SPACE, STEP_TYPES, StepMatcher

__all__ = [
    "ArgsMatchSpec",
    "SequenceSpec",
    "StepCountSpec",
    "ToolUsedSpec",
    "parse_args_match",
    "parse_goal",
    "parse_step_count",
    "parse_tool_sequence",
    "parse_tool_used",
]

_MATCHER_KEYS = ("name", "pattern", "type")


@dataclass(frozen=True, slots=True)
class ToolUsedSpec:
    """`trajectory:tool-used`: a list of `matchers` that must each match some tool step, or (`count`) one matcher
    whose matching tool steps must number `min`..`max` (`max` None: no upper bound)."""

    matchers: tuple[StepMatcher, ...] = ()
    count: StepMatcher | None = None
    min: float = 1
    max: float | None = None


@dataclass(frozen=True, slots=True)
class SequenceSpec:
    """`trajectory:tool-sequence`: `groups` of matchers in order (a plain step is a group of one), `mode`
    `in_order` or `exact`; `has_groups` when the value nested a list (turn-aware matching)."""

    groups: tuple[tuple[StepMatcher, ...], ...]
    mode: str = "in_order"
    has_groups: bool = False


@dataclass(frozen=True, slots=True)
class ArgsMatchSpec:
    """`trajectory:tool-args-match`: the tool `matcher`, the `expected` arguments (any JSON value), `mode`
    `partial` or `exact`, top-level `defaults` tolerated in a call, `ignore`d keys (names or globs)."""

    matcher: StepMatcher
    expected: Any
    mode: str = "partial"
    defaults: dict[str, Any] | None = None
    ignore: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StepCountSpec:
    """`trajectory:step-count`: the steps `matcher` selects must number at least `min` and at most `max` (either None: no bound)."""

    matcher: StepMatcher
    min: float | None = None
    max: float | None = None


def _bad(where: str, message: str) -> PydanticCustomError:
    return PydanticCustomError("promptfoo_value", "{where}: {message}", {"where": where, "message": message})


def _mapping(raw: Any) -> bool:
    return isinstance(raw, dict)


def _check_keys(raw: dict[Any, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in raw:
        if key not in allowed:
            hint = suggest.did_you_mean(str(key), allowed, n=1, typo=True)
            listed = ", ".join(allowed)
            # (At the key itself, so a config error names its line; a key holding `.` or `[` stays at its mapping's.)
            at = f"{where}.{key}" if isinstance(key, str) and key and not any(c in key for c in ".[]") else where
            raise _bad(at, f"unknown key {key!r}" + (f"; {hint}" if hint else f" (expected: {listed})"))


def _choice(value: Any, choices: tuple[str, ...]) -> str:
    """`"; did you mean C?"` for a text near one of `choices` (`exakt`: exact), else `""`."""
    hint = suggest.did_you_mean(value, choices, n=1, typo=True) if isinstance(value, str) and value else ""
    return f"; {hint}" if hint else ""


def _types(raw: Any, where: str) -> tuple[str, ...] | None:
    if raw is None or raw == "":  # (`matcher.type` is falsy: no type filter, as promptfoo reads it)
        return None
    items = raw if isinstance(raw, list) else [raw]
    if not items:
        raise _bad(f"{where}.type", "an empty list allows no step type; leave `type` out to count every type")
    for i, item in enumerate(items):
        if item not in STEP_TYPES:
            at = f"{where}.type[{i}]" if isinstance(raw, list) else f"{where}.type"  # (a list's own item: its line)
            hint = _choice(item, STEP_TYPES)
            raise _bad(at, f"{item!r} is no promptfoo step type" + (hint if hint else f" (expected one of: {', '.join(STEP_TYPES)})"))
    return tuple(items)


def _matcher(raw: Any, where: str, default_type: str | None, extra: tuple[str, ...] = ()) -> StepMatcher:
    """promptfoo's `normalizeTrajectoryMatcher(raw, default_type)` of a string or a mapping (other keys: `extra`)."""
    if isinstance(raw, str):
        return StepMatcher(pattern=raw, types=(default_type,) if default_type else None)
    _check_keys(raw, _MATCHER_KEYS + extra, where)
    found: dict[str, str | None] = {}
    for key in ("name", "pattern"):
        value = raw.get(key)
        if value is not None and not isinstance(value, str):
            raise _bad(f"{where}.{key}", f"must be a string (a tool name or a glob with * and ?), got {type(value).__name__}")
        found[key] = value
    types = _types(raw.get("type"), where)
    if types is None and default_type:
        types = (default_type,)
    return StepMatcher(name=found["name"], pattern=found["pattern"], types=types)


def _bound(raw: dict[str, Any], key: str, where: str) -> float | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _bad(f"{where}.{key}", f"must be a number (a count of steps), got {value!r}")
    if value < 0:  # (no count is below 0: as a max it never matches, as a min it bounds nothing)
        raise _bad(f"{where}.{key}", f"must be a count, 0 or more, got {value!r}")
    return value


def _bounds(raw: dict[str, Any], where: str) -> tuple[float | None, float | None]:
    # `min` above `max` is a range no count is in: an assertion that always fails (or, inverted, always passes).
    low, high = _bound(raw, "min", where), _bound(raw, "max", where)
    if low is not None and high is not None and low > high:
        raise _bad(f"{where}.min", f"min {low!r} is above max {high!r}: no count is in that range")
    return low, high


def parse_tool_used(value: Any) -> ToolUsedSpec:
    """promptfoo's `resolveToolMatchers` and the checks of `handleTrajectoryToolUsed`.

    `value`: a tool name or glob; a non-empty list of them (each must be used); or a mapping
    `{name | pattern, type?, min?, max?}` (count mode, `min` defaulting to 1). Raises
    `PydanticCustomError` for anything else.
    """
    if isinstance(value, str):
        return ToolUsedSpec(matchers=(_matcher(value, "value", "tool"),))
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        if not value:
            raise _bad("value", "requires at least one expected tool")
        return ToolUsedSpec(matchers=tuple(_matcher(item, "value", "tool") for item in value))
    if not _mapping(value):
        raise _bad("value", "must have a string, string array, or object value")
    matcher = _matcher(value, "value", "tool", ("min", "max"))
    if matcher.glob is None:
        raise _bad("value", "object must include a name or pattern property")
    low, high = _bound(value, "min", "value"), _bound(value, "max", "value")
    if (1 if low is None else low) > (high if high is not None else float("inf")):  # (min defaults to 1 here)
        raise _bad("value.min" if low is not None else "value.max",
                   f"min {1 if low is None else low!r}{'' if low is not None else ' (the default)'} is above max {high!r}: no count is in that range")
    return ToolUsedSpec(count=matcher, min=1 if low is None else low, max=high)


def parse_tool_sequence(value: Any) -> SequenceSpec:
    """promptfoo's `resolveSequenceValue` and `resolveSequenceMatcherGroups`.

    `value`: a list of steps, or a mapping `{steps: [...], mode?: in_order | exact}`. A
    step is a tool name or glob, a matcher mapping `{name | pattern, type?}`, or a
    non-empty list of those (tools of one turn, in any order). Raises
    `PydanticCustomError` when a step has no name or pattern, a group is empty, or no
    step is given.
    """
    mode = "in_order"
    where = "value"
    if isinstance(value, list):
        steps = value
    elif _mapping(value):
        _check_keys(value, ("mode", "steps"), "value")
        raw_mode = value.get("mode")
        if raw_mode not in (None, "", "in_order", "exact"):
            raise _bad("value.mode", f"must be 'in_order' or 'exact', got {raw_mode!r}{_choice(raw_mode, ('in_order', 'exact'))}")
        mode = raw_mode or "in_order"
        steps = value.get("steps") or []
        where = "value.steps"
        if not isinstance(steps, list):
            raise _bad(where, f"must be a list of steps, got {type(steps).__name__}")
    else:
        raise _bad("value", "must have an array or object value")
    groups = []
    has_groups = False
    for g, step in enumerate(steps):
        members = step if isinstance(step, list) else [step]
        if isinstance(step, list):
            has_groups = True
            if not step:
                raise _bad(f"{where}[{g}]", f"step group {g + 1} must contain at least one tool")
        group = []
        for t, item in enumerate(members):
            place, label = ((f"{where}[{g}][{t}]", f"step group {g + 1} tool {t + 1}") if isinstance(step, list)
                            else (f"{where}[{g}]", f"step {g + 1}"))
            if not isinstance(item, str) and not _mapping(item):
                raise _bad(place, f"{label} must be a tool name or a matcher object")
            matcher = _matcher(item, place, "tool")
            if matcher.glob is None:
                raise _bad(place, f"{label} must include a name or pattern property")
            group.append(matcher)
        groups.append(tuple(group))
    if not groups:
        raise _bad(where, "requires at least one expected step")
    return SequenceSpec(groups=tuple(groups), mode=mode, has_groups=has_groups)


def parse_args_match(value: Any) -> ArgsMatchSpec:
    """promptfoo's `resolveToolArgsMatchValue`.

    `value`: a mapping `{name | pattern, type?, args | arguments, mode?: partial | exact,
    defaults?: {key: value}, ignore?: key | [key, ...]}`; one of `args` and `arguments`
    (both given is refused), which may be any JSON value (`null` included). `ignore`
    entries holding `*` or `?` are globs. Raises `PydanticCustomError` otherwise.
    """
    if not _mapping(value):
        raise _bad("value", "must have an object value")
    matcher = _matcher(value, "value", "tool", ("args", "arguments", "mode", "defaults", "ignore"))
    if matcher.glob is None:
        raise _bad("value", "object must include a name or pattern property")
    if "args" in value and "arguments" in value:  # (promptfoo reads `args` and never looks at `arguments`)
        raise _bad("value.arguments", "give args or arguments, not both: promptfoo reads args alone")
    if "args" in value:
        expected = value["args"]
    elif "arguments" in value:
        expected = value["arguments"]
    else:
        raise _bad("value", "must include an args or arguments property")
    mode = value.get("mode", "partial")
    if mode not in ("partial", "exact"):
        raise _bad("value.mode", 'mode must be "partial" or "exact"' + _choice(mode, ("partial", "exact")))
    defaults = value.get("defaults")
    if "defaults" in value and not _mapping(defaults):
        raise _bad("value.defaults", "defaults must be an object mapping argument names to default values")
    ignore: tuple[str, ...] = ()
    if "ignore" in value:
        raw = value["ignore"]
        entries = raw if isinstance(raw, list) else [raw]
        if not all(isinstance(e, str) and e.strip(_JS_SPACE) for e in entries):  # (JavaScript's `trim`)
            raise _bad("value.ignore", "ignore must be a non-empty string or an array of non-empty strings")
        ignore = tuple(entries)
    return ArgsMatchSpec(matcher=matcher, expected=expected, mode=mode, defaults=defaults, ignore=ignore)


def parse_step_count(value: Any) -> StepCountSpec:
    """promptfoo's `resolveStepCountValue` and the check of `handleTrajectoryStepCount`.

    `value`: a mapping `{type?: T | [T, ...], name? | pattern?, min?, max?}` with `min` or
    `max`; without `type` or a pattern every step counts. Raises `PydanticCustomError` otherwise.
    """
    if not _mapping(value):
        raise _bad("value", "must have an object value")
    matcher = _matcher(value, "value", None, ("min", "max"))
    low, high = _bounds(value, "value")
    if low is None and high is None:
        raise _bad("value", "must include a min or max property")
    return StepCountSpec(matcher=matcher, min=low, max=high)


def parse_goal(value: Any) -> str:
    """promptfoo's `resolveGoalSuccessValue`: a non-blank string, or a mapping `{goal: non-blank string}`; the goal, trimmed."""
    if isinstance(value, str) and value.strip(_JS_SPACE):  # (JavaScript's `trim`)
        return value.strip(_JS_SPACE)
    if _mapping(value):
        _check_keys(value, ("goal",), "value")
        goal = value.get("goal")
        if isinstance(goal, str) and goal.strip(_JS_SPACE):
            return goal.strip(_JS_SPACE)
    raise _bad("value", "must have a string value or an object with a goal property")


class PromptfooSpec(BaseModel):
    """What every promptfoo assertion's spec shares, mixed into its metric class: promptfoo's `metric:` key read as
    `name:` (`metric_is_name`), and `value` checked when the config loads by the class's `parse` (value → spec, raising
    `PydanticCustomError` naming the place in the value), so a bad value is a config error naming the field."""

    parse: ClassVar[Callable[[Any], Any]]

    @model_validator(mode="before")
    @classmethod
    def _promptfoo_metric_key(cls, data: Any) -> Any:
        return metric_is_name(data)

    @field_validator("value", mode="after", check_fields=False)
    @classmethod
    def _readable(cls, value: Any) -> Any:
        cls.parse(value)
        return value


def metric_is_name(data: Any) -> Any:
    """A metric spec with promptfoo's `metric:` (the name its score goes by) read as tracejudge's `name:`, so an
    assertion copied from a promptfoo config keeps its name. Both given is refused (`PydanticCustomError`)."""
    if isinstance(data, dict) and "metric" in data:
        if "name" in data:
            raise PydanticCustomError("promptfoo_value", "give name or metric (promptfoo's word for it), not both")
        data = {("name" if k == "metric" else k): v for k, v in data.items()}
    return data
