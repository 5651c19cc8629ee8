"""The floor with every file a run writes (`_floor_run.py --outputs`, implying `--reasons`): the floor with the
guarantees and reasons plus, each once, plainly and as cheaply as Python allows, minimal implementations of the files
`tracejudge run` writes besides results.jsonl for `pipeline_throughput.CONFIG`, carrying the same information:

1. The config: the YAML file (`--config`, else `pipeline_throughput.CONFIG` for the cases written to OUT_DIR/config.yaml)
   read with PyYAML and its six metrics validated minimally, defaults filled (`_floor_config.py`); configs.jsonl (the
   config, its hash, the dataset and its fingerprint) and manifest.json with them and the history, at the first
   checkpoint (after the dataset's hash).
2. results.idx: each result's key hash (BLAKE2b, 8 bytes, as tracejudge's `keyset.key_hash`: the workers hash their
   results' ids) appended after the results' fsync, before the checkpoint that counts it.
3. The checkpoint's CRC-32s (results.jsonl's, carried over each chunk as written; results.idx's), its lines, mtime,
   metric keys and the segment; then cursor.json (offset, line, records, ids, the dataset's size and mtime, the CRC-32
   before the offset, the SHA-256 of the 64 KiB before it) and cursor.ids (each id first seen behind the cursor: its
   key hash and line), at each checkpoint, by the syncing thread.
4. junit.xml as tracejudge's: the gate's suite first, each test case's duration, names and texts shown inert
   (control and invisible characters as `\\xNN`, `\\u{NNNN}`: the workers send the few cells that need it).
5. summary.json as tracejudge's (`_floor_report.py`): per metric results, scored, excluded, not computed, mean, std,
   CI, passed, pass rate, histogram; a breakdown by tag (the workers send each tag's results) with the same per
   metric; status counts, the verdict, the segment.
6. report.md and report.html (`_floor_report.py`): the summary and tag tables, the histograms (SVG), the worst 10 cases
   per metric below their threshold and the table of the worst 2,000 results (errors first, then lowest mean), each
   row's texts escaped as HTML and Markdown need; the rows chosen by numpy from the ranks the workers send, and their
   lines read back from results.jsonl at their offsets (the workers send each line's length).

Left out: the page's CSS and JavaScript (constant text, tracejudge's `html_assets`); the summary tracejudge prints to
the terminal; reasons' lists of calls capped at 100 names (none here reaches it); the gate's other checks and pass@k
(none is configured); the checkpoint's bounded fold state (the floor's counts of distinct values determine it); the tag
breakdown's CI from a 250-value sample (here every value); what `_floor_reasons` leaves out. `--phases` adds config,
outputs (workers: ranks, hashes, tags, inert texts), index (head: CRC-32s, cursor ids), summary (the fold: fold is 0),
reports; junit_file is this module's.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import os
import struct
import sys
import time
import zlib
from array import array
from collections import deque
from hashlib import blake2b
from typing import Any

import msgspec

import _floor_guarantees as guar
import _floor_reasons as reasons
import _floor_report as report
from _floor_config import config_hash, read_config
from _floor_report import inert, visible
from _six_checks import CHECKS

VERSION = "0.1.0"  # tracejudge's, as its files name it
PHASES = ("config", "outputs", "index", "summary", "reports")
_TAIL = struct.Struct("<d5I")  # a worker's CPU s, then the bytes of ranks, key hashes, line lengths, durations, the rest (JSON)
_BLAKE = blake2b(digest_size=8)
_CURSOR_TAIL = 1 << 16  # bytes before the cursor's offset whose SHA-256 the cursor keeps


def key_hash(key: str) -> int:
    """The stable 64-bit hash of a result key or id (BLAKE2b of 8 bytes, little-endian; never 0)."""
    h = _BLAKE.copy()
    h.update(key.encode("utf-8", "surrogatepass"))
    return int.from_bytes(h.digest(), "little") or 1


def more(rows: list[Any], said: list[Any], masked: list[Any], lines: list[bytes], durations: array) -> bytes:
    """A worker's part, after `_floor_reasons.work`'s: per result its rank (mean value; -1 an error), key hash, line
    length and duration's text; the tags' results, the results whose run ended in an error, and the JUnit cells and
    names to show escaped (JSON)."""
    t0 = time.thread_time()
    ranks, hashes, tags, run_errors, cells, names = array("d"), array("Q"), {}, [], [], []  # type: ignore[var-annotated]
    get, head = guar._HEADS.get, guar._head
    for p, (row, lab, rs) in enumerate(zip(rows, masked, said)):
        case = row[0]
        cid = row[1] if case is None else case.id
        hashes.append(key_hash(cid))
        if not inert(cid):
            names.append([p, visible(cid.replace("\\", "\\\\")) + " [trial 0, escaped]"])
        for tag in lab[0]:
            tags.setdefault(tag, []).append(p)
        if case is None:
            ranks.append(-1.0)
            if not inert(row[2]):
                cells += [[p, j, visible("error: " + row[2])] for j in range(len(CHECKS))]
            continue
        got = [v for v in row[1] if v is not None]
        ranks.append(sum(got) / len(got) if got else -0.5)
        if type(lab[1]) is dict and lab[1].get("run_error"):
            run_errors.append(p)
        for j, (v, x) in enumerate(zip(row[1], rs)):
            if not inert(x):
                cells.append([p, j, visible(x if v is None else (get(v) or head(v)) + x)])
    lengths = array("I", map(len, lines[:-1]))  # (the last piece is the blob's closing empty one)
    times = "\0".join([f"{d:.6f}" for d in durations]).encode()
    rest = msgspec.json.encode({"tags": tags, "run_errors": run_errors, "cells": cells, "names": names})
    parts = [ranks.tobytes(), hashes.tobytes(), lengths.tobytes(), times, rest]
    return _TAIL.pack(time.thread_time() - t0, *map(len, parts)) + b"".join(parts)


class Outputs:
    """The head's side: what it keeps of every result (rank, length, key hash, tags), the files it writes at each
    checkpoint (by the syncing thread) and at the end."""

    def __init__(self, config: dict[str, Any], out_dir: str) -> None:
        self.config, self.hash = config, config_hash(config)
        self.out_dir, self.started = out_dir, time.time()
        self.ranks, self.lengths, self.times, self.shown = array("d"), array("I"), [], []  # type: ignore[var-annotated]
        self.tags: dict[str, array] = {}
        self.run_errors = array("I")
        self.pending = bytearray()  # key hashes not yet in results.idx
        self.res_crc = self.idx_crc = self.ids_done = 0
        self.synced: deque[tuple[bytes, bytes]] = deque()  # (results.idx bytes, cursor.ids bytes) per checkpoint put
        self.current = (b"", b"")
        self.fingerprint = ""

    def _note(self, ranks: Any, hashes: bytes, lengths: Any, tags: dict[str, list[int]], run_errors: list[int]) -> None:
        base = len(self.ranks)
        for tag, at in tags.items():
            self.tags.setdefault(tag, array("I")).extend([base + p for p in at])
        self.run_errors.extend([base + p for p in run_errors])
        self.ranks.frombytes(ranks)
        self.lengths.frombytes(lengths)
        self.pending += hashes

    def repeat(self, line: bytes) -> None:
        """A repeated id's line, written by the head before the chunk it came before."""
        res = msgspec.json.decode(line)
        self.res_crc = zlib.crc32(line, self.res_crc)
        self.times.append(b"0.000000")
        self.shown.append(None)
        self._note(array("d", [-1.0]).tobytes(), key_hash(res["case_id"]).to_bytes(8, "little"), array("I", [len(line) - 1]).tobytes(),
                   {t: [0] for t in res.get("tags") or ()}, [])

    def chunk(self, blob: bytes, payload: Any, at: int, took: dict[str, float]) -> None:
        """A chunk's lines as written (`blob`) and the worker's part of its payload (from `at`)."""
        t0 = time.thread_time()
        self.res_crc = zlib.crc32(blob, self.res_crc)
        cpu, *sizes = _TAIL.unpack_from(payload, at)
        ends = [at + _TAIL.size]
        for n in sizes:
            ends.append(ends[-1] + n)
        ranks, hashes, lengths, times, rest = [payload[a:b] for a, b in zip(ends, ends[1:])]
        got = msgspec.json.decode(rest)
        self._note(ranks, bytes(hashes), lengths, got["tags"], got["run_errors"])
        self.times.append(bytes(times))
        self.shown.append((got["cells"], got["names"]) if got["cells"] or got["names"] else None)
        spent = time.thread_time() - t0
        took["outputs"] += cpu
        took["junit_text"] -= cpu  # (the worker timed its part within its JUnit texts)
        took["index"] += spent
        took["write"] -= spent

    def checkpoint(self, state: dict[str, Any], fh: Any, book: guar.Book) -> dict[str, Any]:
        """`state` (the floor's checkpoint) with the CRC-32s, the lines, the segment; the cursor's new ids queued."""
        t0 = time.thread_time()
        line, new = state["line"], array("Q")
        order, first, i = book.order, book.first, self.ids_done
        while i < len(order) and (at := first[order[i]]) <= line:
            new.extend((key_hash(order[i]), at))
            i += 1
        self.ids_done = i
        index, self.pending = bytes(self.pending), bytearray()
        self.idx_crc = zlib.crc32(index, self.idx_crc)
        self.synced.append((index, new.tobytes()))
        state.update(format=2, tracejudge_version=VERSION, results_lines=state["results"], index_crc32=self.idx_crc,
                     results_crc32=self.res_crc, results_mtime_ns=os.fstat(fh.fileno()).st_mtime_ns, metric_keys=list(CHECKS),
                     segments=[self.segment(state["results"])])
        return state

    def segment(self, results: int) -> dict[str, Any]:
        """This run's one segment as the checkpoint and summary list it."""
        return {"segment": 1, "started_at": datetime.datetime.fromtimestamp(self.started, datetime.UTC).isoformat(timespec="milliseconds")[:-6] + "Z",
                "elapsed_s": round(time.time() - self.started, 3), "results": results, "ended": "finished", "config_hash": self.hash,
                "dataset_fingerprint": self.fingerprint, "forced": False, "pid": os.getpid(), "usage": {},
                "command": {"line": " ".join(sys.argv), "cwd": os.getcwd()}}

    def manifest(self, dataset: dict[str, Any]) -> dict[str, Any]:
        """manifest.json's content (its dataset given), configs.jsonl written beside it. In the syncing thread."""
        self.fingerprint = hashlib.sha256(json.dumps({"path": dataset["dataset"]["path"]["sha256"]}).encode()).hexdigest()
        entry = {"config": self.config, "config_hash": self.hash, "dataset": dataset["dataset"],
                 "dataset_fingerprint": self.fingerprint, "tracejudge_version": VERSION}
        with open(os.path.join(self.out_dir, "configs.jsonl"), "w", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, sort_keys=True, separators=(",", ":")) + "\n")
        return {"tracejudge_version": VERSION, "config_hash": self.hash, "dataset_fingerprint": self.fingerprint,
                "dataset": dataset["dataset"], "config": self.config, "history": [entry]}

    def index(self, state: dict[str, Any]) -> None:
        """Append the checkpoint's key hashes to results.idx (after the results' fsync, before the checkpoint)."""
        self.current = self.synced.popleft()
        with open(os.path.join(self.out_dir, "results.idx"), "ab") as fh:
            fh.write(self.current[0])

    def cursor(self, state: dict[str, Any], fp: dict[str, Any]) -> None:
        """cursor.ids appended and cursor.json replaced for the checkpoint's line (after the checkpoint)."""
        with open(os.path.join(self.out_dir, "cursor.ids"), "ab") as fh:
            fh.write(self.current[1])
        offset = state["offset"]
        with open(fp["path"], "rb") as fh:
            fh.seek(max(0, offset - _CURSOR_TAIL))
            tail = hashlib.sha256(fh.read(offset - max(0, offset - _CURSOR_TAIL))).hexdigest()
        guar._write_json(os.path.join(self.out_dir, "cursor.json"), {
            "format": 1, "offset": offset, "line": state["line"], "records": state["line"], "ids": self.ids_done,
            "skipped": state["line"], "trials": 1, "shard": None, "size": fp["size"], "mtime_ns": fp["mtime_ns"],
            "prefix_crc32": state["crc32"], "tail_sha256": tail}, False)

    def finish(self, values: array, errors: int, kept: list[guar.Group], results: int, took: dict[str, float]) -> dict[str, Any]:
        """summary.json, junit.xml, report.md and report.html; returns the summary."""
        clock = time.thread_time
        t0 = clock()
        status = {"ok": results - errors, **({"invalid_input": errors} if errors else {})}
        summary = report.summary(values, self.ranks, self.tags, status, self.hash, self.segment(results))
        guar._write_json(os.path.join(self.out_dir, "summary.json"), summary, True)
        t1 = clock()
        write_junit(os.path.join(self.out_dir, "junit.xml"), kept, self.times, self.shown, results, errors)
        t2 = clock()
        material = report.material(os.path.join(self.out_dir, "results.jsonl"), values, self.ranks, self.lengths, self.run_errors)
        title = f"tracejudge report: {os.path.basename(os.path.abspath(self.out_dir))}"
        for name, text in (("report.md", report.markdown(summary, material, title)), ("report.html", report.page(summary, material, title))):
            with open(os.path.join(self.out_dir, name), "w", encoding="utf-8") as fh:
                fh.write(text)
        took["summary"], took["junit_file"], took["reports"] = t1 - t0, t2 - t1, clock() - t2
        return summary


