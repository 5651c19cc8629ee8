"""The run directories a viewer serves, each with its lazily opened index and case source."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tracejudge.engine import store
from tracejudge.viewer.index import RunIndex
from tracejudge.viewer.traces import CaseSource, read_object

__all__ = ["Run", "differs", "discover_runs", "load_runs", "shown_time", "viewer_paths", "watched_folders"]


@dataclass
class Run:
    """One run directory: `rid` (its id in URLs), `name`, `path`; `index` and `source` open on first use."""

    rid: str
    path: Path
    name: str
    _index: RunIndex | None = field(default=None, repr=False)
    _index_for: tuple[int, int] | None = field(default=None, repr=False)  # (the directory `_index` is of: `_identity`)
    _source: CaseSource | None = field(default=None, repr=False)
    _source_key: tuple[Any, ...] | None = field(default=None, repr=False)
    _summary: tuple[tuple[int, int, int], dict[str, Any], str | None] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: The name of the run served whose directory this run's link now points at (`RunTable.scan`), else None.
    second_name_of: str | None = field(default=None, repr=False)

    @property
    def index(self) -> RunIndex:
        """The run's `view.idx` (built on first use; call `refresh()` to catch up with a growing run). Opened again when
        `path` names another directory since (a link retargeted, a directory replaced by a link to another run): the one
        kept was the other directory's, its rows that run's, and its refresh wrote the new run's rows into that index."""
        now = _identity(self.path)
        with self._lock:  # worker threads ask for it concurrently: open it once
            if self._index is not None and now is not None and now != self._index_for:
                self._index = None  # (not closed: a page may still be reading it; it closes when the last one lets go)
            if self._index is None:
                self._index, self._index_for = RunIndex(self.path), now
            return self._index

    @property
    def source(self) -> CaseSource:
        """Where this run's traces are read from (see `tracejudge.viewer.traces`).

        Made again when `manifest.json` changed (a run directory rewritten by another run, of another dataset
        perhaps, while the viewer is open): the old one would read the old dataset and keep its cached cases.
        """
        with self._lock:
            key = (_identity(self.path), _stamp(self.path / store.MANIFEST))
            if self._source is None or key != self._source_key:
                self._source, self._source_key = CaseSource(self.path, self.manifest()), key
            return self._source

    def gone(self) -> str | None:
        """Why the run cannot be read any more (its directory deleted or moved since the viewer started, or its link
        retargeted at a run served under another name), else `None`."""
        if self.second_name_of is not None:
            return f"{self.path} now points to the run served as {self.second_name_of}"
        if not self.path.is_dir():
            return f"the run directory {self.path} is not there any more (deleted or moved since `tracejudge view` started)"
        if not _is_run(self.path):
            return f"{self.path} holds no run any more (no results.jsonl or manifest.json)"
        return None

    def summary(self) -> dict[str, Any]:
        """`summary.json`, or `{}` while the run has not written one (or it is unreadable). Read again only when the
        file changed (every open page asks for it every few seconds, and a long run's summary is large); the dict is
        shared: callers do not change it."""
        return self._read_summary()[0]

    def summary_problem(self) -> str | None:
        """Why `summary.json`, which is there, cannot be read (`not JSON: …`, `not a JSON object …`), else None (read, or
        not written yet): its figures are then missing because the file is damaged, not because the run has not ended."""
        return self._read_summary()[1]

    def _read_summary(self) -> tuple[dict[str, Any], str | None]:
        path = self.path / store.SUMMARY
        try:
            st = path.stat()
        except OSError:
            return {}, None
        key = (st.st_ino, st.st_mtime_ns, st.st_size)  # (summary.json is replaced whole: a new inode)
        kept = self._summary
        if kept is not None and kept[0] == key:
            return kept[1], kept[2]
        data, why = read_object(path)
        self._summary = (key, data, why)
        return data, why

    def state(self) -> tuple[str, str]:
        """`(state, detail)`: `("complete", "")`; `("in progress", who)` while a process holds the run's lock (`"process
        4242"`); else `("interrupted", the command that resumes it)`: killed or stopped before its end, as `tracejudge
        report` says it. A run merged from shards holds no lock of its own: unless complete it is interrupted, with its
        shards' commands to resume them."""
        if self.summary().get("complete"):
            return "complete", ""
        from tracejudge.engine.run_lock import holder
        from tracejudge.engine.run_state import last_segment_finished, resume_command

        who = holder(self.path)
        if who is not None:
            return "in progress", who
        if self.summary_problem() is not None and last_segment_finished(self.path):
            # (its summary is damaged, so whether it is complete is not known: its last segment ended, which its
            # checkpoint says; read as interrupted, a run that ended was told to resume)
            return "finished", ""
        merged = self.manifest().get("merged_from")
        if isinstance(merged, list) and merged:
            from tracejudge.stages.aggregate.gate_coverage import shard_resume_commands

            return "interrupted", "; ".join(shard_resume_commands(self.summary())) or ""
        return "interrupted", resume_command(self.path)

    def manifest(self) -> dict[str, Any]:
        """`manifest.json`, or `{}`."""
        return _read_json(self.path / store.MANIFEST)

    def started(self) -> str:
        """When the run started, `YYYY-MM-DD HH:MM:SS` (UTC), else `—`.

        From its first segment (`summary.json`); a run merged from shards has none of its own: the earliest
        first segment of the shards it was merged from (`manifest.json` `merged_from`) that are still there; else the
        manifest's (results') mtime. One format whatever the source: the segments' `…T…Z` and a file time alike.
        """
        for seg in self.summary().get("segments") or []:
            if seg.get("started_at"):
                return shown_time(str(seg["started_at"]))
        shards = [shown_time(str(seg["started_at"])) for d in self.manifest().get("merged_from") or [] if isinstance(d, str)
                  for seg in (_read_json(Path(d) / store.SUMMARY).get("segments") or [])[:1] if isinstance(seg, dict) and seg.get("started_at")]
        if shards:
            return min(shards)
        for name in (store.MANIFEST, store.RESULTS):
            p = self.path / name
            if p.exists():
                return datetime.fromtimestamp(p.stat().st_mtime, UTC).strftime(_TIME)
        return "—"

    def close(self) -> None:
        """Close the index."""
        if self._index is not None:
            self._index.close()


