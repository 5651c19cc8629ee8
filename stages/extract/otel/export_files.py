"""Format `otel`'s files: which files of a folder are read (`export_files`), the folder's files that held nothing
(`warn_blank`), and an export document in the one OTLP/JSON shape the reader knows (`otlp_document`: Tempo's and
Jaeger's shapes renamed or converted)."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.otel.jaeger import from_jaeger, is_jaeger
from tracejudge.stages.extract.said_once import first_time

__all__ = ["export_files", "otlp_document", "warn_blank"]

log = get_logger("tracejudge.extract.otel")


def _a_file(p: Path) -> bool:
    # A link whose target is missing is listed too: reading it gives the invalid_input that names it,
    # where `is_file()` alone dropped it without a word.
    return p.is_file() or (p.is_symlink() and not p.exists())


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
    unmatched = sorted(rel(p) for p in path.rglob("*") if _a_file(p) and p not in found)
    removed = len(found) - len(kept)
    if (unmatched or removed) and first_time("folder_files", str(path)):  # once per folder, however often a run lists it
        why = [f"{len(unmatched)} match no include glob ({', '.join(include)}): {', '.join(unmatched[:3])}{', …' if len(unmatched) > 3 else ''}"] \
            if unmatched else []
        why += [f"{removed} removed by the exclude globs ({', '.join(exclude)})"] if removed else []
        log.warning(f"otel: {len(unmatched) + removed} files under {path} not read: {'; '.join(why)} "
                    "(dataset.options.include / exclude choose the files)")
    return kept


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
    (`jaeger.from_jaeger`).
    """
    if is_jaeger(doc):
        return from_jaeger(doc)
    if isinstance(doc, dict) and isinstance(doc.get("trace"), dict) and not ("resourceSpans" in doc or "resourceLogs" in doc):
        doc = doc["trace"]
    if not isinstance(doc, dict):
        return None
    if "resourceSpans" not in doc and "batches" in doc:
        doc = {**doc, "resourceSpans": doc["batches"]}
    if not ("resourceSpans" in doc or "resourceLogs" in doc):
        return None
    resources = doc.get("resourceSpans")
    if isinstance(resources, list) and any(isinstance(r, dict) and "scopeSpans" not in r and "instrumentationLibrarySpans" in r for r in resources):
        doc = {**doc, "resourceSpans": [
            {**r, "scopeSpans": r["instrumentationLibrarySpans"]} if isinstance(r, dict) and "scopeSpans" not in r and "instrumentationLibrarySpans" in r else r
            for r in resources
        ]}
    return doc
