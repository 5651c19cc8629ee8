"""Spans that lost attributes to the tracer's limit on attributes per span, and the requests whose first messages went so.

An OTel SDK keeps at most `OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT` attributes on a span (128 by default) and records how
many it dropped: `droppedAttributesCount` in OTLP/JSON, the tag `otel.dropped_attributes_count` in Jaeger's model
(`jaeger`). The Python SDK's `BoundedAttributes` evicts the OLDEST attribute for each one set past the limit. An
instrumentation that writes one attribute per message field (OpenInference's `llm.input_messages.{i}.message.*`,
OpenLLMetry's older `gen_ai.prompt.{i}.*`) then loses, on a long conversation, what it wrote first: `input.value`,
`session.id`, the invocation parameters, and the first input messages, the oldest one kept maybe only in part (its
role gone, a tool call's arguments left).

Such a request's messages are read by their indices (`front_cut`): the ones before the first that kept its role are
partial, kept aside as far as they can be read (`View.partial_inputs`) and never read as whole messages, and
`View.input_start` is the position of the first whole one. `stitch` joins such a request to the conversation whose
last request's input and reply it replays at the same positions (`Seen.fits`), not from message 0, a session whose
id went with the rest being that conversation's; `stitch.continues` tells a tool round from a new turn the same way
(`replayed_rest`). `warn_lost` says once per file how many spans lost how many attributes and which; each case
counts its own in `metadata.otel.dropped_attributes`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.otel.replays import message_key
from tracejudge.stages.extract.said_once import first_time

__all__ = ["Seen", "dropped_count", "front_cut", "indexed", "replayed_rest", "restore_fronts", "warn_lost"]

log = get_logger("tracejudge.extract.otel")
_MESSAGES = re.compile(r"^(llm\.input_messages|gen_ai\.prompt|llm\.prompts)\.(\d+)\.")
_INDEXED = re.compile(r"\.\d+(\.|$)")


def dropped_count(raw: dict[str, Any]) -> int:
    """How many attributes a span's SDK dropped: OTLP/JSON `droppedAttributesCount` (`dropped_attributes_count` as protobuf
    names it); 0 when not recorded or not a count."""
    for key in ("droppedAttributesCount", "dropped_attributes_count"):
        value = raw.get(key)
        if value not in (None, ""):
            try:
                return max(int(value), 0)
            except (TypeError, ValueError):
                return 0
    return 0


def indexed(items: Any) -> list[tuple[int, Any]] | None:
    """The `(index, item)` pairs of a flattened list as `view.nested` rebuilt it, in index order; `None` when it is no list.

    The first indices of a cut history are holes (`None`), and past `nested`'s sparseness threshold (a long history
    whose first 160 messages went) the list comes back as a mapping of digit keys: both are read by index.
    """
    if isinstance(items, list):
        return [(i, x) for i, x in enumerate(items) if x is not None]
    if isinstance(items, dict) and items and all(isinstance(k, str) and k.isdigit() for k in items):
        return sorted(((int(k), x) for k, x in items.items() if x is not None), key=lambda e: e[0])
    return None


def front_cut(items: list[tuple[int, Any]], lost: bool, whole: Callable[[Any], bool]) -> tuple[int | None, list[Any], list[Any]]:
    """`(start, partial, rest)` of a request's indexed input messages: `rest` the whole messages from position `start` on,
    `partial` the ones before it that lost their leading fields; `start` is `None` when nothing was lost at the front.

    `whole(item)` says a message kept its role, the field written first: an SDK evicting the oldest attributes leaves
    every message after it whole. Nothing was lost when message 0 is there and whole, or there without its role while
    the span dropped no attribute (`lost`: a message recorded with no role, read as before).
    """
    if not items or (items[0][0] == 0 and (not lost or whole(items[0][1]))):
        return None, [], [x for _, x in items]
    k = next((k for k, (_, x) in enumerate(items) if whole(x)), len(items))
    start = items[k][0] if k < len(items) else items[-1][0] + 1
    return start, [x for _, x in items[:k]], [x for _, x in items[k:]]


def _shown(msg: dict[str, Any]) -> set[tuple[str, str]]:
    """What a message shows, its role aside: its texts (a tool result's too) and the call ids it asks for or answers."""
    out = set()
    for p in msg.get("parts") or []:
        kind, text = p.get("type"), p.get("response") if p.get("type") == "tool_call_response" else p.get("content")
        if kind in ("tool_call", "tool_call_response") and p.get("id") not in (None, ""):
            out.add(("c" if kind == "tool_call" else "r", str(p["id"])))
        if kind in ("text", "tool_call_response") and isinstance(text, str) and text:
            out.add(("t", text))
    return out


def _same_results(one: dict[str, Any], other: dict[str, Any]) -> bool:
    """Whether two tool messages of one id say the same, where both recorded a text (`message_key` leaves results out)."""
    texts = [{x for x in _shown(m) if x[0] == "t"} for m in (one, other)]
    return not (texts[0] and texts[1]) or texts[0] == texts[1]


class Seen:
    """A request's messages by position: its input from `input_start` on and its reply, and the partial messages before.

    `keys[j]` is the `message_key` of the message at position `start + j`; `end` the position of the last one (the
    reply, when recorded); `partial` the parts each partial message before `start` still shows, by position; `asked` the
    call ids the reply asked for, in order.
    """

    __slots__ = ("start", "messages", "keys", "end", "partial", "asked")

    def __init__(self, view: Any, with_reply: bool) -> None:
        self.start = view.input_start or 0
        self.messages = [*(view.inputs or []), *((view.outputs or []) if with_reply else [])]
        self.keys = [message_key(m) for m in self.messages]
        self.end = self.start + len(self.keys) - 1
        partial = view.partial_inputs or []
        self.partial = {self.start - len(partial) + k: _shown(m) for k, m in enumerate(partial)}
        self.asked = [p.get("id") for m in (view.outputs or []) if with_reply for p in m.get("parts") or [] if p.get("type") == "tool_call"]

    def at(self, position: int) -> Any:
        """The key of the message at `position` (`None`: not recorded whole)."""
        j = position - self.start
        return self.keys[j] if 0 <= j < len(self.keys) else None

    def fits(self, later: Seen) -> bool:
        """Whether request `later` replays these messages, reply included, at the same positions: every position both
        recorded whole holds the same message, and what a partial message of `later` still shows is in this one's. When
        `later` lost all of them (a round of more tool results than it kept), its first messages must answer, by call id
        and in order, the calls this reply asked for."""
        if self.keys and self.end < later.start:
            return self._answered(later)
        if not self.keys or not later.start <= self.end < later.start + len(later.keys):
            return False
        for q in range(max(self.start, later.start), self.end + 1):
            if later.at(q) != self.at(q) or (self.at(q)[0] == "tool" and not _same_results(self.messages[q - self.start], later.messages[q - later.start])):
                return False
        return all(self.at(q) is None or shown <= _shown(self.messages[q - self.start]) for q, shown in later.partial.items())

    def _answered(self, later: Seen) -> bool:
        gap = later.start - self.end - 1  # results lost after the reply
        if not self.asked or None in self.asked or "" in self.asked or gap >= len(self.asked):
            return False
        for j in range(gap, len(self.asked)):
            key = later.at(self.end + 1 + j)
            if key is None or key[0] != "tool" or ("r", self.asked[j]) not in key:
                return False
        return True


def replayed_rest(previous: Any, request: Any) -> list[dict[str, Any]] | None:
    """What model request `request` adds after replaying `previous`'s input and reply at their positions (one of them
    lost its first messages: `input_start`); `None` when it does not replay them so."""
    seen, later = Seen(previous, True), Seen(request, False)
    if not seen.fits(later):
        return None
    return (request.inputs or [])[max(seen.end + 1 - later.start, 0):]


def restore_fronts(requests: list[Any]) -> None:
    """Give each model request (`View`s of one conversation, in start order) that lost its first messages those of the
    latest earlier request it replays at the same positions (`Seen.fits`): that request's input and reply up to where
    the cut request's own messages start. A request that replays its conversation's history saw those same messages;
    with them its tool results, user messages and turn read as an uncut request's (a result replayed with the same id
    and text as an earlier one is told from it by its place among them, `call_results`). `input_start` is then that
    earlier request's (`None`: whole); a request no earlier one fits keeps its cut.
    """
    seen: list[tuple[Any, Seen]] = []
    for view in requests:
        if view.input_start is not None and view.inputs:
            later = Seen(view, False)
            prior = next((v for v, s in reversed(seen) if s.start < later.start <= s.end + 1 and s.fits(later)), None)
            if prior is not None:
                head = [*(prior.inputs or []), *(prior.outputs or [])][: later.start - (prior.input_start or 0)]
                view.inputs, view.input_start, view.partial_inputs = [*head, *view.inputs], prior.input_start, None
        seen.append((view, Seen(view, True)))


def warn_lost(spans: Iterable[Any]) -> None:
    """Say once per file how many spans lost how many attributes to the attribute limit, which ones, and how to keep them.

    What was lost is told by comparison: the keys the file's whole spans of the same name carry (not a message's)
    that a span which dropped attributes lacks (`input.value`, `session.id`, …), listed in the order they were
    written, and the first input messages a model request lost (`llm.input_messages.{i}`, `gen_ai.prompt.{i}`).
    """
    by_file: dict[str, dict[tuple[str, str], Any]] = {}
    for span in spans:
        by_file.setdefault(span.file, {})[(span.trace_id, span.span_id)] = span
    for file, found in by_file.items():
        lossy = [s for s in found.values() if s.dropped_attributes]
        if not lossy or not first_time("dropped_attributes", file):
            continue
        log.warning(f"otel: {file}: {_lost_text(lossy, [s for s in found.values() if not s.dropped_attributes])}")


def _lost_text(lossy: list[Any], whole: list[Any]) -> str:
    """The warning of `warn_lost` for one file."""
    usual: dict[str, list[str]] = {}
    for span in whole:
        keys = usual.setdefault(span.name, [])
        keys.extend(k for k in span.attrs if not _INDEXED.search(k) and k not in keys)
    missing: dict[str, int] = {}
    cut, deepest = 0, 0
    for span in lossy:
        gone = [k for k in usual.get(span.name, []) if k not in span.attrs]
        if not gone and span.attrs.get("openinference.span.kind") == "LLM" and "input.value" not in span.attrs:
            gone = ["input.value"]  # no whole span to compare with: what OpenInference writes first
        for k in gone:
            missing[k] = missing.get(k, 0) + 1
        first = min((int(m.group(2)) for k in span.attrs if (m := _MESSAGES.match(k))), default=None)
        if first is not None and first > 0:
            cut, deepest = cut + 1, max(deepest, first)
    named = sorted(missing, key=lambda k: (k not in ("input.value", "session.id", "gen_ai.conversation.id"), -missing[k]))
    what = [f"`{k}` ({missing[k]})" for k in named[:5]] + ([f"{len(named) - 5} more keys"] if len(named) > 5 else [])
    if cut:
        what.append(f"the first input messages of {cut} model request(s) (as many as {deepest} of one request)")
    lacked = f", so they lack {_join(what)}" if what else ""
    kept = max(len(s.attrs) for s in lossy)
    return (f"{len(lossy)} span(s) lost {sum(s.dropped_attributes for s in lossy)} attribute(s) to the tracer's limit on "
            f"attributes per span (their droppedAttributesCount; at most {kept} kept on one span; the OTel Python SDK evicts the "
            f"attributes set first){lacked}. Their requests are joined to their conversations by the messages left at the same "
            "positions, and each case counts its own in metadata.otel.dropped_attributes; record with a higher limit "
            "(OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT=10000 in the environment, or TracerProvider(span_limits=SpanLimits(max_span_attributes=10000))) "
            "to keep them")


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
