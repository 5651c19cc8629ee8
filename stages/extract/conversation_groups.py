"""Traces of one conversation read as one case, for the native trace formats (`openai-agents`, `langfuse`, `mlflow`).

A chat application writes a trace per user turn and marks the turns of one conversation with a key:
the OpenAI Agents SDK its trace's `group_id` (linking "multiple traces from the same conversation";
a chat thread id), Langfuse its trace's `sessionId`, MLflow 3 the trace metadata `mlflow.trace.session`. Judged one
trace at a time, each turn is judged without the turns before it. With `group_by: conversation` (these
formats' default, as format `otel`'s) the traces that carry the same key are one case:

- its turns are the traces in the order they started (file order when a trace has no start time),
  built into spans by the format and joined into one group for the `otel` assembler (`join_spans`),
  so user turns, calls, answers and usage follow the same rules as an `otel` conversation; tokens are
  summed over every trace's requests;
- its id is the key's value (as `otel` names a conversation), or, for a key a reader could not tell from another
  by looking (`thread-1 ` beside `thread-1`: whitespace at either end, a character that prints as nothing), that value
  in JSON quotes (`"thread-1 "`): the SDKs keep a key as the application wrote it and group by the exact text, so two
  such keys are two conversations, and their case ids must show it (`case_id_of`); `metadata.<format>.traces` lists the trace
  ids in turn order, so each trace stays recoverable; the format's other trace fields keep the first
  trace's value, and its lists (errors, duplicates, …) are joined in turn order (`merged`);
- a trace without a key (none, or empty text) is a case of its own, as with `group_by: trace`.

Reading: nothing in an export says a conversation is over (a user may come back hours later; the Agents
SDK's exporter writes traces as they end), so a trace with a key is held until the whole input is read:
lone traces come out as they are read, the conversations after them, in the order each was first seen.
Held traces are kept as their JSON text on a spool (`Holder`: in memory up to `_IN_MEMORY` bytes, then in
a temporary file) with only their key, id, start and place in memory, so memory does not grow with the file.
`dataset.limit` counts cases (a conversation is one), but the whole input is read before the first conversation.

What is refused, one trace at a time (the others read on):

- a key that is neither text nor a number (`{"id": …}`, a list) is an `invalid_input` naming the key's field;
- a trace the format cannot read (no spans, a span without its type: the format's own check) is read as a
  case of its own, which reports that error naming its field as before; its conversation is read without
  it and lists its id in `metadata.<format>.left_out`;
- a trace id read twice in conversations: an identical copy (an exporter's retry) is read once; a copy that
  differs, or names another conversation, is an `invalid_input` naming the line of the copy that is read.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from tracejudge.stages.extract.common import JsonLine, fail, json_type
from tracejudge.stages.extract.errors import AdapterError
from tracejudge.stages.load import RawRecord, loads_line, read_jsonl, too_deep

if TYPE_CHECKING:  # (only named: format `otel`'s spans read their keys with `key_of`, so a run-time import would be a cycle)
    from tracejudge.stages.extract.otel.spans import Span

__all__ = ["GROUP_BY", "Conversation", "Holder", "Refused", "Seen", "case_id_of", "conversation_parts", "group_lines", "join_spans",
           "key_of", "merged", "total"]

GROUP_BY = Literal["conversation", "trace"]
"""`dataset.options.group_by` of the native trace formats: one case per conversation (default) or per trace."""

_IN_MEMORY = 32 << 20  # held traces' text kept in memory up to this, then in a temporary file


@dataclass(frozen=True)
class Refused:
    """The raw record of a trace the reader refused (a bad key, a conflicting copy): `adapt` raises its error."""

    message: str
    field: str | None
    case_id: str | None

    def fail(self) -> NoReturn:
        """Raise the `AdapterError` this refusal stands for."""
        fail(self.message, field=self.field, case_id=self.case_id)


@dataclass
class Conversation:
    """The raw record of one conversation: its key, and per trace (in turn order) its JSON text and where it was read.

    `left_out` are the ids of the conversation's traces that were read as cases of their own (the format could not read them).
    """

    key: str
    traces: list[bytes]
    places: list[tuple[str, int]]
    left_out: list[str] = field(default_factory=list)

    @property
    def case_id(self) -> str:
        """The id of the conversation's case: its key, shown so that no two keys look alike (`case_id_of`)."""
        return case_id_of(self.key)


