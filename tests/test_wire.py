"""What crosses the pipe to a forked worker (`engine.executors.wire`): a chunk's lines travel beside its pickle.

`split_payloads` packs a chunk without its bytes lines and `join_payloads` puts them back from their
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
    items, sizes, lines = split_payloads(chunk)
    assert lines == [b'{"id": "a"}\n', b"", "é".encode() * 3000]
    assert all(type(r) is not tuple or type(r[2]) is not bytes for r in items)
    items, sizes = pickle.loads(pickle.dumps((items, sizes), protocol=pickle.HIGHEST_PROTOCOL))
    joined = join_payloads(items, sizes, bytearray(b"".join(lines)))
    assert joined == pack_chunk(chunk) and unpack_chunk(joined) == chunk
    assert all(type(r[2]) is bytes for r in joined[:2])


def test_the_results_of_a_chunk_refer_to_one_tuple_of_metric_keys_and_come_back_equal():
    from tracejudge.engine.executors.base import Extracted
    from tracejudge.engine.executors.wire import pack_results, unpack_results
    from tracejudge.engine.rendered import Cell, Rendered

    def rendered(i: int, keys: list[str]) -> Extracted:
        cells = {k: Cell(float(n + i), n % 2 == 0) for n, k in enumerate(keys)}
        return Extracted("cases.jsonl", i + 1, rendered=Rendered(f"c{i}", f'"c{i}"'.encode(), i + 7, ["t"], {"m": i},
                                                                    f'"tags":["t"],"n":{i}'.encode(), cells,
                                                                    tuple(f"<end {k}/>".encode() for k in keys), ()))

    items = [rendered(0, ["a", "b"]), rendered(1, ["a", "b"]), Extracted("cases.jsonl", 3, error=("x", None)), rendered(3, ["a", "c"])]
    packed = pickle.loads(pickle.dumps(pack_results(items), protocol=pickle.HIGHEST_PROTOCOL))
    assert packed[0][8] is packed[1][8] and packed[3][8] == ("a", "c")
    assert [repr(x) for x in unpack_results(packed)] == [repr(x) for x in items]


def test_a_rendered_result_travels_as_the_utf8_its_files_take():
    # Its line and test cases are bytes end to end: as text, the head decoded them when it unpickled them and encoded
    # them again when it wrote them.
    from types import SimpleNamespace

    from tracejudge.core.records import CaseResult, Score
    from tracejudge.engine.executors.base import Extracted
    from tracejudge.engine.executors.wire import pack_results, unpack_results
    from tracejudge.engine.rendered import Finished, render, testcase_end

    scores = {"a": Score(value=0.5, passed=False, reason="got “x”… not y"), "b": Score(value=None, reason="no output")}
    case = SimpleNamespace(id="case-é", tags=["ü"], metadata={"k": "ß"})
    rendered = render(case, scores, ["a", "b", "c"])
    assert rendered is not None
    packed = pickle.loads(pickle.dumps(pack_results([Extracted("cases.jsonl", 1, rendered=rendered)]), protocol=pickle.HIGHEST_PROTOCOL))
    got = unpack_results(packed)[0].rendered
    assert got is not None and type(got.middle) is bytes and type(got.id_json) is bytes and {*map(type, got.junit)} == {bytes}
    done = Finished(got, 2)
    done.duration_s = 0.25
    want = CaseResult(case_id="case-é", trial=2, tags=["ü"], metadata={"k": "ß"}, scores=scores, duration_s=0.25)
    assert done.line() == want.model_dump_json().encode()
    assert got.junit == (testcase_end(0.5, False, "got “x”… not y").encode(), testcase_end(None, None, "no output").encode(),
                         testcase_end(None, None, "", computed=False).encode())
