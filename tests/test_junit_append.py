"""junit.xml's suites are copied into the document whole, by the kernel where it can, by Python where it cannot.

`_append_file` appends a suite's temporary file to the document at its position: into a regular file
(`copy_file_range`), a pipe (`sendfile`), a file opened for appending (which `copy_file_range` refuses),
and a stream with no file behind it. Each gets the same bytes, and writing goes on after them.
"""

from __future__ import annotations

import io
import os
import tempfile
import threading
from pathlib import Path

import pytest

BODY = ("    <testcase classname=\"m\" name=\"é-<&>\" time=\"0.000001\">\n" * 40_000).encode("utf-8")  # ~2.5 MB


def _suite() -> io.BufferedRandom:
    fh = tempfile.TemporaryFile("w+b")
    fh.write(BODY)
    fh.flush()  # left at its end: the copy starts from the file's start whatever its position
    return fh


@pytest.mark.parametrize("mode", ["wb", "ab"])
def test_append_into_a_file_then_write_on(mode, tmp_path):
    from tracejudge.stages.reports.junit import _append_file

    path = tmp_path / "out.xml"
    path.write_bytes(b"<old/>\n" if mode == "ab" else b"")
    before = path.read_bytes()
    with open(path, mode) as out, _suite() as src:
        out.write(b"<head>\n")
        out.flush()
        _append_file(src, out)
        assert out.tell() == len(before) + 7 + len(BODY)
        out.write(b"</head>\n")
    assert path.read_bytes() == before + b"<head>\n" + BODY + b"</head>\n"


def test_append_into_a_text_file_through_its_buffer(tmp_path):
    from tracejudge.stages.reports.junit import _append_file

    path = tmp_path / "out.xml"
    with open(path, "w", encoding="utf-8") as out, _suite() as src:
        out.write("<héad>\n")
        out.flush()
        _append_file(src, out.buffer)
        out.write("</héad>\n")
    assert path.read_bytes() == "<héad>\n".encode() + BODY + "</héad>\n".encode()


def test_append_into_a_pipe():
    from tracejudge.stages.reports.junit import _append_file

    r, w = os.pipe()
    got = bytearray()

    def drain() -> None:
        with open(r, "rb") as fh:
            while chunk := fh.read(1 << 16):
                got.extend(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    with open(w, "wb") as out, _suite() as src:
        out.write(b"<head>\n")
        out.flush()
        _append_file(src, out)
        out.write(b"</head>\n")
    reader.join(timeout=60)
    assert bytes(got) == b"<head>\n" + BODY + b"</head>\n"


def test_append_into_a_stream_without_a_file(tmp_path: Path):
    from tracejudge.stages.reports.junit import _append_file

    out = io.BytesIO()
    out.write(b"<head>\n")
    with _suite() as src:
        _append_file(src, out)
    out.write(b"</head>\n")
    assert out.getvalue() == b"<head>\n" + BODY + b"</head>\n"
