"""JavaScript's string rules that promptfoo's output assertions rely on, done in Python as Node does them.

- `utf16_units(text)`: the string as JavaScript holds it, one UTF-16 code unit per character (an emoji is two
  surrogates), so an edit distance or a regular expression counts and matches what JavaScript counts and matches.
- `levenshtein(a, b)`: the edit distance of `fastest-levenshtein`'s `distance`, over UTF-16 code units.
- `parse_comma_separated(text)`: promptfoo's `parseCommaSeparatedValues` (`src/util/parseCommaSeparatedValues.ts`).
- `js_regex(pattern)`: a pattern of JavaScript's `new RegExp(pattern)` (no flags, not `u` mode) rewritten for the
  `regex` library so that it matches where JavaScript matches, or `JsRegexError` for a pattern it cannot carry over.
"""

from __future__ import annotations

import re

from tracejudge.stages.score.promptfoo_steps import _JS_SPACE

__all__ = ["JsRegexError", "js_regex", "levenshtein", "parse_comma_separated", "utf16_units"]


def utf16_units(text: str) -> str:
    """`text` with each character above U+FFFF written as its two UTF-16 surrogates (JavaScript's code units)."""
    if text.isascii() or all(ord(c) <= 0xFFFF for c in text):
        return text
    data = text.encode("utf-16-le", "surrogatepass")
    return "".join(chr(int.from_bytes(data[i:i + 2], "little")) for i in range(0, len(data), 2))