def write_junit(path: str, kept: list[guar.Group], times: list[bytes], shown: list[Any], results: int, errors: int) -> None:
    """junit.xml: the gate's suite, then a suite per check, each test case with its duration; names and texts shown inert."""
    n_checks = len(CHECKS)
    end, skip, skip_end = b"</system-out>\n    </testcase>\n", b'">\n      <skipped message="', b'"/>\n    </testcase>\n'
    gate = (b'  <testsuite name="tracejudge.gate" tests="0" failures="0" errors="0" skipped="0">\n  </testsuite>\n' if not errors else
            b'  <testsuite name="tracejudge.gate" tests="1" failures="1" errors="0" skipped="0">\n    <testcase classname="tracejudge.gate" '
            b'name="max_invalid_share">\n      <failure type="gate" message="' + guar._xml(report.invalid_line(errors, results))
            + b'">' + guar._xml(report.invalid_line(errors, results)) + b"</failure>\n    </testcase>\n  </testsuite>\n")
    with open(f"{path}.tmp", "wb", buffering=1 << 20) as fh:
        fh.write(b'<?xml version="1.0" encoding="UTF-8"?>\n'
                 + f'<testsuites name="tracejudge" tests="{results * n_checks + bool(errors)}" failures="{int(bool(errors))}" errors="0">\n'.encode() + gate)
        for j, key in enumerate(CHECKS):
            label = guar._xml(key)
            head = b'    <testcase classname="' + label + b'" name="'
            fh.write(b'  <testsuite name="' + label + f'" tests="{results}" failures="0" errors="0" skipped="{errors}">\n'.encode())
            for (ids, texts, bad), stamps, inert in zip(kept, times, shown):
                names, outs, secs = ids.split(b"\0"), texts[j].split(b"\0"), stamps.split(b"\0")
                if inert is not None:  # (rare) the cells and names shown escaped
                    for p, jj, text in inert[0]:
                        if jj == j:
                            outs[p] = guar._xml(text)
                    for p, name in inert[1]:
                        names[p] = guar._xml(name)
                if not bad:  # (nearly always) the chunk's test cases joined at once, in C
                    fh.write(b"".join([head + n + b'" time="' + s + b'">\n      <system-out>' + t + end for n, s, t in zip(names, secs, outs)]))
                else:
                    errs = set(array("I", bad))
                    fh.write(b"".join([head + n + b'" time="' + s + (skip + t + skip_end if p * n_checks + j in errs else b'">\n      <system-out>' + t + end)
                                       for p, (n, s, t) in enumerate(zip(names, secs, outs))]))
            fh.write(b"  </testsuite>\n")
        fh.write(b"</testsuites>\n")
    os.replace(f"{path}.tmp", path)


