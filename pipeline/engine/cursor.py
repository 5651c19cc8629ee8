"""The resume cursor: how far into the dataset a run has got with everything before finished.

Without it a resume reads every line of the dataset and hashes every id to
find the first unfinished case: seconds per 100,000 finished cases. With it
the resume seeks straight to the cursor and reads only what follows.

Two files in the run directory, rewritten at every checkpoint:

- `cursor.json` (`CursorFile`): the byte offset and line number in the
  dataset before which every record is finished; how many records and ids
  lie before it; what the skipped records count as (`skipped`, as the full
  read would have counted them); and a fingerprint of the bytes before the
  offset (the dataset's size and mtime when saved, the SHA-256 of the last
  64 KiB before the offset, and the CRC-32 of all of them);
- `cursor.ids`: for every id first seen before the cursor, its `key_hash`
  and line (two little-endian uint64), in dataset order: a record after the
  cursor that repeats one of them is still reported as a duplicate naming
  the first place, as a full read would.

A record is behind the cursor only when its results are on disk and final:
every trial of a case written (a retryable failure or budget skip, which the
next run redoes, holds the cursor back), a repeated id's or unreadable
record's one result written, another shard's case. A record whose result
key cannot be told without parsing it (an invalid record run with
`trials > 1`) holds the cursor back too: the resume is then slower, never
wrong.

A resume uses the cursor only when the checkpoint was reused without damage
(a rebuilt journal may have lost results), `run.trials` and `run.shard` are
those it was saved with, and the dataset before the offset is unchanged: same
size and mtime and the same last 64 KiB, or, when the file was touched or
grown (cases appended), the same CRC-32 of every byte before the offset.
Otherwise the cursor files are removed and the run reads the dataset from the
start as before (and saves a new cursor as it goes).

Applies to the `native` format read from one JSONL file only; folder
datasets, other formats and cases from memory keep the full read.
`dataset.limit` counts the records before the cursor.
"""

from __future__ import annotations

import hashlib
import sys
import zlib
from array import array
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from tracejudge.core.config import RunConfig
from tracejudge.core.log import get_logger
from tracejudge.core.regular_file import NotRegularFile, open_regular
from tracejudge.engine import store
from tracejudge.engine.admit import safe_text
from tracejudge.engine.cursor_prior import PriorIds
from tracejudge.engine.keyset import FirstSeen, KeySet, key_hash, result_key, trial_key
from tracejudge.engine.shards import Shard, shard_index
from tracejudge.stages.load import RawRecord, read_jsonl

__all__ = ["CURSOR", "CURSOR_IDS", "CursorFile", "Resume", "Tracker", "prepare"]

CURSOR = "cursor.json"
CURSOR_IDS = "cursor.ids"
_FORMAT = 1
_TAIL = 1 << 16
# Records read but not yet behind the cursor that one segment keeps track of; past this (a record held
# back for the whole segment, a retry left pending) the cursor stops moving for the segment.
_MAX_PENDING = 200_000
log = get_logger("tracejudge.cursor")


