"""Stage `load`: streaming readers never read a file whole and report where a record starts."""

from __future__ import annotations

import json

import pytest

from tracejudge.stages.load import read_json_array, read_jsonl
import _forkserver


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


@pytest.mark.parametrize("chunk_size", [1 << 20, 3])
def test_json_array_reads_on_after_an_element_that_is_not_json(tmp_path, chunk_size):
    p = tmp_path / "bad.json"
    p.write_text('[\n{"a": 1},\n{"a": tru, "s": "]}"},\n{"b": [1, {"c": "]"}]},\n5\n]')
    got = [(r.line, r.payload, r.error) for r in read_json_array(p, chunk_size=chunk_size)]
    assert got == [(2, {"a": 1}, None), (3, None, "invalid JSON: Expecting value at line 3 column 7"),
                   (4, {"b": [1, {"c": "]"}]}, None), (5, 5, None)]
    # An element whose end no scan can find (a quote lost, brackets that never balance) stops the read with its error:
    # read inside out after a lost quote, the objects inside the next records read as records of their own.
    p.write_text('[{"a": 1}, {"a": "x}, {"a": 3, "m": [{"role": "user"}, {"role": "x"}]}, {"a": 4}]')
    got = list(read_json_array(p, chunk_size=chunk_size))
    assert [r.error is None for r in got] == [True, False]
    assert got[1].error.endswith("a quote is missing in or near this record, so where it ends cannot be told; the rest of the file is not read")
    # Commas between records, one lost (`} {`), one repeated or left before `]`: every record read, no record made of them.
    p.write_text('[{"a": 1}\n{"a": 2},\n,{"a": 3},\n]')
    assert [(r.line, r.payload, r.error) for r in read_json_array(p, chunk_size=chunk_size)] == [
        (1, {"a": 1}, None), (2, {"a": 2}, None), (3, {"a": 3}, None)]
    p.write_text('[{"a": 1} x {"a": 2}]')
    assert [r.error for r in read_json_array(p, chunk_size=chunk_size)] == [None, "expected ',' or ']' between records, found 'x'; the rest of the file is not read"]
    p.write_text('[{"a": 1}, {"a": 2')
    (_, cut) = read_json_array(p, chunk_size=chunk_size)
    assert cut.error.endswith("the file ends early (it looks truncated)")


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
        "utf16-line.jsonl": b'{"id": "a"}\n' + _utf16_line({"id": "b"}, "\n") + b'{"id": "c"}\n{"id": "d"}\n{"id": "e"}\n',
        "utf16-crlf-line.jsonl": b'{"id": "a"}\n{"id": "b"}\n' + _utf16_line({"id": "c"}, "\r\n") * 2 + b'{"id": "d"}\n{"id": "e"}\n',
        "utf16-last-line.jsonl": b'{"id": "a"}\n{"id": "b"}\n{"id": "c"}\n' + _utf16_line({"id": "d"}, "\n"),
        "utf16-blank-line.jsonl": b'{"id": "a"}\n{"id": "b"}\n' + _utf16_line({"id": "c"}, "\n") + "\n".encode("utf-16-le") + b'{"id": "d"}\n',
    }
    for name, data in files.items():
        path = tmp_path / name
        path.write_bytes(data)
        for limit in (None, 1, 2):
            assert count_jsonl(path, limit) == len(list(read_jsonl(path, limit))), (name, limit)
    # The progress total of a native dataset is counted so, not read record by record.
    native = registry.format_for("native")
    assert native.count is not None and native.count(DatasetConfig(path=str(tmp_path / "blanks.jsonl"), format="native")) == 2


def _utf16_line(record: dict, newline: str) -> bytes:
    """`record` as one UTF-16 LE line with its byte-order mark, as an editor appends it: its newline is 0A 00 (or 0D 00 0A 00)."""
    return ("\ufeff" + json.dumps(record) + newline).encode("utf-16-le")


