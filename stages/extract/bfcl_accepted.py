"""BFCL's accepted-value lists as the values and matchers a sent argument is compared with (`bfcl`).

A single-turn `ground_truth` gives each parameter a list of accepted values;
`accepted_values` turns it into the value itself or a matcher (`$any_of`,
`$absent`, `$loose`), `source_values` does the same for a Java / JavaScript
question's parameter (`bfcl_lang`). What each becomes, and where strings
compare as BFCL's AST checker compares them, is said in `bfcl`'s module
docstring.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.bfcl_lang import CONVERTED as _LANG_TYPES, source_value

__all__ = ["accepted_values", "source_values", "standard_string"]


def standard_string(text: str) -> dict[str, Any]:
    """A matcher met by exactly the strings whose `standardize` equals `text`'s: `{"$loose": text}`.

    The answer is kept as written, so a reason shows it so (`"unit": {"$loose": "units"}`).
    """
    return {"$loose": text}


def accepted_values(options: Any, kind: str | None = None) -> Any:
    """A BFCL accepted-value list → a plain value or matcher (see `bfcl`'s module docstring).

    `kind`: the parameter's type in the function docs; for `string`, `any`, `array`, `tuple` and `dict` the strings
    compare as BFCL's checker compares them (`standard_string`, where it standardizes), for any other (or None) exactly.
    """
    if not isinstance(options, list):
        return _convert(options)
    if not options:
        # A few live answers list no accepted value for a parameter whose right
        # value is an empty list (a category with no query); read it as that.
        return []
    absent_ok = any(o == "" for o in options)
    values: list[Any] = []
    for o in options:
        value = _standard(o, kind) if _standardized(options, kind) else _convert(o)
        # (a string's `$any_of` joins the list's own: one list of options, the answers as written among them)
        values += value["$any_of"] if isinstance(o, str) and isinstance(value, dict) and "$any_of" in value else [value]
    if absent_ok:
        values.append({"$absent": True})
    return values[0] if len(values) == 1 else {"$any_of": values}


def _convert(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: accepted_values(v) for k, v in value.items()}
    return value


# The docs' type → the Python type BFCL's checker wants the accepted values to be (`PYTHON_TYPE_MAPPING`) for it to
# standardize their strings; an accepted value of another type is a "variable", compared exactly (`type_checker`).
_STANDARDIZED = {"string": str, "any": str, "array": list, "tuple": list, "dict": dict}


def _standardized(options: list[Any], kind: str | None) -> bool:
    want = _STANDARDIZED.get(kind or "")
    first = next((o for o in options if o != ""), None)  # (`get_possible_answer_type`: "" is an optional's mark)
    return want is not None and type(first) is want


def _standard(value: Any, kind: str | None) -> Any:
    """One accepted value with its strings compared as upstream compares them: the value itself (`string_checker`), a
    list's items (`list_checker`; a list of dicts: each dict's values, `list_dict_checker`), a dict's values (`dict_checker`)."""
    if isinstance(value, str):
        return standard_string(value)
    if isinstance(value, list):
        return [_standard(v, "dict" if isinstance(v, dict) else "string") if isinstance(v, (str, dict)) else v for v in value]
    if isinstance(value, dict):  # {key: [accepted, …]}: one level, nested values exact
        return {k: accepted_values(v, "string") if isinstance(v, list) else _convert(v) for k, v in value.items()}
    return value


def source_values(options: Any, prop: dict[str, Any] | None, lang: str) -> Any:
    """A Java / JavaScript parameter's accepted-value list → a matcher of the strings upstream accepts (`bfcl_lang`).

    `""` still means "may be left out"; an undocumented parameter keeps the Python reading.
    """
    if not isinstance(options, list) or not options or prop is None:
        return accepted_values(options)
    first = next((o for o in options if o != ""), None)  # (upstream's `get_possible_answer_type`)
    want = _LANG_TYPES[lang].get(prop.get("type"))  # type: ignore[arg-type]
    variable = first is not None and want is not None and type(first) is not want
    values: list[Any] = []
    for o in options:
        if o == "":
            continue
        value = source_value(o, prop, lang, variable)
        if value is None:
            continue  # (a value no sent string converts to: a number for an `any`, compared with the string sent)
        # (a quoted-or-not string's `$any_of` joins the list's own, as in `accepted_values`)
        values += value["$any_of"] if isinstance(value, dict) and "$any_of" in value else [_convert(o) if value is o else value]
    if "" in options:
        if want is str:
            values.append({"$loose": ""})  # (a sent `""` is a string upstream compares with the accepted `""`)
        values.append({"$absent": True})
    if not values:
        return accepted_values(options)
    return values[0] if len(values) == 1 else {"$any_of": values}
