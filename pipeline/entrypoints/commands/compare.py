"""`tracejudge compare`: two runs compared result by result (paired by case and trial).

With `--json`, stdout holds one JSON object: the comparison, or, when the input cannot be compared (exit 2: runs that
cannot be paired, a `--metric` neither run scores, a config or a path that cannot be used, no case with a trace in both
runs for `--judge`), `{"error": …}` in the command's shape (`_error_json`), the message on stderr as well. A CI step
piping stdout into `jq` reads the reason, not an empty stream. (A command line argparse refuses, and a crash, exit 3,
write nothing there.)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracejudge.core.errors import TracejudgeError
from tracejudge.entrypoints.commands.exits import EXIT_OK

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["command"]


def command(args: argparse.Namespace, err: Console) -> int:
    """`tracejudge compare`: two runs (or two sets of shards) compared result by result, or judged pairwise with `--judge`.

    Raises `TracejudgeError` for runs that cannot be paired, or a `--metric` neither run scores (exit 2); with `--json` its
    message, or an unusable path's, is written on stdout first as `{"error": …}` (see the module doc).
    """
    try:
        return _compare(args, err)
    except Exception as exc:
        why = _input_error(exc) if args.json else None
        if why is not None:
            import json

            sys.stdout.write(json.dumps(_error_json(args, why), indent=2) + "\n")
        raise


def _input_error(exc: BaseException) -> str | None:
    """What the user is told on stderr when `exc` ends the command with exit 2 (`cli._dispatch`: a `TracejudgeError`;
    `failures.unusable_path`: a path that cannot be used), else None (a crash: exit 3, not the input's fault)."""
    from tracejudge.core.errors import leaves
    from tracejudge.entrypoints.commands.failures import _path_error

    if isinstance(exc, TracejudgeError):
        return str(exc)
    found = leaves(exc)
    if found and all(_path_error(leaf) for leaf in found):
        return "; ".join(dict.fromkeys(f"{getattr(leaf, 'filename', None) or ''}: {getattr(leaf, 'strerror', None) or type(leaf).__name__}"
                                       for leaf in found))
    return None


def _error_json(args: argparse.Namespace, message: str) -> dict[str, Any]:
    """`--json`'s object when nothing could be compared: `error` (the message stderr has too), the runs as named (null when
    they were not two), and what the comparison's own object says of nothing compared — with `--judge` no pair or case
    judged, no win rate, no check, verdict `ERROR` (as `calibrate --json` has it); else no metric compared."""

    def name(paths: list[Path]) -> str:  # (as the comparison names a side: its directory, or the first shard's and the count)
        return str(paths[0]) if len(paths) == 1 else f"{paths[0]} (+{len(paths) - 1} shards)"

    runs = (name(args.runs), name(args.vs)) if args.vs is not None else (str(args.runs[0]), str(args.runs[1])) if len(args.runs) == 2 else (None, None)
    out: dict[str, Any] = {"error": message, "run_a": runs[0], "run_b": runs[1]}
    if args.judge is not None:
        return {**out, "verdict": "ERROR", "pairs": 0, "cases": 0, "win_rate": None, "checks": []}
    return {**out, "metrics": {}}


def _compare(args: argparse.Namespace, err: Console) -> int:
    """The command itself (`command` writes `--json`'s error object when it raises)."""
    import json

    from tracejudge.core.console import stdout_console
    from tracejudge.engine import shards
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
    if cmp.paired == 0:  # a CI step comparing against the wrong baseline would pass on a table of dashes
        raise TracejudgeError(_unpaired(cmp, shards.expand(run_a), shards.expand(run_b)))
    if args.json:
        sys.stdout.write(json.dumps(cmp.as_dict(), indent=2) + "\n")
    else:
        print_comparison(cmp, stdout_console())
    return EXIT_OK


def _unpaired(cmp: Any, dirs_a: list[Path], dirs_b: list[Path]) -> str:
    """What `compare` says when no result of one run pairs with one of the other: both runs named, what each holds (a
    few case ids, the dataset its manifest records) and what to check."""
    from tracejudge.core.inert_text import visible

    a, b = visible(cmp.run_a), visible(cmp.run_b)
    empty = [f"{name} holds no result" + (f" ({bad} line(s) of its results.jsonl are not results: {visible(named[0])}"
                                          f"{', …' if bad > 1 else ''})" if bad else "")
             for name, n, bad, named in ((a, cmp.results_a, cmp.unreadable_a, cmp.unreadable_lines_a),
                                         (b, cmp.results_b, cmp.unreadable_b, cmp.unreadable_lines_b)) if n == 0]
    if empty:
        return (f"nothing to compare between {a} and {b}: {' and '.join(empty)} (check that the run wrote its results: "
                "`tracejudge report RUN` says how far it got)")
    datasets = [_dataset_of(dirs_a), _dataset_of(dirs_b)]
    differ = (f"; {a} read {datasets[0]}, {b} read {datasets[1]}"
              if None not in datasets and datasets[0] != datasets[1] else "")
    return (f"{a} and {b} share no (case, trial): none of {a}'s {cmp.results_a} results pairs with one of {b}'s "
            f"{cmp.results_b} ({a} has {_some_ids(dirs_a)}; {b} has {_some_ids(dirs_b)}){differ}. compare pairs results "
            "by case id and trial: check that the baseline is a run of the same dataset (not another dataset's run, "
            "nor one from before its case ids changed)")


def _some_ids(dirs: list[Path], n: int = 2) -> str:
    """The first `n` case ids of a run's results, as `compare` prints ids (inert), with `…` when there are more."""
    from tracejudge.core.inert_text import visible
    from tracejudge.engine.store import iter_results

    ids: list[str] = []
    for d in dirs:
        for res in iter_results(d):
            if len(ids) == n:
                return ", ".join(ids) + ", …"
            ids.append(visible(str(res.get("case_id"))))
    return ", ".join(ids)


def _dataset_of(dirs: list[Path]) -> str | None:
    """The dataset the first run directory's manifest records (`config.dataset.path`; for a run that read a trace store,
    the store's traces it reads, `remote.store_identity`, as the viewer names it), or None when it records none."""
    from tracejudge.core.inert_text import visible
    from tracejudge.engine.store import read_manifest

    manifest = read_manifest(dirs[0], strict=False) or {}
    dataset = (manifest.get("config") or {}).get("dataset") or {}
    path, options = dataset.get("path"), dataset.get("options")
    if not path and isinstance(options, dict) and (options.get("url") or options.get("tracking_uri")):
        from tracejudge.stages.extract.remote import store_identity

        return visible(f"{dataset.get('format')} traces at {store_identity(str(dataset.get('format')), options)}")
    return visible(str(path)) if path else None


def _say_in_progress(runs: list[Path], err: Console) -> None:
    """Warn on stderr when a run compared is still being written: its side holds the results so far, not the run's."""
    from tracejudge.engine import shards
    from tracejudge.engine.run_lock import in_progress_note

    note = in_progress_note(shards.expand(runs), "the comparison is of its results so far; compare again when it has finished")
    if note is not None:
        err.print(note, highlight=False, markup=False, soft_wrap=True)
