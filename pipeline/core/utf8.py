"""Text that UTF-8 cannot carry: a lone surrogate (half of a UTF-16 pair), which Python's `json` decodes from a `\\udXXX` escape."""

from __future__ import annotations

__all__ = ["encodable", "filed_id", "safe_text"]


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