def levenshtein(a: str, b: str) -> int:
    """The Levenshtein distance of `a` and `b` counted in UTF-16 code units, as `fastest-levenshtein` counts them.

    Myers' bit-parallel algorithm (Hyyrö's form) on Python's integers: one pass over `b`, each step a few operations
    on an integer as wide as `a`, so a long output costs milliseconds, not the seconds a table would."""
    a, b = utf16_units(a), utf16_units(b)
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    m = len(b)
    peq: dict[str, int] = {}
    for i, c in enumerate(b):
        peq[c] = peq.get(c, 0) | (1 << i)
    mask, last = (1 << m) - 1, 1 << (m - 1)
    pv, mv, score = mask, 0, m
    for c in a:
        eq = peq.get(c, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | (~(xh | pv) & mask)
        mh = pv & xh
        if ph & last:
            score += 1
        elif mh & last:
            score -= 1
        ph = ((ph << 1) | 1) & mask
        mh = (mh << 1) & mask
        pv = mh | (~(xv | ph) & mask)
        mv = ph & xv
    return score


def parse_comma_separated(text: str) -> list[str]:
    """promptfoo's `parseCommaSeparatedValues`: fields split at commas, each trimmed (JavaScript's `trim`); a field in
    double quotes keeps its commas, `\\"`, `\\\\` and `""` inside it are one character; repeated commas give no empty
    field. Raises `ValueError` with promptfoo's message for an unterminated quote or text after a closing quote."""
    out: list[str] = []
    i, n = 0, len(text)

    def skip_space(i: int) -> int:
        while i < n and text[i] in _JS_SPACE:  # (JavaScript's `/\s/`: the characters `trim` removes)
            i += 1
        return i

    while i < n:
        while i < n:
            i = skip_space(i)
            if i < n and text[i] == ",":
                i += 1
            else:
                break
        if i >= n:
            break
        if text[i] == '"':
            i += 1
            field: list[str] = []
            while i < n:
                if text[i] == "\\" and i + 1 < n and text[i + 1] in '"\\':
                    field.append(text[i + 1])
                    i += 2
                elif text[i] == '"' and i + 1 < n and text[i + 1] == '"':
                    field.append('"')
                    i += 2
                elif text[i] == '"':
                    break
                else:
                    field.append(text[i])
                    i += 1
            else:
                raise ValueError("Unterminated quoted field in contains assertion value")
            out.append("".join(field))
            i = skip_space(i + 1)
            if i < n and text[i] != ",":
                raise ValueError("Expected comma after quoted field in contains assertion value")
        else:
            start = i
            while i < n and text[i] != ",":
                i += 1
            out.append(text[start:i].strip(_JS_SPACE))
    return out


class JsRegexError(ValueError):
    """A JavaScript pattern that cannot be carried over to Python with the same meaning (the message says why)."""


_WS = "".join(f"\\u{ord(c):04x}" for c in _JS_SPACE)  # JavaScript's `\s`: WhiteSpace and LineTerminator
_CLASS_ESCAPES = {"d": "0-9", "w": "A-Za-z0-9_", "s": _WS, "D": r"\D", "W": r"\W"}  # (\D, \W: ASCII under regex.ASCII)
_OUTSIDE = {"d": "[0-9]", "D": "[^0-9]", "w": "[A-Za-z0-9_]", "W": "[^A-Za-z0-9_]", "s": f"[{_WS}]", "S": f"[^{_WS}]",
            "b": r"\b", "B": r"\B", "n": r"\n", "r": r"\r", "t": r"\t", "v": r"\v", "f": r"\f"}
_QUANTIFIER = re.compile(r"\{(\d+)(,(\d*))?\}")
_HEX2, _HEX4 = re.compile(r"[0-9A-Fa-f]{2}"), re.compile(r"[0-9A-Fa-f]{4}")
_GROUP_OPENERS = ("(?:", "(?=", "(?!", "(?<=", "(?<!")
_GROUP_NAME = re.compile(r"\(\?<([A-Za-z_$][A-Za-z0-9_$]*)>")


def _literal(ch: str) -> str:
    """`ch` as a literal in a Python pattern (inside or outside a class)."""
    return "\\" + ch if ch in "\\^$.|?*+()[]{}-&~#/ \t\n\r\x0b\x0c" else ch


def _escape(p: str, i: int, in_class: bool, named: bool) -> tuple[str, int]:
    """The escape at `p[i]` (just after a backslash): its Python text and the index after it."""
    if i >= len(p):
        raise JsRegexError("\\ at end of pattern")
    c = p[i]
    if c == "0":
        if i + 1 < len(p) and p[i + 1].isdigit():
            raise JsRegexError(f"legacy octal escape \\0{p[i + 1]}: write \\x.. or \\u.... for the character meant")
        return r"\x00", i + 1
    if c in "123456789":
        raise JsRegexError(f"\\{c}: back references are not carried over (JavaScript matches a group that did not take "
                           "part as empty, Python fails there)")
    if c == "c":
        if i + 1 < len(p) and p[i + 1].isascii() and p[i + 1].isalpha():
            return f"\\x{ord(p[i + 1]) % 32:02x}", i + 2
        if in_class:
            raise JsRegexError("\\c without a letter inside a character class")
        return r"\\c", i + 1  # (JavaScript reads the backslash as itself there)
    if c == "x":
        return (rf"\x{p[i + 1:i + 3]}", i + 3) if _HEX2.fullmatch(p, i + 1, i + 3) else ("x", i + 1)
    if c == "u":
        return (rf"\u{p[i + 1:i + 5]}", i + 5) if _HEX4.fullmatch(p, i + 1, i + 5) else ("u", i + 1)
    if c == "k" and named:
        raise JsRegexError("\\k<name>: back references are not carried over")
    if in_class:
        if c == "b":
            return r"\x08", i + 1
        if c in _CLASS_ESCAPES:
            return _CLASS_ESCAPES[c], i + 1
        if c == "S":
            raise JsRegexError("\\S inside a character class (other than [\\s\\S]) is not carried over")
        if c in "nrtvf":
            return _OUTSIDE[c], i + 1
    elif c in _OUTSIDE:
        return _OUTSIDE[c], i + 1
    return _literal(c), i + 1  # an identity escape: the character itself (`\e` is `e`, `\A` is `A`, `\/` is `/`)


def _char_class(p: str, i: int, named: bool) -> tuple[str, int]:
    """The class opening at `p[i]` (`[`): its Python text and the index after its `]`."""
    end_any = p.startswith(("[\\s\\S]", "[\\S\\s]"), i)
    if end_any:
        return r"[\s\S]", i + 6  # (under regex.ASCII \s\S is every character as well)
    negated = p.startswith("[^", i)
    j = i + (2 if negated else 1)
    if j < len(p) and p[j] == "]":  # JavaScript's `[]` matches nothing, `[^]` any character
        return (r"[\s\S]" if negated else "(?!)"), j + 1
    parts = ["[^" if negated else "["]
    while True:
        if j >= len(p):
            raise JsRegexError("missing /: unterminated character class")
        c = p[j]
        if c == "]":
            return "".join(parts) + "]", j + 1
        if c == "\\":
            text, j = _escape(p, j + 1, True, named)
            parts.append(text)
        else:
            parts.append(c if c == "-" else _literal(c))
            j += 1


def js_regex(pattern: str) -> str:
    """`pattern`, as JavaScript's `new RegExp(pattern)` reads it (no flags), rewritten for the `regex` library
    compiled with `regex.ASCII` and matched against `utf16_units(text)`.

    What changes: `.` excludes the four line terminators, `$` is the end of the text only (`\\Z`: Python's `$` also
    matches before a final newline), `\\d`/`\\w`/`\\b` are ASCII and `\\s` is JavaScript's set, `{` that opens no
    quantifier is a literal (Python reads `{,3}` as one), an identity escape (`\\e`, `\\A`) is its letter,
    `(?<name>…)` is `(?P<name>…)`, characters above U+FFFF are surrogate pairs. Raises `JsRegexError` for what has
    no faithful Python form: back references (`\\1`, `\\k<n>`), legacy octal escapes, `(?` groups JavaScript does not
    have (inline flags, `(?P<`, atomic groups: errors in JavaScript), possessive or repeated quantifiers.
    """
    p = utf16_units(pattern)
    named = _GROUP_NAME.search(p) is not None
    out: list[str] = []
    i, quantified = 0, False  # quantified: the last token was a quantifier (a second one is JavaScript's error)
    while i < len(p):
        c = p[i]
        is_quant = False
        if c == "\\":
            text, i = _escape(p, i + 1, False, named)
        elif c == "[":
            text, i = _char_class(p, i, named)
        elif c == "(":
            if p.startswith("(?", i):
                m = _GROUP_NAME.match(p, i)
                if m:
                    text, i = f"(?P<{m.group(1)}>", m.end()
                else:
                    opener = next((o for o in _GROUP_OPENERS if p.startswith(o, i)), None)
                    if opener is None:
                        raise JsRegexError(f"invalid group {p[i:i + 4]!r}…: JavaScript has no such group "
                                           "(inline flags, (?P<name>, atomic groups and comments are Python's)")
                    text, i = opener, i + len(opener)
            else:
                text, i = "(", i + 1
        elif c == ".":
            text, i = r"[^\n\r\u2028\u2029]", i + 1
        elif c == "$":
            text, i = r"\Z", i + 1
        elif c in "*+?":
            if quantified and c == "?":
                text, i = "?", i + 1  # a lazy quantifier
            elif quantified:
                raise JsRegexError(f"nothing to repeat at {c!r} (a possessive or doubled quantifier)")
            else:
                text, i, is_quant = c, i + 1, True
        elif c == "{":
            m = _QUANTIFIER.match(p, i)
            if m and quantified:
                raise JsRegexError(f"nothing to repeat at {m.group(0)!r}")
            text, i, is_quant = (m.group(0), m.end(), True) if m else (r"\{", i + 1, False)
        else:
            text, i = (c if c in "|)^" else _literal(c)), i + 1
        quantified = is_quant
        out.append(text)
    return "".join(out)

