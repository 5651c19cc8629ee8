"""A config model base that refuses `true`/`false` where a number goes.

pydantic's lax mode takes a bool for an int or a float (`trials: true` would
run one trial, `threshold: false` would be 0.0), and strict mode would also
refuse what YAML legitimately gives (`3.0` for an int). `NoBoolNumbers` keeps
lax mode and refuses only bools, in every field whose type wants a number
(`int`, `float`, `int | None`, `list[int]`, `dict[str, float]`, …) but not a
bool: the error names the field (`run.trials: Input should be a number, not a
boolean`). A float field also refuses NaN and infinity (YAML's `.nan`, `.inf`,
Python's `float("nan")`, the strings `"nan"`, `"inf"`): NaN failed a bound with
a message about the bound (`threshold: .nan` said "less than or equal to 1"),
and infinity passed a lower bound alone (`timeout_s: .inf`, `max_cost_usd: .inf`). The other way round too: a field that wants `true` or `false`
(`bool`, `bool | None`) refuses `0`, `1`, `"no"` or `"false"`, which lax mode
read as a bool (`ignore_case: 0`, `allow_extra: "no"`). Every config section
and metric parameter model derives from it.
"""

from __future__ import annotations

import inspect
import types
import typing
from typing import Any

from pydantic import BaseModel, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

__all__ = ["NoBoolNumbers", "non_finite", "refuse_non_finite", "refuses_bool", "wants_bool"]

_NUMBERS = (int, float)
_SEQUENCES = (list, tuple, set, frozenset)


def refuses_bool(annotation: Any, value: Any) -> bool:
    """True when `value` holds a bool (at the top or inside a list or dict) where `annotation` wants a number."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return refuses_bool(args[0], value)
    if origin in (typing.Union, types.UnionType):
        if isinstance(value, bool):
            return bool not in args and typing.Any not in args and any(a in _NUMBERS for a in args)
        # A container: judged by the members of the union that are that kind of container.
        return any(refuses_bool(a, value) for a in args if typing.get_origin(a) in (*_SEQUENCES, dict))
    if isinstance(value, bool):
        return annotation in _NUMBERS
    if origin in _SEQUENCES and isinstance(value, (list, tuple)) and args:
        inner = args[0] if (origin is not tuple or (len(args) == 2 and args[1] is Ellipsis)) else None
        if inner is None:  # a fixed tuple: each position its own type
            return any(refuses_bool(a, v) for a, v in zip(args, value, strict=False))
        return any(refuses_bool(inner, v) for v in value)
    if origin is dict and isinstance(value, dict) and len(args) == 2:
        return any(refuses_bool(args[1], v) for v in value.values())
    return False


_NON_FINITE_WORDS = frozenset({"nan", "inf", "infinity"})


def non_finite(annotation: Any, value: Any) -> str | None:
    """`"NaN"` or `"infinity"` when `annotation` wants a float (`float`, `float | None`, an `Annotated` float) and `value`
    is one (a float, or a string pydantic would read as one: `"nan"`, `"-inf"`), else None."""
    if isinstance(value, float):
        if value - value == 0.0:  # (a finite float: the usual case, decided without a look at the annotation)
            return None
    elif not (isinstance(value, str) and value.strip().lower().lstrip("+-") in _NON_FINITE_WORDS):
        return None
    if not _wants_float(annotation):
        return None
    return "NaN" if float(value) != float(value) else "infinity"


def refuse_non_finite(annotation: Any, value: Any) -> None:
    """Raise pydantic's `PydanticCustomError` (type `finite_number`) saying `value` is NaN or an infinity when
    `non_finite(annotation, value)` finds it one; return None otherwise. For a field's own before-validator too, which
    pydantic runs before `NoBoolNumbers`' (`refuse_non_finite(float, value)`)."""
    kind = non_finite(annotation, value)
    if kind == "NaN":
        raise PydanticCustomError("finite_number", "Input should be a number, not NaN (not a number)")
    if kind is not None:
        raise PydanticCustomError("finite_number", "Input should be a finite number, not {sign}infinity",
                                  {"sign": "-" if float(value) < 0 else ""})


def _wants_float(annotation: Any) -> bool:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _wants_float(args[0])
    if origin in (typing.Union, types.UnionType):
        return any(_wants_float(a) for a in args)
    return annotation is float


def wants_bool(annotation: Any, value: Any) -> bool:
    """True when `annotation` is `bool` (or `bool | None`) and `value` is no bool (nor `None` where it is allowed): lax
    mode read `0`, `"no"`, `"false"` and `0.0` as false and `1`, `"yes"` as true."""
    if annotation is bool:
        return not isinstance(value, bool)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and set(typing.get_args(annotation)) == {bool, type(None)}:
        return value is not None and not isinstance(value, bool)
    return False


class NoBoolNumbers(BaseModel):
    """Base model whose numeric fields refuse bools and whose yes/no fields refuse anything but `true` and `false`
    (see the module doc); raises pydantic's `ValidationError` naming the field."""

    @field_validator("*", mode="before")
    @classmethod
    def _refuse_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        field = cls.model_fields.get(info.field_name or "")
        if field is not None and refuses_bool(field.annotation, value):
            where = "" if isinstance(value, bool) else " inside"
            raise PydanticCustomError("bool_as_number", "Input should be a number, not a boolean{where}", {"where": where})
        if field is not None and wants_bool(field.annotation, value):
            raise PydanticCustomError("bool_type", "Input should be true or false (got {got})", {"got": repr(value)})
        if field is not None:
            # (said before any bound is checked: NaN fails every bound, and pydantic then names the bound, not the NaN)
            refuse_non_finite(field.annotation, value)
        return value


# pydantic works out a field validator's signature again for every field it applies to (about 160 fields of config
# models at a run's start-up: some 1.5 ms of CPU). Declared once, the signature is read instead.
_check = NoBoolNumbers._refuse_bool_numbers.__func__
_check.__signature__ = inspect.signature(_check)
