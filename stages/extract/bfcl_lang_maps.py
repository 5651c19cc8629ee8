"""Spellings BFCL's Java / JavaScript converters read as one value: numbers, `HashMap` and JavaScript `dict` source.

Used by `bfcl_lang`. Every function returns a regular expression (for the `regex` library, as `$regex` matchers
run) met by the texts that upstream's `java_type_converter` / `js_type_converter` (ShishirPatil/gorilla,
`berkeley-function-call-leaderboard/bfcl_eval/eval_checker/ast_eval/type_convertor/`) turn into a value its
`ast_checker` then accepts, or None where no text does.

Maps. Upstream reads a `HashMap` argument with `parse_hashmap`: the first `new HashMap<…>() {{` found anywhere in
the text, its `put("key", value)` calls up to the first `}`, each value read by `parse_java_value` (`true`,
`"text"`, `5L`, `5f`, then Python's `int()` / `float()`, else the bare text). A JavaScript `dict` is read by
`parse_js_collection`: the text must start with `{`; the pairs up to the first `}` are split where a comma is
followed by another `key:`, keys lose quotes, values lose their outer quotes and are read by `parse_js_value`
(`true`, a number, else the text) or, in brackets, as an array of such items. `dict_checker` then wants the
answer's keys exactly (one of its key sets, when several are accepted), each with an accepted value: a string
compared as `standardize_string` compares it, anything else with Python's `==` (so `1` and `1.0` meet `true`,
a list item by item, exactly).

Not reproduced (each accepted upstream, refused here): a JavaScript key given twice (Python's dict keeps the last
value; a Java `put` given twice is read so), text between `put` calls holding another `put("`, Python's `_` digit
separators, non-ASCII digits, and float spellings that only round to the value (`20.500000000000000001`);
exponents stay within ±`_EXP` of the plain spelling.
"""

from __future__ import annotations

import itertools
import re
from decimal import Decimal
from typing import Any

from tracejudge.stages.score.value_match import standardize

__all__ = ["NEVER", "java_map", "js_object", "loose", "number"]

NEVER = {"$regex": r"(?!)no text converts to an accepted value"}
"""A matcher nothing meets: `(?!)` fails at once; the words after it are for a reader of the case."""

_SEP = r"[ ,./\-_*^]*"  # what upstream's `standardize_string` drops, anywhere in the sent text
_W = r"[^\S\n]*"  # spaces within a line: upstream reads an object's pairs and a `put` value with `.`, no newline
_EXP = 20  # exponent spellings accepted: within this many powers of ten (`5e1`, `0.05e3`, `500e-1` for 50)
# Python's int() / float() literals and Java's suffixed ones, for "this bare text is no string" (`parse_*_value`).
_ANY_NUMBER = (r"(?:[+-]?(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d[\d_]*)?[fFlL]?"
               r"|[+-]?(?i:inf|infinity|nan)|true|false)")


def loose(text: str) -> str:
    """A pattern met by exactly the texts whose `standardize` equals `text`'s (case-insensitive, `'` for `"`)."""
    chars = ['["\']' if c == '"' else re.escape(c) for c in standardize(text)]
    return "(?i:" + _SEP + _SEP.join(chars) + _SEP + ")"  # (scoped: `true`, a digit string stay case-sensitive)


def _exponent(e: int) -> str:
    if e == 0:
        return r"[eE][+-]?0+"
    return r"[eE]" + (r"\+?0*" if e > 0 else "-0*") + str(abs(e))


