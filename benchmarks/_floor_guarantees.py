"""The floor with the run's guarantees (`_floor_run.py --guarantees`): the bare floor plus what a tracejudge run must
also do for its resume safety and CI reports, each once, plainly and as cheaply as Python allows:

1. The dataset fingerprint a resume checks: sha256 of the whole cases file, read in 4 MiB blocks into one buffer by a
   thread started as the reading starts (after the workers' fork: no thread runs across one), with its size and
   mtime_ns to OUT_DIR/manifest.json (fsynced) before the first checkpoint.
2. The resume cursor, kept where the lines are read (the head): each line's CRC-32 carried over from the file's start
   and its end offset, in arrays; each id's first line in a dict, the id peeked from the line's leading `"id"` as
   tracejudge peeks it. A repeated id gives one error line (filed as `id@file:line`, naming both places), no result.
3. Result lines as tracejudge's: `case_id`, `trial`, `status`, the case's `tags` and `metadata`, per check `value`,
   `passed`, `reason`, `details` (`writes_exact`'s pairs, missing and unexpected indices as tracejudge's ToolCalls
   numbers them; null for the others), `judge` null; `error` null and `duration_s` 0.0 per result, as tracejudge's.
4. OUT_DIR/junit.xml: a `<testsuite>` per check, a `<testcase>` per case, value and reason in `<system-out>` (an error
   line's message in `<skipped>`), written at the end (not fsynced) from what was kept: per chunk and check one bytes
   object of the texts escaped at once (XML escapes, characters XML refuses dropped), NUL between them; the ids so too.
5. A checkpoint every 1,000 results: results.jsonl fsynced (one fsync a chunk: a checkpoint claims only what is on
   disk), then the fold's state to OUT_DIR/checkpoint.json (json, temp file, os.replace): results, errors, results'
   bytes, the cursor (line, offset, CRC-32), per check each distinct value's count (the mean, std, pass rate and
   bootstrap follow from those). By a thread (`_floor_sync.py`), as tracejudge's fsync is: the main thread goes on.

With `--processes 2` the workers do 3 and 4's texts, the head the rest. Left out, against `tracejudge run`: cursor.json
and cursor.ids (the cursor is kept, not written; `Book.order` holds the ids first seen, in order), results.idx, the checkpoint's CRC-32s, segments, config hash and
history; a bounded fold state (tracejudge keeps moments and 1,000 values); sampling files over 256 MiB; report.md,
report.html, junit.xml's gate suite, escaped names, durations; the other checks' details, tracejudge's reasons and
redaction (`_floor_reasons.py` adds them, through this module's `run` with its own `work`; `_floor_outputs.py` adds
the files, through its `outputs`); what `_floor_run` lists.
`--phases` adds cursor, fingerprint (its thread), details, junit_text, checkpoint (main and syncing thread), junit_file.
"""

from __future__ import annotations

import hashlib
import gc
import os
import re
import struct
import threading
import time
import zlib
from array import array
from collections import Counter
from collections.abc import Iterator, Sequence
from itertools import accumulate, chain, islice, pairwise, repeat
from typing import Any

import msgspec

from _floor_sync import Syncer, _write_json
import _floor_run as floor  # (`_floor_run.main` puts itself under this name: the running module, not a second copy)
from _six_checks import CHECKS, is_write

PHASES = ("read", "cursor", "fingerprint", "decode", "checks", "details", "render", "junit_text", "free", "write",
          "checkpoint", "fold", "junit_file")
_BLOCK = 4 << 20  # bytes a read of the fingerprint, as tracejudge's
_NONES = (None,) * (len(CHECKS) - 1)  # the details of the five checks after `writes_exact`
# A worker's payload starts so: CPU s of details, of JUnit texts, of reasons and redaction (`_floor_reasons`); bytes
# of the values, the ids, each check's texts, the skipped cells' places in the chunk (uint32: result × checks + check).
_EXTRA = struct.Struct(f"<4d{3 + len(CHECKS)}I")
Group = tuple[bytes, tuple[bytes, ...], bytes]  # what junit.xml keeps of some results: ids, each check's texts, skipped cells


