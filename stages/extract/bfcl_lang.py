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
  (`"4"`, `"4.0"`, `"4.00"` for 4.0). Java also reads exponent forms (`"4e0"`), which these patterns do not accept;
- `String`, `any`, `char`: the string compared as upstream's `string_checker` compares it (`$loose`); a JavaScript
  `String` may also come quoted (`"'abc'"`), as `js_type_converter` strips one pair of quotes;
- Java `Array` (`new String[]{a, b}`), `ArrayList` (`new ArrayList<>(Arrays.asList("a", "b"))`, or
  `new ArrayList<>()` for none) and JavaScript `array` (`["a", "b"]`, `new Array(…)`): the items as above. As
  upstream's `parse_array` keeps an `Array`'s `String` items as written, quotes included, and then compares them
  with unquoted answers, upstream accepts only unquoted items there, and so does this;
- an accepted string for a parameter of another type (a variable name: `"ResultSet.CONCUR_READ_ONLY"` for an
  `integer`) is met by that string exactly, as upstream's `type_checker` treats it;
- `HashMap` and JavaScript `dict` answers (`{"limit": [50]}`) stay as they were: upstream parses `put(…)` chains and
  object literals with regular expressions no matcher here reproduces, so a string answer for them fails.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from tracejudge.stages.score.value_match import standardize

__all__ = ["CONVERTED", "language", "source_value"]

_SEP = r"[ ,./\-_*^]*"  # what upstream's `standardize_string` drops, anywhere in the sent text


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


def _loose(text: str) -> str:
    """A pattern met by exactly the texts whose `standardize` equals `text`'s (case-insensitive, `'` for `"`)."""
    chars = ['["\']' if c == '"' else re.escape(c) for c in standardize(text)]
    return "(?i:" + _SEP + _SEP.join(chars) + _SEP + ")"  # (scoped: `true`, a digit string stay case-sensitive)


def _integer(value: int, suffix: str = "") -> str:
    if value == 0:
        return "-?0+" + suffix
    return ("-" if value < 0 else "") + "0*" + str(abs(value)) + suffix


def _decimal(value: float, suffix: str = "") -> str:
    text = format(Decimal(repr(float(abs(value)))), "f")  # (`repr`: the shortest spelling that reads back as it)
    whole, _, frac = text.partition(".")
    frac = frac.rstrip("0")
    sign = "-?" if value == 0 else ("-" if value < 0 else "")
    head = "0+" if whole == "0" else "0*" + whole
    return sign + head + (rf"\.{frac}0*" if frac else r"(\.0+)?") + suffix


def _scalar(lang: str, kind: str, value: Any, quoted_str: bool) -> str | None:
    """A pattern (unanchored) for one converted value of a scalar declared type; None when there is none."""
    if isinstance(value, bool):
        return ("true" if value else "false") if kind in ("boolean", "Boolean") else None
    if isinstance(value, int) and kind in ("byte", "short", "integer"):
        return _integer(value)
    if isinstance(value, int) and kind in ("long", "Bigint"):
        return _integer(value, "[lL]" if kind == "long" else "n")
    if isinstance(value, (int, float)) and kind in ("float", "double"):
        return _decimal(value, "[fF]" if (lang, kind) == ("java", "float") else "")
    if isinstance(value, str) and CONVERTED[lang].get(kind) is str:
        inner = _loose(value)
        return rf"(?:{inner}|\"{inner}\"|'{inner}')" if quoted_str else inner
    return None


def _items(lang: str, kind: str, nested: str, items: list[Any]) -> str | None:
    """A pattern for a list answer of an `Array` / `ArrayList` / `array` parameter whose items are `nested`."""
    if lang == "java" and kind == "ArrayList" and nested in ("String", "char"):
        parts = [rf"[\"']{_loose(i)}[\"']" if isinstance(i, str) else None for i in items]  # (`element_str[1:-1]`)
    else:
        # `Array` items convert by their type, a `String` one kept as written; a JavaScript item in quotes loses them.
        parts = [_scalar(lang, nested, i, quoted_str=lang == "javascript") for i in items]
    if any(p is None for p in parts):
        return None
    body = r"\s*,\s*".join(parts)
    if lang == "javascript":
        return rf"\A\s*(?:\[\s*{body}\s*\]|new\s+Array\(\s*{body}\s*\))"
    if kind == "Array":
        return rf"new\s+\w+\[\]\s*\{{\s*{body}\s*\}}"
    if not items:
        return r"new\s+ArrayList<\w*>\(\)"
    return rf"new\s+ArrayList<\w*>\(Arrays\.asList\(\s*{body}\s*\)\)"


def source_value(option: Any, prop: dict[str, Any], lang: str, variable: bool) -> Any:
    """One accepted value of a Java / JavaScript parameter (declared as `prop`) → what the sent string must be.

    `variable`: the answers are of another type than the declared one (upstream's `is_variable`), so a string
    answer is met by that string exactly. Returns None for an answer no sent string meets (a number accepted for
    a `String` / `any` parameter), the option unchanged where no pattern applies (see the module docstring).
    """
    kind = prop.get("type") if isinstance(prop.get("type"), str) else ""
    if variable and isinstance(option, str):
        return option
    if isinstance(option, list) and CONVERTED[lang].get(kind) is list:
        nested = (prop.get("items") or {}).get("type") if isinstance(prop.get("items"), dict) else None
        pattern = _items(lang, kind, nested or "any", option) if isinstance(nested, str) else None
        return {"$regex": pattern} if pattern else option
    if not isinstance(option, str) and CONVERTED[lang].get(kind) is str:
        return None  # upstream compares the string sent (`str(value)`) with this non-string answer: never equal
    if isinstance(option, str) and CONVERTED[lang].get(kind) is str:
        if lang == "javascript" and kind == "String":
            return {"$any_of": [{"$loose": option}, {"$regex": rf"\A(?:\"{_loose(option)}\"|'{_loose(option)}')\Z"}]}
        return {"$loose": option}
    pattern = _scalar(lang, kind, option, quoted_str=False)
    return {"$regex": rf"\A{pattern}\Z"} if pattern else option
