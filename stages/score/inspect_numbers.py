"""inspect-ai's reading of a text as a number, `unicode_number_to_float`, ported for `inspect_text`'s `match(numeric=True)`.

Source: inspect-ai 0.3.285 (MIT) `inspect_ai/scorer/_unicode.py`: Unicode minus and plus signs, vulgar fractions,
superscript exponents, fullwidth and other scripts' decimal digits, locale grouping marks and Chinese numerals, in
inspect's order of attempts. The parity tests (`tests/test_inspect_scorers.py`) run inspect's own function beside this
one on random strings.
"""

from __future__ import annotations

import unicodedata

__all__ = ["unicode_number_to_float"]

_MINUS = {"-", "−", "﹣", "－"}
_PLUS = {"+", "＋", "﹢"}
_DECIMAL_EXTRAS = {"٫", "．"}
_GROUPING = {",", "，", "﹐", "、", "٬", " ", "\u00a0", "\u202f", "\u2009", "\u2007", "\u2008", "'", "’", "ʼ", "＇"}
_CH_DIGITS = {"零": 0, "〇": 0, "○": 0, "一": 1, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
              "壹": 1, "贰": 2, "貳": 2, "叁": 3, "參": 3, "肆": 4, "伍": 5, "陆": 6, "陸": 6, "柒": 7, "捌": 8, "玖": 9,
              "两": 2, "兩": 2, "幺": 1}
_CH_TENS = {"廿": 20, "卅": 30, "卌": 40}
_CH_SMALL = {"十": 10, "拾": 10, "百": 100, "佰": 100, "千": 1000, "仟": 1000}
_CH_LARGE = {"万": 10_000, "萬": 10_000, "亿": 100_000_000, "億": 100_000_000, "兆": 1_000_000_000_000}
_CH_NEG = {"负", "負"}
_CH_POS = {"正"}
_CH_DECIMAL = {"点", "點"}
_CH_ANY = set(_CH_DIGITS) | set(_CH_SMALL) | set(_CH_LARGE) | _CH_DECIMAL | _CH_NEG | _CH_POS | set(_CH_TENS)
_CH_NOT_GENERIC = set(_CH_DIGITS) | set(_CH_SMALL) | set(_CH_LARGE) | set(_CH_TENS) | _CH_DECIMAL
_SUPERSCRIPT_DIGITS = set("⁰¹²³⁴⁵⁶⁷⁸⁹")
_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")


def unicode_number_to_float(s: str) -> float:
    """inspect's `unicode_number_to_float`: a number written with Unicode, as a float.

    Read: leading signs (ASCII, Unicode, fullwidth, Chinese 正/负; minus signs toggle), then a single numeric
    character (`Ⅻ`, `½`), or a base of digits of any script with grouping separators and one decimal mark (the
    rightmost of `.`/`,`; a lone `,` is decimal only before 1 to 3 digits), ASCII `e` notation, at most one vulgar
    fraction at its end (`2½`) or a Chinese numeral (`一百二十三点四五`, units up to 兆), then an optional superscript
    exponent (`-2²` is 4.0: the sign binds to the base). Raises `ValueError` when `s` is none of these.
    """
    text = s.strip()
    if not text:
        raise ValueError("Empty string")
    negative = False
    while text:  # leading signs
        ch = text[0]
        if ch in _MINUS or ch in _CH_NEG:
            negative = not negative
        elif not (ch in _PLUS or ch in _CH_POS):
            break
        text = text[1:].lstrip()
    single = _single_numeric(text)
    if single is not None:
        return -single if negative else single
    base_text, exponent = _split_exponent(text)
    base = _with_fraction(base_text)
    if base is None:
        raise ValueError(f"Could not parse number from {s!r}")
    if negative:
        base = -base
    if exponent is not None:
        try:
            return float(base**exponent)
        except Exception as exc:  # (an overflow, 0 to a negative power: inspect makes each a ValueError)
            raise ValueError(f"Invalid exponent operation for {s!r}: {exc}") from exc
    return float(base)


def _single_numeric(s: str) -> float | None:
    if len(s) == 1:
        try:
            return float(unicodedata.numeric(s))
        except Exception:
            return None
    return None


def _split_exponent(s: str) -> tuple[str, int | None]:
    """`(base, exponent)` of a text ending in superscript digits (perhaps after `⁻`/`⁺`), else `(s stripped, None)`."""
    end = len(s) - 1
    while end >= 0 and (s[end].isspace() or s[end] in _GROUPING):
        end -= 1
    if end < 0:
        return s.strip(), None
    j = end
    while j >= 0 and s[j] in _SUPERSCRIPT_DIGITS:
        j -= 1
    start = j + 1
    if start > end:
        return s.strip(), None
    if j >= 0 and s[j] in "⁻⁺":
        start = j
    base = s[:start].rstrip()
    if not base:  # a lone `²` is a number, not an exponent
        return s.strip(), None
    try:
        return base, int(s[start : end + 1].translate(_SUPERSCRIPT))
    except Exception:
        raise ValueError(f"Invalid exponent in {s!r}") from None


def _fraction_value(ch: str) -> float | None:
    try:
        val = unicodedata.numeric(ch)
    except Exception:
        return None
    return float(val) if 0.0 < val < 1.0 else None


