"""Reading a file a person edited by hand, as a run files its records: for the tests of the one-document formats."""

from __future__ import annotations

from pathlib import Path

from tracejudge.core.records import Case
from tracejudge.core.registry import format_for
from tracejudge.stages.extract import extract_record


class _Dataset:
    def __init__(self, path: Path) -> None:
        self.path, self.tasks, self.limit, self.options = path, None, None, {}


def filed(path: Path, fmt_name: str, text: str) -> list[tuple[str, str | None]]:
    """`text` written to `path`, then `(case id, error message or None)` of each of its records, as the run files
    them (a broken record under `file:line` or `file:line:column`); the file's path written `F`."""
    path.write_text(text, encoding="utf-8")
    fmt = format_for(fmt_name)
    out = []
    for raw in fmt.read(_Dataset(path)):
        got = extract_record(raw, fmt, None)
        out.append((got.id, None) if isinstance(got, Case) else (got[0].replace(str(path), "F"), got[1].message))
    return out
