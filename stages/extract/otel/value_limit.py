"""JSON attribute values the OTel SDK cut at its attribute length limit (`OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`).

With a length limit set (the environment's `OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT`, or `SpanLimits(max_attribute_length=…)`)
the SDK keeps the first N characters of every longer string attribute and records nothing else: no count, no marker
(the Python SDK logs "String attribute value exceeds max length of N, truncating." in the recording process only).
An instrumentation that writes a body as JSON text (OpenInference's `input.value` / `output.value`, the GenAI
`gen_ai.input.messages`, pydantic-ai's `pydantic_ai.all_messages`) then leaves the start of a JSON document: read as
text it is a wrong answer (a LangGraph root's cut state dump taken for the graph's reply), read as JSON an error.

A value is taken as cut (`cut_at`) when it starts as JSON (`{` or `[`), does not decode, its decoding fails only at
its end (it is the start of some whole JSON text: a string left open, a bracket unclosed) and its length is a
plausible limit: a multiple of 8 or of 10 characters (1000, 2000, 4096, 8192…), at least 64, and no string attribute
of its trace is longer (the SDK cuts them all at one length: `mark_whole` keeps an application's own malformed or
self-cut text, a tool's `text[:1000]`, as the text it is). What it held is then read
from what else the span or its trace holds (`whole_items` keeps the array elements decoded before the cut), never from
the cut text; `warn_cut` says once per file which attributes were cut and at what length, and each case says what of
its own was (`cut_summary`: `metadata.otel.cut_attributes`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.said_once import first_time
from tracejudge.stages.load import JSON_ERRORS

__all__ = ["LIMIT_SETTING", "Whole", "cut_at", "mark_whole", "cut_note", "cut_summary", "warn_cut", "whole_items"]

log = get_logger("tracejudge.extract.otel")
LIMIT_SETTING = "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT"
_SHORTEST = 64
_TAIL = 6  # a decoder stopping within the last characters ran out of text (a literal or an escape cut part way)


class Whole(str):
    """An attribute value that reads as cut (`cut_at`) but is not: a longer string attribute of its trace shows that no
    length limit at its length was set (the SDK cuts every string attribute of the process at the same length). An
    application's own text, malformed or cut by the application (a tool returning `text[:1000]`), is so kept as the
    text the model was shown (`mark_whole`)."""

    __slots__ = ()


def mark_whole(traces: Iterable[list[Any]]) -> None:
    """Make `Whole` each string attribute of each trace's spans that `cut_at` takes for cut but that is shorter than the
    longest string attribute of its trace; the others, as long as the longest, stay as they were."""
    for spans in traces:
        longest = max((len(v) for s in spans for v in s.attrs.values() if isinstance(v, str)), default=0)
        for span in spans:
            for key, value in span.attrs.items():
                if isinstance(value, str) and len(value) < longest and cut_at(value) is not None:
                    span.attrs[key] = Whole(value)


def cut_at(value: Any) -> int | None:
    """The limit `value` was cut at (its length), when it is a JSON text cut short at a plausible limit; else `None`
    (for a `Whole` value too)."""
    if not isinstance(value, str) or type(value) is Whole or len(value) < _SHORTEST or value[:1] not in ("{", "[") or not _plausible(len(value)):
        return None
    try:
        json.loads(value)
    except json.JSONDecodeError as exc:
        return len(value) if exc.msg.startswith("Unterminated string") or exc.pos >= len(value) - _TAIL else None
    except JSON_ERRORS:
        return None
    return None


def _plausible(length: int) -> bool:
    return length % 8 == 0 or length % 10 == 0


def whole_items(value: str) -> list[Any]:
    """The elements of a cut JSON array that were whole before the cut (`[]` when it is no array or none was)."""
    decoder = json.JSONDecoder()
    out: list[Any] = []
    pos = _skip(value, 1) if value[:1] == "[" else len(value)
    while pos < len(value):
        try:
            item, pos = decoder.raw_decode(value, pos)
        except JSON_ERRORS:
            break
        pos = _skip(value, pos)
        if value[pos : pos + 1] != ",":  # (the cut fell after a whole element, before its comma)
            out.append(item)
            break
        out.append(item)
        pos = _skip(value, pos + 1)
    return out


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def cut_summary(spans: list[Any]) -> dict[str, Any] | None:
    """`{"limit", "spans", "attributes", "keys"}` of the values of `spans` cut at the length limit (`limit` the longest
    cut, `keys` the attributes' names, sorted); `None` when none was cut."""
    found = [(key, limit) for span in spans for key, value in span.attrs.items() if (limit := cut_at(value)) is not None]
    if not found:
        return None
    spans_cut = sum(1 for span in spans if any(cut_at(v) is not None for v in span.attrs.values()))
    return {"limit": max(n for _, n in found), "spans": spans_cut, "attributes": len(found), "keys": sorted({k for k, _ in found})}


def cut_note(span: Any, key: str, limit: int) -> str:
    """`span <id>: <key> was cut at <limit> characters …`, the words an error or a warning names a cut value with."""
    return (f"span {span.span_id}: {key} was cut at {limit} characters by the attribute length limit ({LIMIT_SETTING}) "
            "the recording ran under")


def warn_cut(spans: Iterable[Any]) -> None:
    """Say once per file which JSON attributes the length limit cut, on how many spans, and at what length.

    What they held is read from elsewhere where the span or trace holds it (a graph's answer from its last model
    reply, a request's messages from the requests beside it); the warning says so and how to record them whole.
    """
    by_file: dict[str, dict[str, list[str]]] = {}
    limits: dict[str, set[int]] = {}
    for span in spans:
        for key, value in span.attrs.items():
            limit = cut_at(value)
            if limit is not None:
                by_file.setdefault(span.file, {}).setdefault(key, []).append(span.name)
                limits.setdefault(span.file, set()).add(limit)
    for file, keys in by_file.items():
        if not first_time("value_length_limit", file):
            continue
        named = sorted(keys, key=lambda k: -len(keys[k]))
        what = [f"`{k}` of {len(keys[k])} span(s) ({', '.join(sorted(set(keys[k]))[:3])})" for k in named[:5]]
        more = f" and {len(named) - 5} more keys" if len(named) > 5 else ""
        at = " / ".join(str(n) for n in sorted(limits[file]))
        log.warning(f"otel: {file}: JSON attribute values were cut at {at} characters by the attribute length limit "
                    f"({LIMIT_SETTING}): {', '.join(what)}{more}. A cut value is never read as an answer, a request or a result: "
                    "what it held is read from the span's other attributes and the requests before and after it where they "
                    "hold it (a graph's answer from its last model reply, a tool's result from the request that replays it, "
                    "itself cut when that copy was), and a conversation whose messages nothing else holds is invalid_input; "
                    f"record with a higher limit, or none ({LIMIT_SETTING} unset, or TracerProvider(span_limits=SpanLimits("
                    "max_attribute_length=SpanLimits.UNSET))), to keep them whole")
