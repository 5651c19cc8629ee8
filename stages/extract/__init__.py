"""Stage `extract`: turn one raw record into a normalized `Case`.

Each input format is a small pure adapter (`adapt(raw, ctx) -> Case`) plus a
reader that streams raw records. `extract_record` wraps any adapter so that
whatever goes wrong with one record becomes an `ErrorInfo` naming the file,
line and field — never an exception that stops the run. Its message may quote
the record (`unknown message role '…'`): credentials in it are masked
(`tracejudge.llm.redact.redact_quoted`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError
from tracejudge.core.errors import describe
from tracejudge.core.records import Case, ErrorInfo
from tracejudge.core.registry import Format, register_format_resolver
from tracejudge.llm.redact import redact_quoted
from tracejudge.stages.extract.common import JsonLine, case_problem
from tracejudge.stages.extract.errors import AdapterError
from tracejudge.stages.extract.lone_text import settled_case
from tracejudge.stages.load import RawRecord, deep_message, too_deep

__all__ = ["AdapterError", "extract_record", "line_case_id", "raw_case_id"]


def _user_adapter(name: str) -> Format | None:
    # `dataset.format: module.path:function` names a user adapter, imported on first use. The built-in
    # formats' modules are imported by the registry only when named (`registry.FORMAT_MODULES`).
    if ":" not in name:
        return None
    from tracejudge.stages.extract import custom

    return custom.load_adapter(name)


register_format_resolver(_user_adapter)


def raw_case_id(raw: RawRecord) -> str:
    """The id an unreadable record is reported under: its own id if it has one, else `file:line`."""
    payload = raw.payload
    if isinstance(payload, dict) and isinstance(payload.get("id"), (str, int)):
        return str(payload["id"])
    return f"{raw.file}:{raw.line}"


def line_case_id(raw: RawRecord) -> str:
    """The id a record that is not a valid case is reported under, told from the record alone (never adapted).

    A JSON line that is a readable record keeps its own id (`native.line_id`); any other line
    (not UTF-8, not JSON, cut short) and a record the reader refused go under `raw_case_id`.
    `extract_record` files a refused line here, and so does a run whose worker process died
    on the line (`engine.worker_deaths`): the resume's result then replaces the dead worker's.
    """
    if raw.error is None and isinstance(raw.payload, (bytes, str)):
        from tracejudge.stages.extract import native

        return native.line_id(raw.payload) or raw_case_id(raw)
    return raw_case_id(raw)


def _invalid(raw: RawRecord, message: str, field: str | None = None) -> ErrorInfo:
    # The field path is a record's own keys: a credential used as a key would otherwise reach every report whole.
    return ErrorInfo(kind="invalid_input", message=redact_quoted(message), file=raw.file, line=raw.line,
                     field=redact_quoted(field) if field else None)


def extract_record(raw: RawRecord, fmt: Format, ctx: Any) -> Case | tuple[str, ErrorInfo]:
    """Adapt one raw record; on failure return `(case_id, ErrorInfo)` instead of raising.

    The error's message and field path are both redacted (`redact_quoted`).
    """
    if raw.error is not None:
        return raw_case_id(raw), _invalid(raw, raw.error)
    text = raw.payload.data if type(raw.payload) is JsonLine else raw.payload
    if fmt.name != "native" and isinstance(text, (bytes, str)) and too_deep(text):
        # Refused before any decoder recurses that deep (native's own decoders refuse it, naming the column).
        return raw_case_id(raw), _invalid(raw, deep_message())
    try:
        case: Case = fmt.adapt(raw.payload, ctx)
        if fmt.name == "native":  # (its decoders refuse a lone surrogate, naming the column, in every command)
            return case
        # (a lone surrogate in the case's text reads as U+FFFD in every command: `lone_text`)
        return settled_case(case, fmt.name, f"{Path(str(raw.file)).name}:{raw.line}")
    except AdapterError as exc:
        cid = exc.case_id or raw_case_id(raw)
        error = _invalid(raw, str(exc), exc.field)
        return cid, error if exc.line is None else error.model_copy(update={"line": exc.line})
    except ValidationError as exc:
        field, msg = case_problem(exc)
        return line_case_id(raw), _invalid(raw, msg, field)
    except MemoryError:
        # The machine's limit, not the record's fault: the run stops with a crash log (exit 3) and the resume
        # reads the record again, instead of a standing invalid_input that fails the gate as bad data.
        raise
    except Exception as exc:  # an adapter bug must cost one case, not the run
        return raw_case_id(raw), _invalid(raw, f"adapter {fmt.name} failed: {describe(exc)}")
