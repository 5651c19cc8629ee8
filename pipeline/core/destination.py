"""A file a command writes where the user named it (`extract -o PATH`, `export --to csv PATH`).

`check` refuses a destination that would destroy what the command should not touch: a file the command reads
(the dataset, the config: never, not even with `--force`), a path inside a run directory, an existing regular
file unless `--force` is given. `replacing` then writes the file whole or not at all: into a temporary file
beside it, renamed onto it only when the writer has finished, so a failed or interrupted command leaves the
previous file as it was. A device or FIFO (`/dev/null`, a named pipe) is written into as it is, and a symlink
is followed (its target is replaced, the link stays), for both.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

from tracejudge.core.errors import TracejudgeError

__all__ = ["check", "replacing", "run_manifest", "runs_around"]

# What makes a folder a run directory (`engine.store`'s RESULTS and MANIFEST; `engine.shards.expand` reads them so).
_RUN_FILES = ("results.jsonl", "manifest.json")


def check(path: Path, option: str, command: str, *, force: bool, reads: Sequence[tuple[str, Path | None]] = (),
          runs: Sequence[Path] = (), runs_are: str = "") -> None:
    """Refuse writing to `path` where it would destroy something; `-` (stdout) always passes.

    `option` is how the command line named the destination (`-o`, `--to csv`), said first in every message;
    `command` names the command (`extract`) where a message says what it reads.
    `reads`: `(what, path)` of each file or folder the command reads (`("dataset.path", …)`); `path` that is one
    of those files (symlinks and hard links included) or lies in one of those folders is refused even with `force`.
    `runs`: run directories `path` must not lie in (nor be), also regardless of `force`; `runs_are` ends that
    message (`"which export only reads"`). A socket is refused; an existing regular file is refused unless `force`.
    Raises `TracejudgeError` (one line: the option, the path, why; exit 2), having touched nothing.
    """
    if str(path) == "-":
        return
    shown = f"{option} {path}"
    where = path.resolve()
    for what, source in reads:
        if source is None or not os.path.exists(source):
            continue
        if os.path.isdir(source):
            if where == source.resolve() or source.resolve() in where.parents or _linked_into(path, source):
                raise TracejudgeError(f"{shown}: lies in the folder {what} ({source}), which {command} reads; "
                                      "give a path outside it")
        elif os.path.exists(path) and os.path.samefile(path, source):
            raise TracejudgeError(f"{shown}: is {what} ({source}), which {command} reads; give another path")
    for run in runs:
        if run.resolve() in where.parents or where == run.resolve():
            # --force never reaches here: replacing results.jsonl or manifest.json would corrupt the run.
            raise TracejudgeError(f"{shown}: lies in the run {run}, {runs_are}; give a path outside it")
    try:
        mode = path.stat().st_mode
    except OSError:
        mode = None
    if mode is not None and stat.S_ISSOCK(mode):
        raise TracejudgeError(f"{shown}: is a socket; give a file, a FIFO or a device")
    # Only a regular file is protected: a device or FIFO is written into (see `replacing`).
    if mode is not None and stat.S_ISREG(mode) and not force:
        raise TracejudgeError(f"{shown}: exists; give another path, or --force to overwrite it")


def _linked_into(path: Path, folder: Path) -> bool:
    """Whether the existing regular file `path` is a hard link to a file in `folder` (walked only when `path` exists)."""
    try:
        st = path.stat()
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_nlink < 2:  # (one link: the path is its only name, seen above)
        return False
    for top, _, files in os.walk(folder, followlinks=True):
        for name in files:
            with contextlib.suppress(OSError):
                other = os.stat(os.path.join(top, name))
                if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
                    return True
    return False


def runs_around(path: Path) -> list[Path]:
    """The run directories that `path`, resolved, lies in: folders holding `results.jsonl`, or the `manifest.json`
    of a run (one with a `config_hash`: a web project's `manifest.json` makes no run directory of its folder)."""
    if str(path) == "-":
        return []
    return [d for d in path.resolve().parents if (d / _RUN_FILES[0]).is_file() or run_manifest(d / _RUN_FILES[1])]


def run_manifest(path: Path) -> bool:
    """Whether `path` is a run's `manifest.json`: a regular JSON file holding an object with a `config_hash` (a web
    project's `manifest.json`, a FIFO, a missing or unreadable file are not)."""
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > 16 << 20:  # (a FIFO would block; a run's manifest is a few KiB)
            return False
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "config_hash" in data


def _special(path: Path) -> bool:
    """Whether `path` (followed through symlinks) exists and is neither a regular file nor a directory."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[Path]:
    """A temporary file beside `path` to write, moved onto `path` when the block ends (`path` itself if a device or FIFO).

    The temporary has a name of its own (`.NAME.<random>.tmp`, made with O_EXCL: no file of the user's is ever
    taken for it) and the mode an existing `path` has; it is fsynced before the rename, so the file is the old
    or the new one after a crash. Whatever ends the block early (an error, a Ctrl-C) removes the temporary and
    leaves `path` as it was. An `OSError` (a missing folder, a directory, no permission, a full disk) is raised
    again naming `path`, the file the user asked for; one the block raises naming another file (one it reads) is
    raised as it is.
    """
    if _special(path):
        # A device or FIFO is written into as it is: replacing it would put a regular file in its place.
        yield path
        return
    # A symlink is followed: its target is replaced and the link stays.
    real = Path(os.path.realpath(path)) if path.is_symlink() else path
    tmp: Path | None = None
    try:
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        tmp = _new_temporary(real)
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        tmp.replace(real)
    except BaseException as exc:
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        if not isinstance(exc, OSError):
            raise
        if tmp is not None and exc.filename is not None and str(exc.filename) not in (str(path), str(real), str(tmp)):
            # Raised in the block about another file (a run's results.jsonl that is a FIFO, read while writing): it was
            # named as the destination's. (Before the block, `tmp` unset, every error is the destination's.)
            raise
        # pyarrow's errors carry the code only in their text ("... Detail: [errno 2] No such file or directory").
        code = exc.errno or next((int(m.group(1)) for m in [re.search(r"\[errno (\d+)\]", str(exc))] if m), None)
        if code is None:
            raise OSError(f"{path}: {str(exc).replace(str(tmp), str(path))}") from None
        raise OSError(code, os.strerror(code), str(path)) from None


def _new_temporary(real: Path) -> Path:
    """Create an empty file beside `real` that did not exist, with `real`'s permission bits if it exists."""
    try:
        mode = stat.S_IMODE(real.stat().st_mode)
    except OSError:
        mode = 0o666  # (less the umask, as `open` gives a new file)
    while True:
        tmp = real.with_name(f".{real.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        except FileExistsError:
            continue
        try:
            if mode != 0o666:
                os.fchmod(fd, mode)  # the mode of the file replaced, which the umask may have narrowed
        finally:
            os.close(fd)
        return tmp
