"""What a line of trace text reads as, for the fence's neutralisers (`fence_guard`): `skeleton` and `mark_lookalikes`.

A judge reads `T\\u200dC1:` (a zero-width joiner inside), `TC\\u00ad1:` (a soft hyphen), `ＴＣ１:` (fullwidth),
`𝐓𝐂𝟏:` (mathematical bold), `TC₁:` (a subscript digit) or `ТС1:` (Cyrillic Т and С) as `TC1:`, and `Ｓｔｅｐ ２:` or
`Stеp 2:` (a Cyrillic е) as `Step 2:`. `skeleton` is a line as such a reader takes it, in plain ASCII where it can be:

- characters shown as nothing are dropped (Unicode's default-ignorable code points and format characters: zero-width
  spaces and joiners, soft hyphens, word joiners, invisible separators, bidirectional controls, variation selectors,
  Hangul fillers, tags; `regex`'s `\\p{DI}` and `\\p{Cf}`);
- compatibility forms are made plain (NFKC, `unicodedata`: fullwidth letters, digits and signs, mathematical letters,
  ligatures, sub- and superscript and circled digits, no-break and ideographic spaces);
- letters of other scripts that look like Latin ones are made those (`_LOOKALIKE`, a small explicit table: the
  Cyrillic, Greek, Armenian, Cherokee and Lisu capitals and small letters that look like A–Z and a–z; no
  confusables library is installed), and so are colon-like signs and rare dashes (the common dashes and curly quotes
  are in `fence_guard`'s patterns, so that prose holding them is not read twice);
- combining marks left over are dropped (`T\\u0336C1`, a struck-through T), and decimal digits of any script are made
  ASCII digits (`TC١` is `TC1`).

`mark_lookalikes` checks only lines that hold a character `skeleton` changes (the skeleton of any other line is the
line itself, which the neutralisers' own patterns have checked already): ASCII text costs one `str.isascii`, other text
one scan for such a character.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from typing import Any

__all__ = ["mark_lookalikes", "skeleton"]

# Letters that look like Latin ones (Unicode's confusables for the letters, as a reader sees them), and signs that look
# like a colon, a dash or a quote. NFKC has already made fullwidth and mathematical forms plain, so they are not here.
_LOOKALIKE = str.maketrans({
    **dict(zip("АВЕЅІЈКМНОРСТХУҮԚԜӀһԁ", "ABESIJKMHOPCTXYYQWIhd")),  # Cyrillic capitals (and һ, ԁ)
    **dict(zip("аеіјоорсуүхѕԛԝӏ", "aeijoopcyyxsqwl")),  # Cyrillic small letters
    **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧϹϺ", "ABEZHIKMNOPTYXCM")),  # Greek capitals
    **dict(zip("αικνορυχϲϳ", "aikvopuxcj")),  # Greek small letters
    **dict(zip("ՕՍօսհոզ", "OUoshnq")),  # Armenian
    **dict(zip("ᎪᏴᏟᎬᎻᏆᎫᏦᎷᏢᏚᎢᏔᏙᏃ", "ABCEHIJKMPSTWVZ")),  # Cherokee
    **dict(zip("ꓐꓑꓓꓔꓖꓗꓙꓚꓜꓝꓟꓠꓡꓢꓣꓦꓧꓪꓫꓬꓮꓰꓲꓳꓴ", "BPDTGKJCZFMNLSRVHWXYAEIOU")),  # Lisu
    **dict(zip("ıȷɑɡɩɪʟ", "ijagiIL")),  # Latin letters without a dot, or another shape of one
    "\u2800": " ",  # (a braille pattern without dots: shown as a space, and not one NFKC knows)
    **dict.fromkeys("∶ːˑ˸꞉׃܃܄᛬⁚։ꓽ", ":"),  # colon-like signs NFKC leaves as they are
    **dict.fromkeys("⁃⸺⸻﹘", "-"),  # rare dash-like signs (the common ones, `‐–—―−`, and curly quotes are in the patterns)
})
_ASCII_DIGITS = "0123456789"


# (What is made Latin in a line written in Cyrillic, Greek, … (`skeleton`): the signs, and Latin letters of another
# shape; that script's own letters are read as written.)
_SIGNS = {k: v for k, v in _LOOKALIKE.items() if k < 0x370 or not chr(k).isalpha()}
_SCRIPTS = ("Cyrillic", "Greek", "Armenian", "Cherokee", "Lisu")


@lru_cache(maxsize=1)
def _patterns() -> tuple[Any, Any, Any, Any, Any]:
    import regex  # here: only text with a character outside ASCII needs it (its import costs a few milliseconds, once)

    lookalikes = "".join(f"\\U{k:08x}" for k in sorted(_LOOKALIKE))
    # (A character `skeleton` changes: one shown as nothing, one NFKC changes (or may, with what follows), a combining
    # mark, a digit outside ASCII, a lookalike. A line without one is its own skeleton.)
    # (Intersected with the characters outside ASCII, which `regex` checks first: a scan of mostly ASCII text costs
    # about 1.5 ns a character, a tenth of a scan for the properties alone.)
    changed = regex.compile(rf"(?V1)[[^\x00-\x7f]&&[\p{{Default_Ignorable_Code_Point}}\p{{Cf}}\p{{Mn}}\p{{Me}}\p{{NFKC_QC=N}}"
                            rf"\p{{NFKC_QC=M}}[\p{{Nd}}--[0-9]]{lookalikes}]]")
    # (A letter of a script with lookalikes that looks like no Latin one: `з`, `θ`. A line holding one is written in
    # that script, and its `ТО1:` or `ΑΒ1:` is read as written.)
    scripts = "".join(f"\\p{{sc={name}}}" for name in _SCRIPTS)
    native = regex.compile(rf"(?V1)[[{scripts}]&&\p{{L}}--[{lookalikes}]]")
    return (regex.compile(r"[\p{Default_Ignorable_Code_Point}\p{Cf}]+"), regex.compile(r"[\p{Mn}\p{Me}]+"),
            regex.compile(r"(?![0-9])\p{Nd}"), changed, native)


def skeleton(line: str) -> str:
    """`line` as a reader takes it (module doc): invisible characters dropped, NFKC, lookalike letters and signs made
    Latin (ASCII) ones, combining marks dropped, digits made ASCII. An ASCII line is its own skeleton; in a line
    written in Cyrillic, Greek or another script with lookalikes (one holding a letter of it that looks like no Latin
    letter: `ТО1: замена масла`) that script's letters are read as written."""
    if line.isascii():
        return line
    invisible, marks, digits, _, native = _patterns()
    text = unicodedata.normalize("NFKC", invisible.sub("", line))
    text = text.translate(_LOOKALIKE if native.search(text) is None else _SIGNS)
    if text.isascii():
        return text
    text = marks.sub("", text)
    return digits.sub(lambda m: _ASCII_DIGITS[unicodedata.decimal(m.group())], text)


