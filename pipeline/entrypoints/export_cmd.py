"""`tracejudge export RUN_DIR… --to KIND [PATH]`: a run's verdicts as a table or on the traces they judged.

Kinds: `parquet PATH`, `csv PATH` (`tracejudge.stages.export.table`), `mlflow`
(`--tracking-uri`, `tracejudge.stages.export.mlflow_sink`), `phoenix` (`--url`,
`--project`, `tracejudge.stages.export.phoenix_sink`). Run directories are
expanded as `report` does: the unsharded name of shard directories stands for
all of them, and a directory given twice is read once. A table's PATH must lie
outside every run read and, if a regular file, must not exist unless `--force` is given
(a device or FIFO is written into, a symlink followed; Parquet refuses a FIFO); `--to csv -`
writes to stdout. Exit status: 0 written, 2 bad arguments or a missing extra (or a
store holding none of the run's traces: the wrong server or project), 3 a store that
is down or refused a write (one line; what was written stays consistent and the same
command resumes).
"""

from __future__ import annotations

import argparse
import stat
import sys
import time
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tracejudge.core.errors import TracejudgeError, Unreachable, for_command

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["KINDS", "add_parser", "command"]

KINDS = ("parquet", "csv", "mlflow", "phoenix")


def add_parser(sub: Any) -> None:
    """Add the `export` subcommand to the CLI's subparsers."""
    p = sub.add_parser("export", help="write a run's verdicts to Parquet or CSV, or as assessments/annotations on their traces in MLflow or Phoenix",
                       description="Write a run's verdicts to Parquet or CSV (one row per case, trial and metric), or onto the traces "
                                   "they judged in MLflow (assessments) or Phoenix (span annotations). Exporting again writes nothing twice.",
                       epilog="examples:\n  tracejudge export runs/nightly --to parquet verdicts.parquet\n"
                              "  tracejudge export runs/nightly-shard-* --to csv verdicts.csv\n"
                              "  tracejudge export runs/nightly --to csv - | head -5\n"
                              "  tracejudge export runs/nightly --to mlflow --tracking-uri http://127.0.0.1:5000\n"
                              "  tracejudge export runs/nightly --to phoenix --url http://127.0.0.1:6006 --project agents",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    # `*`, not `+`: `--to` takes one or two words, which argparse cannot say, so `export --to csv out.csv runs/a` leaves
    # runs/a inside --to; `_target` moves it back, and says when no run directory was given at all.
    p.add_argument("run_dirs", type=Path, nargs="*", metavar="RUN_DIR", help="run directories (or the unsharded name of shard directories)")
    p.add_argument("--to", nargs="+", required=True, metavar=("KIND", "PATH"),
                   help="parquet PATH | csv PATH (`-`: stdout) | mlflow | phoenix")
    p.add_argument("--tracking-uri", help="mlflow: the tracking server (default: MLFLOW_TRACKING_URI; MLFLOW_TRACKING_TOKEN is read from the environment)")
    p.add_argument("--url", help="phoenix: the server's URL (default: PHOENIX_COLLECTOR_ENDPOINT; PHOENIX_API_KEY is read from the environment)")
    p.add_argument("--project", help="phoenix: the project the traces are in (default: the run's dataset.options.project, else 'default')")
    p.add_argument("--force", action="store_true", help="parquet/csv: overwrite PATH if it exists (never a file of a run being read)")


def _target(args: argparse.Namespace) -> tuple[str, Path | None]:
    """`(kind, PATH or None)` of `--to`; words after them that argparse gave `--to` are appended to `args.run_dirs`.

    Raises `TracejudgeError` (exit 2) for an unknown kind, a table kind without its PATH, or no run directory.
    """
    kind, *rest = args.to
    if kind not in KINDS:
        from tracejudge.core.suggest import did_you_mean

        hint = did_you_mean(kind.lower(), KINDS, n=1, typo=True)  # (`parqet`, `CSV`: named, as a mistyped config key is)
        raise TracejudgeError(f"--to {kind}: expected one of {', '.join(KINDS)}" + (f"; {hint}" if hint else ""))
    table = kind in ("parquet", "csv")
    if table and not rest:
        raise TracejudgeError(f"--to {kind} takes the file to write: --to {kind} PATH")
    if not table and any(not Path(word).is_dir() for word in rest):
        # `--to mlflow verdicts.csv`: a path where none is taken, not a run directory put after the option.
        raise TracejudgeError(f"--to {kind} takes no path (got {' '.join(rest)}); the store is named by --{'tracking-uri' if kind == 'mlflow' else 'url'}")
    # Words past KIND [PATH] are run directories written after the option (`--to csv out.csv runs/a`).
    args.run_dirs = [*args.run_dirs, *map(Path, rest[1:] if table else rest)]
    if not args.run_dirs:
        raise TracejudgeError(f"no run directory given: tracejudge export RUN_DIR --to {kind}{' PATH' if table else ''}")
    return kind, Path(rest[0]) if table else None


def _check_path(kind: str, path: Path, runs: list[Path], force: bool) -> None:
    """Refuse a table's PATH that would overwrite a run being read, or any existing file without `--force`.

    Raises `TracejudgeError` (exit 2) naming `--to` and the path.
    """
    if str(path) == "-" and kind == "parquet":
        raise TracejudgeError("--to parquet -: Parquet is binary and is not written to stdout; give a file (or --to csv - for stdout)")
    from tracejudge.core.destination import check

    check(path, f"--to {kind}", "export", force=force, runs=runs, runs_are="which export only reads")
    if str(path) != "-" and kind == "parquet" and stat.S_ISFIFO(_mode(path)):
        # pyarrow's Parquet writer seeks, which a FIFO cannot do: it would fail half-way with the reader waiting.
        raise TracejudgeError(f"--to parquet {path}: is a FIFO, and Parquet needs a seekable file; give a file (or --to csv)")


def _mode(path: Path) -> int:
    try:
        return path.stat().st_mode
    except OSError:
        return 0


def _tally_line(tally: dict[str, int], what: str, url: str | None) -> str:
    """What a store export did, in words; `TracejudgeError` (exit 2) when the store held none of the run's traces."""
    if tally["traces"] and tally["missing"] == tally["traces"]:
        # Every trace missing is a wrong --url/--project/--tracking-uri far more often than a store that deleted them all:
        # exit 0 would let a nightly job "export" nothing, unnoticed, every night.
        from tracejudge.stages.extract.remote import safe_url

        store = f" at {safe_url(url)}" if url else ""
        raise TracejudgeError(f"the store{store} holds none of the run's {tally['traces']} traces: is it the server "
                              f"(and project) the run read? nothing was exported")
    extra = f", {tally['duplicates']} duplicates deleted" if tally.get("duplicates") else ""
    if tally.get("reserved"):
        extra += f", {tally['reserved']} of a metric named 'note' not sent (a name Phoenix keeps for its notes)"
    return (f"{tally['written'] + tally['updated']} {what} ({tally['written']} new, {tally['updated']} updated, "
            f"{tally['skipped']} already there, {tally['missing']} traces not found{extra})")


_NAMED = 3  # lines left out that the warning names; the rest are counted


def _count_into(left_out: list[str]) -> Callable[[Path, int, str], None]:
    """`on_bad` for every export (`stages.export.run_results`): each line left out as `FILE:LINE: field: what is wrong`, into `left_out`."""
    return lambda path, lineno, why: left_out.append(f"{path}:{lineno}: {why}")


def _warn_left_out(left_out: list[str], err: Console) -> None:
    """One warning naming the first lines of results.jsonl that held no result (a hand edit: a score of NaN or
    `"high"`), so rows missing from the table are never missing unsaid."""
    if not left_out:
        return
    from tracejudge.core.inert_text import visible

    more = f"; and {len(left_out) - _NAMED} more" if len(left_out) > _NAMED else ""
    err.print(f"warning: {len(left_out)} line(s) of results.jsonl are not results and were left out of the export: "
              f"{'; '.join(map(visible, left_out[:_NAMED]))}{more}", highlight=False, markup=False, soft_wrap=True)


def command(args: argparse.Namespace, err: Console) -> int:
    """Run `tracejudge export`; returns the exit status (see the module docstring)."""
    from tracejudge.engine import shards
    from tracejudge.engine.run_lock import in_progress_note

    try:
        kind, path = _target(args)
        # A directory named twice (or a sweep and one of its shards) is read once: its rows are not repeated.
        dirs = list({d.resolve(): d for d in reversed(shards.expand(args.run_dirs))}.values())[::-1]
        if path is not None:
            _check_path(kind, path, dirs, args.force)
        from tracejudge.stages.export import check_results

        check_results(dirs)
        if (note := in_progress_note(dirs, "what is exported is its results so far; export again when it has finished")) is not None:
            err.print(note, highlight=False, markup=False, soft_wrap=True)
        started = time.perf_counter()
        left_out: list[str] = []
        if kind in ("parquet", "csv"):
            from tracejudge.stages.export import table

            assert path is not None
            if str(path) == "-":
                count = table.write_csv_to(dirs, sys.stdout, _count_into(left_out))
                what = f"{count} rows to stdout"
            else:
                count = (table.write_parquet if kind == "parquet" else table.write_csv)(dirs, path, _count_into(left_out))
                what = f"{count} rows to {path}"
        elif kind == "mlflow":
            from tracejudge.stages.export import mlflow_sink

            tally = mlflow_sink.export(dirs, tracking_uri=args.tracking_uri, on_bad=_count_into(left_out))
            what = _tally_line(tally, "assessments to MLflow", args.tracking_uri)
        else:
            from tracejudge.stages.export import phoenix_sink

            tally = phoenix_sink.export(dirs, url=args.url, project=args.project, on_bad=_count_into(left_out))
            what = _tally_line(tally, "annotations to Phoenix", args.url)
        # (every kind: the stores' exports left such lines out unsaid, where the tables named them)
        _warn_left_out(left_out, err)
    except Unreachable as exc:
        err.print(f"error: {exc}", highlight=False, markup=False, soft_wrap=True)
        return 3
    except TracejudgeError as exc:
        err.print(f"error: {for_command(exc, 'export')}", highlight=False, markup=False, soft_wrap=True)
        return 2
    err.print(f"exported {what} in {time.perf_counter() - started:.1f}s", highlight=False, markup=False, soft_wrap=True)
    return 0
