"""Stage `load`: streaming readers never read a file whole and report where a record starts."""

from __future__ import annotations

import json

from tracejudge.stages.load import read_json_array, read_jsonl


def test_json_array_streams_same_records_as_json_load(tau_paths):
    path, _ = tau_paths
    whole = json.loads(path.read_text())
    # A tiny chunk size forces every record to straddle chunk edges.
    streamed = list(read_json_array(path, chunk_size=257))
    assert [r.error for r in streamed] == [None] * len(whole)
    assert [r.payload for r in streamed] == whole
    lines = path.read_text().splitlines()
    for rec in streamed[:20]:
        assert lines[rec.line - 1].strip() == "{"


def test_json_array_scalars_cut_at_chunk_edge(tmp_path):
    p = tmp_path / "a.json"
    p.write_text("[12345678, 2.5e10, true, null, \"x\"]")
    got = [r.payload for r in read_json_array(p, chunk_size=3)]
    assert got == [12345678, 2.5e10, True, None, "x"]


def test_json_array_errors_are_records_not_exceptions(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('[\n{"a": 1},\n{"a": 2,,}\n]')
    recs = list(read_json_array(p))
    assert recs[0].payload == {"a": 1}
    assert recs[1].error is not None and "invalid JSON" in recs[1].error and recs[1].line == 3
    p.write_text('{"not": "an array"}')
    (only,) = list(read_json_array(p))
    assert "JSON array" in only.error


def test_jsonl_lines_with_numbers_and_limit(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_bytes(b'{"id": "a"}\n\n{"id": "b"}\n{"id": "c"}\n')
    recs = list(read_jsonl(p))
    assert [(r.line, r.payload.strip()) for r in recs] == [(1, b'{"id": "a"}'), (3, b'{"id": "b"}'), (4, b'{"id": "c"}')]
    assert len(list(read_jsonl(p, limit=2))) == 2


def test_a_byte_order_mark_does_not_cost_the_first_record(tmp_path):
    from tracejudge.stages.load import read_jsonl

    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a"}\n{"id": "b"}\n')
    assert [(r.line, json.loads(r.payload)["id"]) for r in read_jsonl(path)] == [(1, "a"), (2, "b")]
    # Files joined with `cat`, each saved with its own mark: every mark starts a file, none is part of a record.
    path.write_bytes(b'\xef\xbb\xbf{"id": "a"}\n\xef\xbb\xbf{"id": "b"}\r\n\xef\xbb\xbf\n{"id": "c"}\n')
    assert [(r.line, json.loads(r.payload)["id"]) for r in read_jsonl(path)] == [(1, "a"), (2, "b"), (4, "c")]


def test_counting_a_jsonl_file_gives_as_many_records_as_reading_it(tmp_path):
    from tracejudge.core import registry
    from tracejudge.core.config import DatasetConfig
    from tracejudge.stages.load import count_jsonl

    files = {
        "plain.jsonl": b'{"id": "a"}\n{"id": "b"}\n{"id": "c"}',
        "blanks.jsonl": b'\n  \n{"id": "a"}\r\n\t\n{"id": "b"}\n\n',
        "bom.jsonl": b'\xef\xbb\xbf{"id": "a"}\n{"id": "b"}\n',
        "bom-blank.jsonl": b"\xef\xbb\xbf\n{\"id\": \"a\"}\n",
        "joined-boms.jsonl": b'{"id": "a"}\n\xef\xbb\xbf\n\xef\xbb\xbf{"id": "b"}\n',
        "bad-lines.jsonl": b'not json\n{"id": 1\n\xff\xfe\n',
        "binary.jsonl": b"PK\x03\x04\x00\x00 an archive\n" * 3,
        "empty.jsonl": b"",
    }
    for name, data in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        for limit in (None, 1, 2):
            assert count_jsonl(path, limit) == len(list(read_jsonl(path, limit))), (name, limit)
    # The progress total of a native dataset is counted so, not read record by record.
    native = registry.format_for("native")
    assert native.count is not None and native.count(DatasetConfig(path=str(tmp_path / "blanks.jsonl"), format="native")) == 2
