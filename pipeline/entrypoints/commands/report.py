"""`tracejudge report`: summary.json, report.md, junit.xml and report.html rebuilt from results.jsonl."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["command"]


def command(args: argparse.Namespace, err: Console) -> int:
    """`tracejudge report`: rebuild a run's summary and reports from its results (merging shard directories first); exit status of the verdict.

    Raises `TracejudgeError` for run directories that cannot be merged or read.
    """
    from tracejudge.core.console import stdout_console
    from tracejudge.engine import shards
    from tracejudge.stages.aggregate.gate import print_verdict
    from tracejudge.stages.reports import rebuild
    from tracejudge.stages.reports.terminal import print_summary

    if args.baseline is not None:
        shards.expand(args.baseline)  # refused before anything is rebuilt: the run's files stay as they are
    dirs = shards.expand(args.run_dirs)
    if len(dirs) == 1 and args.out is None and not shards.is_shard(dirs[0]):
        run_dir = dirs[0]
    else:
        run_dir = shards.merge_runs(dirs, args.out or shards.merged_name(dirs))
        err.print(f"merged {len(dirs)} shard directories into {run_dir}", highlight=False, markup=False, soft_wrap=True)
    results = run_dir / "results.jsonl"

    def skipped(lineno: int, reason: str) -> None:
        err.print(f"warning: {results}:{lineno}: not a valid result, left out of the summary and reports ({reason})",
                  highlight=False, markup=False, soft_wrap=True)

    summary, verdict = rebuild(run_dir, baseline=args.baseline, on_skipped=skipped)
    out = stdout_console()
    print_summary(summary, out)
    out.print(f"rebuilt from {run_dir / 'results.jsonl'}: summary.json, report.md, junit.xml, report.html", highlight=False)
    print_verdict(verdict, out)
    return verdict.exit_code
