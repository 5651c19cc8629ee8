"""Rejoin a conversation that a model-only instrumentation recorded as one trace per request.

An instrumented client with no agent or workflow span around it (the
OpenInference or OpenLLMetry OpenAI instrumentor on a plain loop, Phoenix's
quick-start) writes every model request as a trace of its own, and an agent
run again on the same memory (smolagents' `run(..., reset=False)`) starts a
new trace. The later trace's first request then replays the earlier trace's
last request — its input and its output — as the start of its own input:
that prefix is what joins them. Only traces that no conversation key
grouped are candidates; an unrelated run that merely shares a system prompt
and a first question never matches, since the replayed prefix includes the
earlier run's answers, and the call ids it replays (an assistant's
`tool_calls` id, the tool message's `tool_call_id`) are that run's own (a Responses API call's item id `fc_…`
against `call_id`s, as OpenLLMetry may write the two, proves nothing either way: `item_ids.ids_agree`).
Traces a conversation key did group are split into
turns by `continues`: the same replay, adding no user message, is the same
user turn (`turns.Builder`).

A Responses API request chained with `previous_response_id` replays nothing:
the server kept the history. It is given that history first (`server_state`),
and its trace joins the one whose last request gave that response. A lone
retrieval trace joins the request it retrieved for (`retrievals`).

An application may re-render its system prompt per request (a timestamp, RAG
context, memory): failing the above, a trace joins the one conversation whose
last request's input and reply it replays exactly with the system messages left
out (`replays.Unprompted`), or whose user texts it starts with when a call id
it replays proves it. A chat that trims its oldest messages (a sliding window)
opens its next request with the last messages of its conversation, reply
included: it joins the one conversation that ended, before it started, with
what it opens with (one proven by a replayed call id, else the only one);
when several did, or its request opens with a tool call or result no
conversation ends with, it is kept apart and named in the warning.

A request whose span passed the SDK's limit of attributes per span lost what was written first (`dropped`): its
`input.value`, its session id, its first messages. It is told by position: it joins the one conversation whose last
request's input and reply it replays at the same indices, from wherever its history was cut (call ids and texts
compared exactly; a round of results that lost all it replays answers, by call id, the calls that reply asked for),
and a conversation a key grouped is one it may join, its key having been evicted with the rest. Several that fit keep
it apart, named in the warning; the lenient tiers below, which read a history from its first message, are not tried.
Once grouped, each such request gets the messages it lost from the request before it that it replays (`mend_cut`).

A model request recorded twice — by a framework's instrumentation in its
trace and again, parentless, by the client's (OpenInference's LangChain and
OpenAI instrumentors both on) — is read once, before any joining
(`duplicates`).

Several conversations may fit one trace: concurrent runs of the same
question whose replays carry no call ids, or identical ones. Which it was
cannot be told, so the trace is kept apart rather than joined to the wrong
one, and one warning names such traces.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.otel.conventions import group_views
from tracejudge.stages.extract.otel.conventions.smolagents_steps import ran_out
from tracejudge.stages.extract.otel.dropped import Seen, replayed_rest, restore_fronts
from tracejudge.stages.extract.otel.duplicates import drop_duplicate_requests
from tracejudge.stages.extract.otel.item_ids import ids_agree
from tracejudge.stages.extract.otel.replays import Unprompted, after_overlap, answered, hashes, message_key
from tracejudge.stages.extract.otel.retrievals import adopt_retrievals
from tracejudge.stages.extract.otel.server_state import asked_calls, carry_history, tool_results_only, with_history
from tracejudge.stages.extract.otel.spans import Group, Span
from tracejudge.stages.extract.otel.view import View

__all__ = ["continues", "mend_cut", "stitch"]

log = get_logger("tracejudge.extract.otel")


def continues(previous: Any, request: Any) -> bool:
    """Whether model request `request` (a `View`) goes on from `previous`: the same user exchange, one more model round.

    True when its input replays `previous`'s input and output exactly (as `stitch` joins traces) and
    adds no user message after them: the tool results of that round, nothing the user said; or when it is
    `previous` sent again after `previous` got no reply (a failed request the application retried). Edge cases:
    either request with no recorded input is no continuation; a replay that adds a user message is the
    user speaking again (a new turn, or a mid-turn message `assemble` places itself). A system prompt
    re-rendered per request (a timestamp in it) or a history trimmed at the start (a sliding window) is
    still the same exchange when what the request adds answers, by call id, a call `previous` asked for. A request whose
    span lost its first messages to the limit on attributes per span replays `previous` at the same positions (`dropped`).
    """
    if not previous.inputs or not request.inputs:
        return False
    if request.input_start is not None or previous.input_start is not None:  # a span that lost its first messages: by position
        added = replayed_rest(previous, request)
        if added is not None:
            return not previous.outputs if not added else not any(m.get("role") == "user" for m in added)
    prefix = [message_key(m) for m in [*previous.inputs, *(previous.outputs or [])]]
    inputs = request.inputs
    if len(inputs) < len(prefix) or [message_key(m) for m in inputs[: len(prefix)]] != prefix:
        rest = after_overlap([*previous.inputs, *(previous.outputs or [])], inputs)
        return bool(rest) and not any(m.get("role") == "user" for m in rest) and answered(rest, previous.outputs)  # type: ignore[arg-type]
    if len(inputs) == len(prefix):
        return not previous.outputs  # the same request again after it got no reply: an application's retry
    return not any(m.get("role") == "user" for m in inputs[len(prefix) :])


def mend_cut(group: Group) -> None:
    """Give each top-level model request of `group` whose span lost its first messages to the limit on attributes per span
    those of the request before it that it replays (`dropped.restore_fronts`); nothing when none lost any."""
    if any(v.input_start is not None for v in group_views(group).values()):
        restore_fronts([v for _, v in _requests(group)])


def _said(messages: list[dict[str, Any]]) -> list[Any]:
    """The user's and the system's texts: what every framework replays verbatim, whatever it does to the rest."""
    return [message_key(m) for m in messages if m.get("role") in ("user", "system")]


def _call_ids(messages: list[dict[str, Any]]) -> frozenset[str]:
    """The call ids messages name: the calls asked for and the results answering them."""
    return frozenset(str(p["id"]) for m in messages for p in m.get("parts") or []
                     if p.get("type") in ("tool_call", "tool_call_response") and p.get("id") not in (None, ""))


def _requests(group: Group) -> list[tuple[Span, View]]:
    """The top-level model requests of `group` (not nested in another model span), in start order."""
    views = group_views(group)
    models = [(s, views[s.span_id]) for s in group.spans if views[s.span_id].role == "model"]
    ids = {s.span_id for s, _ in models}
    return sorted(((s, v) for s, v in models if s.parent_id not in ids), key=lambda r: (r[0].start, r[0].span_id))


class _Chain:
    """A candidate trace's replay fingerprints, strict (every message) and lenient (user and system texts only), and
    its call ids; `chain` is the group it joined (its own when it joined none)."""

    __slots__ = ("group", "chain", "first", "last", "first_span", "last_span", "first_strict", "first_said", "first_len", "first_ids",
                 "last_strict", "last_said", "last_len", "last_ids", "bare", "lossy", "first_seen", "last_seen")

    def __init__(self, group: Group, first: tuple[Span, View], last: tuple[Span, View]) -> None:
        self.group = self.chain = group
        (self.first_span, self.first), (self.last_span, self.last) = first, last
        self.first_strict = hashes([message_key(m) for m in self.first.inputs or []])
        self.first_said = hashes(_said(self.first.inputs or []))
        self.first_len = len(self.first.inputs or [])
        self.first_ids = _call_ids(self.first.inputs or [])
        seen = [*(self.last.inputs or []), *(self.last.outputs or [])]
        self.last_strict = hashes([message_key(m) for m in seen])[-1] if seen else 0
        said = hashes(_said(self.last.inputs or []))
        self.last_said = said[-1] if said else 0
        self.last_len = len(self.last.inputs or [])
        self.last_ids = _call_ids(seen)
        self.bare = Unprompted(self.first, self.last)
        # its first request's span lost attributes to the limit per span (`dropped`): its session id, its first messages
        self.lossy = self.first_span.dropped_attributes > 0 or self.first.input_start is not None
        self.first_seen, self.last_seen = Seen(self.first, False), Seen(self.last, True)


def _candidate(group: Group) -> _Chain | None:
    """Fingerprints of a trace's first and last model requests; `None` when a conversation key grouped it or it has no request input."""
    if group.key_attr is not None:
        return None
    top = [r for r in _requests(group) if r[1].inputs]
    ends = [r for r in top if not ran_out(r[1])] or top  # (smolagents' out-of-steps answer: no later run replays it)
    return _Chain(group, top[0], ends[-1]) if top else None


