"""Text of a record that no UTF-8 file can hold: a lone surrogate (`"\\ud800"`, half of a UTF-16 pair, as a model's
reply or a user's message cut mid-emoji records) is read as U+FFFD, with one warning naming the record and the field,
as `otel` reads span text and a judge is sent such text. Shared by the formats that build a case's fields as a mapping
(`tau-bench`, `tau2-bench`, `openai-messages`, `anthropic-messages`, `json-path`), which name the field as the record
holds it; every other format's case (a user adapter's, a span reader's) gets the same at the end (`settled_case`),
naming the case's field.

Kept as it was, the record scored its case while `tracejudge extract` refused it under its field (a case written out
must be UTF-8), and the judge read U+FFFD anyway. A tool call's name and arguments, a call the case expects included,
are not text: one holding a lone surrogate is the record's `invalid_input` (`call_problem`), in both commands alike.
The labels of its result (id, tags, metadata) are left as they are: a changed id could become another case's; the
engine refuses a record whose labels UTF-8 cannot carry (`engine.admit`, `engine.unwritable`), and so does `extract`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from tracejudge.core.log import get_logger

__all__ = ["LABELS", "call_problem", "mended_case", "record_named", "settled_case"]

log = get_logger("tracejudge.extract")

# A JSON escape of half a UTF-16 pair left in text: arguments kept as JSON text decode to a lone surrogate later.
_ESCAPED_HALF = re.compile(r"\\u[dD][89a-fA-F]")
_HALF = "half of a UTF-16 pair, no character on its own"
# A case's fields that label its result rather than say what happened: kept as recorded (`mended_case`).
LABELS = frozenset({"id", "tags", "metadata"})


def mended_case(body: dict[str, Any], who: str, *, fmt: str, sources: Iterable[Any] = (), keep: frozenset[str] = LABELS) -> dict[str, Any]:
    """`body` (a `Case`'s fields, as an adapter built them) with each lone surrogate of its text replaced by U+FFFD;
    `body` itself when it holds none. `who` names the record in the warning (`run 0-0`, `chats.jsonl:4 (chat-4)`),
    `fmt` the format; the field named is the first holding one in `sources` (the record as read: `messages[1].content`),
    else in `body`. The top-level fields in `keep` are left as they are (`LABELS`: the id, tags and metadata, which
    name and group results: the engine refuses a record whose labels UTF-8 cannot carry, in every command). Warns once
    per record.

    Raises `AdapterError` naming the field when a tool call's name or arguments hold one (`call_problem`)."""
    try:
        dumped = json.dumps(body, ensure_ascii=False)
        dumped.encode("utf-8")  # (a walk of the text in C: most records hold no surrogate)
        if not _ESCAPED_HALF.search(dumped):
            return body
    except UnicodeEncodeError:
        pass
    except (TypeError, ValueError, RecursionError):  # (no JSON form: the case's own validation says why)
        return body
    from tracejudge.stages.extract.common import fail
    from tracejudge.stages.extract.multivon_text import mended
    from tracejudge.stages.extract.surrogates import surrogate_field

    from tracejudge.stages.load.framing import quieted

    if (problem := call_problem(body)) is not None:
        fail(f"{problem[0]}: {problem[1]}", field=problem[0], case_id=str(body.get("id")))
    rest = {k: v for k, v in body.items() if k not in keep}
    try:
        json.dumps(rest, ensure_ascii=False).encode("utf-8")
        return body  # (only escaped text, `\\ud800` written out in a message, or a label, which the engine refuses)
    except UnicodeEncodeError:
        pass
    unlabelled = ({k: v for k, v in src.items() if k not in keep} if isinstance(src, dict) else src for src in sources)
    field = next((f for f in map(surrogate_field, unlabelled) if f is not None), None) or surrogate_field(rest)
    if not quieted():  # (a look at the first records before the run's own read, which warns of them)
        log.warning(f"{fmt}: {who}: {field} holds a lone surrogate ({_HALF}), which no UTF-8 text can hold: read as U+FFFD")
    return mended(body, keep=keep)


def settled_case(case: Any, fmt: str, place: str) -> Any:
    """`case` (a `Case` format `fmt` made of the record at `place`, `runs.jsonl:4`) as `mended_case` leaves its fields:
    the same object when UTF-8 can carry all of its text (or all but its labels, `LABELS`, which the engine refuses), else a new
    `Case` with U+FFFD in place of each lone surrogate, warned of once, naming the case's field (`trace.output`).

    Raises `AdapterError` naming the field when a tool call's name or arguments hold one (`call_problem`)."""
    from tracejudge.core.utf8 import safe_text

    try:
        case.model_dump_json()  # (in Rust: most cases hold no surrogate, and this is all they cost)
        return case
    except ValueError:
        pass
    body = case.model_dump(exclude_defaults=True)
    mended = mended_case(body, record_named(place, safe_text(case.id)), fmt=fmt)
    return case if mended is body else type(case).model_validate(mended)


def record_named(place: str, case_id: str) -> str:
    """A JSONL record as a warning names it: `chats.jsonl:4 (chat-4)`, or its place alone when that is its id."""
    return place if case_id == place else f"{place} ({case_id})"


def call_problem(body: dict[str, Any]) -> tuple[str, str] | None:
    """`(field, why)` for the first tool call of `body` (`trace.steps[i].tool_calls[j]`, `expected_tool_calls[k]`) whose
    name or arguments hold a lone surrogate, arguments given as JSON text decoded as the case decodes them; None: none does.
    """
    from tracejudge.core.record_fields import decode_arguments
    from tracejudge.core.utf8 import encodable
    from tracejudge.stages.extract.surrogates import surrogate_field

    steps = (body.get("trace") or {}).get("steps") if isinstance(body.get("trace"), dict) else None
    calls = [(f"trace.steps[{i}].tool_calls[{j}]", call) for i, step in enumerate(steps if isinstance(steps, list) else [])
             if isinstance(step, dict) and isinstance(step.get("tool_calls"), list) for j, call in enumerate(step["tool_calls"])]
    expected = body.get("expected_tool_calls")
    calls += [(f"expected_tool_calls[{k}]", call) for k, call in enumerate(expected if isinstance(expected, list) else [])]
    for at, call in calls:
        if not isinstance(call, dict):
            continue
        if isinstance(call.get("name"), str) and not encodable(call["name"]):
            return f"{at}.name", f"expected the tool's name; it holds a lone surrogate ({_HALF})"
        args = call.get("arguments")
        decoded = decode_arguments(args)[0] if isinstance(args, str) and encodable(args) else args
        if (inner := surrogate_field(decoded)) is not None:
            where = f"{at}.arguments" + ("" if inner == "reply" else inner if inner.startswith("[") else f".{inner}")
            return where, f"the call's arguments hold a lone surrogate ({_HALF}), which no UTF-8 file can hold"
    return None