def _with_fraction(s: str) -> float | None:
    """A base number (no sign), perhaps ending in one vulgar fraction (`2½`, `十二⅓`)."""
    if not s:
        return None
    hits = [(i, v) for i, v in ((i, _fraction_value(ch)) for i, ch in enumerate(s)) if v is not None]
    if not hits:
        return _core_number(s)
    if len(hits) > 1:
        raise ValueError(f"Multiple fraction characters in {s!r}")
    idx, fraction = hits[0]
    head, tail = s[:idx].strip(), s[idx + 1 :].strip()
    if tail and any(not (c.isspace() or c in _GROUPING) for c in tail):
        raise ValueError(f"Unexpected characters after fraction in {s!r}")
    if not head:
        return fraction
    whole = _core_number(head)
    if whole is None:
        raise ValueError(f"Invalid base part in {s!r}")
    return whole + fraction


def _core_number(s: str) -> float | None:
    s = s.strip()
    if not s:
        return None
    if any(ch in _CH_ANY for ch in s):
        chinese = _chinese_number(s)
        if chinese is not None:
            return chinese
    generic = _generic_digits(s)
    if generic is not None:
        return generic
    return _single_numeric(s) if len(s) == 1 else None


def _generic_digits(s: str) -> float | None:
    """Digits of any script with grouping separators, one decimal mark and ASCII `e` notation; None otherwise."""
    s = s.strip()
    if not s:
        return None
    dots = [i for i, ch in enumerate(s) if ch == "."]
    commas = [i for i, ch in enumerate(s) if ch == ","]
    decimal: str | None = None
    if dots and commas:
        decimal = "." if dots[-1] > commas[-1] else ","
    elif dots:
        decimal = "."
    elif commas and sum(1 for ch in s[commas[-1] + 1 :] if _ascii_digit(ch) is not None) in (1, 2, 3):
        decimal = ","
    out: list[str] = []
    seen_decimal = seen_exp = False
    i = 0
    while i < len(s):
        ch = s[i]
        if ch in ("e", "E") and not seen_exp:
            if not out:
                return None
            out.append(ch)
            seen_exp = True
            i += 1
            if i < len(s) and (s[i] in _PLUS or s[i] in _MINUS):
                out.append("+" if s[i] in _PLUS else "-")
                i += 1
            continue
        if ch in _DECIMAL_EXTRAS or (decimal and ch == decimal):
            if seen_decimal:
                return None
            out.append(".")
            seen_decimal = True
        elif ch in _GROUPING or ch.isspace() or (decimal and ch in ",." and ch != decimal):
            pass
        elif (digit := _ascii_digit(ch)) is not None:
            out.append(digit)
        else:  # a Chinese numeral (left to the Chinese reader) or any other symbol
            return None
        i += 1
    if not out or all(c in ".eE+-" for c in out):
        return None
    try:
        return float("".join(out))
    except Exception:
        return None


def _ascii_digit(ch: str) -> str | None:
    if "0" <= ch <= "9":
        return ch
    for read in (unicodedata.decimal, unicodedata.digit):
        try:
            return str(read(ch))
        except Exception:
            pass
    return str(_CH_DIGITS[ch]) if ch in _CH_DIGITS else None


def _chinese_number(s: str) -> float | None:
    """A Chinese numeral (no sign): digits alone (`二〇二五`) or with units (`两千零三`), 点/點 before decimals."""
    s = s.strip()
    integer, fraction = s, ""
    for mark in [*_CH_DECIMAL, "．", "."]:
        if mark in s:
            integer, _, fraction = s.partition(mark)
            break
    if not any(ch in _CH_SMALL or ch in _CH_LARGE or ch in _CH_TENS for ch in integer):
        digits = _digits(integer)
        if digits is None:
            return None
        whole = int("".join(digits)) if digits else 0
    else:
        with_units = _chinese_units(integer)
        if with_units is None:
            return None
        whole = with_units
    decimals = _digits(fraction)
    if decimals is None:
        return None
    value, place = 0.0, 0.1
    for d in decimals:  # (digit by digit, as inspect adds them: the float sum is its)
        value += int(d) * place
        place /= 10.0
    return float(whole) + value


def _digits(s: str) -> list[str] | None:
    """The digits of `s` (of any script, Chinese ones included) as ASCII, blanks skipped; None at anything else."""
    out = []
    for ch in s:
        if not ch.isspace():
            d = _ascii_digit(ch)
            if d is None:
                return None
            out.append(d)
    return out


def _chinese_units(s: str) -> int | None:
    total = section = number = 0
    for ch in s:
        if ch.isspace() or ch in ("零", "〇", "○"):
            continue
        if ch in _CH_TENS:
            section += _CH_TENS[ch]
        elif ch in _CH_DIGITS:
            number = _CH_DIGITS[ch]
        elif (d := _ascii_digit(ch)) is not None:
            number = int(d)
        elif ch in _CH_SMALL:
            section += (number or 1) * _CH_SMALL[ch]
            number = 0
        elif ch in _CH_LARGE:
            total += (section + number) * _CH_LARGE[ch]
            section = number = 0
        else:
            return None
    return total + section + number


# --- inspect_ai/scorer/_classification.py: exact(), f1() --------------------------------------------------------------
