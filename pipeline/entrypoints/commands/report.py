"""`tracejudge report`: summary.json, report.md, junit.xml and report.html rebuilt from results.jsonl."""

from __future__ import annotations

import argparse
import errno
from pathlib import Path
from typing import TYPE_CHECKING

from tracejudge.core.errors import TracejudgeError

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["command"]


def command(args: argparse.Namespace, err: Console) -> int:
    """`tracejudge report`: rebuild a run's summary and reports from its results (merging shard directories first); exit status of the verdict.

    Raises `TracejudgeError` for run directories that cannot be merged or read.
    """
    from tracejudge.core.console import stdout_console
    from tracejudge.engine import shards, store
    from tracejudge.stages.aggregate.gate import print_verdict
    from tracejudge.stages.reports import rebuild
    from tracejudge.stages.reports.terminal import print_summary

    baseline = shards.expand(args.baseline) if args.baseline is not None else []  # refused before anything is rebuilt
    dirs = shards.expand(args.run_dirs)
    if args.out is not None:
        _check_out(Path(args.out), [*dirs, *baseline])
    in_place = len(dirs) == 1 and args.out is None and not shards.is_shard(dirs[0])
    if in_place:
        run_dir = dirs[0]
    else:
        target = args.out or shards.merged_name(dirs)
        try:
            run_dir = shards.merge_runs(dirs, target)
        except OSError as exc:
            if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise
            # Shards read from read-only media merge into a directory that can be written.
            raise TracejudgeError(f"cannot write the merged run {target}: {exc.strerror}; merge it elsewhere with --out DIR") from None
        err.print(f"merged {len(dirs)} shard directories into {run_dir}", highlight=False, markup=False, soft_wrap=True)
    results = run_dir / "results.jsonl"

    def skipped(lineno: int, reason: str) -> None:
        err.print(f"warning: {results}:{lineno}: not a valid result, left out of the summary and reports ({reason})",
                  highlight=False, markup=False, soft_wrap=True)

    # A finished run on read-only media is read, not refused: its figures and verdict are computed, nothing is written.
    writable = store.writable(run_dir)
    # A --baseline verdict is a one-off question about the run, not what the run said: it never replaces the run's
    # own summary.json and reports (a later `report`, `view` or `estimate` would read it as the run's).
    one_off = args.baseline is not None and in_place
    write = writable and not one_off
    summary, verdict = rebuild(run_dir, baseline=args.baseline, on_skipped=skipped, write=write)
    out = stdout_console()
    print_summary(summary, out)
    if write:
        out.print(f"rebuilt from {run_dir / 'results.jsonl'}: summary.json, report.md, junit.xml, report.html", highlight=False)
    elif writable:
        out.print(f"computed from {run_dir / 'results.jsonl'} against the baseline {args.baseline}; summary.json and the reports "
                  f"in {run_dir} are left as the run wrote them (--out DIR writes this comparison's reports to a copy)",
                  highlight=False, soft_wrap=True)
    else:
        out.print(f"computed from {run_dir / 'results.jsonl'}; {run_dir} cannot be written (read-only), so summary.json and the "
                  "reports there are left as they are (--out DIR writes them to a copy)", highlight=False, soft_wrap=True)
    print_verdict(verdict, out)
    return verdict.exit_code


def _check_out(out: Path, runs: list[Path]) -> None:
    """Refuse an `--out` that is a file, or that lies in (or is) one of the runs read: a report never writes into a run it reads.

    Raises `TracejudgeError` (exit 2) naming `--out` and the path.
    """
    if out.exists() and not out.is_dir():
        raise TracejudgeError(f"--out {out}: is a file, not a directory; give a directory to write the reports to")
    where = out.resolve()
    for run in runs:
        if where == run.resolve() or run.resolve() in where.parents:
            raise TracejudgeError(f"--out {out}: lies in the run {run}, which report only reads; give a directory outside it")

