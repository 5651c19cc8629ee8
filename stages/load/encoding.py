"""Why bytes that should be UTF-8 text are not, in words a user can act on.

`json.loads` given bytes guesses UTF-16 or UTF-32 from their first bytes, so a
line starting with FF FE (a UTF-16 byte-order mark) was decoded as UTF-16 and
reported as invalid JSON at column 1, or as "not valid UTF-8" at an offset of
the UTF-16 decode. Records are decoded as UTF-8 only (`utf8_text`), and a line
that is not UTF-8 is reported by `encoding_problem`: the encoding it looks like,
or the first invalid byte with its column.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["BOM", "ESCAPED", "NotUtf8", "byte_size", "encoding_problem", "escaped_byte", "escaped_byte_in", "file_encoding_problem",
           "nul_byte", "strip_bom", "utf8_text", "wide_encoding", "wide_line"]

# A UTF-8 byte-order mark: no character of a record. Editors on Windows (Notepad, PowerShell's `Out-File -Encoding utf8`)
# start a file with one; it is dropped wherever a file or line starts with it, as if it were not there.
BOM = b"\xef\xbb\xbf"

# What `errors="surrogateescape"` decodes a byte that is not UTF-8 into: U+DC80..U+DCFF, one per byte, which a strict
# UTF-8 decode never yields. A document decoded so reads to its end, and each record holding one is that record's error.
ESCAPED = re.compile("[\udc80-\udcff]")

# Longest first: a UTF-32 LE mark begins with the UTF-16 LE one.
_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32 LE"), (b"\x00\x00\xfe\xff", "UTF-32 BE"), (b"\xff\xfe", "UTF-16 LE"), (b"\xfe\xff", "UTF-16 BE"))


class NotUtf8(ValueError):
    """Bytes of a record that are not UTF-8 text; the message is the reason (`encoding_problem`)."""


def wide_encoding(raw: bytes) -> str | None:
    """Why `raw` looks UTF-16 or UTF-32 encoded, or None when it does not.

    A UTF-16 or UTF-32 byte-order mark at the start (`it starts with FF FE, a
    UTF-16 LE byte-order mark: the file looks UTF-16 encoded; save it as
    UTF-8`), or a third or more of its bytes NUL, as in such text without a
    mark (every other byte of ASCII text in UTF-16, three of four in UTF-32).
    """
    for mark, name in _BOMS:
        if raw.startswith(mark):
            return (f"it starts with {mark.hex(' ').upper()}, a {name} byte-order mark: "
                    f"the file looks {name.split()[0]} encoded; save it as UTF-8")
    nul, size = raw.count(0), len(raw.rstrip(b"\r\n"))
    if nul and 3 * nul >= size:
        name = "UTF-32" if size >= 8 and 3 * nul >= 2 * size else "UTF-16"
        return f"{nul} of its {len(raw)} bytes are NUL: the file looks {name} encoded; save it as UTF-8"
    return None


def wide_line(raw: bytes) -> str | None:
    """`wide_encoding` of one line that decodes as UTF-8, but only when its NUL bytes sit where UTF-16 or UTF-32 puts
    them, else None: a UTF-8 line holding a few NULs (`{}` and one NUL is a third NUL) is no UTF-16 text.

    Without a byte-order mark, ASCII text in UTF-16 has every other byte NUL, in UTF-32 three of four: counted from the
    line's start (its newline's bytes aside), one position of each character's bytes holds (almost) no NUL and each other
    position two thirds or more, as the count `wide_encoding` asks of the whole line comes to.
    """
    if (why := wide_encoding(raw)) is None or any(raw.startswith(mark) for mark, _ in _BOMS):
        return why
    body = raw.rstrip(b"\r\n")
    for width in (2, 4):
        places = [(body[at::width].count(0), len(body[at::width])) for at in range(width)]  # (NULs, bytes) at each position
        # (a character's byte may be 00 where ASCII's is not: 4E00 in UTF-16 LE is 00 4E)
        # (a position holding no byte at all, on a line shorter than its width, is no character's place: `00` alone)
        sparse = [at for at, (nul, size) in enumerate(places) if nul <= size // 10 and size > nul]
        if len(sparse) == 1 and all(3 * nul >= 2 * size for at, (nul, size) in enumerate(places) if at != sparse[0]):
            return why
    return None


def nul_byte(text: str, at: int) -> str | None:
    """What `text[at]` is when it is a NUL, where a JSON decode of the line `text` stopped, else None: `a NUL byte at
    column 8 (byte offset 7): JSON allows none, in a string or out of one (in a string it is written \\u0000)`.

    The column counts characters (as an editor does, 1-based), the offset bytes of the line (0-based). The decoder
    would say "Invalid control character" or "Expecting value", naming no byte an editor shows.
    """
    if at >= len(text) or text[at] != "\x00":
        return None
    offset = len(text[:at].encode("utf-8", "surrogatepass"))
    return (f"a NUL byte at column {at + 1} (byte offset {offset}): JSON allows none, in a string or out of one "
            "(in a string it is written \\u0000)")


# The first bytes of the compressed files and archives a dataset is most often kept in (`file` would say the same).
_PACKED = ((b"\x1f\x8b", "gzip-compressed file: decompress it first (gunzip)"),
           (b"PK\x03\x04", "zip archive: extract the file from it first (unzip)"),
           (b"\xfd7zXZ\x00", "xz-compressed file: decompress it first (unxz)"),
           (b"(\xb5/\xfd", "zstd-compressed file: decompress it first (unzstd)"),
           (b"BZh", "bzip2-compressed file: decompress it first (bunzip2)"),
           (b"7z\xbc\xaf'\x1c", "7-Zip archive: extract the file from it first"))


def compressed(head: bytes) -> str | None:
    """Why a file whose first bytes are `head` is no text: it is compressed or an archive (`it starts with 1F 8B, the mark
    of a gzip-compressed file: decompress it first (gunzip)`), else None. Asked only of bytes that are not UTF-8 text
    already (a text file may start with `BZh`)."""
    for mark, what in _PACKED:
        if head.startswith(mark):
            return f"it starts with {mark.hex(' ').upper()}, the mark of a {what}"
    return None


def encoding_problem(raw: bytes, *, lines: bool = False) -> str | None:
    """Why `raw` (one line, or with `lines` a whole document) is not UTF-8 text, or None when it is.

    The encoding it looks like (`wide_encoding`), else the first byte that is
    not UTF-8, its 1-based column (in characters, as an editor counts; with
    `lines`, its line too) and its 0-based byte offset in `raw`: `byte 0xE9 at
    column 10 (byte offset 9) starts no UTF-8 character (invalid continuation byte); save the file as UTF-8`.
    Surrogates encoded in UTF-8 pass, as `json.loads` lets them (what writes a result escapes them).
    """
    if (wide := wide_encoding(raw)) is not None:
        return wide
    try:
        raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as exc:
        return compressed(raw) or _bad_byte(raw, exc, 0, 1 if lines else None)
    return None


def _bad_byte(buf: bytes, exc: UnicodeDecodeError, base: int, line: int | None, column: int = 0) -> str:
    """The words for the byte of `buf` that `exc` refused. `base` is `buf`'s offset in its file, `line` the line
    `buf` starts on (None: name no line, `buf` is one line) and `column` how many characters of that line came before `buf`."""
    before = buf[:exc.start]
    nl = before.rfind(b"\n")
    column = (0 if nl >= 0 else column) + len(before[nl + 1:].decode("utf-8", "surrogatepass")) + 1
    where = f"line {line + before.count(10)} column {column}" if line is not None else f"column {column}"
    return _words(buf[exc.start], where, base + exc.start, exc.reason)


def _words(byte: int, where: str, offset: int, reason: str) -> str:
    return f"byte 0x{byte:02X} at {where} (byte offset {offset}) starts no UTF-8 character ({reason}); save the file as UTF-8"


def strip_bom(data: bytes) -> bytes:
    """`data` without the UTF-8 byte-order mark it may start with (`BOM`)."""
    return data[len(BOM):] if data.startswith(BOM) else data


def byte_size(text: str) -> int:
    """How many bytes of a file `text` (decoded with `errors="surrogateescape"`) came from."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogateescape"))