class Fingerprint(threading.Thread):
    """sha256, size and mtime_ns of the cases file (the manifest's `dataset.path`), hashed by this thread."""

    def __init__(self, path: str) -> None:
        super().__init__(name="floor-dataset-hash", daemon=True)
        self.path, self.cpu = path, 0.0
        self.value: dict[str, Any] | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with open(self.path, "rb", buffering=0) as fh:
                st = os.fstat(fh.fileno())
                h, buf = hashlib.sha256(), bytearray(max(1, min(_BLOCK, st.st_size)))
                view = memoryview(buf)
                while n := fh.readinto(buf):  # (each read and each update without the GIL)
                    h.update(view[:n])
            self.value = {"path": os.path.abspath(self.path), "size": st.st_size, "sha256": h.hexdigest(),
                          "sampled": False, "mtime_ns": st.st_mtime_ns}
        except BaseException as exc:  # raised where the result is taken
            self.error = exc
        self.cpu = time.thread_time()

    def result(self) -> dict[str, Any]:
        self.join()
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


# tracejudge's peek (`extract.native.peek_id`): a leading `"id"` string without escapes, read without decoding the line.
_LEADING_ID = re.compile(rb'\s*\{\s*"id"\s*:\s*"([^"\\]*)"')


def peek_id(line: bytes) -> str | None:
    """A line's case id, or None when it has none a case could carry (the worker then refuses the line)."""
    try:
        if (m := _LEADING_ID.match(line)) is not None:
            return m.group(1).decode()
        data = msgspec.json.decode(line)  # (no leading id: rare, and decoded whole)
    except (UnicodeDecodeError, msgspec.DecodeError):
        return None
    cid = data.get("id") if type(data) is dict else None
    return cid if type(cid) is str else None


class Book:
    """What the head keeps of the lines it reads (the cursor), the repeated ids it found, and its CPU s."""

    def __init__(self) -> None:
        self.crcs = array("I")  # per line read: the CRC-32 of the file's bytes up to the line's end
        self.ends = array("Q")  # per line read: the offset of its end
        self.first: dict[str, int] = {}  # case id → the line it was first seen on
        self.order: list[str] = []  # the ids in the order first seen (`_floor_outputs` writes the cursor's from it)
        self.last = array("Q")  # per task sent: its last line (where the cursor stands once its results are written)
        self.repeats: dict[int, list[tuple[bytes, Group]]] = {}  # task index → the repeated ids' lines read before it
        self.cpu = [0.0, 0.0]  # reading, cursor


def repeated_line(cid: str, name: str, i: int, at: int, line: bytes) -> tuple[bytes, Group]:
    """The error line of a repeated id (filed as `id@file:line`, as tracejudge files it) and its JUnit group."""
    key, msg = f"{cid}@{name}:{i}", f"{name}:{i}: duplicate case id {cid!r}: first at {name}:{at}"
    return (floor._encode({"case_id": key, "trial": 0, "status": "error", "error": msg}) + b"\n",
            (_xml(key), (_xml("error: " + msg),) * len(CHECKS), array("I", range(len(CHECKS))).tobytes()))


def read(path: str, size: int, book: Book, fingerprint: Fingerprint, name: str,
         repeated: Any = repeated_line) -> Iterator[tuple[str, int, list[bytes]]]:
    """`_floor_run.chunks` keeping the cursor in `book`; a line of a repeated id is not sent but noted in
    `book.repeats` (`repeated` makes its line). Starts the fingerprint at its first step: with workers, in the feeding
    thread, after the fork. `name`: the file's, in error lines."""
    fingerprint.start()
    clock = time.thread_time
    crcs, ends, first, last, cpu, order = book.crcs, book.ends, book.first, book.last, book.cpu, book.order
    crc = end = sent = 0
    with open(path, "rb", buffering=1 << 20) as fh:
        numbered = enumerate(fh, 1)
        while True:
            t0 = clock()
            batch = list(islice(numbered, size))
            t1 = clock()
            cpu[0] += t1 - t0
            again: dict[int, tuple[str, int]] = {}
            for i, line in batch:
                crc = zlib.crc32(line, crc)
                end += len(line)
                crcs.append(crc)
                ends.append(end)
                if (cid := peek_id(line)) is not None:
                    if (at := first.setdefault(cid, i)) != i:
                        again[i] = (cid, at)
                    else:
                        order.append(cid)
            t2 = clock()
            cpu[1] += t2 - t1
            if not batch:
                return
            tasks, run = [], []  # type: ignore[var-annotated]
            for i, line in batch:  # split as `chunks` splits, and at a repeated id
                if i in again:  # an error line and its JUnit group
                    book.repeats.setdefault(sent + len(tasks), []).append(repeated(again[i][0], name, i, again[i][1], line))
                    run = []
                elif line.strip():
                    if not run:
                        tasks.append((name, i, run))
                    run.append(line)
                else:
                    run = []
            cpu[0] += clock() - t2
            for task in tasks:
                last.append(task[1] + len(task[2]) - 1)
                sent += 1
                yield task


