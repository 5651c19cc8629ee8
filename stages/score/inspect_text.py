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
from collections import Counter
from collections.abc import Sequence
from typing import Literal

from tracejudge.stages.score.inspect_numbers import unicode_number_to_float

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
