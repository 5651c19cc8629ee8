"""Message fingerprints for telling one request's replay in a later one (`stitch`) and one request recorded twice (`duplicates`).

A replayed message is identified by its role, its texts (an empty text part is none) and the call ids it asks
for or answers (arguments may be re-encoded on the way). `Unprompted` holds a trace's fingerprints with the
system messages left out, for an application that re-renders its system prompt per request (a timestamp, RAG
context, memory) or trims its history at the start (a sliding window) or in the middle (`compacted`: the question kept,
earlier tool rounds dropped), or sends the assistant's words back without their text (`textless`: its calls kept).
"""

from __future__ import annotations

import json

from collections.abc import Iterator
from typing import Any

from tracejudge.stages.extract.otel.view import View

__all__ = ["INSTRUCTIONS", "Unprompted", "after_overlap", "answered", "bare", "compacted", "hashes", "message_key", "textless"]


def message_key(msg: dict[str, Any]) -> tuple[Any, ...]:
    """What identifies a message when it is replayed in a later request (arguments may be re-encoded).

    An empty text part is no text: OpenLLMetry records `{"type": "text", "content": ""}` on a reply that
    only called tools, and the replay of that reply in the next request has no text part.
    """
    out: list[Any] = [_hashable(msg.get("role"))]
    for p in msg.get("parts") or []:
        kind = p.get("type")
        if kind == "text":
            if p.get("content") not in (None, ""):
                out.append(("t", _hashable(p.get("content"))))
        elif kind == "tool_call":
            out.append(("c", _hashable(p.get("id") or p.get("name"))))
        elif kind == "tool_call_response":
            out.append(("r", _hashable(p.get("id"))))
    return tuple(out)


def _hashable(value: Any) -> Any:
    # (a reader that let an object through as text, an event body's, must not stop the whole file's run on a hash)
    return value if value is None or isinstance(value, (str, int, float)) else json.dumps(value, sort_keys=True, default=str)


INSTRUCTIONS = ("system", "developer")  # re-rendered per request by some applications (a timestamp, RAG context, memory)


