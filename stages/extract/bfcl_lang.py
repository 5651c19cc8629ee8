"""BFCL's Java and JavaScript categories: accepted values as the strings a model sends for them.

In `simple_java` and `simple_javascript` BFCL asks for every argument as Java / JavaScript source text: its own
function-calling handler retypes each parameter `string` ("This is Java boolean type parameter in string
representation", `_func_doc_language_specific_pre_processing` in `bfcl_eval/utils.py`), and its AST checker refuses
a value that is not a string, then converts the string by the parameter's declared type before comparing it with the
accepted values (`java_type_converter` / `js_type_converter` in `bfcl_eval/eval_checker/ast_eval/type_convertor/`,
called from `simple_function_checker`). The possible-answer file, though, states the converted values: `true`, `50`,
`[101, 202]`. Compared as they stand, the right answer `"true"` would fail and a JSON `true`, which upstream refuses,
would pass. So each accepted value becomes a matcher met by the strings upstream's converter turns into it:

- `boolean` / `Boolean`: `"true"` or `"false"`, exactly;
- `integer`, `byte`, `short`: an optionally signed digit string of that value (`"050"` is 50, as `int()` reads it);
  Java `long` with its `L` suffix (`"42L"`; a bare `"42"` stays a string upstream and fails), JavaScript `Bigint`
  with its `n`;
- Java `float` with its `f` suffix, `double` and JavaScript `float` without: the decimal spellings of the value
  (`"4"`, `"4.0"`, `"4.00"` for 4.0); Java's also in exponent form (`"4e0f"`, `"0.4E1f"`; `"1.5E2"` for a
  `double` 150.0), as its converter's pattern reads them, JavaScript's not;
- `String`, `any`, `char`: the string compared as upstream's `string_checker` compares it (`$loose`); a JavaScript
  `String` may also come quoted (`"'abc'"`), as `js_type_converter` strips one pair of quotes;
- Java `Array` (`new String[]{a, b}`), `ArrayList` (`new ArrayList<>(Arrays.asList("a", "b"))`,
  `new ArrayList<>() {{ add("a"); add("b"); }}`, or `new ArrayList<>()` for none) and JavaScript `array`
  (`["a", "b"]`, `new Array(…)`): the items as above. As upstream's `parse_array` keeps an `Array`'s `String`
  items as written, quotes included, and then compares them with unquoted answers, upstream accepts only
  unquoted items there, and so does this. An `ArrayList` / `Array` of `any` whose answer holds a number or a
  boolean (simple_java_36, 65) is met by nothing, as upstream (see `_items`);
- Java `HashMap` (`new HashMap<String, Object>() {{ put("limit", 50); }}`) and JavaScript `dict`
  (`{limit: 50, 'name': 'x'}`): the texts upstream's `parse_hashmap` / `parse_js_collection` read as a map its
  `dict_checker` accepts, keys in any order (`bfcl_lang_maps`); a JSON object is refused, as upstream refuses it;
- an accepted string for a parameter of another type (a variable name: `"ResultSet.CONCUR_READ_ONLY"` for an
  `integer`) is met by that string exactly, as upstream's `type_checker` treats it; for a JavaScript `array` or
  `dict` with spaces around it too, as `parse_js_collection` strips the text it gives back.
"""

from __future__ import annotations

import re
from typing import Any

from tracejudge.stages.extract.bfcl_lang_maps import NEVER, java_map, js_object, loose as _loose, number

__all__ = ["CONVERTED", "language", "source_value"]


def language(category: str) -> str | None:
    """`"java"`, `"javascript"` or None (Python) for a BFCL category, as upstream's `is_java` / `is_js` decide."""
    if "javascript" in category:
        return "javascript"
    return "java" if "java" in category else None


# The Python type upstream converts each declared type to (`JAVA_TYPE_CONVERSION`, `JS_TYPE_CONVERSION`).
CONVERTED = {
    "java": {"byte": int, "short": int, "integer": int, "long": int, "float": float, "double": float, "boolean": bool,
             "char": str, "String": str, "any": str, "Array": list, "ArrayList": list, "HashMap": dict},
    "javascript": {"String": str, "integer": int, "Bigint": int, "float": float, "Boolean": bool, "any": str,
                   "array": list, "dict": dict},
}


def _integer(value: int, suffix: str = "") -> str:
    if value == 0:
        return "-?0+" + suffix
    return ("-" if value < 0 else "") + "0*" + str(abs(value)) + suffix


def _scalar(lang: str, kind: str, value: Any, quoted_str: bool) -> str | None:
    """A pattern (unanchored) for one converted value of a scalar declared type; None when there is none."""
    if isinstance(value, bool):
        return ("true" if value else "false") if kind in ("boolean", "Boolean") else None
    if isinstance(value, int) and kind in ("byte", "short", "integer"):
        return _integer(value)
    if isinstance(value, int) and kind in ("long", "Bigint"):
        return _integer(value, "[lL]" if kind == "long" else "n")
    if isinstance(value, (int, float)) and kind in ("float", "double"):
        return number(value, "js_float" if lang == "javascript" else f"java_{kind}")
    if isinstance(value, str) and CONVERTED[lang].get(kind) is str:
        inner = _loose(value)
        return rf"(?:{inner}|\"{inner}\"|'{inner}')" if quoted_str else inner
    return None