def _dataset(run: Run) -> tuple[str | None, str, str]:
    """`(fingerprint, dataset as shown, format)` of `run`'s manifest. A run that read a trace store fingerprints no file
    (every one the same, empty): its dataset is the store's traces it reads (`remote.store_identity`)."""
    m = run.manifest()
    ds = (m.get("config") or {}).get("dataset") or {}
    fmt = str(ds.get("format") or "native")
    if ds.get("path") is None and isinstance(ds.get("options"), dict) and _remote(fmt) and m.get("dataset_fingerprint"):
        from tracejudge.stages.extract.remote import store_identity

        shown = store_identity(fmt, ds["options"])
        return f"{fmt} {shown}", shown, fmt
    return m.get("dataset_fingerprint"), str(ds.get("path") or "?"), fmt


def _remote(fmt: str) -> bool:
    """Whether built-in format `fmt` reads a trace server (`phoenix`, `mlflow-server`)."""
    from tracejudge.core import registry

    return fmt in registry.formats() and bool(getattr(registry.format_for(fmt), "remote", False))


def differs(a: Run, b: Run) -> str | None:
    """Why runs `a` and `b` cannot be compared case by case, or `None` when they can.

    They can when their manifests record the same dataset fingerprint (the
    same files, byte for byte; `tracejudge.engine.manifest`), whatever their
    metrics or limits. Otherwise the text names what differs: a missing
    manifest, the dataset paths or formats, or the same path with other content.
    """
    (fa, pa, xa), (fb, pb, xb) = _dataset(a), _dataset(b)
    if fa is None or fb is None:
        return f"{(a if fa is None else b).name} has no manifest.json recording its dataset"
    if fa == fb:
        return None
    if (pa, xa) == (pb, xb):
        return f"{pa} changed between the runs (other content, same path)"
    what = [f"{pa} vs {pb}"] if pa != pb else []
    what += [f"format {xa} vs {xb}"] if xa != xb else []
    return "different datasets: " + ", ".join(what or ["other content"])


_TIME = "%Y-%m-%d %H:%M:%S"


