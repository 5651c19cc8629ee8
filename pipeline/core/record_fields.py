"""The field types of the records (`tracejudge.core.records`) that refuse what JSON parsing would let through.

pydantic's lax mode takes `true` for the number 1, and its parser reads `1e400` as infinity and
accepts `NaN`/`Infinity`; a tool call may arrive with an empty name. The records are built from
user files, so each such value is refused where it is read, as an `invalid_input` naming its field.
These types stand apart from the records because they are rules about values, not records: the
models in `records` only name them. The checks are plain functions pydantic calls itself; nothing
here sits between a record and its validation.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field
from pydantic_core import PydanticCustomError

__all__ = ["Count", "Measure", "MetaValue", "Spent", "SpentUsd", "ToolName", "arguments_text", "decode_arguments", "empty_list", "no_bool",
           "tool_name_problem"]


def empty_list() -> list[Any]:
    """`[]`: the default factory of the list fields of the models every run builds (`default_factory=list` elsewhere).

    pydantic reads a default factory's signature (does it take the validated data?); `list`'s is parsed from
    its text signature, and the first such parse compiled `tokenize`'s patterns: about 1.5 ms of every start-up.
    """
    return []


def no_bool(kind: str) -> Any:
    """A `BeforeValidator` refusing a boolean where a number goes (`kind`: `"int"` or `"float"`, for the error's type and text).

    JSON `true` is not the number 1: pydantic's lax mode would take it as one (strict mode and msgspec refuse it).
    The validator raises `PydanticCustomError` (`int_type`/`float_type`) for a `bool` and passes anything else on.
    """
    def check(value: Any) -> Any:
        if isinstance(value, bool):
            raise PydanticCustomError(f"{kind}_type", f"Input should be {'an integer' if kind == 'int' else 'a number'}, "
                                      "not a boolean (got {got})", {"got": json.dumps(value)})
        return value

    return BeforeValidator(check)


def _finite(value: Any, path: str = "") -> Any:
    # A JSON number beyond ±1.8e308 (`1e400`) reads as infinity, and pydantic's parser takes `NaN`/`Infinity`:
    # results.jsonl and summary.json could not carry them as JSON (they were written null or `Infinity`).
    if isinstance(value, float) and not math.isfinite(value):
        raise PydanticCustomError("finite_number", "{got}{where} is not a finite number (a JSON number beyond ±1.8e308, or NaN/Infinity); "
                                  "write it as a string to keep it", {"got": str(value), "where": f" at {path}" if path else ""})
    if isinstance(value, dict):
        for k, v in value.items():
            _finite(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _finite(v, f"{path}[{i}]")
    return value


# A count that refuses a boolean; a measure that refuses a boolean and a non-finite number; a metadata
# value that holds no non-finite number.
Count = Annotated[int | None, no_bool("int")]
Measure = Annotated[Annotated[float, Field(allow_inf_nan=False)] | None, no_bool("float")]


def tool_name_problem(value: str) -> tuple[str, str] | None:
    """`(error type, message)` saying why `value` cannot name a tool, or None when it can.

    The one rule for every reader: the records' validation (`ToolName`) raises it, and a decoder that skips that
    validation (`extract.fast_decode`) hands a name it refuses to it.
    """
    # A call with no name matches no expectation and names nothing in a report: the record is malformed.
    if not value or value.isspace():
        return "tool_name_empty", "the tool name is empty or only whitespace"
    # Names are shown and written everywhere (reports, JUnit XML, a terminal), and XML cannot carry a NUL at all.
    if "\x00" in value:
        return "tool_name_nul", "the tool name holds a NUL character (\\u0000), which XML and terminals cannot carry"
    return None


def _named(value: str) -> str:
    problem = tool_name_problem(value)
    if problem is not None:
        raise PydanticCustomError(*problem)
    return value


ToolName = Annotated[str, AfterValidator(_named)]
# What a run consumed: never below zero (a negative cost would score best on a cost metric).
Spent = Annotated[Annotated[int, Field(ge=0)] | None, no_bool("int")]
SpentUsd = Annotated[Annotated[float, Field(allow_inf_nan=False, ge=0)] | None, no_bool("float")]
MetaValue = Annotated[Any, AfterValidator(_finite)]


def decode_arguments(value: Any) -> tuple[Any, bool]:
    """Normalize tool-call arguments to a mapping.

    Providers send arguments either as a mapping or as a JSON string
    (OpenAI's `function.arguments`). Returns `(arguments, ok)`:

    - a mapping is returned as is, `ok=True`;
    - `None` or an empty/blank string becomes `{}`, `ok=True`;
    - a string holding a JSON object is decoded, `ok=True`;
    - anything else (undecodable text, a JSON array or scalar) is returned
      unchanged with `ok=False`, so callers can keep it raw and flag it.
    """
    if isinstance(value, dict):
        return value, True
    if value is None:
        return {}, True
    if isinstance(value, str):
        if not value.strip():
            return {}, True
        try:
            decoded = json.loads(value)
        except ValueError:
            return value, False
        if isinstance(decoded, dict):
            return decoded, True
        return value, False
    return value, False


def arguments_text(value: Any) -> str:
    """Arguments that are no mapping, kept as text: a string as it is, another value (a list, a number) as its JSON
    (`["x", 1]`, as a provider sends it and the τ-bench reader keeps it), not Python's spelling of it (`['x', 1]`), which
    no JSON reader, nor a reason showing the value, could read back."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):  # (a value holding itself, from the Python API)
        return str(value)
