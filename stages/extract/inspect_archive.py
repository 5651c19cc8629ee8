"""The members of a `.eval` log, a zip archive, read without inspect-ai and without `zipfile`'s decompressors.

inspect 0.3.1xx and later compress each member with Zstandard (zip method 93), which `zipfile` reads only from
Python 3.14 (and inspect-ai teaches it by patching the module process-wide, which a reader must not rely on):
`Member.content` decompresses stored, deflated and Zstandard members itself — Zstandard with Python 3.14's
`compression.zstd`, else the `zstandard` module (a dependency of inspect-ai, so present wherever `inspect eval`
ran); without either a member says what to install. The checksum is checked.

An archive that lost its central directory (a log cut short while written, or copied in part) is read from its
local headers in order, as far as they go (`members`): the members before the cut are whole.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Any, BinaryIO

__all__ = ["Broken", "Member", "NotAZip", "ZIP_SIGNATURE", "members"]

ZIP_SIGNATURE = b"PK\x03\x04"  # a zip local file header: a zip archive starts with one
_LOCAL = struct.Struct("<4s2B4HL2L2H")  # a local file header, as `zipfile` packs it (APPNOTE 4.3.7)
_ZSTD = 93  # zip method id of Zstandard (APPNOTE 4.4.5)
_NEED_ZSTD = ("it is compressed with Zstandard, which this Python cannot read: install `zstandard` (pip install zstandard; "
              "inspect-ai depends on it) or use Python 3.14+, or convert the log with `inspect log convert --to json`")


class Broken(ValueError):
    """A member that cannot be read; the message says why."""


class NotAZip(ValueError):
    """The file is no zip archive at all."""


@dataclass(slots=True)
class Member:
    """A member's compression, checksum and flags, and where its compressed bytes are: `data` itself (`fh` None,
    `data` None when the archive ends inside it), or `size` bytes after the local header at `offset` in `fh`."""

    method: int
    crc: int
    flags: int
    fh: Any = None
    offset: int = 0
    size: int = 0
    data: bytes | None = None

    def content(self) -> bytes:
        """The member's bytes, decompressed and checked; raises `Broken`."""
        if self.flags & 1:
            raise Broken("it is encrypted")
        raw = self.data if self.fh is None else self._raw()
        if raw is None:
            raise Broken("the archive ends inside it (the log is cut short)")
        if self.method == 0:
            data = raw
        elif self.method == 8:
            try:
                data = zlib.decompress(raw, -15)
            except zlib.error as exc:
                raise Broken(f"its deflate data is damaged: {exc}") from None
        elif self.method == _ZSTD:
            data = _unzstd(raw)
        else:
            raise Broken(f"it is compressed with zip method {self.method}, which inspect does not write")
        if zlib.crc32(data) != self.crc:
            raise Broken("its checksum does not match its content (the member is damaged)")
        return data

    def _raw(self) -> bytes | None:
        self.fh.seek(self.offset)
        head = self.fh.read(_LOCAL.size)
        if len(head) < _LOCAL.size or head[:4] != ZIP_SIGNATURE:
            raise Broken("its local header is missing (the archive is damaged)")
        *_, name_len, extra_len = _LOCAL.unpack(head)
        self.fh.seek(self.offset + _LOCAL.size + name_len + extra_len)
        raw: bytes = self.fh.read(self.size)
        return raw if len(raw) == self.size else None


def _unzstd(raw: bytes) -> bytes:
    """Decompress Zstandard frames (inspect writes a member as one or more); raises `Broken`."""
    try:
        from compression import zstd as std  # type: ignore[import-not-found]  # (Python 3.14+)
    except ImportError:
        std = None
    if std is not None:
        try:
            return bytes(std.decompress(raw))
        except std.ZstdError as exc:
            raise Broken(f"its Zstandard data is damaged: {exc}") from None
    try:
        import zstandard  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise Broken(_NEED_ZSTD) from None
    out, rest, dctx = [], raw, zstandard.ZstdDecompressor()
    while rest:
        frame = dctx.decompressobj()
        try:
            out.append(frame.decompress(rest))
        except zstandard.ZstdError as exc:
            raise Broken(f"its Zstandard data is damaged: {exc}") from None
        if not frame.eof:
            raise Broken("its Zstandard data ends early (the member is cut short)")
        rest = frame.unused_data
    return b"".join(out)


def members(fh: BinaryIO) -> tuple[dict[str, Member], str | None]:
    """`(every member by name, where the archive is cut or None)` of the zip archive open in `fh` (kept open to read them).

    A name written twice is its last copy, as inspect and every zip reader take it (inspect writes a re-run sample
    again). Without a central directory the local headers are read in order (`_salvage`); the second item then says
    where the archive ends. Raises `NotAZip` (with `zipfile`'s reason) for a file that is no zip archive.
    """
    import zipfile

    try:
        with zipfile.ZipFile(fh) as zf:
            infos = {i.filename: i for i in zf.infolist()}
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:  # no central directory: cut short, or no zip at all
        fh.seek(0)
        data = fh.read()
        if not data.startswith(ZIP_SIGNATURE):
            raise NotAZip(str(exc)) from None
        return _salvage(data)
    return {m: Member(i.compress_type, i.CRC, i.flag_bits, fh, i.header_offset, i.compress_size) for m, i in infos.items()}, None


def _salvage(data: bytes) -> tuple[dict[str, Member], str]:
    found: dict[str, Member] = {}
    pos, cut = 0, "after its last whole member"
    while data.startswith(ZIP_SIGNATURE, pos) and pos + _LOCAL.size <= len(data):
        _, _, _, flags, method, _, _, crc, size, _, name_len, extra_len = _LOCAL.unpack_from(data, pos)
        name = data[pos + _LOCAL.size : pos + _LOCAL.size + name_len].decode("utf-8" if flags & 0x800 else "cp437")
        start = pos + _LOCAL.size + name_len + extra_len
        if flags & 0x08 or size == 0xFFFFFFFF:  # sizes kept after the data (or in a zip64 field): no way to the next member
            return found, f"at {name}, whose size its header does not give"
        found[name] = Member(method, crc, flags, data=data[start : start + size] if start + size <= len(data) else None)
        if start + size > len(data):
            return found, f"inside {name}"
        pos = start + size
    return found, cut