def writes_details(case: Any) -> dict[str, list[Any]]:
    """`writes_exact`'s details: pairs [expected index, call index], missing expected and unexpected call indices,
    numbered as tracejudge's ToolCalls numbers them (every expected call; every call of the trace, failed ones too)."""
    calls = [c for s in case.trace.steps for c in s.tool_calls]
    exp = [(i, e) for i, e in enumerate(case.expected_tool_calls or ()) if is_write(e.name)]
    act = [(j, c) for j, c in enumerate(calls) if c.error is None and is_write(c.name)]
    pairs = matching(exp, act) if exp and act else []
    paired_e, paired_a = {p[0] for p in pairs}, {p[1] for p in pairs}
    return {"pairs": pairs, "missing": [i for i, _ in exp if i not in paired_e],
            "unexpected": [j for j, _ in act if j not in paired_a]}


def matching(exp: list[tuple[int, Any]], act: list[tuple[int, Any]]) -> list[list[int]]:
    """A maximum matching of expected and made calls (`_floor_run._same_call`), as [expected, call] index pairs.
    Greedy is maximum here: an expected call with arguments pairs only with the calls equal to it, one without with any
    call of its name (a superset of theirs); so the former take the first free call they pair with, then the latter."""
    free, pairs = {j for j, _ in act}, []
    for i, e in sorted(exp, key=lambda x: x[1].arguments is None):
        if (j := next((j for j, c in act if j in free and floor._same_call(e, c)), None)) is not None:
            free.discard(j)
            pairs.append([i, j])
    return sorted(pairs)