class _Joiner:
    """The conversations built so far, each findable by what its last trace would have to be replayed by."""

    def __init__(self, unsure: dict[str, list[str]]) -> None:
        self.unsure = unsure
        self.current: dict[int, _Chain] = {}  # id(conversation group) -> its last trace's fingerprints
        self.strict: dict[int, list[_Chain]] = {}
        self.lenient: dict[int, list[_Chain]] = {}
        self.answered: dict[str, _Chain] = {}  # a conversation's last response id
        self.asking: list[_Chain] = []  # conversations whose last request asked for calls
        self.bare: dict[int, list[_Chain]] = {}  # by the last request's input and reply, system messages aside
        self.asked: dict[int, list[_Chain]] = {}  # by the last request's user texts
        self.tails: dict[int, list[_Chain]] = {}  # by the last message a conversation's last request saw (its reply)
        self.ends: dict[tuple[int, int], list[_Chain]] = {}  # by that message and its position (`_positioned`)

    def _live(self, entry: _Chain) -> bool:
        return self.current.get(id(entry.chain)) is entry

    def _doubt(self, why: str, got: _Chain) -> None:
        self.unsure.setdefault(why, []).append(got.first_span.trace_id)

    def find(self, got: _Chain) -> tuple[_Chain | None, bool]:
        """The last trace of the conversation `got`'s trace goes on with (`None`: a conversation of its own), and whether
        it was found as the one a request of tool results alone answers (`_resumed`)."""
        if got.first.previous_response_id is not None:
            entry = self.answered.get(got.first.previous_response_id)
            return (entry if entry is not None and self._live(entry) else None), False  # (a branch from an earlier response stays apart)
        if got.lossy:
            entry, decided = self._positioned(got)
            if decided or got.first.input_start is not None:
                return entry, False  # (a history cut at the front is told by position only: the tiers below read it from message 0)
        for h in reversed(got.first_strict):
            fits = [e for e in self.strict.get(h, []) if self._live(e)]
            if len(fits) == 1:
                return fits[0], False
            if fits:
                self._doubt("its requests replay the same history as another conversation's, call ids included", got)
                return None, False
        for h in reversed(got.first_said):
            fits = [e for e in self.lenient.get(h, []) if self._live(e) and e.last_len < got.first_len]
            # The call ids a request replays are its own conversation's: a conversation whose calls it does not replay is another one.
            agree = [e for e in fits if ids_agree(e.last_ids, got.first_ids)]
            proven = [e for e in agree if e.last_ids & got.first_ids]
            if len(proven) == 1 or (not proven and len(agree) == 1):
                return (proven or agree)[0], False
            if agree:
                self._doubt("it replays the user's and system's texts of several conversations, and no call id tells which", got)
                return None, False
        for tier in (self._bare_replay, self._same_asks):
            entry, decided = tier(got)
            if decided:
                return entry, False
        found = self._resumed(got)
        if found is not None:
            return found, True
        return self._windowed(got)[0], False  # (after `_resumed`: tool results alone open a Responses API request too)

    def _positioned(self, got: _Chain) -> tuple[_Chain | None, bool]:
        """The conversation whose last request's input and reply `got`'s first request replays at the same positions, its
        span having lost attributes (`dropped`): whole where both recorded a message, from wherever its history was cut; a
        conversation a key grouped (its session id evicted with the rest) too. `(None, True)` when several fit (with a
        warning); `(None, False)` when none does (a warning too when the history was cut: it starts mid-conversation)."""
        later = got.first_seen
        for p in range(later.end, later.start - 1, -1):
            fits = [e for e in self.ends.get((p, hash(later.at(p))), []) if self._live(e) and e.last_seen.fits(later)]
            if len(fits) == 1:
                return fits[0], True
            if fits:
                self._doubt("its first request lost its first messages to the limit on attributes per span, and what is left "
                            "replays the history of several conversations at the same positions", got)
                return None, True
        fits = [e for e in self.current.values() if e.last_seen.end < later.start and e.last_seen.fits(later)]  # (all it replays lost)
        if len(fits) == 1:
            return fits[0], True
        if fits:
            self._doubt("its first request lost every message it replays to the limit on attributes per span, and the results "
                        "it opens with answer the calls of several conversations", got)
            return None, True
        if got.first.input_start is not None and self.current:
            self._doubt("its first request lost its first messages to the limit on attributes per span, and what is left replays "
                        "no conversation's last request at the same positions", got)
        return None, False

    def add_keyed(self, group: Group) -> None:
        """Group `group`, which a conversation key grouped, may be gone on with by a request whose span lost that key."""
        top = [r for r in _requests(group) if r[1].inputs]
        if top:
            self._end(_Chain(group, top[0], top[-1]))

    def _end(self, got: _Chain) -> None:
        self.current[id(got.chain)] = got
        if got.last_seen.keys:
            self.ends.setdefault((got.last_seen.end, hash(got.last_seen.keys[-1])), []).append(got)

    def _bare_replay(self, got: _Chain) -> tuple[_Chain | None, bool]:
        """The conversation whose last request's input and reply `got`'s first request replays exactly, system messages
        aside (a prompt re-rendered per request); `(None, True)` when several do (with a warning); `(None, False)`: none."""
        for h in reversed(got.bare.first):
            fits = [e for e in self.bare.get(h, []) if self._live(e) and e.bare.replied]
            if len(fits) == 1:
                return fits[0], True
            if fits:
                self._doubt("its requests replay the same history as another conversation's, system prompt aside", got)
                return None, True
        return None, False

    def _same_asks(self, got: _Chain) -> tuple[_Chain | None, bool]:
        """The conversation whose last request's user texts `got`'s first request starts with, replaying more, with a
        changed system prompt: joined only when one conversation's call ids prove it, else kept apart with a warning."""
        for h in reversed(got.bare.first_asked):
            fits = [e for e in self.asked.get(h, []) if self._live(e) and e.last_len < got.first_len
                    and ids_agree(e.last_ids, got.first_ids)]  # (other call ids: another conversation)
            proven = [e for e in fits if e.last_ids & got.first_ids]
            if len(proven) == 1:
                return proven[0], True
            if fits:
                self._doubt("its system prompt differs from that of the conversation whose user texts it replays, and no one "
                            "conversation's call ids link them" if not proven else
                            "it replays the user texts and call ids of several conversations", got)
                return None, True
        return None, False

    def _windowed(self, got: _Chain) -> tuple[_Chain | None, bool]:
        """The conversation whose last messages `got`'s first request opens with, its oldest messages dropped (a sliding
        window; `Unprompted.overlap`): the one that ended before it, proven by a call id it replays, else the only one."""
        fits = [(e, n) for e in self._tails(got) if (n := e.bare.overlap(got.bare)) and e.last_span.end <= got.first_span.start]
        proven = [e for e, n in fits if _call_ids(got.bare.first_messages[:n]) & e.last_ids]
        pick = proven if proven else [e for e, _ in fits]
        if len(pick) == 1:
            return pick[0], True
        if pick:
            self._doubt("its first request replays only the last messages of a conversation (a trimmed history), and several "
                        "conversations end with them", got)
            return None, True
        if got.bare.cut_short():
            self._doubt("its first request starts mid-conversation (a trimmed history opening with a tool call or result), and no "
                        "conversation ends with what it replays", got)
            return None, True
        return None, False

    def _tails(self, got: _Chain) -> list[_Chain]:
        seen: dict[int, _Chain] = {}
        for h in got.bare.openings():
            for e in self.tails.get(h, []):
                if self._live(e):
                    seen.setdefault(id(e), e)
        return list(seen.values())

    def _resumed(self, got: _Chain) -> _Chain | None:
        """The conversation a request of tool results alone (a Responses API request whose `previous_response_id` was not
        recorded) goes on from: the one whose last request, of the same service and ended before it, asked for those
        calls (by call id), else for as many calls; `None` when none or several fit."""
        answers = tool_results_only(got.first)
        if answers is None:
            return None
        self.asking[:] = [e for e in self.asking if self._live(e)]
        fits = [e for e in self.asking if e.last_span.service == got.first_span.service and e.last_span.end <= got.first_span.start
                and len(asked_calls(e.last)) == len(answers)]
        named = {a for a in answers if a is not None}
        by_id = [e for e in fits if named and named <= {c for c in asked_calls(e.last) if c is not None}]
        if len(by_id) == 1 or (not by_id and len(fits) == 1):
            return (by_id or fits)[0]
        if fits:
            self._doubt("it sends tool results alone, and several conversations asked for as many calls", got)
        return None

    def add(self, got: _Chain) -> None:
        """`got` is now the last trace of its conversation (`got.chain`).

        A conversation a key grouped is found only by position (`_positioned`), by a request whose span lost that key.
        """
        self._end(got)
        if got.chain.key_attr is not None:
            return
        self.strict.setdefault(got.last_strict, []).append(got)
        self.lenient.setdefault(got.last_said, []).append(got)
        if got.last.response_id:
            self.answered[got.last.response_id] = got
        if asked_calls(got.last):
            self.asking.append(got)
        self.bare.setdefault(got.bare.last, []).append(got)
        self.asked.setdefault(got.bare.last_asked, []).append(got)
        if got.bare.last_keys:
            self.tails.setdefault(hash(got.bare.last_keys[-1]), []).append(got)