def shown_time(stamp: str) -> str:
    """An ISO time as the pages show every time: `2026-01-02T03:04:05.678Z` → `2026-01-02 03:04:05` (UTC).

    Text that is no ISO time is returned as written."""
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC).strftime(_TIME)
    except ValueError:
        return stamp


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        return (0, 0)
    return (st.st_mtime_ns, st.st_size)


def _identity(path: Path) -> tuple[int, int] | None:
    """`(device, inode)` of the directory `path` names now, links followed; None when it names none (one stat)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _read_json(path: Path) -> dict[str, Any]:
    return read_object(path)[0]


def _is_run(path: Path) -> bool:
    return path.is_dir() and ((path / store.RESULTS).exists() or (path / store.MANIFEST).exists())


def discover_runs(root: Path) -> list[Path]:
    """Run directories directly under `root` (those with a results.jsonl or manifest.json), by name."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if _is_run(p))


def load_runs(paths: list[Path]) -> list[Run]:
    """A `Run` per directory, with URL-safe unique ids from the directory names as given (a symlink's own name).

    A directory given twice (two spellings, or a symlink and the directory it points to) is served once: under its own
    name when that is given too, else under the first name given. Raises `ValueError` naming a path that is not a run
    directory.
    """
    paths = [Path(p) for p in paths]
    for p in paths:
        if not _is_run(p):
            raise ValueError(f"{p}: not a run directory (no results.jsonl or manifest.json)")
    seen: set[str] = set()
    return [_new_run(p, seen) for p in _one_per_run(paths, set())]


def _one_per_run(paths: list[Path], served: set[str]) -> list[Path]:
    """`paths` (run directories) less the second names of a run: one whose resolved path is in `served` or comes earlier,
    and a symlink to a directory also in `paths` under a name of its own (`latest` beside the run it points to: the link
    may point at another run tomorrow, the directory stays that run)."""
    return _firsts([(p, str(p.resolve()), p.is_symlink()) for p in paths], served)


def _firsts(items: list[tuple[Any, str, bool]], served: set[str], before: Sequence[tuple[Any, str, bool]] = ()) -> list[Any]:
    """The first of `(item, resolved path, is a symlink)` per resolved path not in `served`, a symlink giving way to an
    item that is no symlink (`_one_per_run`'s rule, also applied to the runs served as their links are retargeted).

    `before` (the runs served already, in the same form) come first and are not returned: an item is dropped where one
    of them would win, and kept where it wins (a directory that a link served already points at)."""
    direct = {real for _, real, link in [*before, *items] if not link}
    out, seen = [], set(served)
    for n, (item, real, link) in enumerate([*before, *items]):
        if real in seen or (link and real in direct):
            continue
        seen.add(real)
        if n >= len(before):
            out.append(item)
    return out


def _new_run(path: Path, seen: set[str]) -> Run:
    """A `Run` of `path` whose id is its folder's name made URL-safe, suffixed `-2`, `-3` … past the ids in `seen` (added).

    The name is the one the user sees, not its target's: `runs/nightly`, a symlink to `store/run-0042`, is `nightly`
    (its pages `/run/nightly`, as the folder listing reads). Made absolute without following links, so `.` or `..` given
    on the command line names the folder they stand for."""
    name = Path(os.path.abspath(path)).name
    base = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "run"
    rid, n = base, 2
    while rid in seen:
        rid, n = f"{base}-{n}", n + 1
    seen.add(rid)
    return Run(rid, path, name)


def viewer_paths(given: list[Path], cwd: Path) -> list[Path]:
    """The run directories to serve: those given, else every run directory under `cwd/runs`.

    A folder given that is no run but holds runs (`view runs/`, `view ../other/runs`) stands for them, as `runs/` does
    when nothing is given; any other folder is left for `load_runs` to refuse.
    """
    if not given:
        return discover_runs(cwd / "runs")
    return [run for p in given for run in (discover_runs(Path(p)) if not _is_run(Path(p)) else []) or [Path(p)]]


def watched_folders(given: list[Path], cwd: Path) -> list[Path]:
    """The folders whose new run directories a viewer serves as they appear: `cwd/runs` when nothing is given, else each
    folder given that stands for the runs it holds (`viewer_paths`). Run directories named one by one are served alone."""
    if not given:
        return [cwd / "runs"]
    return [Path(p) for p in given if not _is_run(Path(p)) and discover_runs(Path(p))]
