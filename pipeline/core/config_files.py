"""The files a run config names, checked before any work starts: the dataset's `path` and `tasks`, a regression baseline,
the judge's labels file.

`file_problems` reads plain values (paths already resolved against the config's folder), so the same checks run on a
config the schema validated and on one it refused: a config with an unknown key and a missing dataset file names both
in one go, not the file only once the key is fixed.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

from tracejudge.core.regular_file import special_kind

__all__ = ["STDIN_DATASET", "file_problems"]

STDIN_DATASET = ("`-` (standard input) cannot be a dataset: a run reads its dataset file more than once (its fingerprint "
                 "first, the cases again on a resume, the transcripts in `tracejudge view`), which a stream does not allow; "
                 "save it to a file and give that file's path (`./-` for a file named `-`)")


def file_problems(dataset: dict[str, Any], fmt: Any, baseline: Any = None, labels: Any = None) -> list[tuple[tuple[str, ...], str]]:
    """`(key path, message)` for each of `dataset`'s `path` and `tasks` (a `str` or `Path`; any other value, or none, is
    left to the schema) that cannot be read as `fmt` (a `registry.Format`, or None when the format is unknown) reads it,
    for a `baseline` (`assertions.regression.baseline`) that holds no run, and for a `labels` file (`judge.labels.path`)
    that is not there, is a folder or is no regular file (a FIFO, a device). Raises nothing: an unreadable file's metadata is left to the reader, which names
    the file."""
    problems: list[tuple[tuple[str, ...], str]] = []
    name = dataset.get("format", "native")
    for key in ("path", "tasks"):
        raw = dataset.get(key)
        if not isinstance(raw, (str, Path)):
            continue
        p, loc = Path(raw), ("dataset", key)
        if str(raw) == "-":
            # Standard input cannot be read again: a run reads its dataset more than once.
            problems.append((loc, STDIN_DATASET))
        elif not p.exists():
            problems.append((loc, _missing(p)))
        elif (kind := _special_file(p)) is not None:
            # Found now, before the run directory: reading a FIFO blocks for ever, /dev/zero never ends a line.
            wanted = "a regular file or folder" if key == "path" and fmt is not None and fmt.reads_dirs else "a regular file"
            problems.append((loc, f"{p} is {kind}, not {wanted}"))
        elif p.is_dir() and (key == "tasks" or (fmt is not None and not fmt.reads_dirs)):
            # Found now, not after the run directory was created: reading a folder as lines fails late.
            problems.append((loc, f"{p} is a directory; format {name!r} reads one file: name the file"))
        elif key == "path" and fmt is not None and fmt.folder_file and p.is_dir() and not (p / fmt.folder_file).is_file():
            # τ²-bench's dir layout without its results.json: the run said "no file in the folder holds one" beside a
            # full simulations/ folder, or went on to make each simulation an invalid_input of the missing file.
            problems.append((loc, f"{p} is a folder without {fmt.folder_file}; format {name!r} reads one file, or a folder "
                             f"holding {fmt.folder_file} (and {fmt.beside}/)"))
    if isinstance(labels, (str, Path)):
        lp = Path(labels)
        # Found now: the run judged every case, then put `cannot read the labels file` in summary.json without a word
        # (or, for a FIFO, blocked opening it once every case was judged, for ever and deaf to SIGTERM).
        if not lp.exists():
            problems.append((("judge", "labels", "path"), _missing(lp)))
        elif (kind := _special_file(lp)) is not None:
            problems.append((("judge", "labels", "path"), f"{lp} is {kind}, not a regular file; labels are one JSONL or CSV "
                                                          "file: save them to a file and name it"))
        elif lp.is_dir():
            problems.append((("judge", "labels", "path"), f"{labels} is a folder; labels are one JSONL or CSV file: name the file"))
    if isinstance(baseline, (str, Path)) and not _baseline_exists(Path(baseline)):
        # Found now, not after a night of scoring that the gate would then fail anyway.
        problems.append((("assertions", "regression", "baseline"), f"baseline run not found: {baseline} has no results.jsonl"))
    return problems


def _baseline_exists(path: Path) -> bool:
    # A run directory, or the name of a sharded run's directories.
    from tracejudge.engine.shards import expand

    try:
        return bool(expand(path))
    except Exception:
        return False


def _missing(path: Path) -> str:
    """Why `path`, which does not exist as far as `exists()` can tell, cannot be read: not found, or a symlink loop."""
    try:
        path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"{path} is a symlink loop (too many levels of symbolic links)"
    return f"file not found: {path}"


def _special_file(path: Path) -> str | None:
    """What `path` is when it exists but is neither a regular file nor a folder (after symlinks), else None."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None  # unreadable metadata: the reader reports it with the file's name
    return special_kind(mode)
