"""A span delivered more than once is read once.

OTLP exporters and the Agents SDK's `BackendSpanExporter` retry a batch whose
acknowledgement was lost, and exports get concatenated or copied, so the same
span (same trace id and span id) can arrive twice. Counted twice it doubles
the calls, the requests and the tokens. Every span-based reader (`otel`,
`openai-agents`, `langfuse`, `mlflow`) passes the spans of one trace through
`once` before anything counts them. A reader of whole traces, one per line, passes
each through `Repeats`: the same rule over a stream too long to hold.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

__all__ = ["Repeats", "once"]

T = TypeVar("T")


def _itself(item: Any) -> Any:
    return item


def once(items: list[T], key: Callable[[T], Hashable | None], ended: Callable[[T], bool],
         content: Callable[[T], Any] = _itself) -> tuple[list[int], list[Hashable]]:
    """The indices into `items` to read, one per key, and the keys whose copies differed.

    `key` gives an item's identity, `None` for one without an id (never a
    duplicate). Identical copies (equal `content`) keep the first one, so the
    place a span is reported at stays where it first arrived. Copies that
    differ keep the last one that ended (`ended`), else the last one: a span
    sent again is the more complete one, and one sent when it started and
    again when it ended is read as ended; their key is returned so the reader
    can say so. The kept copy takes the first copy's position, so the order of
    arrival is kept. Costs one pass when no key repeats.
    """
    keys = [key(item) for item in items]
    where: dict[Hashable, list[int]] = {}
    repeated = False
    for i, k in enumerate(keys):
        if k is None:
            continue
        if k in where:
            where[k].append(i)
            repeated = True
        else:
            where[k] = [i]
    if not repeated:
        return list(range(len(items))), []
    kept: list[int] = []
    differed: list[Hashable] = []
    for i, k in enumerate(keys):
        copies = where.get(k) if k is not None else None
        if copies is None or len(copies) == 1:
            kept.append(i)
            continue
        if copies[0] != i:
            continue  # a later copy: read at the first copy's place
        first = content(items[i])
        if all(content(items[j]) == first for j in copies[1:]):
            kept.append(i)
            continue
        done = [j for j in copies if ended(items[j])]
        kept.append((done or copies)[-1])
        differed.append(k)
    return kept, differed


class Repeats:
    """The records of a stream seen so far, to tell a copy delivered again (an exporter's retry) from a new record.

    `again(key, content)` is True for a record whose key arrived before with equal content: read
    it no more, as `once` keeps the first of identical copies. A key arriving with other content
    is not a copy (False): unlike a span, a whole record sent again with other content is not the
    more complete one, so the caller keeps both and the duplicate key is reported. `key` None
    (no id) is never a copy. The last `kept` keys are remembered, with a digest of their
    content's canonical JSON each, so memory stays flat however long the stream.
    """

    def __init__(self, kept: int = 100_000) -> None:
        self._seen: OrderedDict[Hashable, bytes] = OrderedDict()
        self._kept = kept

    def again(self, key: Hashable | None, content: Any) -> bool:
        """True when `key` arrived before with content equal to `content` (a JSON value); remembers it otherwise."""
        if key is None:
            return False
        digest = hashlib.blake2b(json.dumps(content, sort_keys=True, default=str).encode(), digest_size=16).digest()  # (ASCII)
        if self._seen.get(key) == digest:
            return True
        if key not in self._seen:
            self._seen[key] = digest
            if len(self._seen) > self._kept:
                self._seen.popitem(last=False)
        return False
