"""inspect-ai's text normalisation and number reading, ported so that the `inspect_scorers` metrics decide as inspect does.

Source: inspect-ai 0.3.285 (MIT), read function by function:

- `inspect_ai/scorer/_common.py`: `match_str` and the number helpers of `match(numeric=True)`
  (`_parse_number`, `normalize_number`, `first_number_normalized`, `all_numbers_normalized`);
- `inspect_ai/_util/text.py`: `strip_punctuation`, `strip_numeric_punctuation`, `is_finite_number`;
- `inspect_ai/scorer/_unicode.py`: `unicode_number_to_float` (Unicode minus signs, vulgar fractions,
  superscript exponents, fullwidth and other scripts' digits, locale grouping, Chinese numerals);
- `inspect_ai/scorer/_classification.py`: `_normalize` and `max_exact_score` / `max_f1_score` (`exact`, `f1`);
- `inspect_ai/scorer/_pattern.py`: `match_first`, `match_all_groups`; `inspect_ai/_util/pattern.py`: the
  `ANSWER:` patterns of `answer()`.

The functions keep inspect's steps and order (the parity tests run inspect's own functions beside these on
random inputs); only names and layout are tracejudge's. inspect-ai itself is not imported: it is an optional
extra, used by the tests alone.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Literal

__all__ = [
    "ANSWER_PATTERNS",
    "Location",
    "exact_hit",
    "f1_of",
    "is_finite_number",
    "is_numeric_target",
    "max_f1_score",
    "match_all_groups",
    "match_first",
    "match_str",
    "normalize",
    "normalize_number",
    "strip_numeric_punctuation",
    "strip_punctuation",
    "unicode_number_to_float",
    "word_counts",
]

Location = Literal["begin", "end", "any", "exact"]

# `inspect_ai/_util/pattern.py`: each finds the LAST `ANSWER:` of the output (LETTER and WORD by a lookahead
# refusing a later one, LINE by the `\Z` anchor); group 1 is the answer.
ANSWER_PATTERNS = {
    "letter": r"(?is)ANSWER\s*:\s*([A-Za-z])(?:[^\w]|\n|$)(?!.*ANSWER\s*:)",
    "word": r"(?is)ANSWER\s*:\s*(\S+?)(?=[.,;:!?]?\s*(?:\n|$))(?!.*ANSWER\s*:)",
    "line": r"(?i)ANSWER\s*:\s*([^\n]+)\s*\Z",
}

# --- inspect_ai/_util/text.py ------------------------------------------------------------------------------------------

_PUNCTUATION = string.whitespace + string.punctuation
_LATEX_ESCAPED = re.compile(r"\\([$,£,€*_])")
_NUMERIC_MARKS = re.compile(r"[$,£,€,*,_]")  # (inspect's class, its repeated commas kept)
_ENDING_DOT = re.compile(r"\.(?=\s|$|\D)")


def strip_punctuation(s: str) -> str:
    """`s` without leading and trailing ASCII whitespace and punctuation (`string.punctuation`)."""
    return s.strip(_PUNCTUATION)


def strip_numeric_punctuation(s: str) -> str:
    """`s` with LaTeX escapes `\\$` `\\£` `\\€` `\\*` `\\_` `\\,` undone, then `$ £ € , * _` removed, then every `.` not
    followed by a digit removed (`"$1,234.50."` → `"1234.50"`). `%` stays: `60%` is not the number 60."""
    return _ENDING_DOT.sub("", _NUMERIC_MARKS.sub("", _LATEX_ESCAPED.sub(r"\1", s)))


def is_finite_number(s: str) -> bool:
    """Does Python's `float` read `s` as a finite number (`" 2 "`, `"1e3"`, `"1_0"`: yes; `"nan"`, `"½"`: no)?"""
    try:
        return math.isfinite(float(s))
    except ValueError:
        return False