def test_a_utf16_line_keeps_its_newline_s_nul_from_the_next_line(tmp_path):
    # Split at 0A, a UTF-16 LE line's newline 0A 00 left its 00 at the start of the next line: that line, good
    # UTF-8, was "invalid JSON at column 1", and after the last line the 00 was a line (a record) of its own.
    good = [(json.dumps({"id": f"g{i}"}) + "\n").encode() for i in range(6)]
    for newline in ("\n", "\r\n"):
        wide = _utf16_line({"id": "wide"}, newline)
        path = tmp_path / "mid.jsonl"
        path.write_bytes(b"".join(good[:3]) + wide + wide + b"".join(good[3:]))
        recs = list(read_jsonl(path))
        assert [r.line for r in recs] == [1, 2, 3, 4, 5, 6, 7, 8]
        assert [json.loads(r.payload)["id"] for r in recs if r.line not in (4, 5)] == ["g0", "g1", "g2", "g3", "g4", "g5"]
        assert recs[3].payload.startswith(b"\xff\xfe") and recs[4].payload.startswith(b"\xff\xfe")  # the second's own mark, no NUL
        ends = [len(b"".join(good[:i + 1])) for i in range(3)] + [sum(map(len, good[:3])) + len(wide) * k - 1 for k in (1, 2)]
        ends += [sum(map(len, good[:3])) + 2 * len(wide) + len(b"".join(good[3:i + 1])) for i in range(3, 6)]
        assert [r.end for r in recs] == ends  # offsets are the file's bytes, the moved NUL counted in the line it begins
        for r in recs[:-1]:  # read from the end of any record (a resume cursor) gives the same records after it
            assert [(s.line, s.payload, s.end) for s in read_jsonl(path, start=(r.end, r.line))] == [
                (s.line, s.payload, s.end) for s in recs if s.line > r.line]
        path = tmp_path / "end.jsonl"
        path.write_bytes(b"".join(good[:3]) + wide)
        recs = list(read_jsonl(path))
        assert [r.line for r in recs] == [1, 2, 3, 4] and recs[-1].payload.endswith(b"\n")  # no line 5, of one NUL
        assert list(read_jsonl(path, start=(recs[-1].end, 4))) == []


def test_a_utf16_be_line_keeps_its_own_leading_nul(tmp_path):
    # A UTF-16 BE line ends in 00 0A as a UTF-16 LE one does, but that 00 is its own newline's and the next line's
    # leading 00 is the next line's: taken for the LE case, the second of two BE lines lost it (`45 of its 90 bytes are
    # NUL` for the first, `44 of its 89` for the second). Each reads as the bytes written.
    good = [(json.dumps({"id": f"g{i}"}) + "\n").encode() for i in range(6)]
    for newline in ("\n", "\r\n"):
        wide = [(json.dumps({"id": f"w{i}"}) + newline).encode("utf-16-be") for i in range(2)]
        blank = "\n".encode("utf-16-be")
        path = tmp_path / "be.jsonl"
        path.write_bytes(b"".join(good[:3]) + wide[0] + wide[1] + blank + wide[0] + b"".join(good[3:]))
        recs = list(read_jsonl(path))
        assert [r.payload for r in recs if r.line in (4, 5, 7)] == [wide[0], wide[1], wide[0]]
        assert [json.loads(r.payload)["id"] for r in recs if r.line not in (4, 5, 6, 7)] == ["g0", "g1", "g2", "g3", "g4", "g5"]


def test_one_utf16_line_among_a_few_does_not_make_the_file_binary(tmp_path):
    # With its NUL counted in the next line, two of four lines held a NUL: the whole file was "not a text JSONL file".
    path = tmp_path / "four.jsonl"
    good = [(json.dumps({"id": f"g{i}"}) + "\n").encode() for i in range(3)]
    path.write_bytes(good[0] + _utf16_line({"id": "wide"}, "\n") + good[1] + good[2])
    recs = list(read_jsonl(path))
    assert [r.error for r in recs] == [None] * 4 and [json.loads(recs[i].payload)["id"] for i in (0, 2, 3)] == ["g0", "g1", "g2"]


@pytest.mark.parametrize("chunk_size", [1 << 20, 3])
def test_json_array_a_bracket_lost_or_added_costs_one_record_at_any_chunk_size(tmp_path, chunk_size):
    p = tmp_path / "bad.json"
    # A record that lost its `{`: its keys, up to the `}` that closed it, are one error, and the read goes on.
    p.write_text('[{"a": 1},\n"b": 2, "c": [3]},\n{"d": 4}]')
    assert [(r.line, r.payload, r.error) for r in read_json_array(p, chunk_size=chunk_size)] == [
        (1, {"a": 1}, None),
        (2, None, "invalid JSON: a key (\"b\":) where a record starts, at line 2 column 1: the record's opening '{' is missing, or a "
                  "'}' too many ended the record before it early"),
        (3, {"d": 4}, None)]
    # A `}` added inside one: its brackets pair up, but not where a record ends; what follows is no record.
    p.write_text('[{"a": 1},\n{"b": 1,} "c": 2},\n{"d": 4}]')
    assert [(r.line, r.payload, r.error) for r in read_json_array(p, chunk_size=chunk_size)] == [
        (1, {"a": 1}, None),
        (2, None, "invalid JSON: Expecting property name enclosed in double quotes at line 2 column 9; a bracket is missing, or one "
                  "too many, in or near this record, so where it ends cannot be told; the rest of the file is not read")]
    # Two broken records on one line: the second is filed under its column, not the first's `file:line`.
    p.write_text('[{"a": tru}, {"b": fals}]')
    assert [(r.line, r.payload) for r in read_json_array(p, chunk_size=chunk_size)] == [(1, None), (1, {"id": f"{p}:1:14"})]


