"""Whether a parsed line of `results.jsonl` holds a result as the readers use it, and if not, which field is wrong.

A run writes only results of that shape; a line that is not (a score of `NaN`, `Infinity` or `"high"` typed in by
hand, a `trial` of `"1"`) would otherwise reach a reader's arithmetic: `report` failed on `NaN` as an internal error,
`compare` on a string, and `export` wrote the text into its number column. Every reader of result lines checks them
here, so such a line is what a line that is not JSON already was: a damaged line, named by file, line and field.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from tracejudge.core.json_kind import json_kind
from tracejudge.core.records import Status

__all__ = ["check_score_values", "damaged_line_key", "json_line_problem", "line_problem", "result_problem", "score_value_problem"]

_SCORE_VALUE = "a score's value is a number from 0 to 1, or null"


def score_value_problem(value: Any) -> str | None:
    """What is wrong with a score's `value` (`NaN is not a number a score can hold (…)`), or None when it is a number in
    [0, 1] or None, as every figure of a run assumes (a metric's value outside it is written as null)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{_shown(value)} is not a number ({_SCORE_VALUE})"
    if not math.isfinite(value):
        return f"{_shown(value)} is not a number a score can hold ({_SCORE_VALUE})"
    if not 0.0 <= value <= 1.0:
        return f"{_shown(value)} is outside [0, 1] ({_SCORE_VALUE})"
    return None


def check_score_values(result: Any) -> None:
    """Raise `ValueError` naming the score (`scores.q.value: NaN is not a number a score can hold …`) of a validated
    `CaseResult` whose value no run writes: NaN, infinite or outside [0, 1] (a hand edit), which the figures would
    otherwise take in or fail on (pydantic's model takes NaN as a float)."""
    for name, score in result.scores.items():
        if (problem := score_value_problem(score.value)) is not None:
            raise ValueError(f"scores.{name}.value: {problem}")


def line_problem(exc: ValueError, line: bytes | str) -> str:
    """What is wrong with result line `line`, which a reader refused with `exc` (pydantic's `ValidationError` of
    `CaseResult.model_validate_json(line)`, or a `ValueError` naming its field), in one line of at most 200 characters:
    a validation error's first problem with its field (`scores.quality.value: Input should be a valid number`), not
    pydantic's header line ("1 validation error for CaseResult"), which says nothing of it; a line that is not JSON as
    `json_line_problem` says it."""
    from pydantic import ValidationError  # (here: only a damaged line is explained)

    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if errors and errors[0]["type"] == "json_invalid":
        return json_line_problem(line, exc)
    if errors:
        from tracejudge.core import suggest

        err = errors[0]
        return f"{'.'.join(map(str, err['loc'])) or '(root)'}: {suggest.message(err)}"[:200]
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


# pydantic's parser's place of an error: a line and column of the text it was given.
_PARSER_PLACE = re.compile(r" at line (\d+) column (\d+)$")


def json_line_problem(line: bytes | str, exc: ValueError) -> str:
    """`(root): invalid JSON: <what> at column N` for result line `line` that a JSON parser refused with `exc`: N is
    the character of that line (the file names the line), and "; the line ends early (it looks truncated)" follows
    for a line cut short (a run killed mid-write). pydantic's parser said where in its text it failed, which for a
    line cut inside a string is its newline: "at line 2 column 0", beside the file's own line number."""
    from tracejudge.stages.load import loads_line  # (here: only a damaged line is explained)

    try:
        loads_line(line)
    except ValueError as why:
        return f"(root): {why}"[:200]
    # (`json` reads what pydantic's parser refused, a lone surrogate say: its words, placed in the line alone)
    said = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if (m := _PARSER_PLACE.search(said)) is not None and m[1] == "1":
        said = said[:m.start()] + f" at column {m[2]}"  # (its columns count from 1, as `loads_line`'s do)
    return f"(root): invalid JSON: {said}"[:200]


def result_problem(data: Any) -> str | None:
    """`"field: what is wrong"` for a parsed result line that is not a result in the fields the readers use
    (`case_id`, `trial`, `status` (one a run writes), `tags`, `error`, `metadata`, `duration_s`, `scores` and each score's `value`,
    `passed`, `reason` and `judge` figures), or None when it is one. Cheap: no model is built."""
    if not isinstance(data, dict):
        return f"(root): expected a JSON object, got {json_kind(data)}"
    if not isinstance(data.get("case_id"), str):
        return "case_id: required, a string" + ("" if "case_id" not in data else f" (got {json_kind(data['case_id'])})")
    if not _whole(data.get("trial", 0)):
        return f"trial: {_shown(data['trial'])} is not a whole number"
    if (problem := _typed(data, (("status", str), ("error", dict), ("tags", list), ("metadata", dict), ("scores", dict)))) is not None:
        return problem
    if "status" in data and data["status"] not in _STATUSES:
        # (`report` refuses such a line; a reader that took it in would count a result no other reader counts)
        return f"status: {_shown(data['status'])} is not a status a run writes ({_STATUS_LIST})"
    if not _amount(data.get("duration_s")):
        return f"duration_s: {_shown(data['duration_s'])} is not a number of seconds"
    for name, score in (data.get("scores") or {}).items():
        if (problem := _score_problem(score)) is not None:
            return f"scores.{name}{problem}"
    return None


def _typed(data: dict[str, Any], fields: tuple[tuple[str, type], ...], prefix: str = "") -> str | None:
    """`"key: expected a string, got a number"` for the first of `fields` whose value is neither null nor of its type."""
    for key, kind in fields:
        if data.get(key) is not None and not isinstance(data[key], kind):
            return f"{prefix}{key}: expected {_NAMES[kind]}, got {json_kind(data[key])}"
    return None


def _whole(value: Any) -> bool:
    """True for what a result's `trial` may be as `report` reads it (pydantic's lax int): a whole number, also written
    `1.0` or `"1"`; the readers take it with `int()`."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, str) and value.strip().lstrip("+-").isdigit()


def _score_problem(score: Any) -> str | None:
    """`".value: …"` (the field inside the score, and what is wrong) for one score of a result line, or None."""
    if not isinstance(score, dict):
        return f": expected an object, got {json_kind(score)}"
    if (problem := score_value_problem(score.get("value"))) is not None:
        return f".value: {problem}"
    if score.get("passed") is not None and not isinstance(score["passed"], bool):
        return f".passed: expected true, false or null, got {_shown(score['passed'])}"
    if (problem := _typed(score, (("reason", str), ("judge", dict)), ".")) is not None:
        return problem
    judge = score.get("judge") or {}
    for key in ("input_tokens", "output_tokens"):
        count = judge.get(key)
        if count is not None and (type(count) is not int or count < 0):
            return f".judge.{key}: {_shown(count)} is not a whole number from 0"
    if not _amount(judge.get("cost_usd")):
        return f".judge.cost_usd: {_shown(judge['cost_usd'])} is not an amount of dollars"
    return None


def _amount(value: Any) -> bool:
    """True for None or a finite number from 0 (seconds, dollars)."""
    return value is None or (not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value) and value >= 0)


_NAMES = {str: "a string", dict: "an object", list: "a list"}
_STATUSES = tuple(s.value for s in Status)
_STATUS_LIST = ", ".join(_STATUSES[:-1]) + " or " + _STATUSES[-1]


def _shown(value: Any) -> str:
    """A value as the line holds it, cut short: `NaN`, `Infinity`, `"high"`, `true`."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    text = json.dumps(value)  # (ASCII: a control or bidirectional character of an edited line is shown escaped)
    return text if len(text) <= 40 else text[:39] + "…"


# A damaged line's case id and trial as a run writes them (first keys, compact JSON): read where the line is not JSON.
_PEEK_ID = re.compile(rb'"case_id"\s*:\s*("[^"\\]*(?:\\.[^"\\]*)*")')
_PEEK_TRIAL = re.compile(rb'"trial"\s*:\s*(\d{1,18})\s*[,}]')


def damaged_line_key(line: bytes, data: Any) -> tuple[str | None, int]:
    """The (case id, trial) a line of `results.jsonl` that is not a result (`data`: the line parsed, or None when it is
    not JSON) was written for, as far as it says: the id None when it names none, the trial 0 when it names none. The
    viewer's Case page of that case then says why it shows no result."""
    if isinstance(data, dict):
        cid, trial = data.get("case_id"), data.get("trial", 0)
        return (cid if isinstance(cid, str) else None), (int(trial) if _whole(trial) else 0)
    m = _PEEK_ID.search(line)
    try:
        cid = json.loads(m.group(1)) if m is not None else None
    except ValueError:
        cid = None
    t = _PEEK_TRIAL.search(line)
    return cid, int(t.group(1)) if t is not None else 0
