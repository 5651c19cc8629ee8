"""`tracejudge compare`: two runs compared result by result (paired by case and trial)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from tracejudge.core.errors import TracejudgeError
from tracejudge.entrypoints.commands.exits import EXIT_OK

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["command"]


def command(args: argparse.Namespace, err: Console) -> int:
    """`tracejudge compare`: two runs (or two sets of shards) compared result by result, or judged pairwise with `--judge`.

    Raises `TracejudgeError` for runs that cannot be paired, or a `--metric` neither run scores.
    """
    import json

    from tracejudge.core.console import stdout_console
    from tracejudge.stages.comparison.runs import compare_runs
    from tracejudge.stages.comparison.view import print_comparison

    if args.judge is not None:
        from tracejudge.entrypoints.calibrate import pairwise_command

        _say_in_progress([*args.runs, *(args.vs or [])], err)
        return pairwise_command(args, stdout_console())
    if args.vs is not None:
        run_a, run_b = args.runs, args.vs
    elif len(args.runs) == 2:
        run_a, run_b = args.runs
    else:
        raise TracejudgeError("compare takes two runs (RUN_A RUN_B), or the baseline's shards then --vs and the current run's shards")
    _say_in_progress([*args.runs, *(args.vs or [])], err)
    cmp = compare_runs(run_a, run_b, metrics=args.metrics, top=args.top, seed=args.seed)
    unknown = cmp.unknown_metrics()
    if unknown:  # a misspelt --metric would otherwise print an empty row and exit 0
        from tracejudge.core.inert_text import visible

        have = ", ".join(map(visible, cmp.scored_metrics)) or "none (no result holds a score)"
        raise TracejudgeError(f"--metric {', '.join(map(visible, unknown))}: no result of either run scores "
                              f"{'it' if len(unknown) == 1 else 'them'}; the runs' metrics: {have}")
    if args.json:
        sys.stdout.write(json.dumps(cmp.as_dict(), indent=2) + "\n")
    else:
        print_comparison(cmp, stdout_console())
    return EXIT_OK


def _say_in_progress(runs: list[Path], err: Console) -> None:
    """Warn on stderr when a run compared is still being written: its side holds the results so far, not the run's."""
    from tracejudge.engine import shards
    from tracejudge.engine.run_lock import in_progress_note

    note = in_progress_note(shards.expand(runs), "the comparison is of its results so far; compare again when it has finished")
    if note is not None:
        err.print(note, highlight=False, markup=False, soft_wrap=True)
