"""`tracejudge extract`: any input format written out as native cases, traces included."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from tracejudge.core.utf8 import safe_text, unencodable_at
from tracejudge.entrypoints.commands.exits import EXIT_ASSERTION, EXIT_BAD_INPUT, EXIT_OK

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["command"]


def command(args: argparse.Namespace, config, err: Console) -> int:
    """`tracejudge extract`: write the dataset as native cases; invalid records are listed on stderr (exit 1 if any, else 0).

    The file `-o` names is written whole or not at all (`destination.replacing`), and refused (`TracejudgeError`,
    exit 2, nothing touched) where it would destroy what it should not (`_check_output`).
    """
    from tracejudge.core import registry
    from tracejudge.core.errors import ConfigError
    from tracejudge.stages.extract.first_records import empty_folder, no_records

    _check_output(args, config)
    fmt = registry.format_for(config.dataset.format)
    if empty_folder(fmt, config.dataset):  # (refused as `run` refuses it, before the output file is made)
        raise ConfigError(no_records(fmt, config.dataset))
    ctx = fmt.prepare(config.dataset)
    dataset = _as_the_next_run_reads(fmt, config)  # (read only: `prepare` takes the options as written, as a run's does)
    spans_seen: dict[str, dict[str, dict[str, int]]] = {}  # file -> convention -> used/ignored span counts
    with _output(args.output, err) as out:
        written, bad = _write_cases(fmt, ctx, dataset, out, err, spans_seen)
        if not written and not bad and not fmt.remote:  # as a run refuses it: nothing read is no conversion that succeeded
            # (a config error, as the run's: the command line says which line of the config, or which --set, named the
            # file; raised before the output is renamed into place, so the file named by -o is left as it was)
            raise ConfigError(no_records(fmt, config.dataset))
    for file, counts in spans_seen.items():
        parts = [f"{name} {c['used']} used" + (f", {c['ignored']} ignored" if c["ignored"] else "") for name, c in counts.items() if name != "unrecognised"]
        if "unrecognised" in counts:
            parts.append(f"{counts['unrecognised']['ignored']} spans of no known convention ignored")
        err.print(f"{file}: spans by convention: " + ("; ".join(parts) or "none"), highlight=False, markup=False, soft_wrap=True)
    if not written and not bad and fmt.remote:  # a store's window holding no trace is a quiet night, not an error
        from tracejudge.stages.extract.remote import empty_window

        err.print(f"wrote 0 cases to {args.output}: {empty_window(fmt.name, dict(dataset.options))}", highlight=False, markup=False, soft_wrap=True)
        return EXIT_OK
    err.print(f"wrote {written} case{'' if written == 1 else 's'} to {args.output}"
              + (f"; {bad} record{' was' if bad == 1 else 's were'} invalid (listed above)" if bad else ""), highlight=False)
    return EXIT_ASSERTION if bad else EXIT_OK  # the valid cases are written; a script still learns that some records were not


def _check_output(args: argparse.Namespace, config) -> None:
    """Refuse `-o` where writing would destroy something (`destination.check`): a file this extract reads (the
    config, `dataset.path` or a file in that folder, `dataset.tasks`) and a path in a run directory (the config's
    `run.dir`, or any folder holding a run) even with `--force`; an existing file without `--force`."""
    from tracejudge.core.destination import check, runs_around

    reads = [("the config file", Path(args.config)), ("dataset.path", config.dataset.path), ("dataset.tasks", config.dataset.tasks)]
    runs = list(dict.fromkeys([Path(config.run.dir), *runs_around(args.output)]))
    check(args.output, "-o", "extract", force=args.force, reads=reads, runs=runs, runs_are="which extract never writes into")


@contextlib.contextmanager
def _output(output: Path, err: Console) -> Iterator[TextIO]:
    """stdout for `-`; else a temporary file beside `output`, renamed onto it only when the block ends without error.

    An interrupted or failed extract leaves `output` as it was (said on `err` for a Ctrl-C, before the
    command's `interrupted`); `OSError` names `output` (`destination.replacing`).
    """
    if str(output) == "-":
        yield sys.stdout
        return
    from tracejudge.core.destination import replacing

    existed = output.exists()
    try:
        with replacing(output) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            yield fh
    except KeyboardInterrupt:
        kept = f"{output} is left as it was" if existed else f"{output} was not written"
        err.print(f"extract stopped before its end: {kept}", highlight=False, markup=False, soft_wrap=True)
        raise


def _write_cases(fmt, ctx, dataset, out: TextIO, err: Console, spans_seen: dict[str, dict[str, dict[str, int]]]) -> tuple[int, int]:
    """Write each valid record of `dataset` to `out` as a native case line; list the invalid ones on `err`.

    Returns `(written, invalid)`; `spans_seen` gets each file's span counts by convention. A Ctrl-C raises
    `KeyboardInterrupt` between two records (`_interrupt_between_records`): every line written is a whole case.
    """
    from tracejudge.core.records import Case, ErrorInfo
    from tracejudge.engine.admit import duplicate_error, safe_text
    from tracejudge.engine.keyset import FirstSeen
    from tracejudge.engine.unwritable import unwritable_case
    from tracejudge.stages.extract import extract_record

    written = bad = 0
    seen = FirstSeen()  # as a run does: an id's first record (valid or not) owns it; a repeat is reported once, never written
    with _interrupt_between_records() as interrupted:
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
                        kind="invalid_input", message=unwritable_case(exc, field),
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
    return written, bad


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
