"""`RUN_DIR/view.idx`: a SQLite index of a run's results, for filtering, sorting and paging.

Derived from `results.jsonl` and safe to delete: it is rebuilt when missing,
when its schema version differs, or when `results.jsonl` no longer starts
with the bytes it was built from; when `results.jsonl` has only grown (a run
still being written, a resume), just the new complete lines are added.

One row per (case, trial) — a later line for the same pair replaces the
earlier one, as a resumed run's result supersedes a budget-skipped one (a dead worker's under another key: `index_dead`). Each
metric gets a value column `m<i>` and a verdict column `p<i>` (1 passed,
0 failed, NULL no verdict), indexed so that sorting 100,000 rows by a metric
is an index walk. `run_error` is the error the case's agent run ended in (`metadata.run_error`, as the
reports show it: `reports.cases.run_error_of`), the result `ok` all the same. `text` holds the lower-cased id,
tags, reasons (a judge's reason for each question too), error and run error;
`casetext` (filled by `tracejudge.viewer.traces.index_case_text`) adds each
case's input, output, tool names, call arguments and call errors from the dataset.

When the run directory is not writable the index lives in the user's cache
directory instead (`~/.cache/tracejudge/view/<sha1 of the run dir>.idx`).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pydantic_core

from tracejudge.engine.result_shape import damaged_line_key, json_line_problem, result_problem
from tracejudge.stages.reports.cases import run_error_of
from tracejudge.viewer.case_query import PAGE_SIZES, CaseQuery, Page, natural_key, page_of, search_text
from tracejudge.viewer.index_dead import DEAD_TABLE, dead_row, drop_dead, error_place
from tracejudge.viewer.index_file import TABLES, cache_path, head, results_size, tail, unwritable

__all__ = ["INDEX_FILE", "PAGE_SIZES", "CaseQuery", "Page", "RunIndex"]

INDEX_FILE = "view.idx"
# An index of another schema is rebuilt. 5: case text masked (an older one held it in clear); 6: `run_error`; 7: per-question
# reasons, tool arguments and errors in text; 8: `case_key`; 9: `unreadable`; 10: `bad`; 11: `mtime`, `tail`; 12: `dead`
_SCHEMA = "12"
_NAMED = 5  # lines that are not results the index names (`unreadable`); the rest are counted
_BATCH = 2000


class RunIndex:
    """The `view.idx` of one run directory; thread-safe (one connection behind a lock).

    `refresh()` brings it up to date with `results.jsonl` and returns the
    number of results (0 while the run has no `results.jsonl` yet, or once it
    is gone: the rows of a deleted file are dropped, not served as if it were
    there); `query(CaseQuery)` returns a `Page`. `generation` grows at every
    rebuild: case text computed for an older generation is not stored. An index file that cannot be written (a full
    disk, a quota; the cache folder not made) gives way to one in memory, `in_memory` saying why (else None).
    """

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.results = self.run_dir / "results.jsonl"
        self.path = path = self.run_dir / INDEX_FILE
        self._lock = threading.Lock()
        self.metrics: list[str] = []
        self.tags: list[str] = []
        self.generation = 0
        self.in_memory: str | None = None
        try:
            if not os.access(self.run_dir, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
                self.path = path = cache_path(self.run_dir)
        except OSError as exc:  # (no cache folder can be made: a full or read-only home)
            self._to_memory(exc, drop=False)
            return
        try:
            self._db = self._open()
        except sqlite3.DatabaseError:  # not an index (or a damaged one): it is derived, so start over
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
            try:
                self._db = self._open()
            except sqlite3.OperationalError as exc:
                self._to_memory(exc)

    def _to_memory(self, exc: BaseException, *, drop: bool = True) -> None:
        # The index is derived: one that cannot be written (a full disk, a quota) is built in memory instead, again by
        # each viewer, and every page is served rather than a 500 naming sqlite's "database or disk is full". Any other
        # error (a lock another viewer of the run holds) is raised as it was, its index file left alone.
        if isinstance(exc, sqlite3.Error) and (self.in_memory is not None or not unwritable(exc)):
            raise exc
        with contextlib.suppress(AttributeError, sqlite3.Error):
            self._db.close()
        for suffix in ("", "-wal", "-shm") if drop else ():  # (what the failed write left: derived, and its blocks freed)
            with contextlib.suppress(OSError):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        self.in_memory = f"{self.path} cannot be written ({exc}); its index is kept in memory until the viewer stops"
        print(f"tracejudge view: {self.in_memory}", file=sys.stderr, flush=True)
        self._db = self._open(":memory:")

    def _open(self, where: Path | str | None = None) -> sqlite3.Connection:
        db = sqlite3.connect(self.path if where is None else where, check_same_thread=False, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=OFF")  # derived data: a crash just means a rebuild
            self._db = db
            self._ensure_schema()
        except sqlite3.DatabaseError:
            db.close()
            raise
        return db

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    def _ensure_schema(self) -> None:
        db = self._db
        db.execute("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT)")
        if self._meta("schema") != _SCHEMA:
            self._reset()
        self.metrics = json.loads(self._meta("metrics") or "[]")
        self.tags = json.loads(self._meta("tags") or "[]")

    def _reset(self) -> None:
        db = self._db
        for table in ("results", "casetext", "bad", "dead"):
            db.execute(f"DROP TABLE IF EXISTS {table}")
        db.execute("DELETE FROM meta")
        for statement in (*TABLES, DEAD_TABLE):
            db.execute(statement)
        self._set_meta("schema", _SCHEMA)
        self._set_meta("size", "0")
        self._set_meta("lines", "0")
        self._set_meta("unreadable", "[0, []]")
        self.metrics, self.tags = [], []
        self.generation += 1

    def _add_metric(self, key: str) -> int:
        i = len(self.metrics)
        self.metrics.append(key)
        self._db.execute(f"ALTER TABLE results ADD COLUMN m{i} REAL")
        self._db.execute(f"ALTER TABLE results ADD COLUMN p{i} INTEGER")
        self._db.execute(f"CREATE INDEX results_m{i} ON results(m{i})")
        return i

    def unreadable(self) -> tuple[int, list[str]]:
        """`(count, named)`: the lines of `results.jsonl` indexed so far that are not results (not JSON, or not a result in
        the fields readers use: `result_shape`), and the first few of them as `line N: field: what is wrong`."""
        with self._lock:
            count, named = json.loads(self._meta("unreadable") or "[0, []]")
        return int(count), [str(n) for n in named]

    def first_bad(self) -> list[tuple[int, str | None, int]]:
        """`(line, case id or None, trial)` of the lines `unreadable()` names, in file order (their cases' pages say why)."""
        with self._lock:
            return [(int(n), cid, int(tr or 0)) for n, cid, tr in self._db.execute("SELECT line, case_id, trial FROM bad ORDER BY line LIMIT ?", (_NAMED,))]

    def bad_lines(self, case_id: str, trial: int | None = None) -> list[tuple[int, int, str]]:
        """`(line, trial, what is wrong)` for each line of `results.jsonl` indexed so far that is not a result and was
        written for `case_id` (and `trial`, unless None), in file order."""
        with self._lock:
            rows = self._db.execute("SELECT line, trial, problem FROM bad WHERE case_id=?" + (" AND trial=?" if trial is not None else "")
                                    + " ORDER BY line", (case_id,) if trial is None else (case_id, trial)).fetchall()
        return [(int(n), int(tr), str(p)) for n, tr, p in rows]

    def torn_tail(self) -> int | None:
        """The line number of a last line of `results.jsonl` that ends without a line break, past what `refresh` indexed
        (a line still being written, or one cut off by a kill that nothing will finish), or None when there is none."""
        with self._lock:
            done, lines = int(self._meta("size") or 0), int(self._meta("lines") or 0)
        try:
            size = self.results.stat().st_size
        except OSError:
            return None
        return lines + 1 if size > done else None

    def refresh(self) -> int:
        """Index the lines appended to `results.jsonl` since the last call; returns the result count."""
        with self._lock:
            try:
                size = results_size(self.results)
            except FileNotFoundError:
                # Not written yet, or deleted (the run directory removed or rewritten under the viewer): no rows
                # then, rather than the old ones with a file behind them that is no longer there.
                if int(self._meta("size") or 0):
                    self._reset()
                return 0
            done = int(self._meta("size") or 0)
            if done and (size < done or self._meta("head") != head(self.results) or self._rewritten(size, done)):
                self._reset()
                done = 0
            if size > done:
                try:
                    self._ingest(done)
                except sqlite3.OperationalError as exc:
                    self._to_memory(exc)  # (the disk filled while the index grew: read again whole, into memory)
                    self._ingest(0)
            self._stamp()
            return int(self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def _rewritten(self, size: int, done: int) -> bool:
        # Edited past the head's bytes (a score changed by hand): a run only appends, so a file of the size indexed but
        # written since, or whose indexed bytes moved, is read again (its table showed the old values, in later viewers too).
        if size == done:
            return self._meta("mtime") not in (None, str(self.results.stat().st_mtime_ns))
        return self._meta("tail") not in (None, tail(self.results, done))

    def _stamp(self) -> None:
        # What `_rewritten` compares with, taken when the file holds just what was indexed (not while a run appends).
        done = int(self._meta("size") or 0)
        st = self.results.stat()
        if st.st_size == done and self._meta("mtime") != str(st.st_mtime_ns):
            self._set_meta("mtime", str(st.st_mtime_ns))
            self._set_meta("tail", tail(self.results, done))

    def _ingest(self, start: int) -> None:
        db = self._db
        tags = set(self.tags)
        n_metrics = len(self.metrics)
        db.execute("BEGIN")
        try:
            batch: list[tuple[Any, ...]] = []
            pos = start
            lineno = int(self._meta("lines") or 0)
            bad_count, bad = json.loads(self._meta("unreadable") or "[0, []]")
            with open(self.results, "rb") as fh:
                fh.seek(start)
                for line in fh:
                    if not line.endswith(b"\n"):
                        break  # a line still being written: picked up next time
                    offset, pos, lineno = pos, pos + len(line), lineno + 1
                    try:
                        res = pydantic_core.from_json(line)
                        problem = result_problem(res)
                    except ValueError as exc:
                        res, problem = None, json_line_problem(line, exc) if line.strip() else None
                        if problem is None:
                            continue  # (a blank line, which no reader counts)
                    if problem is not None:  # not a result (a hand edit: a score of NaN, a cut line): named on the Cases page
                        bad_count += 1
                        if len(bad) < _NAMED:
                            bad.append(f"line {lineno}: {problem}")
                        db.execute("INSERT OR REPLACE INTO bad(line, case_id, trial, problem) VALUES (?, ?, ?, ?)",
                                   (lineno, *damaged_line_key(line, res), problem))
                        continue
                    if (place := error_place(res)) is not None and dead_row(db, place, res, line, offset):
                        if batch:  # (the dead row may still be in it)
                            self._insert(batch, n_metrics)
                            batch = []
                        drop_dead(db, place)
                    scores = res.get("scores") or {}
                    for k in scores:
                        if k not in self.metrics:
                            if batch:
                                self._insert(batch, n_metrics)
                                batch = []
                            self._add_metric(k)
                            n_metrics = len(self.metrics)
                    values: list[Any] = []
                    for k in self.metrics:
                        s = scores.get(k)
                        v = s.get("value") if isinstance(s, dict) else None
                        p = s.get("passed") if isinstance(s, dict) else None
                        values += [float(v) if isinstance(v, (int, float)) else None, None if p is None else int(bool(p))]
                    rtags = [str(t) for t in res.get("tags") or []]
                    tags.update(rtags)
                    status = str(res.get("status", "ok"))
                    failed = int(status != "ok" or any(isinstance(s, dict) and s.get("passed") is False for s in scores.values()))
                    err = res.get("error")
                    said = run_error_of(res.get("metadata"))
                    batch.append((str(res["case_id"]), int(res.get("trial", 0)), status, "\x1f".join(rtags),
                                  json.dumps(err) if err else None, float(res.get("duration_s") or 0.0), offset, len(line),
                                  failed, search_text(res, said), said or None, natural_key(str(res["case_id"])), *values))
                    if len(batch) >= _BATCH:
                        self._insert(batch, n_metrics)
                        batch = []
            if batch:
                self._insert(batch, n_metrics)
            if start == 0:
                self._set_meta("head", head(self.results))
            self._set_meta("size", str(pos))
            self._set_meta("lines", str(lineno))
            self._set_meta("unreadable", json.dumps([bad_count, bad]))
            self._set_meta("metrics", json.dumps(self.metrics))
            self.tags = sorted(tags)
            self._set_meta("tags", json.dumps(self.tags))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:  # (sqlite rolls back by itself on some errors: a full disk)
                db.execute("ROLLBACK")
            self._ensure_schema()
            raise

    def _insert(self, rows: list[tuple[Any, ...]], n_metrics: int) -> None:
        cols = ["case_id", "trial", "status", "tags", "error", "duration", "offset", "length", "failed", "text", "run_error", "case_key"]
        cols += [f"{c}{i}" for i in range(n_metrics) for c in "mp"]
        marks = ",".join("?" * len(cols))
        self._db.executemany(f"INSERT OR REPLACE INTO results({','.join(cols)}) VALUES ({marks})", rows)

    def add_case_text(self, items: Iterator[tuple[str, str, str]], generation: int | None = None) -> int:
        """Store each case's searchable dataset text (input, output, tool names) and its one-line snippet; returns how many.

        `items` may be slow (a dataset scan): it is consumed outside the lock and
        written in chunks, so queries go on meanwhile; the text counts as done at the end.
        `generation`: the `self.generation` the text was read for; when the index was rebuilt since (the run
        rewritten meanwhile), nothing more is stored and the text does not count as done.
        """
        gen = self.generation if generation is None else generation
        n = 0
        chunk: list[tuple[str, str, str]] = []
        for case_id, text, snippet in items:
            chunk.append((case_id, text.lower(), snippet))
            if len(chunk) >= _BATCH:
                n += self._put_text(chunk, done=False, generation=gen)
                chunk = []
        return n + self._put_text(chunk, done=True, generation=gen)

    def _put_text(self, chunk: list[tuple[str, str, str]], done: bool, generation: int) -> int:
        with self._lock:
            if generation != self.generation:
                return 0
            try:
                self._db.execute("BEGIN")
                self._db.executemany("INSERT OR REPLACE INTO casetext(case_id, text, snippet) VALUES (?, ?, ?)", chunk)
                if done:
                    self._set_meta("casetext", "done")
                self._db.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                self._to_memory(exc)  # (a new generation: the next page's refresh indexes the results and this text again)
                return 0
        return len(chunk)

    def has_case_text(self) -> bool:
        """Whether the dataset text of the cases was indexed."""
        with self._lock:
            return self._meta("casetext") == "done"

    def query(self, q: CaseQuery) -> Page:
        """One page of results matching `q` (see `CaseQuery`)."""
        with self._lock:
            return page_of(self._db, list(self.metrics), q)

    def result(self, case_id: str, trial: int) -> dict[str, Any] | None:
        """The full result line of (case, trial), read back from `results.jsonl` by its byte offset.

        `None` when there is none, and when the file changed under the index since its last `refresh()` (deleted,
        rewritten: the bytes at the offset are not that result's line any more), never an error.
        """
        with self._lock:
            row = self._db.execute("SELECT offset, length FROM results WHERE case_id=? AND trial=?", (case_id, trial)).fetchone()
        if row is None:
            return None
        try:
            with open(self.results, "rb") as fh:
                fh.seek(row[0])
                data = pydantic_core.from_json(fh.read(row[1]))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or str(data.get("case_id")) != case_id or data.get("trial", 0) != trial:
            return None
        return data

    def case_by_hash(self, h: str) -> str | None:
        """The case id whose `html.id_hash` is `h` (how the Case page of a long id is linked), or None; a case whose only
        line is damaged has its page too, which says so."""
        from tracejudge.viewer.html import id_hash
        ids = [r[0] for r in self.select("SELECT case_id FROM results UNION SELECT case_id FROM bad WHERE case_id IS NOT NULL")]
        return next((cid for cid in ids if id_hash(cid) == h), None)

    def trials(self, case_id: str) -> list[int]:
        """The trials recorded for a case, ascending."""
        return [r[0] for r in self.select("SELECT trial FROM results WHERE case_id=? ORDER BY trial", (case_id,))]

    def counts(self) -> dict[str, int]:
        """Results by status, plus `failed` (a failed verdict or a non-ok status)."""
        with self._lock:
            out = {str(s): int(n) for s, n in self._db.execute("SELECT status, COUNT(*) FROM results GROUP BY status")}
            out["failed"] = int(self._db.execute("SELECT COUNT(*) FROM results WHERE failed=1").fetchone()[0])
        return out

    def run_errors(self) -> int:
        """How many results' agent run ended in an error (`metadata.run_error`; their status is `ok` all the same)."""
        return int(self.select("SELECT COUNT(*) FROM results WHERE run_error IS NOT NULL")[0][0])

    def select(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of a read-only `sql` over the index (tables `results`, `bad`, `casetext`), read under its lock."""
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def close(self) -> None:
        """Close the SQLite connection."""
        with self._lock:
            self._db.close()