def test_json_array_a_lost_comma_does_not_read_the_rest_of_the_file_into_memory(tmp_path, tau_paths):
    # A run followed by `{` was held back until a `,` or `]` came: the whole rest of the file was read into memory (and
    # the run decoded again at every chunk) before the first run was given.
    import tracemalloc

    text = json.dumps(json.loads(tau_paths[0].read_text())[:40])
    at = text.index('}, {"task_id"')
    p = tmp_path / "runs.json"
    p.write_text(text[: at + 1] + " " + text[at + 2 :])
    records = read_json_array(p, chunk_size=4096)
    tracemalloc.start()
    try:
        first = next(records)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        records.close()
    assert first.error is None and first.payload["task_id"] == 0
    assert peak < len(text) // 4, (peak, len(text))


@pytest.mark.parametrize("pad", range(3))
def test_a_first_line_over_64_kib_with_a_character_across_the_sniff_s_end_is_text(tmp_path, pad):
    # The first 64 KiB are sniffed for text; cut inside a CJK character they read as "not UTF-8", and every case of
    # a valid file (tracejudge's own `extract` output with Chinese text) was refused: "nothing in it was read".
    from tracejudge.stages.load import count_jsonl

    first = json.dumps({"id": "c1", "input": "q" + "a" * pad, "trace": {"output": "東" * 30_000}}, ensure_ascii=False)
    second = json.dumps({"id": "c2", "input": "q"})
    path = tmp_path / "cases.jsonl"
    path.write_text(first + "\n" + second + "\n", encoding="utf-8")
    records = list(read_jsonl(path))
    assert [(r.line, r.error) for r in records] == [(1, None), (2, None)]
    assert json.loads(records[0].payload)["trace"]["output"] == "東" * 30_000
    assert count_jsonl(path) == 2


def test_a_compressed_file_or_archive_is_named_as_such(tmp_path):
    # A `.jsonl.gz` was "not a text JSONL file (a NUL byte …)", and under `otel` "text that is not JSON" with the advice
    # to check the format; a compressed file is now named, with what to do.
    import gzip
    import io
    import subprocess
    import sys
    import zipfile
    from pathlib import Path

    import yaml

    line = json.dumps({"id": "a", "trace": {"steps": []}}) + "\n"
    (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress(line.encode() * 50))
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("c.jsonl", line * 50)
    (tmp_path / "c.zip").write_bytes(packed.getvalue())
    [rec] = read_jsonl(tmp_path / "c.jsonl.gz")
    assert rec.error == ("not a text JSONL file (it starts with 1F 8B, the mark of a gzip-compressed file: decompress it first "
                         "(gunzip)); nothing in it was read"), rec.error
    [rec] = read_jsonl(tmp_path / "c.zip")
    assert "it starts with 50 4B 03 04, the mark of a zip archive: extract the file from it first (unzip)" in rec.error, rec.error
    cfg = tmp_path / "o.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(tmp_path / "c.jsonl.gz"), "format": "otel"},
                                   "metrics": [{"type": "MaxToolCalls", "max_calls": 3}], "run": {"dir": str(tmp_path / "run")}}))
    done = _forkserver.run([str(Path(sys.executable).with_name("tracejudge")), "run", str(cfg), "--no-progress"], capture_output=True, text=True,
                          timeout=120)
    text = " ".join(done.stderr.split())
    assert done.returncode == 2 and "the mark of a gzip-compressed file: decompress it first (gunzip)" in text, text
    assert "the file is compressed, not text; decompress it and give dataset.path the file inside" in text, text
    assert "text that is not JSON" not in text and "BFCL" not in text, text  # (no other format's trial read speaks)


@pytest.mark.parametrize("fmt", ["otel", "inspect"])
def test_an_empty_folder_is_a_config_error_for_run_and_extract_alike(tmp_path, fmt):
    # `run` on an empty folder went on to "FAIL results: the run has no results" (exit 1; `--fresh` left its empty run
    # directory behind) where `extract` said "no records in it" (exit 2).
    import subprocess
    import sys
    from pathlib import Path

    import yaml

    (tmp_path / "logs" / "sub").mkdir(parents=True)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(tmp_path / "logs"), "format": fmt},
                                   "metrics": [{"type": "MaxToolCalls", "max_calls": 3}], "run": {"dir": str(tmp_path / "run")}}))
    exe = str(Path(sys.executable).with_name("tracejudge"))
    for args in (["run", str(cfg), "--no-progress"], ["run", str(cfg), "--fresh", "--no-progress"], ["extract", str(cfg), "-o", "-"]):
        done = _forkserver.run([exe, *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "no records in it (no file in the folder holds one)" in done.stderr, (args, done.stderr)
        assert done.stderr.startswith("config error"), done.stderr
    assert not any(tmp_path.glob("run*")), list(tmp_path.iterdir())
    out = tmp_path / "cases.jsonl"  # (`extract -o FILE` made the file empty before it found nothing to write)
    done = _forkserver.run([exe, "extract", str(cfg), "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and not out.exists(), done.stderr