_BREAKS = re.compile(r"(\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029])")  # (`fence_guard`'s line breaks, kept by `split`)


@lru_cache(maxsize=64)
def _line_pattern(source: str) -> Any:
    import regex  # (its partial matches: `mark_lookalikes`)

    return regex.compile(source)


def _first_changed(text: str, pos: int = 0) -> int:
    """Where the first character of `text` from `pos` on that `skeleton` changes is, or -1."""
    found = _patterns()[3].search(text, pos)
    return -1 if found is None else found.start()


def mark_lookalikes(text: str, line_pattern: str, first: bool = True, accept: Callable[[Any], bool] | None = None) -> str:
    """`text` with `[data] ` put after the leading spaces and tabs of each line whose `skeleton` differs from it and
    matches the regular expression `line_pattern` at its start (its first line too unless `first` is false) and, when
    `accept` is given, whose match it accepts (`fence_labels`: an id the prompt asks).

    `line_pattern` is one of the neutralisers' patterns for one line (it starts at the line's start and ends a line
    at its end); a line it matched as written was marked already, so its skeleton starts `[data] ` and matches no more.
    Text with every character in ASCII is returned as it is at once, and so is text with no character `skeleton`
    changes (accented letters, curly quotes, dashes, CJK text) after one scan. A line is skeletonised only when what
    comes before the first character it changes could still start a match (a partial match of `regex`): in a line
    such as `The fare is 120 € …` the skeleton keeps `The fare is 120 `, and no such line starts so.
    """
    if text.isascii() or (at := _first_changed(text)) < 0:
        return text
    pattern = _line_pattern(line_pattern)
    if any(c in text for c in "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"):
        parts = _BREAKS.split(text)  # (lines at even places, each break after its line)
        for i in range(0 if first else 2, len(parts), 2):
            if (found := _first_changed(parts[i])) >= 0:
                parts[i] = _marked(parts[i], found, pattern, accept)
        return "".join(parts)
    out, done = [], 0
    while at >= 0:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end < 0 else end
        if first or start:
            line = _marked(text[start:end], at - start, pattern, accept)
            if len(line) != end - start:
                out += [text[done:start], line]
                done = end
        at = _first_changed(text, end + 1) if end < len(text) else -1
    return "".join(out) + text[done:] if out else text


def _marked(line: str, at: int, pattern: Any, accept: Callable[[Any], bool] | None = None) -> str:
    """`line` marked when its skeleton (which differs from it at `at` first) matches `pattern`."""
    # (The character before the first one changed may change too: NFKC composes `e` and U+0301 into `é`.)
    if at > 1 and pattern.match(line, 0, at - 1, partial=True) is None:
        return line
    if not (found := pattern.match(skeleton(line))) or (accept is not None and not accept(found)):
        return line
    indent = len(line) - len(line.lstrip(" \t"))
    return f"{line[:indent]}[data] {line[indent:]}"
