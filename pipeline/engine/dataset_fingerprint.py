"""Fingerprints of dataset files and folders: what the manifest records of them, and whether they changed since.

`manifest.json` (`tracejudge.engine.manifest`) records one fingerprint per dataset role (`file_fingerprint`), and a
resume compares them by content, not by path. The viewer asks the other question, cheaply and often: did the
dataset change since the run (`listing`, a stat of each file, then `changed_since`, hashing only the files whose
mtime moved)? Both only read the files; nothing here knows of configs or run directories, which is why it stands
apart from the manifest.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from threading import Event
from typing import Any

from tracejudge.core.regular_file import open_regular

__all__ = ["LISTED_FILES", "Stopped", "changed_since", "file_fingerprint", "files_of", "listing"]


class Stopped(Exception):
    """Hashing was given up (`stop` was set): its result is no longer wanted."""

_FULL_HASH_LIMIT = 256 << 20
_SAMPLE = 1 << 20
_BLOCK = 4 << 20


def file_fingerprint(path: Path, stop: Event | None = None) -> dict[str, Any]:
    """Size, sha256 and mtime of a dataset file: `{"size": bytes, "sha256": hex, "sampled": bool, "mtime_ns": int}`.

    A directory (the `otel` format reads folders of exports) is fingerprinted
    by its files: `sha256` over their relative paths and hashes in sorted
    order, `size` the sum of their sizes, `count` how many; and, for a folder
    of at most `LISTED_FILES` files, `files`: relative path → `{size, sha256,
    mtime_ns}`, so a change names the files added, removed or changed. (The
    folder's hash is the one written before `files` existed: older run
    directories resume.) `mtime_ns` is not compared on resume; it lets the
    viewer skip hashing files that were not touched (`changed_since`).

    Raises `OSError` when a file cannot be read, `Stopped` once `stop` is set (checked between blocks).
    """
    if path.is_dir():
        h = hashlib.sha256()
        size, sampled = 0, False
        files: dict[str, dict[str, Any]] = {}
        found = []
        for p in path.rglob("*"):  # (listed with the stop looked at: a mistyped path can name a tree of a million files)
            if stop is not None and stop.is_set():
                raise Stopped(str(path))
            if p.is_file():
                found.append(p)
        for f in sorted(found):
            fp = _file_fingerprint(f, stop)
            size += fp["size"]
            sampled = sampled or fp["sampled"]
            rel = f.relative_to(path).as_posix()
            h.update(f"{rel}:{fp['sha256']};".encode())
            files[rel] = {k: fp[k] for k in ("size", "sha256", "mtime_ns")}
        out: dict[str, Any] = {"size": size, "sha256": h.hexdigest(), "sampled": sampled, "count": len(files)}
        if len(files) <= LISTED_FILES:
            out["files"] = files
        return out
    return _file_fingerprint(path, stop)


# A folder names its files in the manifest up to this many (about 150 bytes each); a larger one is one hash.
LISTED_FILES = 2000


def _file_fingerprint(path: Path, stop: Event | None = None) -> dict[str, Any]:
    """`file_fingerprint` of one regular file.

    Files up to 256 MiB are hashed in full (about 0.2 s per 256 MiB). Larger
    files hash their size, first, last and sixteen evenly spaced 1 MiB
    windows (`sampled: true`): an edit that keeps the size and touches none
    of those windows is not seen. Raises `OSError` if the file is unreadable.
    """
    # (`open_regular`: a FIFO put in the file's place since it was checked is refused, not waited on for ever.)
    with open_regular(path) as fh:
        st = os.fstat(fh.fileno())
        size = st.st_size
        h = hashlib.sha256()
        if size <= _FULL_HASH_LIMIT:
            # 4 MiB blocks read into one buffer, each read and hash without the GIL: a thread hashing beside a busy one
            # (`engine.fingerprint_ahead`) takes the GIL back twice a block, and may wait up to the switch interval for it.
            buf = bytearray(max(1, min(_BLOCK, size)))  # (a small file of a folder: a small buffer)
            view = memoryview(buf)
            while n := fh.readinto(buf):
                if stop is not None and stop.is_set():
                    raise Stopped(str(path))
                h.update(view[:n])
            return {"size": size, "sha256": h.hexdigest(), "sampled": False, "mtime_ns": st.st_mtime_ns}
        h.update(str(size).encode())
        step = (size - _SAMPLE) // 17
        for k in range(18):
            fh.seek(min(k * step, size - _SAMPLE))
            h.update(fh.read(_SAMPLE))
    return {"size": size, "sha256": h.hexdigest(), "sampled": True, "mtime_ns": st.st_mtime_ns}


def files_of(path: str | Path | None, tasks: str | Path | None, stop: Event | None = None,
             beside: str | Path | None = None) -> dict[str, Any]:
    """A manifest's `dataset`: role → `{"path": str, **file_fingerprint}` for each of `path`, `tasks` and `beside`
    (a folder the format reads beside the file `path`: `Format.beside`) that is not None.

    Raises `OSError` when a file cannot be read, and `Stopped` once `stop` is set.
    """
    files: dict[str, Any] = {}
    for role, p in (("path", path), ("tasks", tasks), ("beside", beside)):
        if p is not None:
            files[role] = {"path": str(p), **file_fingerprint(Path(p), stop)}
    return files


def listing(path: Path) -> dict[str, tuple[int, int]]:
    """`{relative path: (size, mtime_ns)}` of a folder's files, or `{"": (size, mtime_ns)}` of a file: a stat, no read.

    Raises `OSError` when `path` cannot be listed.
    """
    if not path.is_dir():
        st = path.stat()
        return {"": (st.st_size, st.st_mtime_ns)}
    out = {}
    for f in sorted(p for p in path.rglob("*") if p.is_file()):
        st = f.stat()
        out[f.relative_to(path).as_posix()] = (st.st_size, st.st_mtime_ns)
    return out


def changed_since(recorded: dict[str, Any], path: Path, now: dict[str, tuple[int, int]] | None = None) -> bool:
    """Whether the dataset at `path` (`now`: its `listing`) differs from its `recorded` fingerprint.

    Cheap first: names and sizes; a file whose mtime moved (or has none
    recorded) is hashed and compared with its recorded sha256, so a touched
    but equal file is no change and an edit that keeps the size is one. A
    folder recorded without `files` (too many, or written before they were
    recorded) compares its file count and total size only, as does a file
    recorded without `mtime_ns`. Raises `OSError` when `path` cannot be read.
    """
    now = listing(path) if now is None else now
    if "" in now:
        old_files = {"": recorded}
    elif isinstance(recorded.get("files"), dict):
        old_files = recorded["files"]
    else:
        count = recorded.get("count")
        return sum(size for size, _ in now.values()) != recorded.get("size") or (count is not None and count != len(now))
    if set(now) != set(old_files):
        return True
    for rel, (size, mtime) in now.items():
        old = old_files[rel]
        if size != old.get("size"):
            return True
        if "mtime_ns" not in old:
            continue  # fingerprinted before mtimes were recorded: its size is all there is to compare
        if mtime != old.get("mtime_ns") and _file_fingerprint(path / rel if rel else path)["sha256"] != old.get("sha256"):
            return True
    return False