# --- inspect_ai/scorer/_common.py: match() -----------------------------------------------------------------------------


def match_str(value: str, target: str, location: Location = "end", ignore_case: bool = True,
              numeric: bool = False) -> tuple[str, bool]:
    """inspect's `match_str` with `ignore_punctuation=True` (what `match()` passes): `(answer, matched)`.

    Both texts are stripped of whitespace and, with `ignore_case`, case-folded (`str.casefold`). When `numeric` and
    the target, without `$ £ € , * _`, reads as a number: the output's number at `location` (`begin`: the first word
    that reads as a number, `end`: the last, `any`: any of them, `exact`: the whole output) must equal the target's,
    both written to 5 significant digits (`format(x, ".5g")`); `answer` is that number as written so (`""` when the
    output holds none). Otherwise both lose leading and trailing punctuation and the output must start with, end
    with, contain or equal the target; `answer` is the stripped output.
    """
    v = value.strip()
    t = target.strip()
    answer = v
    if ignore_case:
        v = v.casefold()
        t = t.casefold()
    if numeric:
        t = strip_numeric_punctuation(t)
    if numeric and _parse_number(t) is not None:
        # A numeric target compares numbers only: "25".endswith("5") must not count.
        v = strip_numeric_punctuation(v)
        t = normalize_number(t)
        words = re.split(r"\s+", v)
        if location == "begin":
            v = _first_number(words)
        elif location == "end":
            words.reverse()
            v = _first_number(words)
        elif location == "exact":
            v = normalize_number(v, trim_punctuation=False)  # "(42)" is not exactly 42
        else:
            for number in [normalize_number(w) for w in words if _parse_number(w) is not None]:
                if number == t:
                    return number, True
            return answer, False
        return v, v == t
    v = strip_punctuation(v)
    t = strip_punctuation(t)
    if location == "begin":
        return answer, v.startswith(t)
    if location == "end":
        return answer, v.endswith(t)
    if location == "exact":
        return answer, v == t
    return answer, t in v


# Sentence and enclosing punctuation only: "<42", "~42" are hedges, not the number.
_NUMERIC_TRIM = "!?:;()[]{}'\"`"


def is_numeric_target(target: str, ignore_case: bool = True) -> bool:
    """Does `match(numeric=True)` compare `target` as a number (`match_str`'s test), not as text?"""
    t = target.strip()
    return _parse_number(strip_numeric_punctuation(t.casefold() if ignore_case else t)) is not None


def _parse_number(s: str, *, trim_punctuation: bool = True) -> float | None:
    """inspect's `_parse_number`: `s` (less `_NUMERIC_TRIM` at its ends unless `trim_punctuation` is False) as a
    finite number by `float`, else by `unicode_number_to_float`; None when neither reads it."""
    cleaned = s.strip(_NUMERIC_TRIM) if trim_punctuation else s
    for parse in (float, unicode_number_to_float):
        try:
            num = parse(cleaned)
        except ValueError:
            continue
        if math.isfinite(num):
            return num
    return None


def _first_number(words: list[str]) -> str:
    number = next((w for w in words if _parse_number(w) is not None), None)
    return normalize_number(number) if number is not None else ""


def normalize_number(number: str, precision: int = 5, *, trim_punctuation: bool = True) -> str:
    """`number` written as `format(x, ".5g")` (`"2.0"` → `"2"`, `"1e3"` → `"1000"`, `"-½"` → `"-0.5"`), or
    `number` itself when it does not read as a finite number (`"5 some text"` stays so)."""
    num = _parse_number(number, trim_punctuation=trim_punctuation)
    return number if num is None else format(num, f".{precision}g")


# --- inspect_ai/scorer/_unicode.py -------------------------------------------------------------------------------------

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

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_TOKEN_SPLIT = re.compile(" |-")


