"""Stage `export`: a finished run's verdicts written where analysts and observability stores read them.

- `table`: one row per (case, trial, metric) to Parquet or CSV (`rows`, `write_parquet`, `write_csv`);
- `mlflow_sink`: each score as an MLflow assessment on its trace;
- `phoenix_sink`: each score as a Phoenix span annotation on its trace's root span.

Every sink reads `results.jsonl` streaming (`run_results`: `tracejudge.engine.store.iter_results`), tells its
caller of each line it leaves out (not JSON, a score of NaN typed in by hand) by file, line and field, and
never writes a credential anywhere. `SinkError` is a store that cannot be reached or
refused a write: the CLI prints it as one line and exits 3.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tracejudge.core.errors import TracejudgeError

__all__ = ["MissingExtra", "OnBad", "SinkError", "check_results", "require", "run_results"]

OnBad = Callable[[Path, int, str], None]  # (results file, line number, "field: what is wrong") of a line left out


class SinkError(TracejudgeError):
    """A store could not be reached, or answered an error; the message names its URL, never a credential."""


class MissingExtra(TracejudgeError):
    """An optional dependency is not installed; the message names the extra that installs it."""


def require(module: str, extra: str = "stores") -> object:
    """Import `module`, or raise `MissingExtra` naming `pip install 'tracejudge[EXTRA]'`."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(f"{module} is not installed ({exc.name or module} missing): pip install 'tracejudge[{extra}]'") from None


def run_results(run_dir: Path, on_bad: OnBad | None) -> Iterator[dict[str, Any]]:
    """The results of `run_dir` as every sink exports them (`store.iter_results`): a line that holds none, or repeats the
    (case, trial) of an earlier line, is left out and passed to `on_bad(results file, line number, "field: what is
    wrong")`, so no sink leaves a score out unsaid or exports one twice (one row per (case, trial, metric)).

    A last line cut off without a line break is left out and named too, unless a run still writes the directory (it
    is then the line being written).

    Raises `TracejudgeError` for a directory without `results.jsonl` (`check_results`).
    """
    from tracejudge.engine import store
    from tracejudge.engine.run_lock import holder

    path = Path(run_dir) / store.RESULTS
    check_results([Path(run_dir)])

    def bad(lineno: int, why: str) -> None:
        if on_bad is not None:
            on_bad(path, lineno, why)

    return store.iter_results(run_dir, None, bad, once=True, torn=holder(Path(run_dir)) is None)


def check_results(run_dirs: list[Path]) -> None:
    """Raise `TracejudgeError` naming `RUN_DIR/results.jsonl` for the first of `run_dirs` without one.

    A run creates the file as it starts (empty on a night without traces), so one without it, a manifest or not, was
    deleted or never was: exporting nothing from it with exit 0 would hide that. Called before anything is written.
    """
    from tracejudge.engine import store

    for run_dir in run_dirs:
        path = Path(run_dir) / store.RESULTS
        if not path.is_file() and not os.path.lexists(path):  # (a FIFO or a device is refused by the reader, naming it so)
            what = "a run directory holding no manifest either" if not (Path(run_dir) / store.MANIFEST).is_file() else "the run's results"
            raise TracejudgeError(f"{path}: no such file ({what}): nothing to export")

