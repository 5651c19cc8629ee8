"""NaN and infinity where a config or a metric wants a number are refused in those words, whatever bound the key has.

NaN fails every bound, and pydantic then named the bound (`threshold: nan` said "Input should be less than or equal
to 1"); an infinity passed a lower bound alone (`judge.timeout_s`, `budget.max_cost_usd`, `limits.window_s`).
"""

from __future__ import annotations

import math
import typing

import pytest
import tracejudge
from pydantic import BaseModel, ValidationError
from tracejudge import ConfigError, ToolCalls
from tracejudge.core import registry
from tracejudge.core.config import RunConfig
from tracejudge.core.strict_numbers import NoBoolNumbers

GOOD = {"id": "c1", "input": "x", "trace": {"steps": [], "output": "done"}}
NON_FINITE = [(math.nan, "Input should be a number, not NaN (not a number)"), ("nan", "Input should be a number, not NaN (not a number)"),
              (math.inf, "Input should be a finite number, not infinity"), ("-Infinity", "Input should be a finite number, not -infinity")]


def _models(model: type[BaseModel], seen: set[type[BaseModel]]) -> None:
    """`model` and every model its fields hold, at any depth, into `seen`."""
    if model in seen:
        return
    seen.add(model)
    for field in model.model_fields.values():
        stack = [field.annotation]
        while stack:
            ann = stack.pop()
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                _models(ann, seen)
            stack.extend(typing.get_args(ann))


def _float_fields() -> list[tuple[type[BaseModel], str]]:
    seen: set[type[BaseModel]] = set()
    _models(RunConfig, seen)
    for cls in registry.metric_types().values():
        _models(cls, seen)

    def wants_float(ann: object) -> bool:
        return ann is float or any(wants_float(a) for a in typing.get_args(ann) if typing.get_origin(ann) is not dict)

    return sorted(((cls, name) for cls in seen if issubclass(cls, NoBoolNumbers)
                   for name, field in cls.model_fields.items() if wants_float(field.annotation) and _takes_a_number(cls, name)),
                  key=lambda p: (p[0].__name__, p[1]))


def _refused(cls: type[BaseModel], name: str, value: object) -> list[str]:
    """The messages at key `name` when `cls` validates `{name: value}` (other keys' errors aside)."""
    try:
        cls.model_validate({name: value})
    except ValidationError as exc:
        return [e["msg"] for e in exc.errors() if tuple(e["loc"][:1]) == (name,)]
    return []


def _takes_a_number(cls: type[BaseModel], name: str) -> bool:
    # (promptfoo's pass/fail assertions refuse any `threshold`, as they ignore it: no number is theirs to bound)
    return not (_refused(cls, name, 0.5) and _refused(cls, name, 1.0))


FIELDS = _float_fields()


def test_the_sweep_sees_the_bounded_floats_of_every_section() -> None:
    names = {f"{cls.__name__}.{name}" for cls, name in FIELDS}
    assert {"Regex.threshold", "levenshtein.threshold", "JudgeConfig.timeout_s", "BudgetConfig.max_cost_usd", "LimitsConfig.window_s", "TargetConfig.backoff_s",
            "RunSection.metric_timeout_s", "SimulatorOptions.error_rate", "PriceConfig.input", "MetricAssertion.min_mean"} <= names, names


@pytest.mark.parametrize(("cls", "name"), FIELDS, ids=[f"{c.__name__}.{n}" for c, n in FIELDS])
def test_every_float_key_refuses_nan_and_infinity_saying_so(cls: type[BaseModel], name: str) -> None:
    for value, said in NON_FINITE:
        assert _refused(cls, name, value)[:1] == [said], value


def test_a_metric_and_evaluate_say_nan_and_infinity_in_those_words() -> None:
    with pytest.raises(ConfigError) as raised:
        tracejudge.Regex(pattern="a", threshold=float("nan"))
    assert str(raised.value) == "Regex: threshold: Input should be a number, not NaN (not a number)"
    with pytest.raises(ConfigError) as raised:
        tracejudge.evaluate([GOOD], [ToolCalls()], metric_timeout_s=float("nan"))
    assert str(raised.value) == "evaluate(metric_timeout_s=...): (value): Input should be a number, not NaN (not a number)"
    with pytest.raises(ConfigError) as raised:
        tracejudge.evaluate([GOOD], [ToolCalls()], judge={"provider": "simulator", "model": "x", "timeout_s": float("inf")})
    assert str(raised.value) == "evaluate(judge=...): timeout_s: Input should be a finite number, not infinity"
