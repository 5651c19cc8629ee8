"""The result written in place of one whose text cannot be written: a lone surrogate, a value nested too deeply.

Such a result (from a custom adapter or metric: the built-in readers refuse the text when they decode it) is
replaced by an `invalid_input` result under the same id and trial, so a resume skips it, naming the record's
file and line and the field that holds the text.
"""

from __future__ import annotations

from tracejudge.core.records import CaseResult, ErrorInfo, Status
from tracejudge.core.utf8 import unencodable_at
from tracejudge.stages.load import deep_message

__all__ = ["unencodable"]


def unencodable(result: CaseResult, exc: Exception, place: tuple[str, int] | None) -> CaseResult:
    """The result that replaces one whose text cannot be written (kept: id and trial, so resume skips it), naming the
    record's `place` (file, line: where its id was first seen) and the field that holds the text."""
    file, line = place if place is not None else (None, None)
    field = unencodable_at({"tags": result.tags, "metadata": result.metadata, "scores": result.scores})
    return CaseResult(
        case_id=result.case_id, trial=result.trial, status=Status.invalid_input, duration_s=result.duration_s,
        error=ErrorInfo(kind="invalid_input", message=_why(exc, field), file=file, line=line, field=field),
    )


def _why(exc: Exception, field: str | None) -> str:
    # pydantic-core's serializer stops at its own depth limit, which it words as a circular reference: a value nested
    # that deeply (from an adapter that does not refuse it when decoding, `load.too_deep`) cannot be written.
    if "depth exceeded" in str(exc):
        return f"{deep_message()}: its result cannot be written"
    if field is not None:
        return f"{field} holds text that UTF-8 cannot encode (a lone surrogate): the result cannot be written"
    return f"the record holds text that UTF-8 cannot encode (a lone surrogate): {str(exc)[:160]}"
