"""JSON written over several lines that does not read is one error naming where; JSON Lines stay read a line at a time.

A pretty-printed document with a comma lost, or cut short, was one "invalid JSON" record per line (hundreds); it is one
record naming the file (its `file:line`), the line and column of the JSON error, and that the file looks like one JSON
document written over several lines. Telling such a file from JSON Lines reads its first two lines only: a JSON Lines
file whose first line is cut short (a writer killed mid-record), or is a lone `{`, is still read a line at a time, that
line its own error, however large the file.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from framework_truth import extract, recordings
from tracejudge.core.records import Case
from tracejudge.stages.load import read_jsonl
from tracejudge.stages.load.documents import multiline_start

PRETTY = "the file looks like one JSON document written over several lines (pretty-printed), not JSON Lines"


def _trace(n: int = 0) -> dict:
    """The `n`-th real MLflow trace (`Trace.to_json()`) of the recordings."""
    export, _ = recordings("mlflow", ".mlflow.jsonl")[n]
    return json.loads(export.read_text(encoding="utf-8"))


def test_a_pretty_printed_document_with_a_comma_lost_is_one_error_naming_its_line_and_column(tmp_path: Path) -> None:
    lines = json.dumps(_trace(), indent=2).splitlines()
    at = next(n for n in range(40, len(lines)) if lines[n].endswith(","))
    lines[at] = lines[at][:-1]  # (the value on the next line then follows one with no comma between)
    path = tmp_path / "trace.json"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    got = extract(path, "mlflow")
    assert len(got) == 1 and not isinstance(got[0], Case), got[:3]
    _, error = got[0]
    column = len(lines[at + 1]) - len(lines[at + 1].lstrip()) + 1
    assert (error.file, error.line) == (str(path), 1)
    assert error.message == (f"invalid JSON: Expecting ',' delimiter at line {at + 2} column {column}; {PRETTY}, and it breaks there")


def test_a_pretty_printed_document_cut_short_says_the_file_ends_early(tmp_path: Path) -> None:
    text = json.dumps(_trace(), indent=2)
    path = tmp_path / "trace.jsonl"
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    records = list(read_jsonl(path))
    assert len(records) == 1 and records[0].line == 1
    assert records[0].error.startswith("invalid JSON: ") and "; the file ends early (it looks truncated); " in records[0].error
    assert records[0].error.endswith(f"{PRETTY}, and it is cut short")


def test_the_second_of_two_pretty_printed_documents_broken_costs_only_itself(tmp_path: Path) -> None:
    first, second = json.dumps(_trace(0), indent=2), json.dumps(_trace(1), indent=2).replace('"info": {', '"info": {,', 1)
    path = tmp_path / "traces.json"
    path.write_text(first + "\n" + second + "\n", encoding="utf-8")
    got = extract(path, "mlflow", group_by="trace")
    assert [type(r) for r in got] == [Case, tuple]
    start = first.count("\n") + 2
    _, error = got[1]
    assert error.line == start and f"at line {start + 1} column " in error.message
    assert error.message.endswith(f"one after another, not JSON Lines, and the one starting at line {start} breaks there; the rest of the file is not read")


def test_a_pretty_printed_array_with_a_broken_record_reads_the_others(tmp_path: Path) -> None:
    cases = [{"id": f"c{i}", "input": "hi", "trace": {"steps": [], "output": "done"}} for i in range(3)]
    text = json.dumps(cases, indent=2).replace('"id": "c1",', '"id": "c1",,', 1)
    path = tmp_path / "cases.json"
    path.write_text(text, encoding="utf-8")
    got = extract(path, "native")
    assert [r.id if isinstance(r, Case) else "error" for r in got] == ["c0", "error", "c2"]
    assert got[1][1].line == text.splitlines().index("  {", 2) + 1 and "invalid JSON" in got[1][1].message


def test_json_lines_whose_first_line_is_cut_are_read_a_line_at_a_time_and_the_same_traces_pretty_printed_as_documents(tmp_path: Path) -> None:
    # Real one-line traces: the first cut short (as a writer killed mid-record leaves it: after a comma, after a key's
    # colon, before an indented-looking space), the others whole. Each cut is line 1's own error; every other line reads.
    lines = [json.dumps(_trace(n)) for n in range(5)]
    for cut in (lines[0][:500], lines[0][: lines[0].index('": ', 400) + 3], lines[0][: lines[0].index(", ", 300) + 2], "{"):
        path = tmp_path / "traces.jsonl"
        path.write_text("\n".join([cut, *lines[1:]]) + "\n", encoding="utf-8")
        assert multiline_start(io.BytesIO(path.read_bytes())) is None, cut[-20:]
        got = extract(path, "mlflow", group_by="trace")
        assert [type(r) for r in got] == [tuple, Case, Case, Case, Case], cut[-20:]
        assert got[0][1].line == 1 and got[0][1].message.startswith("invalid JSON: ")
        if cut != "{":
            assert got[0][1].message.endswith("the line ends early (it looks truncated)")
    # The same traces, each pretty-printed: five cases, not one error per line.
    path.write_text("".join(json.dumps(json.loads(line), indent=2) + "\n" for line in lines), encoding="utf-8")
    assert [type(r) for r in extract(path, "mlflow", group_by="trace")] == [Case] * 5


def test_telling_json_written_over_several_lines_from_json_lines() -> None:
    def start(text: str) -> str | None:
        return multiline_start(io.BytesIO(text.encode()))

    record = '{"id": "a", "input": "hi"}'
    assert start('{\n  "id": "a"\n}\n') == "{"
    assert start('\ufeff\n\n{\n"id": "a"\n}\n') == "{"  # a byte-order mark and blank lines before it; no indent
    assert start('[\n  {\n    "id": "a"\n  }\n]\n') == "["
    assert start('[\n  {"id": "a"}\n]\n') == "["  # one record a line inside an array
    assert start('{"id": "a",\n  "input": "hi"}\n') == "{"  # a first line that opens more, then an indented key
    assert start('[{"id": "a"},\n {"id": "b"}]\n') == "["
    assert start('{}\n') is None and start(f"{record}\n{record}\n") is None  # JSON Lines
    assert start(f'{{"id": "a", "in\n{record}\n') is None  # the first line cut inside a string
    assert start(f'{{"id": "a",\n{record}\n') is None  # cut after a comma: the next line is a whole record
    assert start(f'{{\n{record}\n') is None  # a lone `{`, then records
    assert start('{"id": "a",\n') is None  # one line, cut: its own error
    assert start(f'{{"id": "a"}} x\n  "b": 1\n') is None  # a whole value and more on the first line: not cut
    assert start('"text"\n') is None and start("[1, 2]\n[3]\n") is None


def test_telling_them_apart_reads_two_lines_of_a_huge_json_lines_file(tmp_path: Path) -> None:
    class Counted(io.BytesIO):
        read_bytes = 0

        def readline(self, size: int = -1) -> bytes:  # type: ignore[override]
            line = super().readline(size)
            Counted.read_bytes += len(line)
            return line

        def read(self, size: int | None = -1) -> bytes:  # type: ignore[override]
            data = super().read(size)
            Counted.read_bytes += len(data)
            return data

    record = json.dumps({"id": "x", "input": "y" * 4000}) + "\n"
    body = ('{"id": "cut", "input": "' + "z" * 3000 + '",\n').encode() + record.encode() * 5000  # 20 MB, its first line cut
    assert multiline_start(Counted(body)) is None and Counted.read_bytes < 10_000
    Counted.read_bytes = 0
    long_first = ('{"id": "long", "input": "' + "z" * (3 << 20)).encode() + b'",\n  "more": 1\n}\n'  # a first line over 1 MiB
    assert multiline_start(Counted(long_first)) is None and Counted.read_bytes <= (1 << 20) + 100
    path = tmp_path / "big.jsonl"
    path.write_bytes(body)
    records = read_jsonl(path)
    head = [next(records) for _ in range(3)]
    records.close()
    assert [r.line for r in head] == [1, 2, 3] and head[0].error is None and head[0].payload.startswith(b'{"id": "cut"')


def test_a_byte_that_is_not_utf8_costs_only_its_pretty_printed_document(tmp_path: Path) -> None:
    # Saved by an editor on Windows: a byte-order mark first; one document holds a Latin-1 `é` (byte E9).
    docs = [json.dumps({"id": f"c{i}", "input": "caf\u00e9", "trace": {"steps": [], "output": "done"}}, indent=2, ensure_ascii=False) for i in range(3)]
    body = b"\xef\xbb\xbf" + b"\n".join(d.encode() for d in docs) + b"\n"
    second = body.index(b'"c1"')
    body = body[:second] + body[second:].replace("é".encode(), b"\xe9", 1)
    path = tmp_path / "cases.json"
    path.write_bytes(body)
    got = extract(path, "native")
    assert [r.id if isinstance(r, Case) else r[1].line for r in got] == ["c0", docs[0].count("\n") + 2, "c2"], got
    message = got[1][1].message
    at = body.index(b"\xe9")
    assert message.startswith("record is not valid UTF-8: byte 0xE9 at line ") and f"(byte offset {at})" in message, message