def _items(lang: str, kind: str, nested: str, items: list[Any]) -> str | None:
    """A pattern for a list answer of an `Array` / `ArrayList` / `array` parameter whose items are `nested`.

    None when no text converts to `items`. Upstream can never accept a list of `any` holding a number or a
    boolean (simple_java_36 `["userID", 42, …]`, 65): `java_type_converter(item, "any")` is `str(item)`, so every
    converted item is a string, and `list_checker` compares the list with `==`, where `"42"` is not `42`.
    """
    if lang == "java" and kind == "ArrayList" and nested in ("String", "char"):
        # `parse_arraylist` drops an item's first and last characters (`element_str[1:-1]`), its quotes
        parts = [rf"[\"']{_loose(i)}[\"']" if isinstance(i, str) else None for i in items]
    else:
        # `Array` items convert by their type, a `String` one kept as written; a JavaScript item in quotes loses them.
        parts = [_scalar(lang, nested, i, quoted_str=lang == "javascript") for i in items]
    if any(p is None for p in parts):
        return None
    w = r"[^\S\n]*"  # upstream reads the items with `.`, which stops at a newline
    body = f"{w},{w}".join(parts)
    if lang == "javascript":
        return rf"\A\s*(?:\[{w}{body}{w}\]|new\s+Array\({w}{body}{w}\))"
    if kind == "Array":
        return rf"new\s+\w+\[\]\s*\{{{w}{body}{w}\}}"
    # `parse_arraylist` tries `Arrays.asList(…)` anywhere first, then `new ArrayList<>() {{ add(…); … }}`, whose
    # items are each `add(…)` up to its first `)` (on one line), whatever stands between them.
    as_list = r"new\s+ArrayList<\w*>\(Arrays\.asList\("
    between = r"(?:(?!add\(|\}\})(?s:.))*"
    added = rf"\A(?!(?s:.*?){as_list}.+?\)\))(?s:.*?)new\s+ArrayList<\w*>\(\)\s*\{{\{{{between}" + "".join(
        rf"add\({w}{p}{w}\){between}" for p in parts) + r"\}\}"
    if not items:
        return rf"(?:new\s+ArrayList<\w*>\(\)|{added})"
    return rf"(?:{as_list}{w}{body}{w}\)\)|{added})"


def source_value(option: Any, prop: dict[str, Any], lang: str, variable: bool) -> Any:
    """One accepted value of a Java / JavaScript parameter (declared as `prop`) → what the sent string must be.

    `variable`: the answers are of another type than the declared one (upstream's `is_variable`), so a string
    answer is met by that string exactly. Returns None for an answer no sent string meets (a number accepted for
    a `String` / `any` parameter), `NEVER` for a list or map answer none meets, the option unchanged where no
    pattern applies (see the module docstring).
    """
    kind = prop.get("type") if isinstance(prop.get("type"), str) else ""
    converted = CONVERTED[lang].get(kind)
    if variable and isinstance(option, str):
        if lang == "javascript" and converted in (list, dict):
            # `parse_js_collection` gives back the text it could not read stripped: " myItemList " is the variable
            return {"$any_of": [option, {"$regex": rf"\A\s*{re.escape(option)}\s*\Z"}]}
        return option
    if isinstance(option, list) and converted is list:
        nested = (prop.get("items") or {}).get("type") if isinstance(prop.get("items"), dict) else None
        pattern = _items(lang, kind, nested or "any", option) if isinstance(nested, str) else None
        return {"$regex": pattern} if pattern else NEVER if isinstance(nested, str) else option
    if isinstance(option, dict) and converted is dict:
        pattern = java_map(option) if lang == "java" else js_object(option)
        return {"$regex": pattern} if pattern else NEVER
    if not isinstance(option, str) and converted is str:
        return None  # upstream compares the string sent (`str(value)`) with this non-string answer: never equal
    if isinstance(option, str) and converted is str:
        if lang == "javascript" and kind == "String":
            return {"$any_of": [{"$loose": option}, {"$regex": rf"\A(?:\"{_loose(option)}\"|'{_loose(option)}')\Z"}]}
        return {"$loose": option}
    pattern = _scalar(lang, kind, option, quoted_str=False)
    # Upstream's `^…$` patterns also take a text ending in one newline, which `int()` / `float()` then ignore; not
    # JavaScript's `Bigint`, whose `n` it cuts as the last character.
    newline = r"\n?" if pattern and converted in (int, float) and kind != "Bigint" else ""
    return {"$regex": rf"\A{pattern}{newline}\Z"} if pattern else option
