"""The `tool_call_response` parts of a conversation's model inputs, found for the calls they answer.

A request's input replays the conversation so far, so the same response is
shown again by every later request: it is one response, first shown by the
request that `add` names. Which response a call gets:

- By call id, in the conversation's order: the first response with that id
  that a request after the one that asked for the call shows, not taken by
  an earlier call. Servers that number calls per response (`call_0` in every
  round) reuse an id across rounds; each round's tool message answers that
  round's call, never the first call that had the id, and a response that
  names another tool is not the call's (smolagents shows a failed call no
  response, so the next `call_0` it shows is another round's). A call whose later
  requests show no response of its id (the OpenAI Agents SDK stops on a
  reused id before running it) has none.
- A response whose id names no call of the conversation, or that has none
  (`""`, or OpenInference leaving an empty id out), answers by order: the
  next call asked for (by a request before the one whose input first shows
  the response), with its tool name when the response names one. ADK numbers
  its parts apart from the calls (`get_weather_0` answering `get_weather_1`);
  agentevals pairs them so.

A replay is told from a new response by position, not by content alone: the
k-th response with the same id, name and text in one request's input is the
k-th such response of the conversation, so three `set_alarm` calls that all
returned "ok" keep three responses.

Pairing by order is a guess when several calls one request asked were
answered by responses nothing ties to them (OpenLLMetry writes a Responses
API call's item id `fc_…` on the call and its `call_id` on the output, so
outputs sent in completion order would pair with the wrong calls). When such
responses differ, so that the guess decides a result, a warning says which
calls were paired by order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.otel.view import unjson

__all__ = ["Responses"]

log = get_logger("tracejudge.extract.otel")


@dataclass(slots=True)
class _Shown:
    """One response part and the number of the request whose input first showed it."""

    at: int
    part: dict[str, Any]
    taken: bool = False


@dataclass(slots=True)
class _Guess:
    """A response paired with a call by order: the asking request, the call, and what the response said."""

    asked_at: int
    shown_at: int
    call: str
    name: str | None
    response_name: Any
    text: str


def _key(part: dict[str, Any]) -> tuple[Any, ...]:
    """What a replay of `part` repeats: its id (`None` when it has none), tool name and response."""
    pid = None if part.get("id") is None else str(part["id"])
    return pid, part.get("name"), repr(part.get("response"))


@dataclass
class Responses:
    """The responses of one conversation (`known_ids`: the call ids its model outputs and tool spans recorded).

    `where` names the conversation in warnings (its file and trace); `None` leaves that out.
    """

    known_ids: set[str]
    where: str | None = None
    reused: set[str] = field(default_factory=set)  # ids two or more calls carry (`reused_ids`): paired by name too
    until: dict[tuple[int, str], int] = field(default_factory=dict)  # (asking request, reused id) -> the next request asking it
    by_id: dict[str, list[_Shown]] = field(default_factory=dict)
    loose: list[_Shown] = field(default_factory=list)
    seen: set[tuple[Any, ...]] = field(default_factory=set)
    counts: dict[tuple[Any, ...], int] = field(default_factory=dict)
    guesses: dict[int, _Guess] = field(default_factory=dict)  # by id() of the part paired by order
    used_guesses: list[_Guess] = field(default_factory=list)
    warned: bool = False

    def add(self, at: int, part: dict[str, Any]) -> None:
        """A response part in the input of request number `at`; requests come in order, each one's parts in its input's order.

        The k-th part with the same id, name and response within one request is the same response as the k-th
        such part of an earlier request (a replay), else a new one first shown by request `at`.
        """
        key = _key(part)
        k = self.counts[(at, key)] = self.counts.get((at, key), 0) + 1
        if (key, k) in self.seen:
            return
        self.seen.add((key, k))
        pid = key[0]
        if pid is not None and pid in self.known_ids:
            self.by_id.setdefault(pid, []).append(_Shown(at, part))
        else:
            self.loose.append(_Shown(at, part))

    def find(self, ids: tuple[Any, ...], asked_at: int | None = None, name: str | None = None, loose: bool = True) -> dict[str, Any] | None:
        """The response of the call with one of `ids` asked for by request number `asked_at` (`None`: not known).

        By id first; else, when `loose` and `asked_at` is known, the next response no id ties to a call.
        """
        for cid in ids:
            if cid is not None and str(cid) in self.by_id:
                shown = self.by_id[str(cid)]
                if str(cid) in self.reused:  # other rounds' calls have this id too: this round's response, of this tool
                    last = self.until.get((asked_at, str(cid))) if asked_at is not None else None
                    shown = [s for s in shown if (name is None or s.part.get("name") in (None, name)) and (last is None or s.at <= last)]
                got = _by_order(shown, asked_at)
                if got is not None:
                    return got
        if asked_at is None or not loose:
            return None
        for shown in self.loose:
            if not shown.taken and shown.at > asked_at and shown.part.get("name") in (None, name):
                shown.taken = True
                self.guesses[id(shown.part)] = _Guess(asked_at, shown.at, "", name, shown.part.get("name"), repr(shown.part.get("response")))
                return shown.part
        return None

    def used(self, part: dict[str, Any] | None, call: dict[str, Any]) -> None:
        """`call` took its result (or error) from `part`: warn when that pairing was a guess another call could have made."""
        guess = self.guesses.get(id(part)) if part is not None else None
        if guess is None:
            return
        guess.call = f"{call.get('name')} ({_describe_id(call.get('id'))}, arguments {_short(call.get('arguments'))})"
        rivals = [g for g in self.used_guesses if _swappable(g, guess)]
        self.used_guesses.append(guess)
        if rivals and not self.warned:
            self.warned = True  # once per conversation: the rest of its guesses are made the same way
            where = f"{self.where}: " if self.where else ""
            log.warning(f"otel: {where}the results of calls {rivals[0].call} and {guess.call}, asked for by one model request, are paired "
                        "with the tool messages that answered them by order only: the recording ties no tool message to its call "
                        "(no call id, or ids that differ between the call and its result, as OpenLLMetry records the Responses API), "
                        "so if the application sent them in another order these results are swapped")


def _by_order(shown: list[_Shown], asked_at: int | None) -> dict[str, Any] | None:
    """The response of a call with this id asked for by request `asked_at`: the first after it not taken, in order.

    The same call read twice (two instrumentations' model spans) shares the response after it that an
    earlier reading took. A recording whose request order shows no response after the asking request
    (or a call whose asking request is not known) gets the first one not taken.
    """
    after = [s for s in shown if asked_at is None or s.at > asked_at]
    for s in after:
        if not s.taken:
            s.taken = True
            return s.part
    if after and asked_at is not None:
        return after[0].part
    for s in shown:
        if not s.taken:
            s.taken = True
            return s.part
    return None


def _swappable(a: _Guess, b: _Guess) -> bool:
    """Two responses paired by order that could as well have gone the other way, with a different result each."""
    if (a.asked_at, a.shown_at) != (b.asked_at, b.shown_at) or a.text == b.text:
        return False
    return a.response_name in (None, b.name) and b.response_name in (None, a.name)


def _describe_id(cid: Any) -> str:
    return "no id" if cid in (None, "") else f"id {cid}"


def _short(value: Any, limit: int = 80) -> str:
    """Arguments as compact JSON (JSON text decoded first, so both recordings of them read alike), cut at `limit`."""
    value = unjson(value)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"
