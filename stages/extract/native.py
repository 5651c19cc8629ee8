"""Format `native`: one `Case` per JSONL line, exactly DESIGN.md's record shape."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from pipeline.records import Case
from pipeline.registry import Format, register_format
from stages.load import read_jsonl

__all__ = ["adapt", "peek_id"]


def adapt(raw: bytes | str | dict[str, Any], ctx: Any = None) -> Case:
    """Decode one JSONL line into a `Case`.

    Raises `AdapterError` for bytes that are not UTF-8 or not JSON, or a line
    that is not an object; pydantic's `ValidationError` for a record with
    missing or mistyped fields (the caller turns both into `invalid_input`).
    """
    from stages.extract import AdapterError

    if isinstance(raw, dict):
        return Case.model_validate(raw)
    # pydantic-core parses and validates in one pass (much faster than json.loads + validate);
    # only when that fails do we look closer, to say what exactly is wrong.
    try:
        return Case.model_validate_json(raw)
    except ValidationError as exc:
        if exc.errors()[0]["type"] != "json_invalid":
            if not isinstance(_decode(raw), dict):
                raise AdapterError(f"expected a JSON object per line, got {type(_decode(raw)).__name__}") from None
            raise
    _decode(raw)  # raises AdapterError naming the JSON problem
    raise AdapterError("invalid JSON")


def _decode(raw: bytes | str) -> Any:
    from stages.extract import AdapterError

    try:
        return json.loads(raw)
    except UnicodeDecodeError as exc:
        raise AdapterError(f"line is not valid UTF-8: {exc.reason} at byte {exc.start}") from None
    except json.JSONDecodeError as exc:
        raise AdapterError(f"invalid JSON: {exc.msg} at column {exc.colno}") from None


def peek_id(raw: bytes | str) -> str | None:
    """Best-effort id of a line that failed validation, so its result keeps the user's id."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("id"), (str, int)) and not isinstance(data.get("id"), bool):
        return str(data["id"])
    return None


register_format(Format("native", read=lambda ds: read_jsonl(ds.path, ds.limit), adapt=adapt))
