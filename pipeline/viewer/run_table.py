"""The runs a viewer serves by id (`RunTable`): those it started with, and each run directory written since into a folder
it watches, with their links followed again on each listing."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

from tracejudge.viewer.runs import Run, _firsts, _is_run, _new_run

__all__ = ["RunTable"]


class RunTable:
    """The runs a viewer serves by id: those it started with, and each run directory written since into a folder it
    watches (`watched_folders`: `runs/`, or a folder of runs named on the command line), found by `scan`.

    A run keeps its id while the viewer runs, its directory deleted or not (its pages then say it is gone, `Run.gone`),
    so a link to it never comes to name another run. A run served through a symlink that is retargeted since at a run
    served under another name (`ln -sfn a runs/latest`) is that run's second name: no longer listed nor offered, its
    pages say which run it now is, as a viewer started after the `ln` would not serve it at all. Safe to use from
    several threads.
    """

    def __init__(self, runs: list[Run], folders: Sequence[Path] = ()) -> None:
        self._runs = {r.rid: r for r in runs}
        self._folders = list(folders)
        self._names = {str(r.path) for r in runs}  # (each run's spelling, as `discover_runs` spells an entry)
        self._real = {r.rid: str(r.path.resolve()) for r in runs}  # (followed again on each scan for a symlink's run)
        self._links = {r.rid for r in runs if r.path.is_symlink()}
        self._lock = threading.Lock()

    def get(self, rid: str) -> Run | None:
        """The run of id `rid`, or None (call `scan` first to find one written since)."""
        with self._lock:
            return self._runs.get(rid)

    def __contains__(self, rid: object) -> bool:
        with self._lock:
            return rid in self._runs

    def linked(self, rid: str) -> bool:
        """Whether the run of id `rid` was reached through a symlink (which may point at another run since: `scan`), or its
        directory was replaced by one since (one `lstat`)."""
        with self._lock:
            run = self._runs.get(rid)
            if rid in self._links or run is None:
                return rid in self._links
        return run.path.is_symlink()

    def values(self) -> list[Run]:
        """Every run served, those the viewer started with first, then those found since in the order found; less a
        link's run whose link now points at a run served under another name (`second_name_of`)."""
        with self._lock:
            return [r for r in self._runs.values() if r.second_name_of is None]

    def scan(self) -> int:
        """Follow again the symlinks runs are served through, and add the run directories in the watched folders not
        served yet; returns how many were added. Blocking (a listing of each folder, an lstat per run served and a
        resolve per link, and a stat or two per entry not served yet); a folder that cannot be listed adds none."""
        self._follow_links()
        found: list[Path] = []
        for folder in self._folders:
            try:
                names = sorted(os.listdir(folder))
            except OSError:  # (the folder removed or unreadable meanwhile: the runs already served stay)
                continue
            # (an entry served already is known by its name, spelled as `discover_runs` spells it: only the others are
            # looked at, so the cost is one listing however many runs the folder holds)
            found += [p for name in names if str(p := folder / name) not in self._names and _is_run(p)]
        added = 0
        with self._lock:
            # (resolved only when new by its spelling: a second name of a run served, a symlink, is not served twice;
            # a symlink beside the run it points to leaves that run its own name, even one served before the run came)
            served = [(r, self._real[r.rid], r.rid in self._links) for r in self._runs.values()]
            new = [(p, str(p.resolve()), p.is_symlink()) for p in found if str(p) not in self._names]
            for p, real, link in _firsts([((p, real, link), real, link) for p, real, link in new], set(), served):
                run = _new_run(p, set(self._runs))
                self._runs[run.rid] = run
                self._names.add(str(p))
                self._real[run.rid] = real
                if link:
                    self._links.add(run.rid)
                added += 1
        self._mark_second_names()
        return added

    def _follow_links(self) -> None:
        """Resolve again the runs served through a symlink, and those whose directory is one now (a directory replaced by a
        link to another run): one may point at another directory since. One `lstat` a run, a resolve a link."""
        with self._lock:
            runs, was = list(self._runs.values()), set(self._links)
        links = {r.rid for r in runs if r.path.is_symlink()}
        now = {r.rid: str(r.path.resolve()) for r in runs if r.rid in links or r.rid in was}
        with self._lock:
            self._real.update(now)
            self._links = (self._links - was) | links

    def _mark_second_names(self) -> None:
        """Mark as a second name each run whose directory is served under another name, by `_one_per_run`'s rule (a
        run's own directory first, else the link served first), as a fresh start would serve them; one whose link
        points away again is listed again."""
        with self._lock:
            runs = [(r, self._real[r.rid], r.rid in self._links) for r in self._runs.values()]
        first = {real: r for r, real in _firsts([((r, real), real, link) for r, real, link in runs], set())}
        for r, real, _ in runs:
            other = first[real]
            r.second_name_of = None if other is r else other.name

    def present(self) -> list[Run]:
        """The runs a page offers to open or compare with: every run served whose directory is there, the watched folders
        listed again first (`scan`), so a run written since the viewer started is among them and one removed is not.
        Blocking (a listing per folder and a stat or two per run)."""
        self.scan()
        return [r for r in self.values() if r.gone() is None]

    def close(self) -> None:
        """Close every run's index."""
        with self._lock:
            runs = list(self._runs.values())
        for run in runs:
            run.close()
