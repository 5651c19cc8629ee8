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
from tracejudge.stages.extract.bfcl_lang_maps import NEVER

__all__ = ["UNANSWERED", "accepted_values", "call_arguments", "source_values", "standard_string"]

UNANSWERED = {"$regex": r"(?!)required by the function docs, not in the answer: upstream accepts no call"}
"""The matcher of a parameter the docs require and the answer leaves out: sent it is unexpected, unsent missing."""


def call_arguments(name: str, args: Any, functions: Any, lang: str | None) -> dict[str, Any]:
    """One answer call's `{parameter: accepted values}` → the expected arguments, read against the function's docs.

    Upstream's `simple_function_checker` first wants every parameter the docs list as `required` (an accepted `""`
    then does not let it be left out), and refuses one the docs do not declare even when the answer lists it: that
    parameter may only be left out, where its answer accepts `""`. A required parameter the answer lacks is never
    met (`UNANSWERED`). `lang`: `java` / `javascript` (`source_values`), None for Python (`accepted_values`).
    """
    doc = _doc(functions, name)
    params = (doc.get("parameters") or {}) if doc is not None else {}
    props = {k: v for k, v in (params.get("properties") or {}).items() if isinstance(v, dict)}
    required = {r for r in params.get("required") or [] if isinstance(r, str)}
    out: dict[str, Any] = {}
    for k, v in (args or {}).items():
        if doc is not None and k not in props:
            out[k] = {"$absent": True} if isinstance(v, list) and "" in v and k not in required else NEVER
        elif lang is None:
            prop = props.get(k) or {}
            kind, items = prop.get("type"), (prop.get("items") or {}).get("type") if isinstance(prop.get("items"), dict) else None
            out[k] = accepted_values(v, kind if isinstance(kind, str) else None, items if isinstance(items, str) else None,
                                     k in required)
        else:
            out[k] = source_values(v, props.get(k), lang, k in required)
    for k in sorted(required - set(args or {})):
        out[k] = UNANSWERED
    return out


def _doc(functions: Any, name: str) -> dict[str, Any] | None:
    """The doc of function `name` among a question's `function`s (upstream's `find_description`: a lone doc is it)."""
    if isinstance(functions, dict):
        return functions
    for doc in functions if isinstance(functions, list) else []:
        if isinstance(doc, dict) and doc.get("name") == name:
            return doc
    return None


def standard_string(text: str) -> dict[str, Any]:
    """A matcher met by exactly the strings whose `standardize` equals `text`'s: `{"$loose": text}`.

    The answer is kept as written, so a reason shows it so (`"unit": {"$loose": "units"}`).
    """
    return {"$loose": text}


def accepted_values(options: Any, kind: str | None = None, items: str | None = None, required: bool = False) -> Any:
    """A BFCL accepted-value list → a plain value or matcher (see `bfcl`'s module docstring).

    `kind`: the parameter's type in the function docs; for `string`, `any`, `array`, `tuple` and `dict` the strings
    compare as BFCL's checker compares them (`standard_string`, where it standardizes), for any other (or None) exactly.
    `items`: an `array` / `tuple`'s item type. `required`: the docs require the parameter, so an accepted `""` does not
    let it be left out (upstream checks `required` first). With a known `kind`, values are typed as upstream's
    `type_checker` types them (`_typed`).
    """
    if not isinstance(options, list):
        return _convert(options)
    if not options:
        # A few live answers list no accepted value for a parameter whose right
        # value is an empty list (a category with no query); read it as that.
        return []
    want = _PYTHON.get(kind or "")
    first = next((o for o in options if o != ""), None)  # (`get_possible_answer_type`: "" is an optional's mark)
    values: list[Any] = []
    for o in options:
        if o == "" and want is not None and want is not str and type(first) is not str:
            continue  # a "" sent is a string: upstream's type check refuses it for a number, list or dict answer
        value = _standard(o, kind, items, options) if _standardized(options, kind) else _typed(o, want, first)
        # (a string's `$any_of` joins the list's own: one list of options, the answers as written among them)
        values += value["$any_of"] if isinstance(o, str) and isinstance(value, dict) and "$any_of" in value else [value]
    if "" in options and want is list and type(first) is list:
        values.append([])  # `list_checker` reads the accepted "" as a list of its characters: none, so [] passes
    if "" in options and not required:
        values.append({"$absent": True})
    if not values:
        return NEVER
    return values[0] if len(values) == 1 else {"$any_of": values}