def bare(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` without the system (and developer) messages: what a replay keeps when the prompt is re-rendered."""
    return [m for m in messages if m.get("role") not in INSTRUCTIONS]


def answered(rest: list[dict[str, Any]], outputs: list[dict[str, Any]] | None) -> bool:
    """Whether messages `rest` answer, by call id, a call `outputs` asked for: the replay is that request's own."""
    asked = {str(p["id"]) for m in outputs or [] for p in m.get("parts") or [] if p.get("type") == "tool_call" and p.get("id") not in (None, "")}
    return any(str(p.get("id")) in asked for m in rest for p in m.get("parts") or [] if p.get("type") == "tool_call_response")


def after_overlap(seen: list[dict[str, Any]], inputs: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """What `inputs` add after replaying `seen`, system messages aside, whole or trimmed at the start; `None`: no replay.

    A sliding window drops the oldest messages, so `inputs` may start with a suffix of `seen` (the longest one
    that fits is taken); it must still replay `seen`'s last message (the reply).
    """
    said, got = [message_key(m) for m in bare(seen)], bare(inputs)
    keys = [message_key(m) for m in got]
    for n in range(min(len(said), len(keys)), 0, -1):  # (n == len(said): the whole history replayed)
        if keys[:n] == said[-n:]:
            return got[n:]
    n = compacted(said, keys)
    return got[n:] if n else textless(seen, inputs)


def compacted(said: list[Any], keys: list[Any]) -> int:
    """How many messages `keys` (a request's, system messages aside) open with that replay `said` (the history and reply
    of the request before) with its middle left out: the start of `said` (at least its first message, the user's question)
    then its end, reply included; 0 when they do not.

    An application that compacts its history before a request (keeps the question and the latest tool round, drops the
    rounds between) replays neither the whole history nor a suffix of it, yet the request goes on with the same
    exchange: read by message keys, call ids included (`message_key`), so another conversation's replies never fit.
    """
    if not said or len(said) < 3:
        return 0
    for k in (i for i, key in enumerate(keys) if key == said[-1]):
        t = 1
        while t <= k and t < len(said) and keys[k - t] == said[-1 - t]:
            t += 1
        head = k + 1 - t  # (the messages before the replayed end: they must be the history's own start)
        if 0 < head and head + t < len(said) and keys[:head] == said[:head]:
            return k + 1
    return 0


def _textless_keys(messages: list[dict[str, Any]]) -> list[tuple[int, tuple[Any, ...]]]:
    """(index, key) of `messages`, the assistant's texts left out of its keys and a message of the assistant's that then
    holds nothing (it only spoke) left out."""
    out = []
    for i, m in enumerate(messages):
        key = message_key(m)
        if key[0] == "assistant":
            key = tuple(k for k in key if not (isinstance(k, tuple) and k[0] == "t"))
            if len(key) == 1:
                continue
        out.append((i, key))
    return out


def textless(seen: list[dict[str, Any]], inputs: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """What `inputs` add after replaying `seen` whole, system messages aside, with the assistant's texts left out; `None`:
    no such replay.

    An application may send the model's replies back without what they said: a reply that called tools as its calls
    alone (`content` removed: the chatter beside them, "Checking Paris."), a reply that only spoke not at all. Such a
    request replays the history, calls and results in order, but not the text the previous request's reply had, so the
    exact match fails and a request of the same user exchange read as the user asking again (`stitch.continues`). The
    reply it replays must name its calls by id, which are that exchange's own.
    """
    history, got = bare(seen), bare(inputs)
    said, keyed = _textless_keys(history), _textless_keys(got)
    if not said or said[-1][0] != len(history) - 1 or not any(isinstance(k, tuple) and k[0] == "c" for k in said[-1][1][1:]):
        return None  # (the reply, `seen`'s last message, must have asked for calls)
    reply = history[-1]
    if not all(p.get("id") not in (None, "") for p in reply.get("parts") or [] if p.get("type") == "tool_call"):
        return None  # (a call named by its tool alone proves nothing)
    if len(keyed) < len(said) or [k for _, k in keyed[: len(said)]] != [k for _, k in said]:
        return None
    return got[keyed[len(said) - 1][0] + 1 :]


def hashes(keys: list[Any]) -> list[int]:
    """The hash of every prefix of `keys` (`[]` for none): equal lists give equal last hashes."""
    out, h = [], 0
    for key in keys:
        h = hash((h, key))
        out.append(h)
    return out


def _user_keys(messages: list[dict[str, Any]]) -> list[Any]:
    return [message_key(m) for m in messages if m.get("role") == "user"]


class Unprompted:
    """A trace's replay fingerprints with the system messages left out (`bare`), for a prompt re-rendered per request
    (a timestamp, RAG context) and a history trimmed at the start (a sliding window).

    `first` / `first_asked`: prefix hashes of its first request's messages / user texts; `last` / `last_asked`: the hash
    of its last request's messages and reply / user texts; `last_keys`: those messages' keys; `replied`: the last
    request recorded a reply.
    """

    __slots__ = ("first", "first_keys", "first_messages", "first_asked", "last", "last_keys", "last_asked", "replied")

    def __init__(self, first: View, last: View) -> None:
        self.first_messages = bare(first.inputs or [])
        self.first_keys = [message_key(m) for m in self.first_messages]
        self.first = hashes(self.first_keys)
        self.first_asked = hashes(_user_keys(first.inputs or []))
        self.replied = bool(last.outputs)
        self.last_keys = [message_key(m) for m in bare([*(last.inputs or []), *(last.outputs or [])])]
        self.last = hashes(self.last_keys)[-1] if self.last_keys else 0
        asked = hashes(_user_keys(last.inputs or []))
        self.last_asked = asked[-1] if asked else 0

    def openings(self) -> Iterator[int]:
        """Hashes of the first request's messages that could end a replayed overlap: a reply or a tool result, with more after it."""
        for key in self.first_keys[:-1]:
            if key[0] != "user":
                yield hash(key)

    def overlap(self, later: Unprompted) -> int:
        """How many messages `later`'s first request opens with that are this trace's last ones, reply included (0: none).

        The longest such overlap wins; `later` must add something after it (the user's next message, a tool result).
        """
        if not self.replied or not self.last_keys:
            return 0
        for n in range(min(len(self.last_keys), len(later.first_keys) - 1), 0, -1):
            if later.first_keys[n - 1] == self.last_keys[-1] and later.first_keys[:n] == self.last_keys[-n:]:
                return n
        return compacted(self.last_keys, later.first_keys[:-1])  # (a history compacted in the middle; something must follow)

    def cut_short(self) -> bool:
        """Whether the first request opens with a tool call or result: its history was surely trimmed (no conversation starts so)."""
        if not self.first_keys:
            return False
        head = self.first_keys[0]
        return head[0] == "tool" or any(isinstance(p, tuple) and p[0] in ("c", "r") for p in head[1:])
