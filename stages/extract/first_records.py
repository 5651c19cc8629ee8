"""A dataset whose first records all fail to read is a wrong `dataset.format`, said once before the run starts; an empty one is refused too.

A JSON array read as `openai-messages` (one record per line) made 53,013 `invalid_input`
results, one per line of the file, and nothing else. One bad record must never stop a run,
so the check is on a whole run of them: when the first `FIRST` records are all invalid and
none is valid, the run is refused with a config error naming the file, the first problem
and the formats under which the same records do read. A shorter file none of whose records
reads is refused the same way when another format reads them.

A format whose file is one document (`Format.whole_file`: τ-bench's JSON array, a τ²-bench
results object, OTLP exports) has no run of lines to wait for: a native JSON Lines file read as
`tau-bench` was one `invalid_input` result ("expected a JSON array") and exit status 1. When
none of such a file's records reads, the run is refused the same way, saying what the file holds.
"""

from __future__ import annotations

import json
import os
from itertools import islice
from pathlib import Path
from typing import Any

from tracejudge.core.errors import ConfigError, os_error
from tracejudge.stages.extract.skipped import skipped_text
from tracejudge.stages.load.encoding import compressed, strip_bom

__all__ = ["FIRST", "check_dataset", "check_first_records", "empty_folder", "formats_that_read", "no_records"]

FIRST = 100

# How many records another format is tried on, to suggest it: one of them must read.
_TRY = 5

# How much of a file is looked at to say what it holds: a JSON Lines record can be long.
_HEAD = 1 << 20


def empty_folder(fmt: Any, dataset: Any) -> bool:
    """Whether `dataset.path` is a folder a built-in folder-reading format (`otel`, `inspect`) reads and no file lies
    anywhere under it: `run` went on to "the run has no results" (exit 1) where `extract` said "no records in it" (2)."""
    from tracejudge.core import registry

    path = getattr(dataset, "path", None)
    if path is None or not fmt.reads_dirs or fmt.remote or fmt.name not in registry.FORMAT_MODULES or not os.path.isdir(path):
        return False
    for _, _, files in os.walk(path):
        if files:
            return False
    return True


def _checked(fmt: Any, dataset: Any) -> bool:
    """Whether the start of `dataset` is read before the run: a built-in format reading a file.

    Not a folder, a server or a dataset bound to the run directory: reading their start twice is
    not cheap. A whole-file format that may read a folder (`otel`) is checked on a single file.
    """
    from tracejudge.core import registry

    if fmt.remote or fmt.bind is not None or getattr(dataset, "path", None) is None or fmt.name not in registry.FORMAT_MODULES:
        return False
    return not fmt.reads_dirs or (fmt.whole_file and Path(dataset.path).is_file())


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


# The format that reads any JSON object line (with no options it maps only a `file:line` id): that it reads a
# file says nothing of what the file holds, so it is named only when no format of the file's own kind reads it.
_ANY_OBJECT = "json-path"


def formats_that_read(dataset: Any, tried: str) -> list[str]:
    """The built-in file formats other than `tried` under which one of the dataset's first records reads.

    `json-path` is left out when another format reads them: it reads any JSON object line, tracejudge's own
    `native` records and a chat log alike, and named first (the list is in name order) it sent a user of native
    records to write a mapping. `[]` when none reads; `["json-path"]` alone for JSON objects no format knows.
    """
    from tracejudge.core import registry
    from tracejudge.stages.load.framing import quiet

    found = []
    for name in registry.FORMAT_MODULES:
        if name == tried:
            continue
        try:
            fmt = registry.format_for(name)
            if not _checked(fmt, dataset):
                continue
            other = dataset.model_copy(update={"format": name, "options": {}, "limit": None})
            with quiet():  # (a trial read: what another format would warn of is not this run's)
                if _scan(fmt, other, fmt.prepare(other), _TRY) is None:
                    found.append(name)
        except Exception:  # noqa: BLE001 - a format that cannot even open the file is simply not suggested
            continue
    return [name for name in found if name != _ANY_OBJECT] or found


