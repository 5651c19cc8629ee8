"""`tracejudge extract`: any input format written out as native cases, traces included."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from pathlib import Path
from collections.abc import Iterator
from typing import TYPE_CHECKING

from tracejudge.core.utf8 import safe_text, unencodable_at
from tracejudge.entrypoints.commands.exits import EXIT_ASSERTION, EXIT_BAD_INPUT, EXIT_OK

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["command"]


def command(args: argparse.Namespace, config, err: Console) -> int:
    """`tracejudge extract`: write the dataset as native cases; invalid records are listed on stderr (exit 1 if any, else 0)."""
    from tracejudge.core import registry
    from tracejudge.core.records import Case, ErrorInfo
    from tracejudge.stages.extract import extract_record

    from tracejudge.engine.admit import duplicate_error, safe_text
    from tracejudge.engine.keyset import FirstSeen

    from tracejudge.core.errors import ConfigError
    from tracejudge.stages.extract.first_records import empty_folder, no_records

    fmt = registry.format_for(config.dataset.format)
    if empty_folder(fmt, config.dataset):  # (refused as `run` refuses it, before the output file is made)
        raise ConfigError(no_records(fmt, config.dataset))
    ctx = fmt.prepare(config.dataset)
    dataset = _as_the_next_run_reads(fmt, config)  # (read only: `prepare` takes the options as written, as a run's does)
    out = sys.stdout if str(args.output) == "-" else open(args.output, "w", encoding="utf-8")
    written = bad = 0
    spans_seen: dict[str, dict[str, dict[str, int]]] = {}  # file -> convention -> used/ignored span counts
    seen = FirstSeen()  # as a run does: an id's first record (valid or not) owns it; a repeat is reported once, never written
    with _interrupt_between_records() as interrupted:
        try:
            for raw in fmt.read(dataset):
                if interrupted:
                    raise KeyboardInterrupt  # between records: every line written is a whole case
                got = extract_record(raw, fmt, ctx)
                cid = safe_text(got.id if isinstance(got, Case) else got[0])
                first = seen.claim(cid, raw.file, raw.line)
                if first != f"{raw.file}:{raw.line}":
                    got = (cid, duplicate_error(cid, first, raw.file, raw.line, None if isinstance(got, Case) else got[1].message))
                if isinstance(got, Case):
                    _tally_conventions(spans_seen, raw.file, got)
                    try:
                        out.write(got.model_dump_json(exclude_defaults=True) + "\n")
                        written += 1
                        continue
                    except ValueError as exc:  # text JSON cannot carry (a lone surrogate)
                        field = unencodable_at(got)
                        got = (safe_text(got.id), ErrorInfo(
                            kind="invalid_input", message=f"{field or 'the record'} holds text that UTF-8 cannot encode: {str(exc)[:120]}",
                            file=raw.file, line=raw.line, field=field))
                cid, info = got
                bad += 1
                where = f"{info.file}:{info.line}" + (f": {info.field}" if info.field else "")
                # A record without a readable id goes by its place (`FILE:LINE`): named once, not twice.
                named = "" if cid in (f"{info.file}:{info.line}", f"{Path(str(info.file)).name}:{info.line}") else f" ({cid})"
                message = info.message
                if info.field and message.startswith(f"{info.field}: "):  # (said once: the place already names the field)
                    message = message[len(info.field) + 2:]
                err.print(f"invalid input {where}{named}: {message}", highlight=False, markup=False)
        finally:
            if out is not sys.stdout:
                out.close()
    for file, counts in spans_seen.items():
        parts = [f"{name} {c['used']} used" + (f", {c['ignored']} ignored" if c["ignored"] else "") for name, c in counts.items() if name != "unrecognised"]
        if "unrecognised" in counts:
            parts.append(f"{counts['unrecognised']['ignored']} spans of no known convention ignored")
        err.print(f"{file}: spans by convention: " + ("; ".join(parts) or "none"), highlight=False, markup=False, soft_wrap=True)
    if not written and not bad and fmt.remote:  # a store's window holding no trace is a quiet night, not an error
        from tracejudge.stages.extract.remote import empty_window

        err.print(f"wrote 0 cases to {args.output}: {empty_window(fmt.name, dict(dataset.options))}", highlight=False, markup=False, soft_wrap=True)
        return EXIT_OK
    if not written and not bad:  # as a run refuses it: nothing read is no conversion that succeeded
        # (a config error, as the run's: the command line says which line of the config, or which --set, named the file)
        raise ConfigError(no_records(fmt, config.dataset))
    err.print(f"wrote {written} case{'' if written == 1 else 's'} to {args.output}"
              + (f"; {bad} record{' was' if bad == 1 else 's were'} invalid (listed above)" if bad else ""), highlight=False)
    return EXIT_ASSERTION if bad else EXIT_OK  # the valid cases are written; a script still learns that some records were not


def _as_the_next_run_reads(fmt, config):
    """The dataset as `tracejudge run` of `config` would read it next: a store's `start: last_run` stands for the
    window after the run directory's last finished run (everything when it has none), as the run binds it
    (`Format.bind`). Nothing is recorded in the run directory: the sweep's record (`sweep.json`) is the run's to write."""
    if fmt.bind is None or (config.dataset.options or {}).get("start") != "last_run":
        return config.dataset
    dataset = fmt.bind(config.dataset, Path(config.run.dir))
    options = dict(dataset.options)
    if isinstance(options.get("_sweep"), dict):
        options["_sweep"] = {**options["_sweep"], "run_dir": None}
    return dataset.model_copy(update={"options": options})


def _tally_conventions(into: dict[str, dict[str, dict[str, int]]], file: str, case) -> None:
    """Add a span-export case's per-convention span counts (`metadata.otel.conventions`) to its file's tally."""
    counts = (case.metadata.get("otel") or {}).get("conventions") if isinstance(case.metadata.get("otel"), dict) else None
    if not isinstance(counts, dict):
        return
    per_file = into.setdefault(file, {})
    for name, c in counts.items():
        entry = per_file.setdefault(name, {"used": 0, "ignored": 0})
        entry["used"] += int(c.get("used", 0))
        entry["ignored"] += int(c.get("ignored", 0))


@contextlib.contextmanager
def _interrupt_between_records() -> Iterator[list[int]]:
    """While extracting: a Ctrl-C (SIGINT) is noted, and the loop raises `KeyboardInterrupt` before its next record.

    Python's own handler raises wherever the interpreter happens to be; inside pydantic's JSON
    serializer that surfaced as a `ValueError`, which the loop took for text UTF-8 cannot encode:
    the case was reported invalid, and the run went on to write every other case and exit 1. A second
    Ctrl-C raises at once (a read that blocks). Only in the main thread, and only where SIGINT still
    has Python's default handler (or the command's, `launch.first_interrupt`); elsewhere nothing changes. Yields the list the handler appends to.
    """
    got: list[int] = []
    from tracejudge.entrypoints.launch import first_interrupt

    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) not in (signal.default_int_handler,
                                                                                                        first_interrupt):
        yield got
        return

    def note(signum: int, frame: object) -> None:
        if got:
            raise KeyboardInterrupt
        got.append(signum)

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield got
    finally:
        signal.signal(signal.SIGINT, previous)