# XML 1.0 refuses these even escaped (C0 controls but tab, newline and return; lone surrogates; U+FFFE, U+FFFF):
# dropped. Not NUL: it separates a chunk's texts, and `_joined` drops it from the texts themselves.
_REFUSED = re.compile("[\x01-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_REFUSED_BYTES = bytes([*range(1, 9), 11, 12, *range(14, 32)])


def _xml(s: str) -> bytes:
    """`s` as UTF-8 XML text, fit between double quotes too: & < > " escaped, characters XML refuses dropped."""
    for c, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;")):
        if c in s:
            s = s.replace(c, entity)
    if s.isascii():  # (a flag, read at once) a character is then a byte, and deleting bytes is one pass in C
        return s.encode().translate(None, _REFUSED_BYTES)
    return _REFUSED.sub("", s).encode()


def _joined(texts: Sequence[str]) -> bytes:
    """`texts` escaped as one piece, NUL between them: each escape is one pass per chunk, not one per text."""
    s = "\0".join(texts)
    if s.count("\0") != len(texts) - 1:  # a text holding NUL (refused by XML): dropped from each first
        s = "\0".join(t.replace("\0", "") for t in texts)
    return _xml(s)


# A value's JUnit text before its reason, kept per value (a float's text costs more than the rest; values recur):
# bounded, and keyed by the value, which the six checks' values allow (in [0, 1]: no -0.0 beside 0.0, no NaN).
_HEADS: dict[float, str] = {}


def _head(v: float) -> str:
    h = f"value {v}: " if v >= 1.0 else f"below threshold: value {v}: "
    if len(_HEADS) < 4096:
        _HEADS[v] = h
    return h


def work(task: tuple[str, int, list[Any]]) -> tuple[bytes, bytes, int, list[float]]:
    """`_floor_run.work` with the result lines tracejudge writes and the chunk's JUnit texts: → (result lines, `_EXTRA`
    then the values and texts, errors, CPU s of decode / checks / render / free), through the floor's wire."""
    name, first, lines = task
    clock = time.thread_time
    t0 = clock()
    decoded: list[Any] = []  # a case, or (None, its test case name, error, case id or None)
    for i, line in enumerate(lines, first):
        try:
            case = floor._decode(line)
        except msgspec.DecodeError as exc:  # (ValidationError is a DecodeError)
            decoded.append((None, f"{name}:{i}", f"{name}:{i}: {exc}", None))
            continue
        decoded.append((None, case.id, f"{name}:{i}: the case has no trace", case.id) if case.trace is None else case)
    gc.freeze()  # the chunk's cases: alive till it is written, acyclic; no collection need walk them
    t1 = clock()
    checked = [c if type(c) is tuple else (c, *floor.check(c)) for c in decoded]
    t2 = clock()
    details = [None if row[0] is None else writes_details(row[0]) for row in checked]
    t3 = clock()
    out, values, errors = [], array("d"), 0
    for row, det in zip(checked, details):
        if (case := row[0]) is None:
            out.append(floor._encode({"case_id": row[3], "trial": 0, "status": "error", "error": row[2]}))
            errors += 1
            continue
        values.extend(row[1])
        out.append(floor._encode({"case_id": case.id, "trial": 0, "status": "ok", "tags": case.tags, "metadata": case.metadata,
                                  "scores": {k: {"value": v, "passed": v >= 1.0, "reason": r, "details": d, "judge": None}
                                             for k, v, r, d in zip(CHECKS, row[1], row[2], (det, *_NONES))},
                                  "error": None, "duration_s": 0.0}))
    out.append(b"")
    blob, vals = b"\n".join(out), values.tobytes()
    t4 = clock()
    get = _HEADS.get
    texts = [("error: " + row[2],) * len(CHECKS) if row[0] is None else [(get(v) or _head(v)) + r for v, r in zip(row[1], row[2])]
             for row in checked]
    ids = [row[1] if row[0] is None else row[0].id for row in checked]
    bad = array("I", [p * len(CHECKS) + j for p, row in enumerate(checked) if row[0] is None for j in range(len(CHECKS))])
    parts = [_joined(ids), *map(_joined, zip(*texts)), bad.tobytes()]  # (each check's texts: a column of `texts`)
    t5 = clock()
    del decoded, checked, details, texts  # (as the floor's: timed apart)
    extra = _EXTRA.pack(t3 - t2, t5 - t4, 0.0, 0.0, len(vals), *map(len, parts))
    return blob, b"".join([extra, vals, *parts]), errors, [t1 - t0, t2 - t1, t4 - t3, clock() - t5]


def write_junit(path: str, kept: list[Group], results: int, errors: int) -> None:
    """junit.xml from the groups kept, suite by suite."""
    mid, end = b'" time="0.000000">\n      <system-out>', b"</system-out>\n    </testcase>\n"
    skip, skip_end = b'" time="0.000000">\n      <skipped message="', b'"/>\n    </testcase>\n'
    with open(f"{path}.tmp", "wb", buffering=1 << 20) as fh:
        fh.write(b'<?xml version="1.0" encoding="UTF-8"?>\n'
                 + f'<testsuites name="tracejudge" tests="{results * len(CHECKS)}" failures="0" errors="0">\n'.encode())
        for j, key in enumerate(CHECKS):
            label = _xml(key)
            head = b'    <testcase classname="' + label + b'" name="'
            fh.write(b'  <testsuite name="' + label + f'" tests="{results}" failures="0" errors="0" skipped="{errors}">\n'.encode())
            for ids, texts, bad in kept:
                names, outs = ids.split(b"\0"), texts[j].split(b"\0")
                if not bad:  # (nearly always) the chunk's test cases joined at once, in C
                    fh.write(b"".join(chain.from_iterable(zip(repeat(head), names, repeat(mid), outs, repeat(end)))))
                else:
                    errs, n_checks = set(array("I", bad)), len(CHECKS)
                    fh.write(b"".join([head + n + (skip + t + skip_end if p * n_checks + j in errs else mid + t + end)
                                       for p, (n, t) in enumerate(zip(names, outs))]))
            fh.write(b"  </testsuite>\n")
        fh.write(b"</testsuites>\n")
    os.replace(f"{path}.tmp", path)


def run(cases: str, out_dir: str, processes: int, work: Any = work, name: str | None = None, repeated: Any = repeated_line,
        phases: tuple[str, ...] = (), outputs: Any = None) -> tuple[dict[str, Any], dict[str, float]]:
    """`_floor_run.run` keeping the guarantees: results.jsonl, summary.json, manifest.json, checkpoint.json and
    junit.xml in `out_dir`; returns the summary and the CPU s per phase (`PHASES`, then `phases`: `_floor_reasons`'s
    reasons and redact). `work`, `name` (the file's in error lines), `repeated`: `_floor_reasons` passes its own;
    `outputs` (`_floor_outputs.Outputs`) sees every line written and checkpoint, and writes the files at the end."""
    os.makedirs(out_dir, exist_ok=True)
    took, clock = dict.fromkeys(PHASES + phases, 0.0), time.thread_time
    book, fingerprint = Book(), Fingerprint(cases)
    sync = Syncer(out_dir, fingerprint, outputs)
    name = os.path.basename(cases) if name is None else name
    tasks = read(cases, floor.CHUNK, book, fingerprint, name, repeated)
    done = floor.forked(tasks, processes, name, work) if processes > 1 else map(work, tasks)
    values, counts, kept = array("d"), [Counter() for _ in CHECKS], []  # type: ignore[var-annotated]
    errors = results = counted = 0
    claimed = (0, 0)  # results and line of the last checkpoint

    def checkpoint(fh: Any, line: int) -> None:
        # The fold's state and the cursor, every result up to `line` written and flushed; `sync` fsyncs and replaces.
        nonlocal counted, claimed
        new = values[counted:]
        for j, c in enumerate(counts):
            part = new[j :: len(CHECKS)]
            c.update(part if part == part else [x for x in part if x == x])  # (NaN, a value not computed: left out)
        counted, claimed = len(values), (results, line)
        state = {"results": results, "errors": errors, "results_bytes": fh.tell(), "line": line,
                 "offset": book.ends[line - 1] if line else 0, "crc32": book.crcs[line - 1] if line else 0,
                 "metrics": {k: sorted(c.items()) for k, c in zip(CHECKS, counts)}}
        sync.put(fh.fileno(), state if outputs is None else outputs.checkpoint(state, fh, book))

    def write_repeats(fh: Any, k: int) -> int:
        # The error lines of the repeated ids read before task `k` (their JUnit groups kept); how many.
        lines = book.repeats.pop(k, ())
        for line, group in lines:
            fh.write(line)
            kept.append(group)
            if outputs is not None:
                outputs.repeat(line)
        return len(lines)

    try:
        with open(os.path.join(out_dir, "results.jsonl"), "wb", buffering=1 << 20) as fh:
            for k, (blob, payload, errs, spent) in enumerate(done):
                t0 = clock()
                n = write_repeats(fh, k)
                fh.write(blob)
                details, junit_text, reasons, redact, *sizes = _EXTRA.unpack_from(payload)  # (then values, ids, texts, skips)
                at = list(accumulate(sizes, initial=_EXTRA.size))
                vals, ids, *texts, bad = [bytes(payload[a:b]) for a, b in pairwise(at)]
                start = len(values)
                values.frombytes(vals)
                kept.append((ids, tuple(texts), bad))
                if outputs is not None:
                    outputs.chunk(blob, payload, at[-1], took)
                errors += errs + n
                results += n + errs + (len(values) - start) // len(CHECKS)
                if due := results - claimed[0] >= floor.CHUNK:
                    fh.flush()  # (the floor's writes, only sooner: under "write")
                t1 = clock()
                if due:
                    checkpoint(fh, book.last[k])
                for phase, x in zip(("decode", "checks", "render", "free", "details", "junit_text", "reasons", "redact"),
                                    (*spent, details, junit_text, reasons, redact)):
                    if phase in took:
                        took[phase] += x
                took["write"] += t1 - t0
                took["checkpoint"] += clock() - t1
            t0 = clock()
            n = sum(write_repeats(fh, j) for j in sorted(book.repeats))  # (those after the last task)
            errors, results = errors + n, results + n
            fh.flush()
            t1 = clock()
            if claimed != (results, len(book.crcs)):  # (lines after the last chunk's, or a short last chunk)
                checkpoint(fh, len(book.crcs))
            sync.close()  # every checkpoint written, the last fsync done
            took["write"] += t1 - t0
            took["checkpoint"] += clock() - t1 + sync.cpu
    finally:
        if sync.is_alive():  # (after a failure: the thread stopped)
            sync.queue.put(None)
    took["read"], took["cursor"], took["fingerprint"] = *book.cpu, fingerprint.cpu
    if outputs is not None:
        return outputs.finish(values, errors, kept, results, took), took
    t0 = clock()
    summary = floor.fold(values, errors)
    _write_json(os.path.join(out_dir, "summary.json"), summary, True)
    t1 = clock()
    write_junit(os.path.join(out_dir, "junit.xml"), kept, results, errors)
    took["fold"], took["junit_file"] = t1 - t0, clock() - t1
    return summary, took
