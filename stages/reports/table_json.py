"""The report's case table as JSON text: what `report.html` embeds for its script, made without parsing what need not be.

The table is `json.dumps([vars(row) for row in rows], ensure_ascii=False, separators=(",", ":"))`, to the
byte. A row of a result rendered where it was scored (`engine.rendered.Finished`) is cut from its
rendered line instead: each score's reason is there already as JSON text, escaped as `json.dumps` escapes
it (pydantic writes the same escapes for every character a `str` it can write holds). Parsing that line
and writing the reasons out again cost ~50 ms for the 2,000 rows of a 10,000-case run; cutting it costs a
third of that. A line whose layout is not the one read here takes the general path, with the same text.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring
from typing import Any

from tracejudge.core.records import Score
from tracejudge.core.shown_calls import lists_past_the_cap
from tracejudge.engine.rendered import Finished

__all__ = ["table_json"]

_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_STR = frozenset({str})
# Between one score's reason and the next field: no JSON string holds it (its `"` would be escaped), so in a
# rendered line it occurs once per score, right after the reason, unless tags, metadata or details hold it too.
_REASON_END = b'","details":'
# The rendered line's scores are `Score`s written field by field in this order (`model_dump_json`): what is cut relies on it.
_LAYOUT = tuple(Score.model_fields) == ("value", "passed", "reason", "details", "judge")


def table_json(entries: Iterable[Any], row: Callable[[Any], Any]) -> str:
    """The inside of the JSON array of the table's rows, in order: `row(entry)` is an entry's `CaseRow` (made only when it must be).

    An entry is a `CaseRow` or a `Finished`; `"[" + text + "]"` is what `json.dumps` (compact, non-ASCII kept)
    writes for the list of every entry's `vars(row(entry))` (the brackets are left to the page, which copies the
    text once more anyway). Rows made one after another are written by one call.
    """
    parts: list[str] = []
    plain: list[dict[str, Any]] = []
    keys: dict[str, tuple[str, bytes]] = {}
    values = {b"null": "null"}
    for entry in entries:
        text = _rendered_row(entry, keys, values) if type(entry) is Finished and _LAYOUT else None
        if text is None:
            plain.append(vars(row(entry)))
            continue
        if plain:
            parts.append(_ENCODE(plain)[1:-1])
            plain = []
        parts.append(text)
    if plain:
        parts.append(_ENCODE(plain)[1:-1])
    return ",".join(parts)


def _rendered_row(done: Finished, keys: dict[str, tuple[str, bytes]], values: dict[bytes, str]) -> str | None:
    """`json.dumps` of the `CaseRow` of `done` (`cases.finished_dict`), from its rendered line; None when the line cannot be cut.

    The line's scores are its cells' keys, in order (`render` makes both from one dict). Split where each
    reason ends, the line (UTF-8) gives one piece per score, each ending `"key":{"value":V,"passed":P,"reason":"R`;
    any other count (tags, metadata or details holding the split text too) takes the general path. Only the
    reasons are decoded. `keys` remember each key's JSON (and the piece's head it ends), `values` each value's
    as `json.dumps` writes it, across rows. A result whose agent run ended in an error (`metadata.run_error`, which the
    row shows) takes the general path.
    """
    tags, cells = done.tags, done.scores
    if done.metadata.get("run_error"):
        return None
    pieces = done.rendered.middle.split(_REASON_END)
    if len(pieces) != len(cells) + 1 or type(done.case_id) is not str or not {*map(type, tags)} <= _STR:
        return None
    scores = []
    for key, piece in zip(cells, pieces):
        # (R, P and V hold none of the separators, so the last of each is theirs.)
        head, _, reason = piece.rpartition(b',"reason":"')
        if lists_past_the_cap(reason):
            return None  # (its lists of calls are shown capped: `cases._row`)
        head, _, passed = head.rpartition(b',"passed":')
        head, _, value = head.rpartition(b'{"value":')
        known = keys.get(key)
        if known is None:
            key_json = encode_basestring(key)
            known = keys[key] = (key_json, (key_json + ":").encode("utf-8", "surrogatepass"))
        key_json, key_head = known
        if not head.endswith(key_head) or passed not in (b"true", b"false", b"null"):
            return None
        value_json = values.get(value)
        if value_json is None:
            value_json = _number(value)
            if value_json is None:
                return None
            values[value] = value_json
        scores.append(f'{key_json}:{{"value":{value_json},"passed":{passed.decode()},"reason":"{reason.decode()}"}}')
    return (f'{{"case_id":{encode_basestring(done.case_id)},"trial":{int(done.trial)},"status":"ok","scores":{{{",".join(scores)}}},'
            f'"error":"","tags":[{",".join(map(encode_basestring, tags))}],"run_error":""}}')


def _number(text: bytes) -> str | None:
    """The number JSON `text` parses to, as `json.dumps` writes it; None for anything else (and for what JSON cannot carry)."""
    try:
        if b"." in text or b"e" in text or b"E" in text:
            number = float(text)
            return repr(number) if number - number == 0.0 else None  # (an infinity or NaN: the line would say null)
        return str(int(text))
    except ValueError:
        return None
