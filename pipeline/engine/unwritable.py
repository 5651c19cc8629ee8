"""The result written in place of one whose text cannot be written: a lone surrogate, a value nested too deeply.

When the text is in the scores only (a metric's reason or details: a custom metric's own words, or a quote of the
record), it is written escaped (`core.utf8.safe_value`, as JSON input spells it) and the case keeps its status and
every score: the case was scored, only a text could not be written. When the record's own labels hold it (tags,
metadata), or a value is nested too deeply, the result is replaced by an `invalid_input` result under the same id
and trial, so a resume skips it, naming the record's file and line and the field that holds the text.
`tracejudge extract` names a case it cannot write in the same words (`unwritable_case`).
"""

from __future__ import annotations

from tracejudge.core.records import CaseResult, ErrorInfo, Status
from tracejudge.core.utf8 import safe_value, unencodable_at
from tracejudge.stages.load import deep_message

__all__ = ["ID_UNENCODABLE", "unencodable", "unwritable_case"]

ID_UNENCODABLE = "the case id holds text that UTF-8 cannot encode (a lone surrogate)"


def unencodable(result: CaseResult, exc: Exception, place: tuple[str, int] | None) -> CaseResult:
    """The result to write instead of `result`, whose text cannot be written (`exc`: what writing it raised): its scores'
    text escaped, or an `invalid_input` result (id and trial kept, so a resume skips it) naming the record's `place`
    (file, line: where its id was first seen) and the field that holds the text (see the module docstring)."""
    file, line = place if place is not None else (None, None)
    # pydantic-core's serializer stops at its own depth limit, which it words as a circular reference: a value nested
    # that deeply (from an adapter that does not refuse it when decoding, `load.too_deep`) is not walked here either.
    deep = "depth exceeded" in str(exc)
    field = None
    if not deep:
        try:
            field = unencodable_at({"tags": result.tags, "metadata": result.metadata, "scores": result.scores})
            if field is not None and field.startswith("scores.") and type(result) is CaseResult:
                scores = {k: s.model_copy(update={"reason": safe_value(s.reason), "details": safe_value(s.details)})
                          for k, s in result.scores.items()}
                if unencodable_at(scores) is None:
                    return result.model_copy(update={"scores": scores})
        except RecursionError:
            field = None
    return CaseResult(
        case_id=result.case_id, trial=result.trial, status=Status.invalid_input, duration_s=result.duration_s,
        error=ErrorInfo(kind="invalid_input", message=_why(exc, field, deep), file=file, line=line, field=field),
    )


def unwritable_case(exc: Exception, field: str | None) -> str:
    """Why `tracejudge extract` writes no case line for a case whose JSON `exc` (a `ValueError` of pydantic's serializer)
    kept from being written, `field` the dotted path of the text UTF-8 cannot carry (`unencodable_at`), or None: in the
    words `run` gives such a record (`ID_UNENCODABLE`, `tags.0 holds text that UTF-8 cannot encode (a lone surrogate): …`),
    not the serializer's own (`Error serializing to JSON: UnicodeEncodeError …`)."""
    if field == "id":
        return ID_UNENCODABLE
    return _why(exc, field, "depth exceeded" in str(exc), "the case")


def _why(exc: Exception, field: str | None, deep: bool, what: str = "the result") -> str:
    if deep:
        return f"{deep_message()}: {'its result' if what == 'the result' else what} cannot be written"
    if field is not None:
        return f"{field} holds text that UTF-8 cannot encode (a lone surrogate): {what} cannot be written"
    return f"the record holds text that UTF-8 cannot encode (a lone surrogate): {str(exc)[:160]}"