def case_id_of(key: str) -> str:
    """The case id of conversation `key`: the key itself, or the key in JSON quotes when it could pass for another.

    The Agents SDK (`group_id`), Langfuse (`session_id`) and MLflow (`mlflow.trace.session`) keep a key verbatim and
    group by its exact text, so `"thread-1 "` and `"thread-1"` are two conversations; printed bare, both cases would
    read `thread-1`. A key with whitespace at either end, or a character that prints as nothing (a tab, a zero-width
    space), is quoted with those characters escaped (`"thread-1 "`, `"t-1\\u200b"`); so is a key already wrapped in
    double quotes, so a quoted id never equals another key's bare one. Any other key is its own id, as before.
    """
    wrapped = len(key) >= 2 and key[0] == key[-1] == '"'
    if key == key.strip() and key.isprintable() and not wrapped:
        return key
    body = json.dumps(key, ensure_ascii=False)[1:-1]
    # `json.dumps` leaves characters past ASCII raw: escape the ones a reader cannot see (a no-break or zero-width space).
    return '"' + "".join(c if c == " " or (c.isprintable() and not c.isspace()) else json.dumps(c)[1:-1] for c in body) + '"'


def key_of(value: Any, name: str) -> tuple[str | None, str | None]:
    """`(key, problem)` of a trace's conversation key `value`, read from the field `name` (the field the caller's refusal names).

    Text is the key, a whole number its text; `None` and empty or blank text are no key (a blank id names no
    conversation: as its case id it would be refused). Anything else (a boolean, a fraction, a list) is no key and a
    problem saying what the field holds. The problem does not start with `name`: it goes out as an `invalid_input`
    whose field is `name`, which the report prints before the message already (`…:2: trace.group_id (t1): expected …`).
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, None
    if isinstance(value, str):
        return value, None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value), None
    # A fraction is shown (`got 42.0`, as multivon's `case_id`): "got a number" would contradict the whole numbers read.
    got = repr(value) if isinstance(value, float) else json_type(value)
    return None, (f"expected the id of the trace's conversation (text or a whole number), got {got}; the trace is not read "
                  "(dataset.options.group_by: trace reads each trace alone, without the key)")


@dataclass(slots=True)
class _Held:
    trace_id: str
    start: int | None
    file: str
    line: int
    offset: int
    size: int
    order: int


@dataclass(slots=True)
class _Place:
    key: str
    file: str
    line: int
    digest: bytes


class Holder:
    """The traces with a conversation key, held until the input is read; then one `Conversation` record per key.

    `name` is the key's field as errors name it (`trace.group_id`, `sessionId`).
    Use it as a context manager, or call `close`, to free the spool.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._spool = tempfile.SpooledTemporaryFile(max_size=_IN_MEMORY)
        self._groups: dict[str, list[_Held]] = {}
        self._seen: dict[str, _Place] = {}
        self._left_out: dict[str, list[str]] = {}
        self._count = 0

    def __enter__(self) -> Holder:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Free the spool (its temporary file, if it grew into one)."""
        self._spool.close()

    def hold(self, key: str, trace_id: str, start: int | None, file: str, line: int, data: bytes) -> Refused | None:
        """Hold one trace (`data`: its JSON text) of conversation `key`; a `Refused` when the trace cannot be.

        A copy identical to one held already is dropped (`None`); a copy that differs, or is held under
        another key, is refused, naming where the held one was read.
        """
        digest = hashlib.blake2b(data, digest_size=16).digest()
        place = self._seen.get(trace_id)
        if place is not None:
            if place.key == key and place.digest == digest:
                return None  # an exporter's retry, a file read twice: the same trace
            there = f"line {place.line}" if place.file == file else f"{place.file}:{place.line}"
            if place.key != key:
                why = (f"trace {trace_id} is in conversation {place.key!r} ({self.name} at {there}) and here in {key!r}: a trace "
                       "belongs to one conversation, so this copy is not read")
            else:
                why = f"trace {trace_id} was read at {there} with other content: the first copy is read, this one is not"
            return Refused(why, self.name, trace_id)
        offset = self._spool.seek(0, 2)
        self._spool.write(data)
        self._groups.setdefault(key, []).append(_Held(trace_id, start, file, line, offset, len(data), self._count))
        self._seen[trace_id] = _Place(key, file, line, digest)
        self._count += 1
        return None

    def join(self, key: str, into: str) -> None:
        """Hold the traces of conversation `key` as traces of conversation `into` (found to go on it by another way than a key)."""
        self._groups.setdefault(into, []).extend(self._groups.pop(key, []))

    def leave_out(self, key: str, trace_id: str) -> None:
        """Note that a trace of conversation `key` was read as a case of its own (the format cannot read it)."""
        self._left_out.setdefault(key, []).append(trace_id)

    def conversations(self) -> Iterator[RawRecord]:
        """One record per conversation, in the order each was first seen; its traces in the order they started.

        The record's file and line are its first turn's. When a trace has no start time the file order is the turn order.
        """
        for key, held in self._groups.items():
            timed = all(h.start is not None for h in held)
            turns = sorted(held, key=lambda h: (h.start, h.order) if timed else (h.order,))  # type: ignore[arg-type, return-value]
            traces = []
            for h in turns:
                self._spool.seek(h.offset)
                traces.append(self._spool.read(h.size))
            first = turns[0]
            yield RawRecord(first.file, first.line, Conversation(key, traces, [(h.file, h.line) for h in turns], self._left_out.get(key, [])))


@dataclass(frozen=True)
class Seen:
    """What `group_lines` needs of one decoded trace record: its id, its key's value (as recorded), its start (ns) and
    whether the format can read it (`readable`: the format's own check; a trace it cannot read is a case of its own)."""

    trace_id: str
    key: Any
    start: int | None
    readable: bool


def group_lines(dataset: Any, name: str, marker: bytes, identify: Callable[[dict[str, Any]], Seen | None]) -> Iterator[RawRecord]:
    """The records of a JSONL file of one trace per line (`dataset.path`), the traces of a conversation as one.

    A line is yielded as it is read (a `JsonLine`, as `common.read_lines` gives it) unless it holds a key:
    then it is held for its conversation (`Holder`), or refused (`Refused`: a bad key, a conflicting copy).
    Only lines holding `marker` (the key's name, as bytes) are decoded here; `identify(record)` tells of
    such a decoded line what `Seen` holds, `None` for a line that is no trace the format reads (it goes to
    `adapt` as it is, which names the problem). `dataset.limit` counts records yielded.
    """
    stem = Path(dataset.path).name
    count = 0
    with Holder(name) as holder:
        for raw in read_jsonl(dataset.path):  # (no limit: a conversation's last turn may be the file's last line)
            if dataset.limit is not None and count >= dataset.limit:
                return
            out: RawRecord | None = raw
            if raw.error is None:
                data = raw.payload
                raw.payload = JsonLine(data, f"{stem}:{raw.line}")
                out = _placed(holder, raw, data, marker, identify)
            if out is not None:
                count += 1
                yield out
        for record in holder.conversations():
            if dataset.limit is not None and count >= dataset.limit:
                return
            count += 1
            yield record


def _placed(holder: Holder, raw: RawRecord, data: bytes, marker: bytes, identify: Callable[[dict[str, Any]], Seen | None]) -> RawRecord | None:
    """`raw` to yield now, a refusal in its place, or `None` when its trace is held for its conversation."""
    if marker not in data or too_deep(data):
        return raw
    try:
        record = loads_line(data)
    except ValueError:
        return raw  # `adapt` says what is wrong with the line
    seen = identify(record) if isinstance(record, dict) else None
    if seen is None:
        return raw
    key, problem = key_of(seen.key, holder.name)
    if problem is not None:
        return RawRecord(raw.file, raw.line, Refused(problem, holder.name, seen.trace_id), end=raw.end)
    if key is None:
        return raw
    if not seen.readable:
        holder.leave_out(key, seen.trace_id)
        return raw  # a case of its own: `adapt` names what it cannot read, as for any trace
    refused = holder.hold(key, seen.trace_id, seen.start, raw.file, raw.line, data)
    return RawRecord(raw.file, raw.line, refused, end=raw.end) if refused is not None else None


def conversation_parts(conversation: Conversation, build: Callable[[bytes], Any]) -> list[Any]:
    """`build(trace_json)` for each trace of `conversation`, in turn order.

    An `AdapterError` of one trace fails the conversation, under its key, its message naming the trace's place.
    """
    out = []
    for data, (file, line) in zip(conversation.traces, conversation.places):
        try:
            out.append(build(data))
        except AdapterError as exc:
            raise AdapterError(f"conversation {conversation.key!r}, its trace at {file}:{line}: {exc}", field=exc.field,
                               case_id=conversation.case_id) from None
    return out


def join_spans(traces: list[list[Span]]) -> list[Span]:
    """The spans of a conversation's traces as one list, each span id once.

    Each span keeps its own trace id (the assembler tells turns apart by it). A span id an earlier trace
    used already (an id a format made up for a span without one, `#3`) becomes `<trace id>/<span id>`, in
    its children's parent links too, so no span hangs from another trace's.
    """
    seen: set[str] = set()
    out: list[Span] = []
    for spans in traces:
        clash = {s.span_id for s in spans} & seen
        for s in spans if clash else ():
            if s.span_id in clash:
                s.span_id = f"{s.trace_id}/{s.span_id}"
            if s.parent_id in clash:
                s.parent_id = f"{s.trace_id}/{s.parent_id}"
        seen.update(s.span_id for s in spans)
        out.extend(spans)
    return out


def merged(infos: list[dict[str, Any]]) -> dict[str, Any]:
    """One conversation's `metadata.<format>` from its traces' (in turn order): lists joined, any other value the first trace's."""
    out: dict[str, Any] = {}
    for info in infos:
        for k, v in info.items():
            if isinstance(v, list):
                out[k] = [*out.get(k, []), *v]
            else:
                out.setdefault(k, v)
    return out


def total(values: list[float | None]) -> float | None:
    """The sum of the traces' figures (latency, cost), or `None` when one of them is unknown: a part is no total."""
    return None if not values or any(v is None for v in values) else sum(v for v in values if v is not None)