def run(cases: str, out_dir: str, processes: int, config: str | None = None) -> tuple[dict[str, Any], dict[str, float]]:
    """`_floor_reasons.run` writing every file of a run too; `config`: the YAML file (None: `pipeline_throughput.CONFIG`
    for `cases` and `out_dir`, written to OUT_DIR/config.yaml first)."""
    os.makedirs(out_dir, exist_ok=True)
    if config is None:
        from pipeline_throughput import CONFIG  # (its import, ~15 ms, is then part of the run: `--config` leaves it out)

        config = os.path.join(out_dir, "config.yaml")
        with open(config, "w", encoding="utf-8") as fh:
            fh.write(CONFIG.format(cases=os.path.abspath(cases), run_dir=os.path.abspath(out_dir)))
    t0 = time.thread_time()
    try:
        outputs = Outputs(read_config(config), out_dir)
    except ValueError as exc:  # (the file, line and field named: one line, not a traceback)
        raise SystemExit(f"error: {exc}") from None
    took = time.thread_time() - t0
    summary, phases = guar.run(cases, out_dir, processes, work=functools.partial(reasons.work, more=more), name=os.path.abspath(cases),
                               repeated=reasons.repeated, phases=("reasons", "redact", *PHASES), outputs=outputs)
    del phases["details"]  # (within checks here, as `_floor_reasons.run` says)
    phases["config"] = took
    return summary, phases
