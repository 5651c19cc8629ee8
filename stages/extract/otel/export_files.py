"""Format `otel`'s files: which files of a folder are read (`export_files`), the folder's files that held nothing
(`warn_blank`), and an export document in the one OTLP/JSON shape the reader knows (`otlp_document`: Tempo's and
Jaeger's shapes renamed or converted, bare spans wrapped in an export), or why a document is none (`not_an_export`)."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.otel.jaeger import from_jaeger, is_jaeger
from tracejudge.stages.extract.said_once import first_time

__all__ = ["bare_spans", "bare_where", "export_files", "is_span", "not_an_export", "otlp_document", "warn_blank"]

log = get_logger("tracejudge.extract.otel")


def _a_file(p: Path) -> bool:
    # A link whose target is missing is listed too: reading it gives the invalid_input that names it,
    # where `is_file()` alone dropped it without a word.
    return p.is_file() or (p.is_symlink() and not p.exists())


def _not_a_file(p: Path) -> str | None:
    """What `p` is when it is a FIFO, a socket or a device (through a link too): never opened, so a named pipe with no
    writer holds up nothing; else None."""
    if p.is_fifo():
        return "a FIFO (named pipe)"
    if p.is_socket():
        return "a socket"
    return "a device" if p.is_block_device() or p.is_char_device() else None


def export_files(path: Path, include: list[str], exclude: list[str]) -> list[Path]:
    """The export files to read: `path` itself, or the files under it matching an `include` glob and no `exclude` one.

    Files of the folder left out are not silent: one warning says how many matched no `include` glob and how many
    an `exclude` glob removed, with a few names (an export saved as `.otlp` or `.txt` was skipped without a word).
    """
    if path.is_file():
        return [path]
    found: set[Path] = set()
    for pattern in include:
        found.update(p for p in path.glob(pattern) if _a_file(p))
    def rel(p: Path) -> str:
        return p.relative_to(path).as_posix()

    def excluded(p: Path) -> bool:
        return any(fnmatch.fnmatch(rel(p), ex) or fnmatch.fnmatch(p.name, ex) for ex in exclude)

    kept = sorted(p for p in found if not excluded(p))
    everything = list(path.rglob("*"))
    unmatched = sorted(rel(p) for p in everything if _a_file(p) and p not in found)
    removed = len(found) - len(kept)
    special: dict[str, list[str]] = {}  # (a FIFO among the exports was left out without a word)
    for p in everything:
        if (kind := _not_a_file(p)) is not None:
            special.setdefault(kind, []).append(rel(p))
    if (unmatched or removed or special) and first_time("folder_files", str(path)):  # once per folder, however often a run lists it
        why = [f"{len(unmatched)} match no include glob ({', '.join(include)}): {_some(unmatched)}"] if unmatched else []
        why += [f"{removed} removed by the exclude globs ({', '.join(exclude)})"] if removed else []
        why += [f"{len(names)} {kind}, not a regular file: {_some(sorted(names))}" for kind, names in special.items()]
        count = len(unmatched) + removed + sum(len(names) for names in special.values())
        hint = " (dataset.options.include / exclude choose the files)" if unmatched or removed else ""
        log.warning(f"otel: {count} files under {path} not read: {'; '.join(why)}{hint}")
    return kept


def _some(names: list[str]) -> str:
    return ", ".join(names[:3]) + (", …" if len(names) > 3 else "")


def warn_blank(path: Path, blank: list[str]) -> None:
    """Warn, once per folder, about the files of the folder `path` that held no export (empty or only white space).

    Such a file reads as no record, not as a broken one (`exports`); in a folder its siblings still make cases, so
    without this it would vanish without a word. A single such file needs no warning: the dataset's own
    "no records in it" error names it.
    """
    if not blank or not path.is_dir() or not first_time("blank_files", str(path)):
        return
    names = ", ".join(Path(b).relative_to(path).as_posix() for b in blank[:3]) + (", …" if len(blank) > 3 else "")
    log.warning(f"otel: {len(blank)} files under {path} hold no export (empty or only white space), so nothing was read "
                f"from them: {names}")


def otlp_document(doc: Any) -> dict[str, Any] | None:
    """An export document in the current OTLP/JSON shape, or `None` when `doc` is not an export.

    Grafana Tempo's trace API answers in older or wrapped shapes of the same
    data: `{"batches": [...]}` for `resourceSpans` (Tempo v1), each resource
    holding `instrumentationLibrarySpans` (OTLP before 0.15) for
    `scopeSpans`, and Tempo v2 puts the export under `{"trace": {...}}`.
    Those are renamed here (shallow copies; `doc` is not changed), so the
    rest of the reader sees one shape. A Jaeger JSON export is converted
    (`jaeger.from_jaeger`). A bare span, or a JSON array of them (`bare_spans`), is an export of
    those spans with no resource or scope.
    """
    if is_jaeger(doc):
        return from_jaeger(doc)
    if isinstance(doc, dict) and isinstance(doc.get("trace"), dict) and not ("resourceSpans" in doc or "resourceLogs" in doc):
        doc = doc["trace"]
    if (spans := bare_spans(doc)) is not None:
        return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    if not isinstance(doc, dict):
        return None
    if not doc.get("resourceSpans") and "batches" in doc:  # (an empty `resourceSpans` beside them too, as agentevals reads it)
        doc = {**doc, "resourceSpans": doc["batches"]}
    if not ("resourceSpans" in doc or "resourceLogs" in doc):
        return None
    resources = doc.get("resourceSpans")
    if isinstance(resources, list) and any(_old_scopes(r) for r in resources):
        doc = {**doc, "resourceSpans": [{**r, "scopeSpans": r["instrumentationLibrarySpans"]} if _old_scopes(r) else r for r in resources]}
    return doc


def _old_scopes(resource: Any) -> bool:
    """Whether a resource holds its spans under OTLP's old `instrumentationLibrarySpans` (and none under `scopeSpans`)."""
    return isinstance(resource, dict) and not resource.get("scopeSpans") and "instrumentationLibrarySpans" in resource