def stitch(groups: Iterable[Group]) -> Iterator[Group]:
    """`groups` with each chain of replaying traces joined into the first one's group (order kept).

    A trace joins the conversation whose last request gave the response its first request names as
    `previous_response_id`; else the one whose last request's input and output its first request
    replays exactly; failing that (a framework re-renders the assistant's turns: smolagents replays a
    call as "Calling tools: …" text), the one whose last request's user and system texts its first
    request starts with while replaying more messages, and whose call ids, when both name some, it
    replays; else, for a first request of tool results alone, the one conversation that asked for them
    (`server_state`). A joined group keeps its first trace's key; `traces` lists every trace id, and
    the spans of later traces take the first trace's id so that the conversation reads as one
    exchange. Lone retrieval traces then join the request they retrieved for (`retrievals`).
    """
    groups = drop_duplicate_requests(list(groups))  # a request recorded again by a second instrumentation is one request
    lossy = any(s.dropped_attributes for g in groups if g.key_attr is None for s in g.spans)  # a conversation key may have been evicted
    carry_history([r for g in groups for r in _requests(g)])
    unsure: dict[str, list[str]] = {}
    joiner = _Joiner(unsure)
    out: list[Group] = []
    for group in groups:
        got = _candidate(group)
        if got is None:
            if lossy and group.key_attr is not None:
                joiner.add_keyed(group)
            out.append(group)
            continue
        found, resumed = joiner.find(got)
        if resumed:
            with_history(got.first, found.last)  # type: ignore[union-attr]
            got = _Chain(group, (got.first_span, got.first), (got.last_span, got.last))
        if found is None:
            out.append(group)
        else:
            chain = found.chain
            for span in group.spans if chain.key_attr is None else []:  # (a keyed conversation's traces keep their ids, as its own do)
                span.trace_id = chain.traces[0]
            chain.spans.extend(group.spans)
            chain.views = {**group_views(chain), **group_views(group)}
            chain.traces.extend(group.traces)
            got.chain = chain
        joiner.add(got)
    out = adopt_retrievals(out, unsure)
    for why, traces in unsure.items():
        log.warning(f"otel: {len(traces)} trace(s) kept as conversations of their own, since which conversation each goes on with "
                    f"cannot be told ({why}): {', '.join(traces[:5])}{', …' if len(traces) > 5 else ''}")
    yield from out