def _head(path: Any) -> bytes:
    """The start of the file at `path` (up to `_HEAD` bytes) after its leading white space; b"" for a blank or unreadable file.

    A UTF-8 byte-order mark it starts with is dropped, as the readers drop it: a JSON array saved with one is a JSON array.
    """
    try:
        with open(path, "rb") as fh:
            chunk = strip_bom(fh.read(_HEAD))
            while chunk and not chunk.strip():
                chunk = fh.read(_HEAD)
            chunk = chunk.lstrip()
            return chunk + fh.read(_HEAD - len(chunk))
    except OSError:
        return b""


def _utf8(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.reason == "unexpected end of data" and exc.end == len(head)  # (a character cut by the head's end)
    return True


def _holds(head: bytes) -> str:
    """What a file starting with `head` holds, in a few words: a JSON array, JSON Lines, a JSON object (with its first keys), or text that is not JSON."""
    if head.startswith(b"["):
        return "a JSON array"
    if compressed(head) is not None and not _utf8(head):
        return "compressed, not text"
    lines = False
    try:
        value = json.loads(head)  # the whole file, when it is small
    except ValueError:
        first, _, rest = head.partition(b"\n")
        try:
            value, lines = json.loads(first), bool(rest.strip())
        except ValueError:
            return "a JSON object" if head.startswith(b"{") else "text that is not JSON"
    what = _JSON_TYPES.get(type(value), "value")
    if isinstance(value, dict) and value:
        what += f" with keys {', '.join(map(str, list(value)[:6]))}"
    return f"JSON Lines, one value per line (the first: {what})" if lines else what


_JSON_TYPES = {dict: "a JSON object", list: "a JSON array", str: "a JSON string", int: "a JSON number", float: "a JSON number",
               bool: "a JSON boolean", type(None): "JSON null"}


def _looks_native(head: bytes) -> bool:
    """Whether the first line of `head` is a JSON object of `Case`'s fields only, with what a case is scored on (a native record)."""
    from tracejudge.core.records import Case

    try:
        first = json.loads(head.partition(b"\n")[0])
    except ValueError:
        return False
    keys = set(first) if isinstance(first, dict) else set()
    return keys <= set(Case.model_fields) and bool(keys & {"input", "trace", "expected_tool_calls", "expected_output", "turns"})


def no_records(fmt: Any, dataset: Any) -> str:
    """The config error of a dataset `fmt` reads no record from: an empty file, or (a folder, or a file that holds
    something) one with nothing of that format in it, saying what the file holds."""
    path = dataset.path
    head = _head(path) if os.path.isfile(path) else b""
    if not head or head.rstrip() == b"[]":
        what = "no file in the folder holds one" if os.path.isdir(path) else "an empty file, only blank lines or an empty array"
        return f"dataset.path: {path}: no records in it ({what})"
    if os.path.isfile(path) and (why := skipped_text(path)) is not None:  # (records of the format, each left out on purpose)
        return f"dataset.path: {path}: format {fmt.name} reads no record from it: {why}"
    return f"dataset.path: {path}: format {fmt.name} reads no record from it; it holds {_holds(head)}"


def check_first_records(fmt: Any, dataset: Any, ctx: Any) -> None:
    """Raise `ConfigError` when the first `FIRST` records of `dataset` are all invalid for `fmt`, or all of a
    whole-file format's records are (`Format.whole_file`); when there are none; and when the file cannot be read.

    Checked only where `_checked` says; nor is a user's own adapter (`module:function`):
    its code runs once per record, inside the run, as the user wrote it.
    """
    if empty_folder(fmt, dataset):  # (a folder's start is not read; that it holds no file at all is cheap to tell)
        raise ConfigError(no_records(fmt, dataset))
    if not _checked(fmt, dataset):
        return
    if fmt.whole_file:  # the whole file decides, not the part a limit keeps
        dataset = dataset.model_copy(update={"limit": None})
    from tracejudge.stages.load.framing import quiet

    try:
        with quiet():  # (the run reads these records again, and says their warnings then: said here too, twice)
            bad = _scan(fmt, dataset, ctx, FIRST)
        head = _head(dataset.path) if bad is not None else b""
    except OSError as exc:  # a file that exists but cannot be read (permissions, an I/O error): the dataset, not a crash
        raise ConfigError(f"dataset.path: {dataset.path}: cannot be read ({os_error(exc)})") from None
    if bad is not None and (bad[0] == 0 or (fmt.whole_file and not head)):  # else the run ended with exit status 1, as if scores had failed
        raise ConfigError(no_records(fmt, dataset))
    if bad is None:
        return
    seen, err = bad
    # A file of fewer than `FIRST` records, none of which reads (a first try of three records under the wrong format):
    # refused too, but only when another format does read them; else each record's own error says what is wrong.
    short = seen < FIRST and not fmt.whole_file
    others = formats_that_read(dataset, fmt.name)
    if short and not [o for o in others if o != _ANY_OBJECT]:
        return
    where = f"{err.file}:{err.line}" if err.line else str(err.file or dataset.path)
    if fmt.name != "native" and others in ([], [_ANY_OBJECT]) and _looks_native(head):
        hint = ("they are tracejudge's own records (format 'native': keys such as id, input, trace), but not one reads there "
                "either: set dataset.format: native, then mend the records where its errors say")
    elif fmt.name == "otel" and any(k in head for k in (b'"resourceSpans"', b'"resource_spans"', b'"spanId"')):  # (bare spans too)
        hint = "the records are OTLP spans, this format's own: each error says why its trace cannot be scored"
    elif others == [_ANY_OBJECT]:
        hint = (f"no format knows these records; format {_ANY_OBJECT!r} reads any JSON object: set dataset.format: {_ANY_OBJECT} "
                "with dataset.options mapping the fields (`tracejudge list formats`)")
    elif others:
        hint = f"they read as format {' or '.join(repr(o) for o in others)}: set dataset.format"
    elif head.startswith(b"[") and not fmt.whole_file:
        hint = "the file is one JSON array and no format reads it as such: write one record per line (JSON Lines)"
    elif compressed(head) is not None and not _utf8(head):
        hint = "decompress it and give dataset.path the file inside"
    elif "invalid JSON: " in err.message and fmt.whole_file:  # the right format, broken by an edit or cut short
        hint = "the file's JSON is broken where the error says: mend it there"
    else:
        hint = "check that dataset.format names the file's format (`tracejudge list formats`)"
    if seen < FIRST:  # every record of the file was read (a whole-file format, or a short file)
        count = "" if seen == 1 else f"all {seen} of its records are invalid, the first: "
        raise ConfigError(f"dataset.path: {dataset.path}: no record of it reads as format {fmt.name!r} ({count}{where}: {err.message}); "
                          f"the file is {_holds(head)}; {hint}")
    raise ConfigError(f"dataset.path: {dataset.path}: the first {seen} records are all invalid for format {fmt.name!r} "
                      f"(the first: {where}: {err.message}); {hint}")


def check_dataset(config: Any) -> None:
    """Raise `ConfigError` for a dataset the run would refuse (`prepare`'s checks, `check_first_records`), read from the config alone.

    For `run --fresh`, which creates its new directory before the run starts: a refusal
    found after that left an empty directory behind.
    """
    from tracejudge.core import registry

    fmt = registry.format_for(config.dataset.format)
    if empty_folder(fmt, config.dataset):
        raise ConfigError(no_records(fmt, config.dataset))
    if _checked(fmt, config.dataset):  # else unchecked by `check_first_records`: nothing to prepare for
        from tracejudge.stages.load.framing import quiet

        # The run reads the dataset again and says its warnings then (a tasks file's unreadable task): said here as well,
        # each was said twice.
        with quiet():
            check_first_records(fmt, config.dataset, fmt.prepare(config.dataset))
