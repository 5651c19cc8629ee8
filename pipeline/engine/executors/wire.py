"""What crosses the pipe to and from a worker process: chunks and results as tuples of builtins.

Pickle writes a slotted dataclass (`RawRecord`, `Extracted`, `Rendered`) and a named tuple
(`Cell`) through Python-level reduce calls, one per object, and rebuilds each the same way;
a tuple of strings, numbers, lists and dicts it writes and reads in C. So a chunk goes out as
`pack_chunk` and comes back as `unpack_chunk`, and a worker's results go back as
`pack_results` and are rebuilt by `unpack_results` — the same objects, field for field, at
about a third of the pickling cost (10,000 τ-bench cases: about 0.45 CPU-s less, head and
workers together). Anything else (a record read from memory, a case not rendered) travels
as itself.

To a forked worker (`executors.forked`) the lines of a chunk do not go through pickle at all:
`split_payloads` packs the chunk without them for the pickle, and the
socket sends them straight from the head's own bytes (a scatter-gather write); the worker cuts
them out of what it received (`join_payloads`). Pickling them copied every line of the dataset
into a growing buffer in the head: about 0.045 CPU-s per 10,000 τ-bench cases.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from tracejudge.engine.executors.base import Extracted
from tracejudge.engine.rendered import Cell, Rendered

__all__ = ["join_payloads", "pack_chunk", "pack_results", "split_payloads", "unpack_chunk", "unpack_results"]

_cell = partial(tuple.__new__, Cell)  # `Cell(value, passed)` from a pair, without the named tuple's Python-level `__new__`


def pack_chunk(chunk: list[Any]) -> list[Any]:
    """Each `RawRecord` of `chunk` as `(file, line, payload, error, end)`; anything else as itself."""
    from tracejudge.stages.load import RawRecord

    return [(r.file, r.line, r.payload, r.error, r.end) if type(r) is RawRecord else r for r in chunk]


def unpack_chunk(packed: list[Any]) -> list[Any]:
    """The records `pack_chunk` packed."""
    from tracejudge.stages.load import RawRecord

    return [RawRecord(*r) if type(r) is tuple else r for r in packed]


def split_payloads(chunk: list[Any]) -> tuple[list[Any], list[int], list[bytes]]:
    """`(items, sizes, lines)`: `chunk` packed as `pack_chunk` packs it, but each bytes payload replaced by None, its
    size in `sizes` (-1 for an item without one: anything but a record, or a payload that is not bytes), and the
    payloads in order. `join_payloads` makes the packed chunk again."""
    from tracejudge.stages.load import RawRecord

    items: list[Any] = []
    sizes: list[int] = []
    lines: list[bytes] = []
    for r in chunk:
        if type(r) is not RawRecord:
            items.append(r)
        elif type(r.payload) is bytes:
            lines.append(r.payload)
            sizes.append(len(r.payload))
            items.append((r.file, r.line, None, r.error, r.end))
            continue
        else:
            items.append((r.file, r.line, r.payload, r.error, r.end))
        sizes.append(-1)
    return items, sizes, lines


def join_payloads(items: list[Any], sizes: list[int], data: Any) -> list[Any]:
    """The chunk `split_payloads` split, packed (as `pack_chunk` packs it), its lines cut in order out of `data` (their concatenation)."""
    view = memoryview(data)
    out: list[Any] = []
    at = 0
    for r, size in zip(items, sizes, strict=True):
        if size < 0:
            out.append(r)
            continue
        out.append((r[0], r[1], bytes(view[at:at + size]), r[3], r[4]))
        at += size
    return out


def pack_results(items: list[Extracted]) -> list[Any]:
    """Each rendered result of `items` as a tuple of builtins (`unpack_results` rebuilds it); any other as itself."""
    out: list[Any] = []
    keys: tuple[str, ...] = ()
    for item in items:
        r = item.rendered
        if r is None:
            out.append(item)
            continue
        cells = r.cells
        if tuple(cells) != keys:
            keys = tuple(cells)
        # (One tuple of metric keys for the chunk's cases, pickled once and referred to after: unpickling a tuple
        # per case cost the head about a third of its unpickling of a chunk's results.)
        out.append((item.file, item.line, r.id, r.id_json, r.id_hash, r.tags, r.metadata, r.middle,
                    keys, tuple(c[0] for c in cells.values()), tuple(c[1] for c in cells.values()), r.junit, r.timed_out))
    return out


def unpack_results(packed: list[Any]) -> list[Extracted]:
    """The results `pack_results` packed: equal to the worker's, field for field."""
    out: list[Extracted] = []
    for p in packed:
        if type(p) is not tuple:
            out.append(p)
            continue
        file, line, cid, id_json, id_hash, tags, metadata, middle, keys, values, passed, junit, timed_out = p
        cells = dict(zip(keys, map(_cell, zip(values, passed))))
        out.append(Extracted(file, line, rendered=Rendered(cid, id_json, id_hash, tags, metadata, middle, cells, junit, timed_out)))
    return out
