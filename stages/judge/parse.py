"""Strict parsing of judge verdicts.

Tolerated: the JSON object alone, inside a fenced code block, or surrounded
by prose — every `{` of the reply starts a candidate (decoded with
`json.JSONDecoder.raw_decode`), and the first candidate that is a valid
verdict for the asked questions wins, so a decoy `{…}` in prose before the
verdict does no harm. Zero-width and byte-order-mark characters are removed
first (they make "ye\u200bs" look like "yes" to a reader but not to a parser), and so
is a reasoning model's thinking (`<think>…</think>`, `<thinking>`, `<reasoning>`, Seed-OSS's
`<seed:think>`, magistral's `[THINK]`, Kimi's `◁think▷`; text before a closing tag whose opening tag the chat
template put in the prompt; gpt-oss's analysis channel, left unparsed in the content: `reasoning_blocks`):
a draft verdict there is not the answer, however valid it looks, and a reply whose only JSON is in its
thinking says so (`no JSON object after the model's thinking`), not that it holds none. A block that
never closes (the model stopped while still thinking, `finish_reason: stop` or
not) is thinking to the end of the reply: a draft there is never taken, and a
reply left without a verdict says the block never closed and what to change
(`unclosed_reasoning`); the tag counts only at the start of the reply or of a
line, since a JSON string cannot hold a raw newline, so a reason quoting
"<think>" inside a verdict is not mistaken for one.
Answers come as the shared schema's list (`{"answers": [{"id", "answer",
"reason"}, …]}`, read by id; the first answer to an id counts) or as an
object keyed by question id. Not tolerated: anything that is not a JSON object answering exactly the asked
question ids and an answer that is exactly yes or no after trimming and
lower-casing, with at most one `.` right after the word ("Yes." is yes;
"yess", "yes!", "yes.." and "y" are wrong) — a near-miss like
`GRADE: CI` or `q1: yes` lines is a parse failure, which the judge answers
with one repair request and then `judge_error` with the raw text kept.
Nor a reply that answers one question both yes and no — in two verdict
objects, or twice in one `answers` list: which one the judge meant is
unknowable, so it is a parse failure naming the question (the same answer
given twice is harmless: the first reason is kept). So is a grade given twice with
two different valid scores, and, in a multi-item reply, one item's question
answered both ways (or graded twice differently) across the reply's objects.
One object naming a key twice with different values (`{"q1": …, "q1": …}`, an
`answer`, `score` or item id twice) counts as two verdict objects, the first
value read (a JSON decoder would keep the last silently); the same value twice is kept.
One exception: when a single question was asked, a reply that is nothing but
yes or no (any case, optionally one `.` or `!` after it: `YES.`, `no`) answers
it, as a judge that skipped the JSON meant; anything more (`yes and no`,
`Yes? No.`, `yes...`) is still a parse failure.
An answer to an id that was not asked (`TC9` beside `TC1`: an entry of the list, or a key holding an
answer) is a parse failure naming the id, even when every asked id is answered well: the judge is unsure
which questions, or which item, it answers, so its other answers are not trusted either (a key holding no
answer, `"summary": "…"`, is ignored). A grade is a JSON number that is whole (`4`, `4.0`); `"4"`, `[4]`,
`true`, `NaN` and `Infinity` (or `1e400`, which decodes to it) are not grades. Nothing but `ParseError` leaves
this module for any reply (`_guarded`): a hostile value gets the repair request, never ends its case otherwise.
JSON that is invalid (a trailing comma, a comment) is read again leniently by the caller (`lenient_json`).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from tracejudge.stages.judge.reasoning_blocks import HARMONY, TAGS, first_tag, outside
from tracejudge.stages.judge.repeated_keys import PLAIN, STRICT, VIEWS, Repeated, Views

__all__ = ["THINKING_FIELD_ADVICE", "ParseError", "agreement", "by_id", "check_agreement", "grade_agreement", "extract_json", "json_objects", "parse_parts", "parse_scale", "parse_yes_no", "scale_from", "strip_invisible",
           "strip_reasoning", "unclosed_reasoning", "yes_no_from"]

T = TypeVar("T")

# Zero-width space/joiners, word joiner, BOM, soft hyphen: invisible, never part of a verdict.
_INVISIBLE = re.compile("[\u200b-\u200f\u2060-\u2064\ufeff\u00ad]")
_BARE = re.compile(r"\s*(yes|no)\s*[.!]?\s*", re.I)  # a whole reply of one verdict word (`parse_yes_no`)


class ParseError(ValueError):
    """The judge's text is not a valid verdict; the message says what was wrong."""


