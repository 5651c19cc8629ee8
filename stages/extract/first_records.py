"""A dataset whose first records all fail to read is a wrong `dataset.format`, said once before the run starts; an empty one is refused too.

A JSON array read as `openai-messages` (one record per line) made 53,013 `invalid_input`
results, one per line of the file, and nothing else. One bad record must never stop a run,
so the check is on a whole run of them: when the first `FIRST` records are all invalid and
none is valid, the run is refused with a config error naming the file, the first problem
and the formats under which the same records do read.
"""

from __future__ import annotations

from itertools import islice
from typing import Any

from tracejudge.core.errors import ConfigError

__all__ = ["FIRST", "check_dataset", "check_first_records", "formats_that_read"]

FIRST = 100

# How many records another format is tried on, to suggest it: one of them must read.
_TRY = 5


def _scan(fmt: Any, dataset: Any, ctx: Any, n: int) -> tuple[int, Any] | None:
    """`(invalid records read, the first error)` of at most the first `n` records of `dataset`; None once one is valid."""
    from tracejudge.stages.extract import extract_record

    records = fmt.read(dataset)
    first, seen = None, 0
    try:
        for raw in islice(records, n):
            got = extract_record(raw, fmt, ctx)
            if not isinstance(got, tuple):
                return None  # a record reads: the format is right, bad records fail on their own
            seen += 1
            first = first or got[1]
    finally:
        close = getattr(records, "close", None)
        if close is not None:
            close()
    return seen, first


def formats_that_read(dataset: Any, tried: str) -> list[str]:
    """The built-in file formats other than `tried` under which one of the dataset's first records reads."""
    from tracejudge.core import registry

    found = []
    for name in registry.FORMAT_MODULES:
        if name == tried:
            continue
        try:
            fmt = registry.format_for(name)
            if fmt.remote or fmt.reads_dirs or fmt.bind is not None:
                continue
            other = dataset.model_copy(update={"format": name, "options": {}, "limit": None})
            if _scan(fmt, other, fmt.prepare(other), _TRY) is None:
                found.append(name)
        except Exception:  # noqa: BLE001 - a format that cannot even open the file is simply not suggested
            continue
    return found


def _is_array(path: Any) -> bool:
    """Whether the file at `path` starts (after white space) with `[`: a JSON array, not one record per line."""
    try:
        with open(path, "rb") as fh:
            return fh.read(4096).lstrip().startswith(b"[")
    except OSError:
        return False


def check_first_records(fmt: Any, dataset: Any, ctx: Any) -> None:
    """Raise `ConfigError` when the first `FIRST` records of `dataset` are all invalid for `fmt`.

    Formats that read a folder, a server or need binding to the run directory are
    not checked: reading their start twice is not cheap. Nor is a user's own adapter
    (`module:function`): its code runs once per record, inside the run, as the user wrote it.
    """
    from tracejudge.core import registry

    if fmt.remote or fmt.reads_dirs or fmt.bind is not None or getattr(dataset, "path", None) is None:
        return
    if fmt.name not in registry.FORMAT_MODULES:
        return
    bad = _scan(fmt, dataset, ctx, FIRST)
    if bad is not None and bad[0] == 0:  # else the run ended "no results" with exit status 1, as if scores had failed
        raise ConfigError(f"dataset.path: {dataset.path}: no records in it (an empty file, only blank lines or an empty array)")
    if bad is None or bad[0] < FIRST:
        return
    seen, err = bad
    where = f"{err.file}:{err.line}" if err.line else str(err.file or dataset.path)
    others = formats_that_read(dataset, fmt.name)
    if others:
        hint = f"they read as format {' or '.join(repr(o) for o in others)}: set dataset.format"
    elif _is_array(dataset.path):
        hint = "the file is one JSON array and no format reads it as such: write one record per line (JSON Lines)"
    else:
        hint = "check that dataset.format names the file's format (`tracejudge list formats`)"
    raise ConfigError(f"dataset.path: {dataset.path}: the first {seen} records are all invalid for format {fmt.name!r} "
                      f"(the first: {where}: {err.message}); {hint}")


def check_dataset(config: Any) -> None:
    """Raise `ConfigError` for a dataset the run would refuse (`prepare`'s checks, `check_first_records`), read from the config alone.

    For `run --fresh`, which creates its new directory before the run starts: a refusal
    found after that left an empty directory behind.
    """
    from tracejudge.core import registry

    fmt = registry.format_for(config.dataset.format)
    if not (fmt.remote or fmt.reads_dirs or fmt.bind is not None):  # unchecked by `check_first_records`: nothing to prepare for
        check_first_records(fmt, config.dataset, fmt.prepare(config.dataset))