def _normalize_token(token: str) -> str:
    token = token.casefold()
    if not is_finite_number(token):  # (a number keeps its punctuation: "3.14")
        stripped = strip_punctuation(token)  # "(3.14)" and "3.14." are the number too
        token = stripped if is_finite_number(stripped) else "".join(ch for ch in token if ch not in string.punctuation)
    if is_finite_number(token):
        token = str(float(token))
    return " ".join(_ARTICLES.sub(" ", token).split())


def normalize(text: str, stop_words: Sequence[str] | None = None) -> str:
    """inspect's `_normalize`: `text` split at spaces and hyphens, each token case-folded, stripped of ASCII
    punctuation (a number keeps its own: `"(3.14)"` → `"3.14"`), a number written as `str(float)` (`"3"` →
    `"3.0"`), the articles a/an/the and the `stop_words` (normalised so) dropped; the tokens joined by one space."""
    stops = [_normalize_token(w) for w in stop_words] if stop_words is not None else []
    tokens = [t for t in (_normalize_token(tok) for tok in _TOKEN_SPLIT.split(text)) if t not in stops]
    return " ".join(t for t in tokens if t.strip()).strip()


def exact_hit(answer: str, targets: Sequence[str]) -> tuple[str, str | None]:
    """inspect's `max_exact_score` (1.0 when the second item is not None): `normalize(answer)`, and the first target
    whose normalised text equals it (a target with nothing left once normalised never does), else None."""
    answer_norm = normalize(answer)
    return answer_norm, next((target for target in targets if (t := normalize(target)) and t == answer_norm), None)


def word_counts(text: str, stop_words: Sequence[str] | None = None) -> Counter[str]:
    """The tokens of `normalize(text, stop_words)` with their counts (SQuAD F1 is over a bag of tokens)."""
    return Counter(normalize(text, stop_words).split())


def f1_of(answer: Counter[str], target: Counter[str]) -> float:
    """SQuAD F1 of two token bags: shared tokens (with multiplicity) over each bag's size; an empty bag's precision or
    recall is 1.0; 0.0 when both are 0."""
    shared = sum((answer & target).values())
    precision = shared / float(sum(answer.values())) if answer else 1.0
    recall = shared / float(sum(target.values())) if target else 1.0
    return (2 * precision * recall) / (precision + recall) if not (precision == 0.0 and recall == 0.0) else 0.0


def max_f1_score(answer: str, targets: Sequence[str], stop_words: Sequence[str] | None = None) -> tuple[float, int | None]:
    """inspect's `max_f1_score`: the best `f1_of` the answer's tokens reach against a target with tokens left (others
    are skipped), rounded to 2 places (`round(x, 2)`; 0.0 when no target has any), and the index of the first
    target reaching it (None when that best is 0)."""
    best, at = 0.0, None
    answer_words = word_counts(answer, stop_words)
    for i, target in enumerate(targets):
        if target_words := word_counts(target, stop_words):
            if (score := f1_of(answer_words, target_words)) > best:
                best, at = score, i
    return round(best, 2), at


# --- inspect_ai/scorer/_pattern.py -------------------------------------------------------------------------------------


def _is_target(found: str, targets: Sequence[str], ignore_case: bool) -> bool:
    return found.lower() in [t.lower() for t in targets] if ignore_case else found in targets


def match_first(groups: Sequence[str | None], targets: Sequence[str], ignore_case: bool) -> str | None:
    """The first captured group equal to a target (`str.lower` on both with `ignore_case`), else None."""
    return next((g for g in groups if isinstance(g, str) and _is_target(g, targets, ignore_case)), None)


def match_all_groups(groups: Sequence[str | None], targets: Sequence[str], ignore_case: bool) -> str | None:
    """The targets joined (inspect's `Target.text`) when every group that captured equals a target and one did, else None."""
    captured = [g for g in groups if isinstance(g, str)]
    if not captured or not all(_is_target(g, targets, ignore_case) for g in captured):
        return None
    return "".join(targets)
