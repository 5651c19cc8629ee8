"""What crosses the pipe to a forked worker (`engine.executors.wire`): a chunk's lines travel beside its pickle.

`split_payloads` takes the bytes lines out of a packed chunk and `join_payloads` puts them back from their
concatenation, as the worker receives them: the chunk that comes out is the one that went in, whatever its
items are (JSONL lines, an empty line, a JSON array's elements — null among them —, unreadable records).
"""

from __future__ import annotations

import pickle

from tracejudge.engine.executors.wire import join_payloads, pack_chunk, split_payloads, unpack_chunk
from tracejudge.stages.load import RawRecord


def test_a_chunk_split_from_its_lines_and_joined_again_is_the_same_chunk():
    chunk = [
        RawRecord("cases.jsonl", 1, b'{"id": "a"}\n', end=12),
        RawRecord("cases.jsonl", 2, b"", end=12),
        RawRecord("cases.json", 3, None),  # a JSON array's null element: not a line, travels in the pickle
        RawRecord("cases.json", 4, {"id": "b", "trace": [1, 2]}),
        RawRecord("cases.jsonl", 5, error="not a text JSONL file"),
        RawRecord("cases.jsonl", 6, "é".encode() * 3000, end=9000),
        {"id": "c"},  # anything else travels as itself
    ]
    packed = pack_chunk(chunk)
    items, sizes, lines = split_payloads(packed)
    assert lines == [b'{"id": "a"}\n', b"", "é".encode() * 3000]
    assert all(type(r) is not tuple or type(r[2]) is not bytes for r in items)
    items, sizes = pickle.loads(pickle.dumps((items, sizes), protocol=pickle.HIGHEST_PROTOCOL))
    joined = join_payloads(items, sizes, bytearray(b"".join(lines)))
    assert unpack_chunk(joined) == chunk
    assert all(type(r[2]) is bytes for r in joined[:2])