def number(value: int | float, form: str) -> str:
    """A pattern (unanchored) for the spellings of `value` that one of upstream's number readings accepts.

    `form`: `"java_float"` (`^-?\\d+(\\.\\d+)?([eE][+-]?\\d+)?[fF]$`), `"java_double"` (the same without `f`),
    `"js_float"` (`^-?\\d+(\\.\\d+)?$`: no exponent) or `"python"` (`int()` / `float()`: a `+` sign, `5.`, `.5`).
    The value is compared as upstream does, with `==` after `float()`: `4`, `4.0`, `0.4e1`, `40E-1` for 4.0.
    """
    python = form == "python"
    exact = Decimal(int(value)) if isinstance(value, int) else Decimal(repr(float(value)))
    sign = "[+-]?" if python else "-?"  # (-0 is 0)
    if exact == 0:
        body = r"(?:0+(?:\.0*)?|\.0+)" if python else r"0+(?:\.0+)?"
        tail = r"(?:[eE][+-]?\d+)?" if form != "js_float" else ""
        return sign + body + tail + ("[fF]" if form == "java_float" else "")
    sign = "-" if exact < 0 else r"\+?" if python else ""
    spans = range(-_EXP, _EXP + 1) if form != "js_float" else range(0, 1)
    options = []
    for e in spans:
        text = format(abs(exact).scaleb(-e), "f")  # the mantissa when the exponent is e
        whole, _, frac = text.partition(".")
        frac = frac.rstrip("0")
        if whole == "0":
            head = "0*" if python else "0+"
            point = rf"\.{frac}0*"  # (a mantissa below 1 has a fraction: the value is not 0)
        else:
            head = "0*" + whole
            point = rf"\.{frac}0*" if frac else (r"(?:\.0*)?" if python else r"(?:\.0+)?")
        options.append(head + point + (_exponent(e) if e else f"(?:{_exponent(0)})?" if form != "js_float" else ""))
    return sign + "(?:" + "|".join(options) + ")" + ("[fF]" if form == "java_float" else "")


def _untyped(value: Any, lang: str, end: str) -> str | None:
    """A value inside a `HashMap` / `dict`, read without a declared type (`parse_java_value` / `parse_js_value`).

    `end`: what follows the value's text, so that a bare string is not one Python reads as a number.
    """
    if isinstance(value, bool) or (isinstance(value, (int, float)) and value in (0, 1)):
        # Python's `==` makes `True == 1 == 1.0`: an accepted `true` is met by a `1`, an accepted 1 by `true`.
        words = ["true" if value else "false"] + [number(int(value), "python")]
    elif isinstance(value, (int, float)):
        words = [number(value, "python")]
    elif isinstance(value, str):
        if lang == "java" and re.search(r"[)}\n]", value):
            return None  # the value's text ends at the first `)` and the map's at the first `}`: never read whole
        if lang == "javascript" and re.search(r"[:}\n]", value):
            return None  # (`:` would start another pair, `}` ends the object)
        bare = rf"(?!{_ANY_NUMBER}{end}){loose(value)}"  # a bare word: a string unless it reads as a number
        return rf'(?:"{loose(value)}"|{bare})' if lang == "java" else bare
    else:
        return None
    if lang == "java":
        # `5L` and `5f` / `5.0f` are read before `int()` / `float()`; only an integral value has an `L` spelling
        whole = int(value) if float(value).is_integer() else None
        long = None if whole is None else "-?0+[lL]" if whole == 0 else ("-" if whole < 0 else "") + f"0*{abs(whole)}[lL]"
        words += [number(value, "java_float")] + ([long] if long else [])
    return "(?:" + "|".join(words) + ")"


def _js_item(value: Any) -> str | None:
    """One item of an array inside a JavaScript `dict` (`parse_js_value` of the item, compared exactly)."""
    if isinstance(value, str):
        if re.search(r"[,\]:}\n]", value) or value != value.strip():
            return None  # the items are split at commas, end at the first `]`, and each is stripped
        plain = re.escape(value)
        bare = f"|(?!{_ANY_NUMBER}\\s*[,\\]]){plain}" if not re.match(r"['\"]", value) else ""
        return rf"{_W}(?:\"{plain}\"|'{plain}'{bare}){_W}"
    pattern = _untyped(value, "javascript", r"\s*[,\]]")
    return None if pattern is None else rf"{_W}{pattern}{_W}"


