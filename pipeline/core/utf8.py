"""Text that UTF-8 cannot carry: a lone surrogate (half of a UTF-16 pair), which Python's `json` decodes from a `\\udXXX` escape."""

from __future__ import annotations

from typing import Any

__all__ = ["encodable", "filed_id", "safe_text", "safe_value", "unencodable_at"]


def encodable(text: str) -> bool:
    """True when `text` can be written as UTF-8 (no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def safe_text(text: str) -> str:
    """`text`, with lone surrogates escaped when it cannot be written as UTF-8.

    For showing and sharding only, never as an identity: the escaped form (`\\udc80`) is also the text of a
    literal backslash and five characters.
    """
    return text if encodable(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


def filed_id(case_id: str, place: str) -> str:
    """The id a record's result is filed under: `case_id`, or `place` (`file:line`) when UTF-8 cannot carry the id.

    A lone surrogate cannot be written, and its escaped form (`safe_text`) is another case's id spelled with a
    literal backslash: filed under it, the two cases read as duplicates, or one's result as the other's.
    """
    return case_id if encodable(case_id) else place


def unencodable_at(value: Any, path: str = "") -> str | None:
    """The dotted path (`metadata.source`, `tags.2`, `scores.Contains.reason`) of the first text in `value` UTF-8 cannot carry,
    or None: strings, dict keys and values, list and tuple items, and the fields of a pydantic model, searched in order.

    A key UTF-8 cannot carry is shown escaped (`safe_text`), so the path itself can be written. For naming the
    field of a result that cannot be written (errors only: it walks the whole value).
    """
    if isinstance(value, str):
        return None if encodable(value) else path or "(text)"
    fields = getattr(type(value), "model_fields", None)
    items: Any = ((k, getattr(value, k)) for k in fields) if isinstance(fields, dict) else (
        value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ())
    for key, item in items:
        shown = safe_text(key) if isinstance(key, str) else str(key)  # (the path is written itself: a bad key is shown escaped)
        name = f"{path}.{shown}" if path else shown
        if isinstance(key, str) and not encodable(key):
            return name
        found = unencodable_at(item, name)
        if found is not None:
            return found
    return None


def safe_value(value: Any) -> Any:
    """`value` (JSON-like: str, dict, list, tuple, other scalars) with every text UTF-8 cannot carry escaped (`safe_text`),
    dict keys included; other values as they are. A new container where anything changed, else the same object."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        out = {safe_text(k) if isinstance(k, str) else k: safe_value(v) for k, v in value.items()}
        return value if all(a is b for a, b in zip(value.values(), out.values())) and list(out) == list(value) else out
    if isinstance(value, (list, tuple)):
        items = [safe_value(v) for v in value]
        if all(a is b for a, b in zip(value, items)):
            return value
        return tuple(items) if isinstance(value, tuple) else items  # (a subclass, a named tuple: as JSON writes it, a list)
    return value