def _convert(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: accepted_values(v) for k, v in value.items()}
    return value


# The docs' type → the Python type BFCL's checker wants (`PYTHON_TYPE_MAPPING` in its `ast_checker`).
_PYTHON = {"string": str, "integer": int, "float": float, "boolean": bool, "array": list, "tuple": list, "dict": dict, "any": str}
# Those whose strings it standardizes; an accepted value of another type is a "variable", compared exactly (`type_checker`).
_STANDARDIZED = {"string": str, "any": str, "array": list, "tuple": list, "dict": dict}


def _standardized(options: list[Any], kind: str | None) -> bool:
    want = _STANDARDIZED.get(kind or "")
    first = next((o for o in options if o != ""), None)  # (`get_possible_answer_type`: "" is an optional's mark)
    return want is not None and type(first) is want


def _strict(value: Any, kind: type) -> Any:
    """`value` as a number of `kind` only (`$strict`): upstream's type check wants `type(value) ==` that type."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _convert(value)
    return {"$strict": kind(value) if kind(value) == value else value}


def _typed(value: Any, want: type | None, first: Any) -> Any:
    """One accepted value of a parameter whose strings are not standardized, typed as `type_checker` types it.

    A value passes that check when its type is the declared one or that of the first answer (a "variable"). So an
    `integer` whose answers are integers refuses `5.0`, and an `any` whose answers are numbers wants that kind of
    number; a `float` takes an int (upstream converts it), as do answers of another type, compared with `==`.
    """
    if want is int and type(first) is int:
        return _strict(value, int)
    if want is str and type(first) in (int, float):
        return _strict(value, type(first))
    return _convert(value)


def _python_equal(value: Any) -> list[Any]:
    """The values Python's `==` (and `in`) also finds equal to an accepted `value`: `1` for `True`, `False` for `0`."""
    if isinstance(value, bool):
        return [int(value)]
    return [value == 1] if isinstance(value, (int, float)) and value in (0, 1) else []


def _dict_value(options: list[Any]) -> Any:
    """A `dict` parameter's key: `dict_checker` tests `value in accepted` without a type check, so `True` meets `1`."""
    first = next((o for o in options if o != ""), None)
    value = accepted_values(options, "string" if type(first) is str else None)  # (its strings standardized, no type)
    extra = [e for o in options if o != "" for e in _python_equal(o)]
    if not extra:
        return value
    return {"$any_of": (value["$any_of"] if isinstance(value, dict) and "$any_of" in value else [value]) + extra}


def _standard(value: Any, kind: str | None, items: str | None = None, options: list[Any] | None = None) -> Any:
    """One accepted value with its strings compared as upstream compares them: the value itself (`string_checker`), a
    list's items (`list_checker`; a list of dicts: each dict's values, `list_dict_checker`), a dict's values (`dict_checker`).

    A list's numbers are typed as its item type where its answer's first item is of that type and no "" is accepted
    (upstream's nested type check, which an accepted "" passes whatever the items: then `==` compares them).
    """
    if isinstance(value, str):
        return standard_string(value)
    if isinstance(value, list):
        item = _PYTHON.get(items or "")
        head = next((v for v in value if v != ""), None)
        strict = item if item in (int, float) and type(head) is item and "" not in (options or []) else None
        return [_standard(v, "dict" if isinstance(v, dict) else "string") if isinstance(v, (str, dict))
                else _strict(v, strict) if strict else v for v in value]
    if isinstance(value, dict):  # {key: [accepted, …]}: one level, nested values exact
        return {k: _dict_value(v) if isinstance(v, list) else _convert(v) for k, v in value.items()}
    return value


def source_values(options: Any, prop: dict[str, Any] | None, lang: str, required: bool = False) -> Any:
    """A Java / JavaScript parameter's accepted-value list → a matcher of the strings upstream accepts (`bfcl_lang`).

    `""` still means "may be left out", unless the docs require the parameter (`required`); an undocumented parameter
    keeps the Python reading.
    """
    if not isinstance(options, list) or not options or prop is None:
        return accepted_values(options, required=required)
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
        if want is str or variable and type(first) is str:
            values.append({"$loose": ""} if want is str else "")  # (a sent `""` is a string: compared with the accepted `""`)
        if not required:
            values.append({"$absent": True})
    if not values:
        return accepted_values(options, required=required)
    return values[0] if len(values) == 1 else {"$any_of": values}
