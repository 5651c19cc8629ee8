"""The one error an adapter raises for a record it cannot read."""

from __future__ import annotations

__all__ = ["AdapterError"]


class AdapterError(ValueError):
    """An adapter cannot read a record; `field` names the offending key path, `line` the line of the file it starts on
    when the adapter knows it (a part of a record written over many lines), else the record's line is said."""

    def __init__(self, message: str, field: str | None = None, case_id: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.case_id = case_id
        self.line = line