def _orders(answer: dict[str, list[Any]]) -> list[tuple[str, ...]]:
    """Each order of each key set `dict_checker` accepts: all keys, less any whose accepted values hold `""`."""
    must = [k for k, v in answer.items() if "" not in v]
    may = [k for k, v in answer.items() if "" in v]
    subsets = itertools.chain.from_iterable(itertools.combinations(may, n) for n in range(len(may) + 1))
    return [order for extra in subsets for order in itertools.permutations(must + list(extra))]


def _values(options: list[Any], build: Any) -> str | None:
    parts = [p for p in (build(o) for o in options if o != "") if p is not None]
    return "(?:" + "|".join(parts) + ")" if parts else None


def java_map(answer: dict[str, list[Any]]) -> str | None:
    """A pattern for the `HashMap` source texts `parse_hashmap` reads as a map `dict_checker` accepts as `answer`."""
    # Upstream's `re.search` commits to its first match: the atomic group keeps that start, and the lookahead is the
    # rest of upstream's pattern (some `}` further on), so a later `new HashMap` cannot stand in for a wrong first one.
    start = r"\A(?>(?s:.*?)new\s+HashMap<(?s:.*?)>\s*\(\)\s*\{\s*\{?\s*(?=[^}]*\}))"
    between = r"(?:(?!put\(\")[^}])*+"  # text between the `put` calls, which `re.findall` skips
    puts = {}
    for key, options in answer.items():
        if '",' in key or re.search(r"[\n}]", key):
            return None  # upstream's key is the text up to the first `",`, on one line, before the first `}`
        value = _values(options, lambda o: _untyped(o, "java", r"\s*\)"))
        if value is None:
            return None
        puts[key] = rf"put\(\"{re.escape(key)}\",\s*{value}{_W}\)"  # (the value's text is on one line)
    orders = _orders(answer)

    def before(keys: tuple[str, ...]) -> str:
        # Python's dict keeps a key's last `put`: before it, any other `put` of a key still to come, any value
        if not keys:
            return between
        again = "|".join(re.escape(k) for k in keys)
        return rf"(?:(?!put\(\")[^}}]|put\(\"(?:{again})\",\s*[^)\n}}]*\))*"

    bodies = ["".join(before(order[i:]) + puts[k] for i, k in enumerate(order)) + between + r"\}" for order in orders]
    pattern = start + "(?:" + "|".join(bodies) + ")"
    if () in orders:
        # an empty map is accepted: also when no `{` follows `()`, read by upstream's second pattern `new HashMap<…>()`
        empty = r"\A(?!(?s:.*?)new\s+HashMap<(?s:.*?)>\s*\(\)\s*\{(?s:.*?)\})(?s:.*?)new\s+HashMap<.*?>\s*\(\)"
        pattern = f"(?:{pattern}|{empty})"
    return pattern


def js_object(answer: dict[str, list[Any]]) -> str | None:
    """A pattern for the JavaScript object literals `parse_js_collection` reads as a `dict` accepted as `answer`."""
    pairs = {}
    for key, options in answer.items():
        if re.search(r"[:}\n,'\"]", key) or key != key.strip():
            return None  # keys are the text before a `:`, stripped of spaces, then of quotes
        end = rf"{_W}['\"]*{_W}(?:,|\}})"

        def value(o: Any) -> str | None:
            if isinstance(o, list):
                items = [_js_item(i) for i in o]
                if any(i is None for i in items):
                    return None
                return r"\[" + (",".join(items) if items else _W) + r"\]"
            inner = _untyped(o, "javascript", end)
            return None if inner is None else rf"['\"]*{_W}{inner}{_W}['\"]*"  # (quotes are stripped off any value)

        accepted = _values(options, value)
        if accepted is None:
            return None
        pairs[key] = rf"{_W}['\"]*{re.escape(key)}['\"]*{_W}:{_W}{accepted}{_W}"
    # (an empty key set: no `key:` inside, so no pair; the text after the first `}` is never read)
    bodies = [("," + _W).join(pairs[k] for k in order) if order else r"[^}:\n]*" for order in _orders(answer)]
    return r"\A\s*\{(?:" + "|".join(bodies) + r")\}"