class CursorFile(BaseModel):
    """`cursor.json`, validated before anything in it is used (see the module docstring)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    format: int
    offset: int = Field(ge=0)
    line: int = Field(ge=0)
    records: int = Field(ge=0)
    ids: int = Field(ge=0)
    skipped: int = Field(ge=0)
    trials: int = Field(ge=1)
    shard: str | None
    size: int = Field(ge=0)
    mtime_ns: int
    prefix_crc32: int = Field(ge=0, lt=1 << 32)
    tail_sha256: str


def _tail_hash(fh: Any, offset: int) -> str:
    start = max(0, offset - _TAIL)
    fh.seek(start)
    return hashlib.sha256(fh.read(offset - start)).hexdigest()


@dataclass
class Tracker:
    """Moves the cursor as records get finished, and saves it (`save`) at every checkpoint.

    `read(raw, pid)` is called for every record the load stage reads, in order, with its peeked id;
    `save(...)` moves the cursor past the records at the front whose results
    are on disk and final, and rewrites the cursor files.
    """

    run_dir: Path
    path: Path
    trials: int
    shard: Shard | None
    shard_text: str | None
    state: dict[str, int]  # offset, line, records, ids, skipped, crc
    stat: tuple[int, int]
    idx_pos: int
    pending: deque[tuple[str | None, int, int, int]] = field(default_factory=deque)  # (pid, line, end, CRC-32 of the bytes up to end)
    written: KeySet = field(default_factory=KeySet)
    added: set[int] = field(default_factory=set)
    lost: bool = False
    ahead: dict[str, int] | None = None  # `state` as `advance` has moved it, not yet written (None: where `state` is)
    ids: array = field(default_factory=lambda: array("Q"))  # the (hash, line) pairs `advance` added since the last write
    # The dataset's CRC-32 carried over the lines as they are read (`read`): up to byte `crc_at`, `crc_read`. Each line's is
    # taken from its bytes then, while they are in the cache, not read back from the file when the cursor passes them.
    crc_at: int = 0
    crc_read: int = 0

    def __post_init__(self) -> None:
        self.crc_at, self.crc_read = self.state["offset"], self.state["crc"]

    def read(self, raw: RawRecord, pid: str | None) -> None:
        """Note one record the load stage read (before it is skipped, sent on or dropped); `pid` is its
        peeked id (None when it is unreadable or has none), as the load stage peeked it."""
        if self.lost:
            return
        if raw.end is None or len(self.pending) >= _MAX_PENDING:
            self.lost = True
            self.pending.clear()
            return
        payload = raw.payload
        if type(payload) is bytes and not payload.endswith(b"\n"):
            # The file's last line, unterminated: text appended later joins it into another record,
            # so the cursor stays before it and a resume reads it again, as a full read would.
            return
        at, crc = self.crc_at, self.crc_read
        if type(payload) is bytes and raw.end - len(payload) == at:
            crc = zlib.crc32(payload, crc)  # (the payload is the file's bytes from `at`: nothing skipped or cut off)
        else:
            # Blank lines before it, or a byte-order mark or NUL `read_jsonl` cut off its start: the bytes read from the file.
            try:
                crc = self._crc(at, raw.end, crc)
            except OSError as exc:
                self._lose(exc)
                self.pending.clear()
                return
        self.crc_at, self.crc_read = raw.end, crc
        self.pending.append((pid, raw.line, raw.end, crc))

    def _final(self, key: int, done: KeySet, provisional: dict[int, str]) -> bool:
        if key in provisional:
            return False
        return self.written.contains_hash(key) or (done.contains_hash(key) and key not in self.added)

    def _behind(self, pid: str | None, line: int, done: KeySet, provisional: dict[int, str], seen: FirstSeen) -> tuple[bool, int, int]:
        """(finished, skipped count, id hash to record as first seen or 0) of one pending record."""
        name = str(self.path)
        if pid is None:
            return self._final(result_key(f"{name}:{line}", 0), done, provisional), 1, 0
        if self.shard is not None and shard_index(safe_text(pid), self.shard[1]) != self.shard[0]:
            return True, 0, 0
        h = key_hash(pid)
        first = seen.where(h)
        # A line whose id the peek found but whose JSON then failed to parse has its one result under
        # its place, as an unreadable line does: without this check the cursor stopped there for good.
        if first is not None and first != (name, line):
            dup = result_key(f"{safe_text(pid)}@{name}:{line}", 0)
            return self._final(dup, done, provisional) or self._final(result_key(f"{name}:{line}", 0), done, provisional), 1, 0
        if all(self._final(trial_key(h, t), done, provisional) for t in range(self.trials)):
            return True, self.trials, h
        if self._final(result_key(f"{name}:{line}", 0), done, provisional):
            return True, 1, h if first == (name, line) else 0
        return False, self.trials, h

    def advance(self, done: KeySet, provisional: dict[int, str], seen: FirstSeen) -> None:
        """Move the cursor, in memory, past the finished records at the front (what the next `save` writes).

        Called after each fsynced group of results as well as by `save`, so that the records a save writes have mostly
        been walked while the run went, not all at its end (the dataset's bytes were checksummed as `read` saw them).
        Errors reading are logged, not raised (the cursor is then lost for this segment).
        """
        if self.lost:
            return
        try:
            self._read_index()
            ahead = self.ahead
            if ahead is None:
                ahead = self.ahead = dict(self.state)
            ids = self.ids  # (hash, line) pairs, written as little-endian uint64 (the only byte order `prepare` allows)
            offset, at, records, n_ids, skipped, crc = ahead["offset"], ahead["line"], ahead["records"], ahead["ids"], ahead["skipped"], ahead["crc"]
            pending, name = self.pending, str(self.path)
            # The common record (an id of its own, every trial written by this segment, no shard) is decided
            # here with local names: one call per record cost most of a save. Anything else asks `_behind`.
            plain = self.shard is None and self.trials == 1 and not provisional
            written, where = self.written.contains_hash, seen.where
            while pending:
                pid, line, end, end_crc = pending[0]
                if plain and pid is not None and where(h := key_hash(pid)) == (name, line) and written(h):
                    finished, took = True, 1
                else:
                    finished, took, h = self._behind(pid, line, done, provisional, seen)
                    if not finished:
                        break
                pending.popleft()
                if h:
                    ids.append(h)
                    ids.append(line)
                    n_ids += 1
                offset, at, records, skipped, crc = end, line, records + 1, skipped + took, end_crc
            if offset != ahead["offset"]:
                ahead.update(offset=offset, line=at, records=records, ids=n_ids, skipped=skipped, crc=crc)
        except OSError as exc:
            self._lose(exc)

    def save(self, done: KeySet, provisional: dict[int, str], seen: FirstSeen) -> None:
        """Move the cursor past finished records (`advance`) and rewrite `cursor.json` and `cursor.ids`.

        `done` is the journal's done set, `provisional` its standing provisional
        results, `seen` the run's first places. Errors writing are logged, not raised:
        the cursor only speeds up a resume.
        """
        self.advance(done, provisional, seen)
        if self.lost or self.ahead is None or self.ahead["offset"] == self.state["offset"]:
            return
        try:
            self._write(dict(self.ahead), self.ids.tobytes())
        except OSError as exc:
            self._lose(exc)

    def _read_index(self) -> None:
        # The results written since the last save (results.idx grows by 8 bytes a result, after its fsync).
        with open_regular(self.run_dir / store.INDEX) as fh:
            fh.seek(self.idx_pos)
            data = fh.read()
        data = data[: len(data) // 8 * 8]
        self.idx_pos += len(data)
        add = self.written.add_hash
        for h in memoryview(data).cast("Q"):  # little-endian machines only (see `prepare`)
            add(h)

    def _lose(self, exc: OSError) -> None:
        # The cursor only speeds up a resume: a read or write that fails ends it for this segment, with a warning.
        log.warning("resume cursor not saved", run_dir=str(self.run_dir), error=str(exc)[:200])
        self.lost = True

    def _crc(self, start: int, end: int, crc: int) -> int:
        # The dataset's CRC-32 carried from byte `start` to byte `end` (bytes this segment has read), read from the file.
        with open(self.path, "rb") as fh:
            fh.seek(start)
            left = end - start
            while left:
                chunk = fh.read(min(left, 1 << 20))
                if not chunk:
                    raise OSError(f"{self.path} is shorter than what was read from it")
                crc = zlib.crc32(chunk, crc)
                left -= len(chunk)
        return crc

    def _write(self, st: dict[str, int], ids: bytes) -> None:
        stat = _stat(self.path)
        if stat != self.stat:  # the dataset changed while this segment read it: what it read is not what is there
            self.lost = True
            return
        with open(self.path, "rb") as fh:
            tail = _tail_hash(fh, st["offset"])
        with open(self.run_dir / CURSOR_IDS, "ab") as out:
            out.truncate(self.state["ids"] * 16)
            out.write(ids)
        body = CursorFile(format=_FORMAT, offset=st["offset"], line=st["line"], records=st["records"], ids=st["ids"], skipped=st["skipped"],
                          trials=self.trials, shard=self.shard_text, size=stat[0], mtime_ns=stat[1], prefix_crc32=st["crc"], tail_sha256=tail)
        store.atomic_write_text(self.run_dir / CURSOR, body.model_dump_json(indent=1) + "\n", durable=False)
        self.state = st
        self.ids = array("Q")


@dataclass
class Resume:
    """What `prepare` gives the runner: the records to read, the first places, the tracker and what the cursor skipped."""

    records: Iterator[RawRecord]
    seen: FirstSeen
    tracker: Tracker
    skipped: int

    def save(self, done: KeySet, provisional: dict[int, str]) -> None:
        """`Tracker.save` with the run's first places (the journal's checkpoint hook)."""
        self.tracker.save(done, provisional, self.seen)

    def advance(self, done: KeySet, provisional: dict[int, str]) -> None:
        """`Tracker.advance` with the run's first places (the journal's hook after each fsynced group)."""
        self.tracker.advance(done, provisional, self.seen)


def _stat(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def prepare(run_dir: Path, config: RunConfig, fmt: Any, recovery: dict[str, Any], done: KeySet, forced: bool = False) -> Resume | None:
    """The resume from the cursor, or from the start with a new cursor; None where no cursor applies.

    `forced`: the run goes on past a config or dataset change (`--force`); the bytes before the
    cursor are then checked in full even when the dataset's size and mtime are as saved (an edit
    in place with its mtime put back, as `cp -p` or `rsync -a` leave it).

    `fmt` is the dataset's `Format`, `recovery` and `done` the journal's
    (`RunJournal.recovery`, `RunJournal.done`: every finished key at open). Applies to the `native` format
    read from a file on a little-endian machine; anything else returns None and
    the caller reads the dataset as before.
    """
    path = Path(config.dataset.path) if config.dataset.path is not None else None
    if fmt.name != "native" or fmt.peek_id is None or fmt.bind is not None or fmt.remote or path is None or not path.is_file():
        return None
    if sys.byteorder != "little":  # `cursor.ids` is read by a memoryview cast in native order
        return None
    run_dir = Path(run_dir)
    size_hint = len(done)
    try:
        cur, why = _usable(run_dir, config, path, recovery, forced)
        stat = _stat(path)
    except OSError as exc:
        log.warning("resume cursor not used", run_dir=str(run_dir), reason=f"{type(exc).__name__}: {exc}"[:200])
        return None
    limit = config.dataset.limit
    idx_pos = (run_dir / store.INDEX).stat().st_size if (run_dir / store.INDEX).exists() else 0
    shard = tuple(int(x) for x in config.run.shard.split("/")) if config.run.shard else None
    if cur is None:
        if why is not None:
            log.info("resume cursor not used; the dataset is read from the start", run_dir=str(run_dir), reason=why)
        for name in (CURSOR, CURSOR_IDS):
            (run_dir / name).unlink(missing_ok=True)
        state = {"offset": 0, "line": 0, "records": 0, "ids": 0, "skipped": 0, "crc": 0}
        tracker = Tracker(run_dir, path, config.run.trials, shard, config.run.shard, state, stat, idx_pos)  # type: ignore[arg-type]
        return Resume(read_jsonl(path, limit), FirstSeen(size_hint=size_hint), tracker, 0)
    try:
        with open_regular(run_dir / CURSOR_IDS) as fh:
            ids = fh.read(cur.ids * 16)
    except OSError as exc:
        log.warning("resume cursor not used", run_dir=str(run_dir), reason=f"{type(exc).__name__}: {exc}"[:200])
        return None
    name = str(path)
    seen = FirstSeen(size_hint=max(0, size_hint - cur.ids), prior=PriorIds(ids, done), prior_file=name)
    state = {"offset": cur.offset, "line": cur.line, "records": cur.records, "ids": cur.ids, "skipped": cur.skipped, "crc": cur.prefix_crc32}
    tracker = Tracker(run_dir, path, config.run.trials, shard, config.run.shard, state, stat, idx_pos)  # type: ignore[arg-type]
    left = None if limit is None else limit - cur.records
    records: Iterator[RawRecord] = iter(()) if left is not None and left <= 0 else read_jsonl(path, left, start=(cur.offset, cur.line))
    log.info("resuming from the dataset cursor", run_dir=str(run_dir), line=cur.line, records=cur.records)
    return Resume(records, seen, tracker, cur.skipped)


def _usable(run_dir: Path, config: RunConfig, path: Path, recovery: dict[str, Any], forced: bool) -> tuple[CursorFile | None, str | None]:
    """The saved cursor if it may be used, else None and why (None when there is none)."""
    p = run_dir / CURSOR
    if not p.exists():
        return None, None
    try:
        with open_regular(p) as fh:
            cur = CursorFile.model_validate_json(fh.read())
    except NotRegularFile as exc:  # (a FIFO in its place, which a plain read waited on: replaced by the new cursor)
        return None, f"cursor.json is {exc.strerror}"
    except ValidationError as exc:
        return None, f"cursor.json does not validate ({str(exc).splitlines()[0][:120]})"
    if cur.format != _FORMAT:
        return None, "cursor.json has another format"
    if recovery.get("rebuilt") or recovery.get("damaged_lines"):
        return None, "the run's state was rebuilt from results.jsonl"
    if cur.trials != config.run.trials or cur.shard != config.run.shard:
        return None, "run.trials or run.shard changed"
    ids = run_dir / CURSOR_IDS
    if not ids.exists() or ids.stat().st_size < cur.ids * 16:
        return None, "cursor.ids is shorter than cursor.json says"
    size, mtime = _stat(path)
    if size < cur.offset:
        return None, "the dataset is shorter than the cursor's offset"
    with open(path, "rb") as fh:
        if _tail_hash(fh, cur.offset) != cur.tail_sha256:
            return None, "the dataset changed before the cursor"
        if (size, mtime) == (cur.size, cur.mtime_ns) and not forced:
            return cur, None
        # Touched or grown since: every byte before the offset must be as it was.
        if store.file_crc32(path, cur.offset) != cur.prefix_crc32:
            return None, "the dataset changed before the cursor"
    return cur, None