F = TypeVar("F", bound=Callable[..., Any])


def _guarded(fn: F) -> F:
    # A reply is untrusted input: any other exception a value in it provokes (a bug here included) would escape into the
    # case and end it with every score dropped, no repair and no raw reply kept. As a parse failure it gets all three.
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ParseError:
            raise
        except Exception as exc:  # noqa: BLE001 - see above: nothing else may leave the parser
            raise ParseError(f"the reply could not be read ({type(exc).__name__}: {_cut(str(exc))})") from None

    return wrapper  # type: ignore[return-value]


def _cut(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _shown(value: Any) -> str:
    # A value quoted in a problem: bounded, as a reply may hold a megabyte or a thousand nested lists in one field.
    try:
        return _cut(repr(value))
    except (RecursionError, ValueError):  # (ValueError: an int of more digits than `sys.set_int_max_str_digits` allows)
        return f"a {type(value).__name__} too large to show"


def strip_invisible(text: str) -> str:
    """`text` without zero-width characters, byte-order marks and soft hyphens."""
    return _INVISIBLE.sub("", text)


def strip_reasoning(text: str) -> str:
    """`text` without a reasoning model's thinking: each `<think>…</think>` block (also `thinking`, `reasoning`; any
    case), everything before a closing tag left without its opening one (a template that opens the block in the
    prompt, as Qwen3's and DeepSeek-R1's do; a tag a JSON string could hold, mid-line, does not count), everything
    from an opening tag that never closes (at the start of the reply or of a line: the model stopped while thinking)
    to the end, and gpt-oss's analysis channel (`reasoning_blocks`). Text with no tag is returned as it is."""
    return outside(text)[0]


def unclosed_reasoning(text: str) -> str:
    """The tag (`think`, `thinking`, `reasoning`) of a reasoning block in `text` that never closes, `analysis` for a
    gpt-oss reply that never reached its final channel, or "" (see `strip_reasoning`)."""
    return outside(strip_invisible(text))[1]


# How a parse error of a reply still thinking says to turn thinking off; a judge that sends that field already says the
# server's side instead (`reply_notes.with_thinking_advice`).
THINKING_FIELD_ADVICE = "on the server, or by judge.extra_body: {chat_template_kwargs: {enable_thinking: false}}"


def _never_closed(text: str, exc: ParseError) -> ParseError:
    # A reply left without a verdict because its thinking never ended: say so and what to change, not only what was
    # missing (a draft verdict in that block was seen and deliberately not taken).
    tag = unclosed_reasoning(text)
    if not tag:
        return _only_in_thinking(text, exc)
    where = ("analysis channel (gpt-oss) never reached a final channel (no <|channel|>final)" if tag == HARMONY
             else "{} reasoning block never closed (no {})".format(*TAGS[tag]))
    return ParseError(f"the reply's {where}, so the reply holds no verdict: a draft "
                      f"verdict inside it is never taken. The model stopped while still reasoning: raise judge.max_tokens, or change "
                      f"the server's reasoning settings (a chat template or reasoning parser that ends the thinking, or thinking "
                      f"turned off: {THINKING_FIELD_ADVICE}) ({exc})")


def _only_in_thinking(text: str, exc: ParseError) -> ParseError:
    # A reply whose only JSON is inside its thinking (the model answered while reasoning and gave nothing after it):
    # "no JSON object found" beside a raw reply that plainly holds one does not say why it was not read.
    plain = strip_invisible(text)
    if strip_reasoning(plain) == plain or next(json_objects(plain), None) is not None or not _any_object(plain):
        return exc
    tag = first_tag(plain)
    where = "reasoning ({}…{})".format(*TAGS[tag]) if tag else "analysis channel (gpt-oss)"
    return ParseError(f"no JSON object after the model's thinking: the reply's JSON is in its {where}, "
                      "which is never read as the verdict (it may be a draft); the model gave no answer after it. Use a model or chat "
                      f"template that answers after its thinking, or turn its thinking off ({THINKING_FIELD_ADVICE})")


def _any_object(text: str) -> bool:
    # Whether any `{` of `text` starts a JSON object, reasoning blocks included (only for the message above).
    start = text.find("{")
    while start != -1:
        try:
            if isinstance(PLAIN.raw_decode(text, start)[0], dict):
                return True
        except (ValueError, RecursionError):
            pass
        start = text.find("{", start + 1)
    return False


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Every JSON object in `text`, in order, outside reasoning blocks (`strip_reasoning`): one `raw_decode` attempt
    at each `{` (nested ones included). An object that names a key twice with different values (`{"q1": …, "q1": …}`,
    also deeper: an `answer` twice) is yielded with the first value of each key, then once more per later value, as
    if the judge had written that verdict object again: the agreement checks then see both answers."""
    text = strip_reasoning(strip_invisible(text))
    start = text.find("{")
    checked_to = 0  # the end of the last object found to repeat no key
    while start != -1:
        try:
            if start < checked_to:
                # Inside it: a nested object, checked with it, or one in a string, which can only be `{}` (a key's `"`
                # there is escaped): the plain decoder, as cheap as before.
                value, _ = PLAIN.raw_decode(text, start)
            else:
                try:
                    value, end = STRICT.raw_decode(text, start)
                    checked_to = end
                except Repeated:
                    value, _ = VIEWS.raw_decode(text, start)
        except (ValueError, RecursionError):
            value = None
        if isinstance(value, dict):
            yield value
            yield from value.others if isinstance(value, Views) else ()
        start = text.find("{", start + 1)


@_guarded
def extract_json(text: str) -> dict[str, Any]:
    """The first JSON object in `text` (bare, fenced, or inside prose). Raises `ParseError`."""
    for value in json_objects(text):
        return value
    raise _never_closed(text, ParseError("no JSON object found in the reply"))


def _first_valid(text: str, read: Callable[[Any], T]) -> T:
    # The first object that is a valid verdict; otherwise the problem with the first object seen.
    first: ParseError | None = None
    for value in json_objects(text):
        try:
            return read(value)
        except ParseError as exc:
            first = first or exc
    raise first or ParseError("no JSON object found in the reply")


def _listed(data: Any) -> Iterator[tuple[str, Any]]:
    # Every (id, answer) of the shared schema's list, repeats included; nothing when `data` is not in that form.
    if isinstance(data, dict) and isinstance(data.get("answers"), list):
        for a in data["answers"]:
            if isinstance(a, dict) and isinstance(a.get("id"), str):
                yield strip_invisible(a["id"]).strip(), a


def by_id(data: Any) -> Any:
    """A reply object's answers by question id: the shared schema's `{"answers": [{"id": …}, …]}` (the first
    answer to an id counts; `check_agreement` refuses a reply whose repeats disagree), or `data` itself when it is
    not in that form (keyed by id)."""
    if isinstance(data, dict) and isinstance(data.get("answers"), list):
        out: dict[str, Any] = {}
        for q, a in _listed(data):
            out.setdefault(q, a)
        return out
    return data


def _word(answer: Any) -> str | None:
    # "yes" or "no" when the answer is one (any case, padding, one "." right after it), else None.
    word = strip_invisible(str(answer)).strip().lower()
    word = word[:-1] if word.endswith(".") else word
    return word if word in ("yes", "no") else None


@_guarded
def check_agreement(text: str, question_ids: list[str]) -> None:
    """Raises `ParseError` naming the first of `question_ids` that the reply answers both yes and no, counting every
    JSON object of the reply (`json_objects`) and every entry of an `answers` list; answers that are not yes or no
    do not count here (`yes_no_from` judges them)."""
    agreement(json_objects(text), question_ids)


@_guarded
def agreement(verdicts: Iterable[dict[str, Any]], question_ids: list[str]) -> None:
    """`check_agreement` over decoded verdict objects (in a multi-item reply, every verdict given for one item)."""
    asked = set(question_ids)
    seen: dict[str, str] = {}
    for data in verdicts:
        pairs = _listed(data) if isinstance(data.get("answers"), list) else ((q, data[q]) for q in question_ids if q in data)
        for q, item in pairs:
            word = _word(item.get("answer")) if q in asked and isinstance(item, dict) else None
            if word is not None and seen.setdefault(q, word) != word:
                raise ParseError(f"{q} is answered both yes and no; give one answer per question")


@_guarded
def parse_yes_no(text: str, question_ids: list[str]) -> dict[str, dict[str, str]]:
    """`{qid: {"answer": "yes"|"no", "reason": str}}` for exactly `question_ids`. Raises `ParseError`.

    Answers are compared case-insensitively after trimming (one `.` after the word is allowed); a missing id,
    an answer to an id not asked (`yes_no_from`), an answer other than yes/no, or a question answered both yes and
    no (`check_agreement`) is an error. With one question asked, a reply that is only yes or no (`YES.`: the module doc) answers it, with reason `""`.
    """
    if len(question_ids) == 1 and (bare := _BARE.fullmatch(strip_reasoning(strip_invisible(text)))) is not None:
        return {question_ids[0]: {"answer": bare.group(1).lower(), "reason": ""}}
    try:
        check_agreement(text, question_ids)
        return _first_valid(text, lambda data: yes_no_from(by_id(data), question_ids))
    except ParseError as exc:
        raise _never_closed(text, exc) from None


@_guarded
def parse_parts(text: str, parts: list[list[str]]) -> tuple[list[dict[str, dict[str, str]] | None], list[str]]:
    """Per part (one metric's question ids) of a grouped reply: its answers, or `None` and the problem (`""` when usable).

    The reply's first JSON object that answers some asked id is read. Raises
    `ParseError` when no part is usable, when that object also answers an id no part asked (`yes_no_from`), or when
    the reply answers an asked id both yes and no (`check_agreement`); the whole reply then gets a repair request.
    """
    asked = [q for ids in parts for q in ids]
    check_agreement(text, asked)
    wanted = set(asked)
    data = next((by_id(o) for o in json_objects(text) if isinstance(by_id(o), dict) and wanted & set(by_id(o))), None)
    if data is None:
        raise _never_closed(text, ParseError("no JSON object with answers to the asked question ids found in the reply"))
    _refuse_unasked(data, asked)  # (not per part: each part's ids are the others' extras)
    got: list[dict[str, dict[str, str]] | None] = []
    problems: list[str] = []
    for ids in parts:
        try:
            got.append(_answers(data, ids))
            problems.append("")
        except ParseError as exc:
            got.append(None)
            problems.append(str(exc))
    if all(g is None for g in got):
        raise _never_closed(text, ParseError(problems[0]))
    return got, problems


@_guarded
def yes_no_from(data: Any, question_ids: list[str]) -> dict[str, dict[str, str]]:
    """`parse_yes_no` on an already decoded value (one item of a multi-item verdict): an object keyed by id, as
    `by_id` gives. Raises `ParseError`, also when `data` answers an id not in `question_ids` (the module doc)."""
    out = _answers(data, question_ids)  # (a missing or malformed answer is the first problem named)
    _refuse_unasked(data, question_ids)
    return out


def _answers(data: Any, question_ids: list[str]) -> dict[str, dict[str, str]]:
    # `yes_no_from` without the check for ids not asked (a grouped reply's part: the other parts' ids are in `data`).
    if not isinstance(data, dict):
        raise ParseError(f"expected an object of answers by question id, got {type(data).__name__}")
    missing = [q for q in question_ids if q not in data]
    if missing:
        raise ParseError(f"missing answers for {', '.join(missing)}")
    out: dict[str, dict[str, str]] = {}
    for q in question_ids:
        item = data[q]
        if not isinstance(item, dict):
            raise ParseError(f"{q}: expected an object with answer and reason")
        answer = _word(item.get("answer", ""))
        if answer is None:
            raise ParseError(f"{q}: answer must be yes or no, got {_shown(item.get('answer'))}")
        out[q] = {"answer": answer, "reason": str(item.get("reason", ""))}
    return out


def _refuse_unasked(data: Any, question_ids: list[str]) -> None:
    # An answer to an id not asked: an object holding an `answer` (a list entry too, keyed by `by_id`), or a bare
    # verdict word. A key holding something else (a summary, a note) answers nothing and is left alone.
    asked = set(question_ids)
    extra = [k for k, v in data.items() if k not in asked and ((isinstance(v, dict) and "answer" in v) or _word(v) is not None)]
    if extra:
        named = ", ".join(_cut(k, 40) for k in extra[:5]) + (f" and {len(extra) - 5} more" if len(extra) > 5 else "")
        raise ParseError(f"the reply answers {named}, which {'was' if len(extra) == 1 else 'were'} not asked (asked: "
                         f"{_cut(', '.join(question_ids), 200)}): the judge may be answering about another item; "
                         "answer exactly the asked question ids")


@_guarded
def parse_scale(text: str, lo: int, hi: int) -> dict[str, Any]:
    """`{"score": int in [lo, hi], "reason": str}`. Raises `ParseError`, also when the reply's JSON objects give two
    different valid grades (`grade_agreement`)."""
    try:
        grade_agreement(json_objects(text), lo, hi)
        return _first_valid(text, lambda data: scale_from(data, lo, hi))
    except ParseError as exc:
        raise _never_closed(text, exc) from None


@_guarded
def grade_agreement(verdicts: Iterable[Any], lo: int, hi: int) -> None:
    """Raises `ParseError` when two of `verdicts` are valid grades (`scale_from`) that differ: which one the judge
    meant is unknowable, as for a question answered both yes and no. Invalid ones (a decoy `{"score": 9}` on 1..5)
    do not count here."""
    first: int | None = None
    for data in verdicts:
        try:
            score = scale_from(data, lo, hi)["score"]
        except ParseError:
            continue
        if first is None:
            first = score
        elif score != first:
            raise ParseError(f"the grade is given twice, {first} and {score}; give one grade")


@_guarded
def scale_from(data: Any, lo: int, hi: int) -> dict[str, Any]:
    """`parse_scale` on an already decoded value (one item of a multi-item verdict). Raises `ParseError`."""
    if not isinstance(data, dict):
        raise ParseError(f"expected an object with score and reason, got {type(data).__name__}")
    score: Any = data.get("score")
    # (`NaN`, `Infinity` and `1e400` decode to floats that are not finite: int() of them raises)
    whole = isinstance(score, int) or (isinstance(score, float) and math.isfinite(score) and score.is_integer())
    if isinstance(score, bool) or not whole:
        raise ParseError(f"score must be an integer, got {_shown(score)}")
    if not lo <= int(score) <= hi:
        raise ParseError(f"score {_shown(score)} is outside the scale {lo}..{hi}")
    return {"score": int(score), "reason": str(data.get("reason", ""))}