def escaped_byte_in(text: str, at: int, base: int = 0) -> str:
    """`escaped_byte` for `text[at]` where `text` is a whole file from byte `base` on (after a byte-order mark)."""
    return escaped_byte(text, at, text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at), base + byte_size(text[:at]))


def escaped_byte(text: str, at: int, line: int, column: int, offset: int) -> str:
    """The words for the byte that `ESCAPED` found at `text[at]`, as `encoding_problem` says them (`byte 0xE9 at line 112
    column 28 (byte offset 9836) starts no UTF-8 character (invalid continuation byte); save the file as UTF-8`).

    `text` was decoded with `errors="surrogateescape"`; `line` and `column` (1-based, in characters as an editor counts,
    an escaped byte one) and `offset` (0-based, in the file) are the byte's own. The reason is what a strict decode says
    of the bytes from it on (a lead byte whose next byte does not continue it, or a byte that begins no character).
    """
    raw = text[at:at + 4].encode("utf-8", "surrogateescape")
    try:
        raw.decode("utf-8")
        reason = "invalid start byte"  # (not reached: the escaped byte is not UTF-8 wherever it is)
    except UnicodeDecodeError as exc:
        reason = exc.reason
    return _words(raw[0], f"line {line} column {column}", offset, reason)


def file_encoding_problem(path: Path, chunk: int = 1 << 20) -> str | None:
    """Why the file at `path` is not UTF-8 text, or None when it is: the encoding its start looks like
    (`wide_encoding`), or its first invalid byte's line, column and byte offset in the file.

    Read `chunk` bytes at a time (a text-mode reader's error names an offset in its own buffer, not the file's).
    """
    with open(path, "rb") as fh:
        data = fh.read(chunk)
        if (wide := wide_encoding(data)) is not None:
            return compressed(data) or wide  # (a gzip file's NUL bytes look UTF-16 to the count)
        base, line, column, carry = 0, 1, 0, b""
        while True:
            buf = carry + data
            try:
                buf.decode("utf-8", "surrogatepass")
                good = len(buf)
            except UnicodeDecodeError as exc:
                if not (data and exc.reason == "unexpected end of data" and exc.end == len(buf)):
                    return (compressed(buf) if base == 0 else None) or _bad_byte(buf, exc, base, line, column)
                good = exc.start  # a character cut by the chunk's end: decoded with the next chunk
            nl = buf.rfind(b"\n", 0, good)
            column = (0 if nl >= 0 else column) + len(buf[nl + 1:good].decode("utf-8", "surrogatepass"))
            line += buf.count(10, 0, good)
            base += good
            carry = buf[good:]
            if not data:
                return None
            data = fh.read(chunk)


def utf8_text(raw: bytes | str) -> str:
    """`raw` decoded as UTF-8 (a `str` is returned as it is), never guessed as another encoding.

    Raises `NotUtf8` (a `ValueError`): `line is not valid UTF-8: <encoding_problem>`.
    """
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        raise NotUtf8(f"line is not valid UTF-8: {encoding_problem(raw)}") from None