def is_span(value: Any) -> bool:
    """Whether `value` is a bare OTLP span: an object with a `spanId`.

    agentevals takes an object with a `traceId` or a `spanId` for a span, and drops unread one that lacks either id.
    Here one with a `traceId` alone is no span: its error says what a span needs, where read as a broken span it would
    say that a span has no `spanId`, which misleads about a Langfuse observation (`traceId`, `id`) given to this format.
    """
    return isinstance(value, dict) and "spanId" in value


def bare_spans(doc: Any) -> list[Any] | None:
    """The spans of `doc` when it is bare spans with no export around them, else `None`.

    agentevals' loader reads them, and streaming writers write them: one span a line (JSON Lines, each line its own
    document here, so a trace over many lines is still one trace: spans group by trace id whatever line they are on),
    one span alone, or a JSON array of spans (an empty array: no span). An export document is never a bare span.
    """
    if isinstance(doc, list):
        return doc if all(is_span(item) for item in doc) else None
    if is_span(doc) and not any(k in doc for k in ("resourceSpans", "resourceLogs", "batches")):
        return [doc]
    return None


_WRAPPED = re.compile(r"resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[(\d+)\]\.")


def bare_where(message: str, doc: Any) -> str:
    """`message`, about a part of `doc` read as an export, naming that part where `doc` holds it when `doc` is bare spans
    (`bare_spans`): the export they are read in is made up (`otlp_document`), so its `resourceSpans[0].scopeSpans[0].
    spans[3].attributes` is a place the file does not have; it is the array's `[3].attributes`, or the line's span's."""
    m = _WRAPPED.match(message)
    if m is None or bare_spans(doc) is None:
        return message
    return f"[{m.group(1)}].{message[m.end():]}" if isinstance(doc, list) else f"the span's {message[m.end():]}"


def not_an_export(doc: Any) -> str:
    """Why `doc` (the document at one line of a file) is no export: the error of its `invalid_input`."""
    what = ("not an OTLP/JSON export: expected `resourceSpans` or `resourceLogs` at the top level (or Grafana Tempo's `batches`, "
            "or either under `trace`, or Jaeger's `data`), or OTLP spans (objects with `traceId` and `spanId`: one a line, or a "
            "JSON array of them)")
    if isinstance(doc, list) and any(is_span(item) for item in doc):
        index = next(i for i, item in enumerate(doc) if not is_span(item))
        return f"{what}: this JSON array holds spans, but its item [{index}] is not one (no `spanId`)"
    return what
