"""From a reply's text to answers by question id, and from answers to the metric's score; how a plan's questions are grouped into requests."""

from __future__ import annotations

from typing import Any

from tracejudge.core.records import Score
from tracejudge.stages.judge.base import Plan, Question
from tracejudge.stages.judge.lenient_json import invalid_json, may_relax, relaxed
from tracejudge.stages.judge.parse import ParseError, check_agreement, grade_agreement, json_objects, parse_parts, parse_scale, parse_yes_no

__all__ = ["ENDED_AFTER_VERDICT", "finish", "parse_answers", "question_groups", "ran_on_in_whitespace", "verdict_before_whitespace"]


def parse_answers(plan: Plan, questions: list[Question], text: str) -> dict[str, dict[str, Any]]:
    """Answers by question id (`q1`…; a grouped plan's `TC1`…); raises `ParseError`.

    For a grouped plan only the metrics whose every answer is usable are
    returned (the caller re-asks the others alone); none usable is an error.
    A reply that is not valid JSON is read again leniently (`lenient_json.relaxed`: trailing commas and comments
    dropped); a verdict read so is taken and said in `plan.note` (the score's reason) and in each answer's
    `read_leniently`, with json's error. Otherwise
    the error says the JSON is invalid and where, before what the strict reading found wrong. A verdict read strictly
    is refused when an object only the lenient reading sees grades or answers otherwise (`_agrees_leniently`).
    """
    try:
        got = _strict(plan, questions, text)
    except ParseError as exc:
        bad = invalid_json(text)
        if not bad:
            raise
        again = relaxed(text)
        try:
            got = _strict(plan, questions, again[0]) if again is not None else None
        except ParseError:
            got = None
        if got is None or again is None:
            raise ParseError(f"the reply is not valid JSON ({bad}), so its verdict could not be read (of the objects that could: {exc})") from None
        note = f"the verdict was read leniently: the reply is not valid JSON ({bad}); {' and '.join(again[1])} dropped"
        plan.note = "; ".join(filter(None, [plan.note, note])) if note not in plan.note else plan.note
        # (in each answer too: the cache keeps answers, not the note, so a run answered from it still says so in details)
        return {q: {**a, "read_leniently": note} for q, a in got.items()}
    _agrees_leniently(plan, questions, text)
    return got


def _agrees_leniently(plan: Plan, questions: list[Question], text: str) -> None:
    """Raises `ParseError` when `text`, read leniently, grades twice differently or answers a question both yes and no.

    The strict reading skips an invalid object: `{"score": 4} {"score": 2,}` read as 4, while the same second verdict
    without its comma was refused. Every object of the reply counts, leniently read or not."""
    if not may_relax(text):
        return  # (nothing `relaxed` would drop: no reading but the strict one, and no JSON decoded again for every reply)
    bad = invalid_json(text)
    again = relaxed(text) if bad else None
    if again is None:
        return
    try:
        if plan.kind == "scale":
            grade_agreement(json_objects(again[0]), *plan.scale)
        else:
            check_agreement(again[0], [plan.full_id(q) for q in questions] if not plan.parts else [q.id for q in questions])
    except ParseError as exc:
        raise ParseError(f"{exc} (read leniently: the reply is not valid JSON ({bad}); {' and '.join(again[1])} dropped)") from None


# Said in each answer (`details.answers.<id>.reply_ended`) of a verdict taken from a reply that ran on to the length limit.
ENDED_AFTER_VERDICT = ("at the length limit (finish_reason length), in whitespace after this complete verdict: the verdict was "
                       "taken; the tokens after it were spent on nothing (a JSON grammar lets a model write whitespace until max_tokens)")


def ran_on_in_whitespace(text: str) -> str | None:
    """`text` without the whitespace it ran on in after a closing `}` (or a code fence's closing ```), `None` when it
    does not end so: the text in which `verdict_before_whitespace` (and `tracejudge bench`) look for a whole verdict."""
    whole = text.rstrip()
    return whole if whole != text and whole.endswith(("}", "```")) else None


def verdict_before_whitespace(plan: Plan, questions: list[Question], text: str) -> dict[str, dict[str, Any]] | None:
    """The answers of a reply cut at the length limit whose verdict was complete before it ran on in whitespace alone
    (`{…}` then 400 newlines: the cut fell on nothing but whitespace), each marked `reply_ended`; `None` for any other
    reply (text after the verdict, a verdict that does not parse or never closed), which stays cut."""
    whole = ran_on_in_whitespace(text)
    if whole is None:
        return None
    try:
        answers = parse_answers(plan, questions, whole)
    except ParseError:
        return None
    return {q: {**a, "reply_ended": ENDED_AFTER_VERDICT} for q, a in answers.items()}


def _strict(plan: Plan, questions: list[Question], text: str) -> dict[str, dict[str, Any]]:
    if plan.kind == "scale":
        return {questions[0].id: parse_scale(text, *plan.scale)}
    if plan.parts:
        wanted = {q.id for q in questions}
        parts = [[q for q in (p.full_id(x) for x in p.questions) if q in wanted] for p in plan.parts]
        got, _ = parse_parts(text, [ids for ids in parts if ids])
        return {k: v for answers in got if answers is not None for k, v in answers.items()}
    got = parse_yes_no(text, [plan.full_id(q) for q in questions])
    return {q.id: got[plan.full_id(q)] for q in questions}


def finish(plan: Plan, answers: dict[str, Any]) -> Score:
    """The metric's score from `answers`; for a grouped plan a carrier whose `details.answers` holds the answers
    by prompt id (`TC1`…), which `tracejudge.stages.judge.grouped.split` turns into each metric's score."""
    if plan.parts:
        return Score(value=None, passed=None, reason="grouped answers", details={"answers": answers})
    return plan.metric.finalize(plan, answers)


def question_groups(plan: Plan, one_per_request: bool) -> list[list[Question]]:
    """The questions of `plan` as `Judge.judge` asks them, one request per group: each alone (`one_per_request`, yes/no) or all together."""
    return [[q] for q in plan.questions] if one_per_request and plan.kind == "yes_no" else [plan.questions]
