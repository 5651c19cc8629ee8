"""The framing of τ-bench files: a JSON array, as upstream writes them, or JSON Lines of the same records.

Upstream (sierra-research/tau-bench `tau_bench/run.py`) writes its runs as one JSON array
(`json.dump(results, f, indent=2)`), and the tasks files here are JSON arrays too. A user who
streams such records one per line (`jq -c '.[]'`, a harness appending a run at a time) holds the
same records in JSON Lines; read as an array, that file was one "expected a JSON array" error and
the advice to map its fields with `json-path`. `read_records` reads both, each record as the same
decoded value, so the adapters and the checks see no difference.

A file is read as JSON Lines only when it starts with `{` and the first of its lines that decodes is a
whole JSON object holding the record's own key (`traj` for a run, `actions` for a task), the lines
before it being broken records (a line cut short, starting with `{` or ending with `}`): a broken
first line is then its own `invalid_input` naming file:line, not the whole file's error. Any other
file goes to the JSON array reader as before, which says what is wrong with it (a native JSON Lines
file given `format: tau-bench` is still told "expected a JSON array of records at the top level",
and which format reads it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tracejudge.stages.load import RawRecord, deep_message, loads_line, read_json_array, read_jsonl, too_deep

__all__ = ["RUN_KEY", "TASK_KEY", "is_jsonl_of", "read_records"]

RUN_KEY = "traj"  # every upstream run has it (`EnvRunResult.traj`); native cases and chat logs do not
TASK_KEY = "actions"  # a task's expected actions (`Task.actions`)

# How much of the first lines is read to tell the framing: a run of the GPT-4o airline file is 20 KB on average,
# 44 KB at most. A line reaching past this is taken for no JSON Lines record (the array reader then says what it is).
_SNIFF_LINE = 16 << 20
_BROKEN = 8  # broken lines passed over before the first that decodes: more, and the file is not taken for JSON Lines
_PEEK = 1 << 16  # enough to see the first character: an array's `[` (on one line, the whole file) is not read further


def is_jsonl_of(path: Path, key: str) -> bool:
    """Whether the file at `path` is JSON Lines of τ-bench records: the first of its lines that decodes is a JSON object
    with `key`, and the lines before it (at most `_BROKEN` of them) are broken records.

    A broken record is a line that does not decode but starts with `{` or ends with `}` (a record cut at its end, or at
    its start): it is then that line's own `invalid_input`, instead of the whole file being read as an array (one
    "expected a JSON array" error and no record). A file starting with `[` is an array; a `{` alone on its first line
    is one object written with an indent (its next line starts with a key): neither is JSON Lines, nor is a file whose
    first record that decodes lacks `key` (a native JSON Lines file: the array reader says it is no array of records).
    Never raises: a file that cannot be opened or read (or is no regular file: a FIFO's bytes would be consumed
    here) is answered False, and the array reader reports it as it always has.
    """
    from tracejudge.core.regular_file import open_regular
    from tracejudge.stages.load.encoding import strip_bom

    try:
        with open_regular(path) as fh:
            if not strip_bom(fh.read(_PEEK)).lstrip().startswith(b"{"):
                return False  # (a `[`: a JSON array; blank or anything else: the array reader says what it is)
            fh.seek(0)
            budget, broken = _SNIFF_LINE, 0
            while budget > 0:
                raw = fh.readline(budget)
                if not raw:
                    return False  # (no line decodes: the array reader says what the file is)
                budget -= len(raw)
                if not raw.endswith(b"\n") and budget <= 0:
                    return False  # a line longer than the look allows: taken for no JSON Lines record
                line = strip_bom(raw).strip()
                if not line:
                    continue
                if not line.startswith(b"{") and not line.endswith(b"}"):
                    return False  # (a key of an indented object, or other text: no line of records)
                value = _decoded(line)
                if value is not None:
                    return isinstance(value, dict) and key in value
                broken += 1
                if broken > _BROKEN:
                    return False
    except (OSError, ValueError):
        return False
    return False


def _decoded(line: bytes) -> Any:
    """The JSON value of one line, or None when it does not decode (or is nested too deep to try)."""
    if too_deep(line):
        return None
    try:
        return loads_line(line)
    except ValueError:
        return None


def read_records(path: Path, limit: int | None = None, unnamed: Callable[[Any], str | None] | None = None,
                 key: str = RUN_KEY) -> Iterator[RawRecord]:
    """Every record of a τ-bench file (runs, or tasks with `key=TASK_KEY`), decoded, each with the line it starts on.

    A JSON array is read by `read_json_array` (`unnamed` as it says). JSON Lines (`is_jsonl_of`) are read a
    line at a time: a line that is not JSON, not UTF-8 or nested deeper than `MAX_DEPTH` levels is a record
    with `error` set (the reasons `loads_line` and `deep_message` give), so it costs only itself, as a broken
    element of an array does. `limit` stops after that many records. Raises what opening the file raises.
    """
    if not is_jsonl_of(Path(path), key):
        yield from read_json_array(Path(path), limit, unnamed=unnamed)
        return
    lines = read_jsonl(Path(path), limit)
    try:
        for rec in lines:
            if rec.error is not None:
                yield rec
                continue
            if too_deep(rec.payload):  # (checked before the decoder recurses, as `extract_record` checks a line)
                yield RawRecord(rec.file, rec.line, error=deep_message(), end=rec.end)
                continue
            try:
                value = loads_line(rec.payload)
            except ValueError as exc:
                yield RawRecord(rec.file, rec.line, error=str(exc), end=rec.end)
                continue
            yield RawRecord(rec.file, rec.line, value, end=rec.end)
    finally:
        lines.close()  # a consumer that stops early (the checks peek at the first runs) closes the file now
