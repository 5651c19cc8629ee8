"""Strict parsing of judge verdicts.

Tolerated: the JSON object alone, inside a fenced code block, or surrounded
by prose (the first balanced `{…}` is taken). Not tolerated: anything that
is not a JSON object with exactly the asked question ids — a near-miss like
`GRADE: CI` or `q1: yes` lines is a parse failure, which the judge answers
with one repair request and then `judge_error` with the raw text kept.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["ParseError", "extract_json", "parse_scale", "parse_yes_no", "scale_from", "yes_no_from"]

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)


class ParseError(ValueError):
    """The judge's text is not a valid verdict; the message says what was wrong."""


def _balanced_object(text: str) -> str | None:
    start = text.find("{")
    while start != -1:
        depth, in_str, esc = 0, False, False
        for i in range(start, len(text)):
            c = text[i]
            if in_str:
                if esc:
                    esc = False
                elif c == "\\":
                    esc = True
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return text[start : i + 1]
        start = text.find("{", start + 1)
    return None


def extract_json(text: str) -> dict[str, Any]:
    """The JSON object in `text` (bare, fenced, or inside prose). Raises `ParseError`."""
    candidates = [text.strip()]
    candidates += [m.strip() for m in _FENCE.findall(text)]
    obj = _balanced_object(text)
    if obj:
        candidates.append(obj)
    for cand in candidates:
        try:
            value = json.loads(cand)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise ParseError("no JSON object found in the reply")


def parse_yes_no(text: str, question_ids: list[str]) -> dict[str, dict[str, str]]:
    """`{qid: {"answer": "yes"|"no", "reason": str}}` for exactly `question_ids`. Raises `ParseError`.

    Answers are compared case-insensitively after trimming; a missing id, an
    extra id, or an answer other than yes/no is an error.
    """
    return yes_no_from(extract_json(text), question_ids)


def yes_no_from(data: Any, question_ids: list[str]) -> dict[str, dict[str, str]]:
    """`parse_yes_no` on an already decoded value (one item of a multi-item verdict). Raises `ParseError`."""
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
        answer = str(item.get("answer", "")).strip().lower()
        if answer not in ("yes", "no"):
            raise ParseError(f"{q}: answer must be yes or no, got {item.get('answer')!r}")
        out[q] = {"answer": answer, "reason": str(item.get("reason", ""))}
    return out


def parse_scale(text: str, lo: int, hi: int) -> dict[str, Any]:
    """`{"score": int in [lo, hi], "reason": str}`. Raises `ParseError`."""
    return scale_from(extract_json(text), lo, hi)


def scale_from(data: Any, lo: int, hi: int) -> dict[str, Any]:
    """`parse_scale` on an already decoded value (one item of a multi-item verdict). Raises `ParseError`."""
    if not isinstance(data, dict):
        raise ParseError(f"expected an object with score and reason, got {type(data).__name__}")
    score = data.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or score != int(score):
        raise ParseError(f"score must be an integer, got {score!r}")
    if not lo <= int(score) <= hi:
        raise ParseError(f"score {score} is outside the scale {lo}..{hi}")
    return {"score": int(score), "reason": str(data.get("reason", ""))}
