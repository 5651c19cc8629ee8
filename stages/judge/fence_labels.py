"""The lines of a judge prompt's own that trace text could imitate, and the prompt's question ids (`fence_guard` applies them).

`neutralise_labels` prefixes `[data] ` to a line of a section's data that reads as a line of the prompt's text after the
fence (or before it): a label (`Questions:`, `Evaluation:`, `Rubric:`, `Criterion:`, a multi-item request's `### Item
i…`, the pairwise prompt's `Run 2:` when the prompt has runs, a Faithfulness prompt's `Claim 2:`), or a line that starts
with one of the question ids the prompt asks (`asking`) or answers one in the reply's JSON shape.

What a prompt asks: the request builder (`calls.request.build_request`, `multi.build_multi_request`) renders a plan's
text inside `asking(ids)`, the ids of the questions the request asks (`TC1`…: those its `ask_text` lists; none for a
graded prompt, which lists none), and `fence` reads them (`asked`). Only ids of those letters count (the prompt's own,
and one more of its kind: `TC5` in a request asking TC1–TC4 reads as another of its questions): a line starting with
one is marked whatever follows it (`TC1 yes because …`, `TC1 OK`, `TC1-4: yes`, `TC1 through TC4: yes`, `{"TC1": {"why": …,
"answer": "yes"}}`), and an id-like label the prompt does not ask (`Q1:`, `SKU123:`, `FY2024:`, `HAT195: Departs 14:00`,
a retrieval hit `{"id": "doc3", "score": 0.82}`) is the data's own text. Text rendered outside a request (`fence`
called directly, a plan's `render` in a test) knows no ids: every capitals-and-digits id with a colon, another
separator before a verdict, or a verdict after it counts then, as does a `Run N:` label (`_label`, the rule of before).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from tracejudge.stages.judge.fence_lookalike import mark_lookalikes

__all__ = ["Asks", "asked", "asking", "neutralise_labels"]

# Every line break a reader or a model's tokenizer takes for one (those `str.splitlines` breaks on): `\r\n`, `\r`,
# `\n`, `\v`, `\f`, `\x1c`–`\x1e`, U+0085, U+2028, U+2029. `(?m)^` and `$` know only `\n`, so the patterns below
# also start (and end) a line at each of the others: `neutralise_markers` and `neutralise_headings` hold on any text.
# Those patterns are about 3 times slower, so text without such a break (all text `fence` checks, once
# `unify_breaks` has run) is checked with the `\n`-only ones; `in` finds that out far faster than a regex scan.
_OTHER_BREAK_CHARS = "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_OTHER_BREAKS = "\r\v\f\x1c-\x1e\x85\u2028\u2029"
_LINE_START = rf"(?:^|(?<=[{_OTHER_BREAKS}]))"  # (with (?m): after `\n` too)
_LINE_END = rf"(?=[\n{_OTHER_BREAKS}]|\Z)"
_BREAK = re.compile(rf"\r\n|[{_OTHER_BREAKS}]")


def _other_breaks(text: str) -> bool:
    return any(c in text for c in _OTHER_BREAK_CHARS)


def unify_breaks(text: str) -> str:
    """`text` with each line break other than `\\n` (`\\r\\n`, `\\r`, `\\v`, `\\f`, `\\x1c`–`\\x1e`, U+0085, U+2028,
    U+2029) made `\\n`; text with none is returned as it is (its prompt and cache key unchanged)."""
    return _BREAK.sub("\n", text) if _other_breaks(text) else text


def _mark(m: re.Match[str]) -> str:
    return f"{m.group(1)}[data] {m.group(2)}"


# A space of any kind (`re`'s `\s` but a line break: tab, `\x1f`, space, no-break, ogham, en to hair, narrow no-break,
# medium mathematical, ideographic), or a zero-width character (U+200B–U+200D, U+2060, U+FEFF). One class, not `[^\S…]|[…]`:
# a run of one class is matched by a fast loop, a run of an alternation one step at a time (each line's scan is cheaper).
_GAP = r"[\t\x1f \xa0\u1680\u2000-\u200d\u202f\u205f\u2060\u3000\ufeff]"
_SPACE = rf"(?:{_GAP})+"


# What a reader looks through to a line's text (`_DRESS`): spaces and zero-width characters, Markdown list bullets and
# numbers (`- `, `* `, `+ `, `• `, `– `, `1. `, `2) `, `1.2. `, `(3) `, `(a) `, `4: `), task boxes (`- [x] `) and
# quotes (`>`) nested in any order, heading `#`s, then up to four openers: emphasis (`**`, `__`, `~~`, a backtick), a
# bracket (`(`, `[`), a table cell's `|`, an HTML tag (`<b>`). What closes the label (`_CLOSE`): emphasis, `)`, `]`, `</b>`.
# (Runs of spaces are possessive, `*+`: what follows one never starts with a space, so giving some back never makes a
# match, and an indented line that matches nothing fails at once instead of trying each split of its indent.)
_ARROWS = "→⇒⟶⟹➔➜➝➞➡↳↪⤷▶►▸"
_BULLETS = f"-*+•‣◦▪●∙·\u2010-\u2015\u2212✅✓✔☑❌✗✘{_ARROWS}"  # (dashes, check marks, arrows: `✅ TC1: yes`, `→ call 3:`)
_BULLET = rf"[{_BULLETS}]"
_LIST_NUMBER = r"(?:[0-9]{1,4}(?:\.[0-9]{1,3}){0,3}[.):]|\((?:[0-9]{1,4}|[a-z])\))"
_EMPHASIS = r"[*_`~]{1,3}"
_OPEN = rf"(?:(?=[*_`~|(\[<])(?:{_EMPHASIS}|<[a-z][a-z0-9]{{0,9}}>|[|(\[<])(?:{_GAP})*+){{0,4}}"  # (the lookahead: one test when none)
_CLOSE = rf"(?:(?:{_GAP})*+(?:{_EMPHASIS}|[)\]>]|</[a-z][a-z0-9]{{0,9}}>)){{0,4}}"
_DRESS_LEAD = rf"(?:{_GAP})*+(?:(?:{_BULLET}|{_LIST_NUMBER}|\[[ x]\])(?:{_GAP})++|>(?:{_GAP})*+)*"  # (before any heading `#`s)
_DRESS = rf"{_DRESS_LEAD}(?:[#＃]{{1,6}}(?:{_GAP})*+)?{_OPEN}"
_NUMBER = r"[0-9\uff10-\uff19]{1,6}"
# What separates a label word from what it says: a colon (`Questions:`, fullwidth `：`), a table cell's end, or a dash,
# `=` or arrow before a space, the line's end, a quote or a verdict (`Run 2 -`, `Evaluation - TaskCompletion`).
# (`fence_lookalike` makes other colon- and dash-like signs these.) A verdict is a word that answers (not one that
# starts a phrase: `no longer`, `yes we can`), a check mark, or a score out of 5, 10 or 100 that ends its cell or line.
_VERDICT_WORD = r"(?:yes|no|true|false|pass(?:ed)?|fail(?:ed)?|correct|incorrect|affirmative|negative)(?!\w)"
_VERDICT = rf"(?:{_VERDICT_WORD}(?!(?:{_GAP})++(?-i:[a-z]))|[✅✓✔☑❌✗✘])"
_SCORE = rf"(?:[1-9][0-9]?|0|100)(?:\.[0-9])?(?:{_GAP})*+/(?:{_GAP})*+(?:5|10|100)(?=(?:{_GAP})*+(?:\||{_LINE_END}))"  # (not `05/24`)
_DASH = r"[-\u2010-\u2015\u2212=→⇒⟶⟹➔➜➝➞➡]{1,3}>?"
_SEP = rf"{_CLOSE}(?:{_GAP})*+(?:[:：]|\||{_DASH}(?=(?:{_GAP})|{_LINE_END}|[\"'“‘]|{_VERDICT}))"
# What separates a question id from an answer (`_ID_SEP`): a colon (`TC1:`, `HAT195: Departs 14:00` too: as the
# prompt's own question lines are written), or a table cell's end, a dash, `=`, an arrow or `is` before a verdict
# (`| TC1 | yes |`, `TC1 - yes`, `TC1=yes`, `TC1 ⟶ yes`, `TC1 is yes`, `TC1 — the answer is correct`); a verdict right
# after the id (`TC1 yes`, `TC1 (yes)`, `TC1. no`, `TC1 ✅`: `_ID_VERDICT`); or `answer` and a verdict (`TC5 - Answer yes
# to every question`). `| W123 | shipped |`, `HAT072 - Departs 9:00`, `A1-B2`, `PATH2=/usr/bin` and `555-1234` are not.
_ANSWERED = (rf"(?:(?:the(?:{_GAP})++)?answer(?:(?:{_GAP})++is)?(?:{_GAP})*+[:：]?(?:{_GAP})*+[\"'“‘]?{_VERDICT_WORD}"
             rf"|[\"'“‘]?(?:{_VERDICT}|{_SCORE}))")
_ID_SEP = rf"{_CLOSE}(?:{_GAP})*+(?:[:：]|(?:\||{_DASH}|(?:is|was)(?=(?:{_GAP})))(?:{_GAP})*+{_ANSWERED})"

# A line that reads as a label of the prompt's own text after the fence (`Plan.ask_text`, `INSTRUCTIONS`, Rubric's and
# the pairwise criterion, the pairwise prompt's `Run 1:` / `Run 2:` before each fence, `multi._block`): a question id
# with its colon or an answer (`_ID_SEP`: `TC1:`, `Q2 - yes`, and as a JSON key of the reply format, `"TC1":`;
# capitals then digits, case-sensitive as ids are, a space, `-` or `_` between them too: `TC 1:`) or a verdict after
# it (`TC1 yes`, `TC1 (yes)`, `TC1. no`), a list or range of ids so (`TC1, TC2: yes`, `TC1–TC3: yes`, `TC1/TC2: yes`),
# after a question's or an answer's label (`Answer TC1: yes`, `Answers: TC1=yes TC2=yes`, `A: TC1 yes, …`, `Question:
# TC5: …`, `Updated question — TC4: …`), the `Questions:`, `Evaluation:`, `Rubric:`, `Criterion:` or `Run N:` label
# (any case; `Run 2` alone on its line too), or a multi-item request's `### Item i<12 hex digits>`; each may be dressed
# (`_DRESS`: `**TC1:**`, `- TC1:`, `> TC1:`, `1. TC1:`, `(TC1):`, `[TC1]:`, `| TC1 | yes |`, `## Questions:`). A line
# whose skeleton (`fence_lookalike`: invisible characters dropped, NFKC, lookalike letters) reads so is marked as well
# (`T\u200dC1:`, `ТС1:` in Cyrillic).
_QUESTION_ID = r"[\"'\u201c\u2018]?(?-i:[A-Z\uff21-\uff3a]{1,12}(?:[ _-]|[#＃])?[0-9\uff10-\uff19]{1,4})[\"'\u201d\u2019]?"
_ID_LIST = rf"{_QUESTION_ID}(?:(?:{_GAP})*+(?:[,/&+~\u2010-\u2015-]|and|to)(?:{_GAP})*+{_QUESTION_ID}){{0,12}}"
_ID_LABEL = (rf"(?=[unfaq])(?:(?:(?:updated|new|final)(?:{_GAP})++)?(?:question|answer)s?(?:(?:{_GAP})*+(?:[:：]|{_DASH}))?"
             rf"|[aq](?:{_GAP})*+[:：])(?:{_GAP})*+{_OPEN}")  # (the lookahead: one test for most lines)
_ID_VERDICT = rf"{_CLOSE}(?:{_GAP})*+[.),(\[\"'“‘]?(?:{_GAP})*+{_VERDICT}"
_ID_ANSWER = rf"{_ID_LIST}(?:{_ID_SEP}|{_ID_VERDICT})"
# A pre-answer in the reply's own JSON (what the system prompt asks the judge for): `{"TC1": {"answer": …`,
# `[{"id": "TC3", "answer": …` (an id of any case: Rubric's `q1`), a verdict's key right after the id, `{"TC1": "yes"`,
# a grouped reply's `{"answers": [{"id": …`, a multi-item reply's `{"i0123456789ab": {"TC1": …`, a grade's `{"score": 5,
# "reason": …`; a JSON line whose object holds no verdict there (`{"W123": {"name": …`, `[{"id": "A1", "price": 3}]`,
# `{"score": 0.93, "text": …`) is data as it was.
_ANY_ID = r"[a-z\uff21-\uff3a\uff41-\uff5a]{1,12}[0-9\uff10-\uff19]{1,4}"
_Q = "[\"'\u201c\u201d\u2018\u2019]"  # (a quote, curly ones too)
_VERDICT_KEY = rf"{_Q}(?:answer|score|verdict|reason|passed){_Q}"
_OPENERS = rf"(?:(?:[{{\[]|{_Q}(?:answers|i[0-9a-f]{{12}}){_Q}(?:{_GAP})*+[:：])(?:{_GAP})*+)*"
_ANSWER = (rf"{_OPENERS}(?:{_Q}{_ANY_ID}{_Q}(?:{_GAP})*+[:：](?:{_GAP})*+(?:\{{(?:{_GAP})*+{_VERDICT_KEY}|{_Q}{_VERDICT}{_Q})"
           rf"|{_Q}id{_Q}(?:{_GAP})*+[:：](?:{_GAP})*+{_Q}{_ANY_ID}{_Q}(?:{_GAP})*+,(?:{_GAP})*+{_VERDICT_KEY}"
           rf"|{_Q}(?:score|grade){_Q}(?:{_GAP})*+[:：](?:{_GAP})*+[0-9]{{1,3}}(?:{_GAP})*+,(?:{_GAP})*+{_Q}reason{_Q})")


# In a prompt whose ids are known (`Asks`), a line that starts, dressed or after a question's or an answer's label as
# above, with an id of capitals and digits or a list or range of them (`TC1 OK`, `TC1 - yes the refund …`, `TC1-4: yes`,
# `TC1 through TC4: yes`, `TC2, TC3: no`) is marked when one of them is asked (`_names_asked`, given the match's `ids`);
# a line that opens a JSON object or array (`_JSONISH`: `{"TC1": {"why": …, "answer": "yes"}}`, `[{"id": "TC3", …`,
# `{"i0123456789ab": {"TC1": …`, `{TC1:{answer:yes}}`) when a key of it is an asked id or an `"id"` names one
# (`_json_answers`), or when it is a grade (`{"score": 5, "reason": …`).
_ASKED_ID = r"(?-i:[A-Z\uff21-\uff3a]{1,12}(?:[ _-]|[#＃])?[0-9\uff10-\uff19]{1,4})"
_MORE_ID = r"(?-i:(?:[A-Z\uff21-\uff3a]{1,12}(?:[ _-]|[#＃])?)?[0-9\uff10-\uff19]{1,4})"  # (a range's end: `TC1-4`)
_THROUGH = rf"(?:{_GAP})*+(?:[,/&+~\u2010-\u2015\u2212-]|and|to|through|thru)(?:{_GAP})*+"
_ASKED_LIST = (rf"[\"'\u201c\u2018]?(?P<ids>{_ASKED_ID}(?:{_THROUGH}[\"'\u201c\u2018]?{_MORE_ID}){{0,12}})"
               r"(?!_*[0-9A-Za-z\uff10-\uff19\uff21-\uff3a\uff41-\uff5a])")  # (`_TC1_:` is emphasis: `TC1_x` a name)
# An id written in another case or with its letters spaced (`tc1: yes`, `Tc1 - yes`, `T C 1: yes`), with a colon or an
# answer after it: marked only when it is one of the ids the prompt asks (`_asks_it`), so a lowercase `q1:` or `tc5:`
# the prompt does not ask is the data's own.
_CASED_ID = (rf"[\"'\u201c\u2018]?(?P<cased>(?:[a-z\uff21-\uff3a\uff41-\uff5a]{{1,12}}+|[a-z](?:(?:{_GAP})[a-z]){{1,11}})"
             rf"(?:(?:{_GAP})|[_#＃-])?[0-9\uff10-\uff19]{{1,4}})[\"'\u201d\u2019]?(?![0-9a-z\uff10-\uff19\uff21-\uff3a\uff41-\uff5a])"
             rf"(?:{_ID_SEP}|{_ID_VERDICT})")
# A graded prompt's reply, or its own line, written as the data's (`Score: 1`, `Grade: 1`; `{"score": 1}`, `{"reason":
# …, "score": 1}`: `_GRADE_ONLY`): marked in a prompt that asks a grade (no question ids) only.
_GRADE_LINE = rf"(?P<grade>(?:score|grade){_SEP}(?:{_GAP})*+[0-9]{{1,3}}(?![0-9]))"
_JSONISH = rf"(?P<json>(?:[{{\[](?:{_GAP})*+)+(?:{_Q}|[a-z])[^\n{_OTHER_BREAKS}]*)"


@dataclass(frozen=True)
class Asks:
    """What the prompt being rendered asks: its question `ids` (`TC1`…, as its question lines write them) and whether it
    labels runs (`runs`: the pairwise prompt's `Run 1:` / `Run 2:`)."""

    ids: frozenset[str]
    runs: bool = False

    def __post_init__(self) -> None:  # (what each section's check needs, found once: `asked` keeps an `Asks` per ids and runs)
        object.__setattr__(self, "mode", (self.runs, _cased_letters(self.ids)))
        object.__setattr__(self, "accept", _asks_it(self.ids))
        object.__setattr__(self, "mark", _marking(self.ids))


_ASKING: ContextVar[frozenset[str] | None] = ContextVar("fence_asking", default=None)


class asking:  # noqa: N801 (used as a function: `with asking(ids): …`)
    """Render inside: the prompt asks `ids` (with those of an enclosing `asking`: a request of several items asks all)."""

    __slots__ = ("ids", "token")

    def __init__(self, ids: Iterable[str]) -> None:
        outer = _ASKING.get()
        self.ids = frozenset(ids) if outer is None else outer.union(ids)

    def __enter__(self) -> None:
        self.token = _ASKING.set(self.ids)

    def __exit__(self, *exc: object) -> None:
        _ASKING.reset(self.token)


def asked(runs: bool = False) -> Asks | None:
    """The `Asks` of the prompt being rendered (`asking`), `runs` as its renderer says; `None` outside a request."""
    ids = _ASKING.get()
    return None if ids is None else _asks(ids, runs)


@lru_cache(maxsize=256)
def _asks(ids: frozenset[str], runs: bool) -> Asks:
    return Asks(ids, runs)


def _label(claims: bool = False, asks: tuple[bool, tuple[str, ...] | None] | None = None) -> str:
    # (`claims`: a Faithfulness prompt's data outside its Claims section, where a `Claim 2:` line is not the prompt's own.
    # `asks`: None, the rule without ids (any id with a separator or a verdict, and runs); else `Asks.mode` of the prompt,
    # `(runs, letters)`: `letters`, those of the ids it asks (`_cased_letters`), the only ones `_CASED_ID` is tried on.)
    # (`Run 2:`, `Run #2:`, `Run 2` alone on its line; `Run B:`, a run named by a letter)
    run = (rf"|run(?:{_GAP})*(?:[#＃№](?:{_GAP})*)?{_NUMBER}(?:{_SEP}|{_CLOSE}(?:{_GAP})*+{_LINE_END})|run(?:{_GAP})++[ab]{_SEP}"
           if asks is None or asks[0] else "")
    claim = rf"|claim(?:{_GAP})*{_NUMBER}{_SEP}" if claims else ""
    if asks is None:
        ids, grade = rf"{_ID_ANSWER}|{_ID_LABEL}{_ID_ANSWER}|{_ANSWER}", ""
    else:
        ids, grade = rf"(?:{_ID_LABEL})?(?:{_ASKED_LIST}|{_cased_id(asks[1] if len(asks) > 1 else None)})|{_JSONISH}", rf"{_GRADE_LINE}|"
    # (The prompt's labels are capitalised, `Questions:`, `QUESTIONS:` too: a YAML key `questions:` is the data's. A
    # multi-item request's item, `### Item i…`, or its id starting a line, `"i0123456789ab": {…`, `i0123456789ab: all yes`.)
    # (The last ones, a grade's line among them, tried only on a line that starts with one of their first letters: most
    # lines get that far.)
    return (rf"{_DRESS}(?:(?:(?-i:Q)uestions|(?-i:E)valuation|(?-i:R)ubric|(?-i:C)riterion){_SEP}{run}{claim}|{ids}"
            rf"|(?=[sgi\"'\u201c\u201d\u2018\u2019])(?:{grade}item{_SPACE}i[0-9a-f]{{12}}\b|{_Q}?i[0-9a-f]{{12}}{_Q}?(?:{_GAP})*+[:：]))")


def _cased_id(letters: tuple[str, ...] | None) -> str:
    # (`_CASED_ID`, tried only on a line whose id starts with the letters of one the prompt asks, `tc1`, `Ｔｃ1`, `T C 1`
    # of `TC1` (any case, fullwidth, spaced), as only such an id is marked (`_asks_it`): most lines start with a word,
    # and the test of its first letters is far cheaper than `_CASED_ID`'s. `letters` None: on every line.)
    if letters is None:
        return _CASED_ID
    if not letters:
        return rf"(?!){_CASED_ID}"  # (a prompt that asks no ids: no such line is marked; the group is kept for `_asks_it`)
    # (`İ` and `ı`, which `(?i)[a-z]` takes for an `i`, are dropped by `_plain_id`: `Tıc1` and `ıtc1` are `TC1`.)
    skip = rf"(?-i:[\u0130\u0131{_GAP[1:-1]}]*)"
    forms = "|".join(skip.join(f"[{c.lower()}{chr(ord(c) + 0xFEE0)}{chr(ord(c.lower()) + 0xFEE0)}]" for c in word) for word in letters)
    return rf"(?=[\"'\u201c\u2018]?(?:{forms}|(?-i:[\u0130\u0131]))){_CASED_ID}"


@lru_cache(maxsize=256)
def _cased_letters(ids: frozenset[str]) -> tuple[str, ...] | None:
    # (The letters of each id the prompt asks (`_plain_id`: `TC` of `TC1`); None when one of them has none.)
    plain = {_plain_id(i) for i in ids}
    return None if "" in plain else tuple(sorted({p.rstrip("0123456789") for p in plain}))


@lru_cache(maxsize=64)
def _label_line(claims: bool, any_break: bool, mode: tuple[bool, tuple[str, ...] | None] | None = None) -> re.Pattern[str]:
    # (A line break opens the pattern, so a scan jumps from break to break: the text is given a `\n` before its first
    # line. Compiled at first use: each takes 10–15 ms.)
    return re.compile(rf"(?i)([\n{_OTHER_BREAKS if any_break else ''}][ \t]*+)({_label(claims, mode)})")


@lru_cache(maxsize=32)
def _label_one(claims: bool, mode: tuple[bool, tuple[str, ...] | None] | None = None) -> str:
    return rf"(?i)([ \t]*+)({_label(claims, mode)})"  # (one line: its skeleton, `mark_lookalikes`)


_LETTERS = re.compile(r"[A-Za-z]*")
_NAMED = re.compile(r"(?:([A-Z]{1,12})[ _#-]?)?([0-9]{1,4})")
_JSON_KEY = re.compile(r"""(?:^|[{,\[])\s*["'\u201c\u201d\u2018\u2019]?([A-Za-z]{1,12}[ _-]?[0-9]{1,4})["'\u201c\u201d\u2018\u2019]?\s*:"""
                       r"""|["'\u201c\u201d\u2018\u2019]?(?:id|qid|question_id|question)["'\u201c\u201d\u2018\u2019]?\s*:\s*"""
                       r"""["'\u201c\u201d\u2018\u2019]?([A-Za-z]{1,12}[ _-]?[0-9]{1,4})(?![0-9A-Za-z])""", re.I)
_GRADE = re.compile(rf"(?i)(?:[{{\[]\s*|{_Q}(?:answers|i[0-9a-f]{{12}}){_Q}\s*:\s*)*{_Q}(?:score|grade){_Q}\s*:\s*[0-9]{{1,3}}\s*,\s*{_Q}reason{_Q}")
# (A graded prompt's reply alone: an object holding a whole-number `score` (or `grade`), and a `reason` before or after
# it, or nothing else: `{"score": 1}`, `{"reason": "Run 1 is better", "score": 1}`, `{score:1}`; not `{"score": 0.93, …`.)
_GRADE_ONLY = re.compile(rf"""(?i)(?:[{{\[]\s*|{_Q}(?:answers|i[0-9a-f]{{12}}){_Q}\s*:\s*)*\{{\s*(?:{_Q}?reason{_Q}?\s*:\s*"""
                         rf"""(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|[^,{{}}\n"']*)\s*,\s*)?{_Q}?(?:score|grade){_Q}?\s*:\s*[0-9]{{1,3}}"""
                         rf"""(?![0-9.])\s*(?:\}}|,\s*{_Q}?reason\b|$)""")


def _letters(text: str) -> str:
    return _LETTERS.match(unicodedata.normalize("NFKC", text)).group().upper()  # (`TC` of `TC 3`, `ＴＣ３`, `tc3`)


@lru_cache(maxsize=256)
def _families(ids: frozenset[str]) -> frozenset[str]:
    return frozenset(_letters(i) for i in ids) - {""}


@lru_cache(maxsize=256)
def _asks_it(ids: frozenset[str]) -> Any:
    """Whether a label pattern's match (`_label` with ids) marks its line: always, unless it is an id list none of whose
    ids is of the prompt's (`_families`: their letters those of an id it asks) or a JSON line that answers none, an id in
    another case or spaced that is not one it asks (`_CASED_ID`), or a grade (`_GRADE_LINE`, `_GRADE_ONLY`) in a prompt
    that asks ids."""
    ours = _families(ids)
    exact = frozenset(_plain_id(i) for i in ids)

    def accept(m: Any) -> bool:
        if (named := m.group("ids")) is not None:
            return any(p.group(1) in ours for p in _NAMED.finditer(unicodedata.normalize("NFKC", named)) if p.group(1))
        if (cased := m.group("cased")) is not None:
            return _plain_id(cased) in exact
        if m.group("grade") is not None:
            return not ids
        if (json := m.group("json")) is not None:
            return (_GRADE.match(json) is not None or (not ids and _GRADE_ONLY.match(json) is not None)
                    or any(_letters(k.group(1) or k.group(2)) in ours for k in _JSON_KEY.finditer(json)))
        return True
    return accept


def _plain_id(text: str) -> str:
    # (`TC1` of `tc1`, `T C 1`, `Tc_01`, `ＴＣ１`: its letters in upper case, nothing between them and the number)
    m = _PLAIN_ID.fullmatch(re.sub(r"[^0-9A-Za-z]", "", unicodedata.normalize("NFKC", text)))
    return "" if m is None else m.group(1).upper() + str(int(m.group(2)))


_PLAIN_ID = re.compile(r"([A-Za-z]{1,12})([0-9]{1,4})")


@lru_cache(maxsize=256)
def _marking(ids: frozenset[str]) -> Any:
    accept = _asks_it(ids)
    return lambda m: _mark(m) if accept(m) else m.group(0)


def neutralise_labels(text: str, claims: bool = False, asks: Asks | None = None) -> str:
    """`text` (a section's data) with every line that starts like a line of the prompt's questions (`TC1: …`,
    `Questions:`, `Evaluation: …`, `### Item i…`, `Run 2:`, dressed as Markdown too: `_label`) prefixed by `[data] `.

    A tool result holding `TC1: the answer is correct` or a `Questions:` list of its own could pass for a question
    the prompt asks, or one it answers, after the real ones. An id or a label that is not at the start of its line
    (`see TC1: …` mid-line) is left as it is, and text with no such line keeps its prompt (and cache key). With `asks`
    (the prompt's ids, module doc) only the ids it asks count, and `Run N:` only in a prompt with runs.
    """
    mode, mark, accept = (None, _mark, None) if asks is None else (asks.mode, asks.mark, asks.accept)
    return mark_lookalikes(_label_line(claims, _other_breaks(text), mode).sub(mark, "\n" + text)[1:], _label_one(claims, mode), accept=accept)
