"""`tracejudge report`: summary.json, report.md, junit.xml and report.html rebuilt from results.jsonl."""

from __future__ import annotations

import argparse
import errno
from pathlib import Path
from typing import TYPE_CHECKING

from tracejudge.core.errors import TracejudgeError
from tracejudge.entrypoints.commands.exits import EXIT_IN_PROGRESS

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["command"]


def command(args: argparse.Namespace, err: Console) -> int:
    """`tracejudge report`: rebuild a run's summary and reports from its results (merging shard directories first); exit status of the verdict.

    Raises `TracejudgeError` for run directories that cannot be merged or read.
    """
    from tracejudge.engine import shards, store
    from tracejudge.engine.run_lock import holder
    from tracejudge.stages.aggregate.gate import baseline_note
    from tracejudge.stages.reports import regression_baseline

    baseline = shards.expand(args.baseline) if args.baseline is not None else []  # refused before anything is rebuilt
    for given in args.run_dirs:
        if not (Path(given) / store.RESULTS).exists() and (who := holder(Path(given))) is not None:
            err.print(f"{given}: the run is in progress ({who} holds it) and has no result yet; report again once it has",
                      highlight=False, markup=False, soft_wrap=True)
            return EXIT_IN_PROGRESS
    dirs = shards.expand(args.run_dirs)
    # A baseline still being written (--baseline, else the one the run's config gates on) is compared as it stands:
    # its figures may move under the verdict.
    compared = args.baseline if args.baseline is not None else regression_baseline(dirs[0])
    if (note := baseline_note(compared, "report again when it has finished")) is not None:
        err.print(note, highlight=False, markup=False, soft_wrap=True)
    # A run another `tracejudge run` still writes is reported as it stands, never written into: its own
    # summary and reports come when it finishes (a rebuild written now could land after them and undo them).
    busy = [f"{d} ({who})" if len(dirs) > 1 else who for d in dirs if (who := holder(d)) is not None]
    in_progress = ", ".join(busy) or None
    if args.out is not None:
        _check_out(Path(args.out), [*dirs, *baseline])
    in_place = len(dirs) == 1 and args.out is None and not shards.is_shard(dirs[0])
    scratch: Path | None = None  # a merge made outside the run directories, not to replace a fuller merge (`_merge_kept`)
    shown_kept = ""
    if in_place:
        run_dir = dirs[0]
    else:
        # A merged run named alone is merged again where it is, from its shards as they are now.
        again = len(args.run_dirs) == 1 and shards.is_merge(Path(args.run_dirs[0]))
        target = args.out or (Path(args.run_dirs[0]) if again else shards.merged_name(dirs))
        if args.out is None and not again and (kept := _merge_kept(target, dirs)) is not None:
            # The default merged run holds shards these directories leave out: a merge of part of them must not
            # replace it. Merged where nothing is kept instead, reported, then removed.
            import tempfile

            scratch = Path(tempfile.mkdtemp(prefix="tracejudge-merge-"))
            shown_kept = kept
            target = scratch / target.name
    try:
        if not in_place:
            try:
                run_dir = shards.merge_runs(dirs, target)
            except OSError as exc:
                if exc.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                    raise
                # Shards read from read-only media merge into a directory that can be written.
                raise TracejudgeError(f"cannot write the merged run {target}: {exc.strerror}; merge it elsewhere with --out DIR") from None
            if scratch is None:
                err.print(_what_was_written(dirs, run_dir), highlight=False, markup=False, soft_wrap=True)
        return _report(args, err, dirs, run_dir, in_place=in_place, in_progress=in_progress, kept=shown_kept if scratch else None)
    finally:
        if scratch is not None:
            import shutil

            shutil.rmtree(scratch, ignore_errors=True)


def _report(args: argparse.Namespace, err: Console, dirs: list[Path], run_dir: Path, *, in_place: bool, in_progress: str | None,
            kept: str | None) -> int:
    """Rebuild (or, for a one-off or unwritable run, compute) `run_dir`'s summary and verdict, print them; the exit status.

    `kept`: the sentence saying which merged run was left as it was, when `run_dir` is a scratch merge of part of its shards.
    """
    from tracejudge.core.console import stdout_console
    from tracejudge.engine import shards, store
    from tracejudge.stages.aggregate.gate import print_verdict
    from tracejudge.stages.aggregate.gate_coverage import shard_resume_commands
    from tracejudge.stages.reports import rebuild
    from tracejudge.stages.reports.terminal import print_summary

    results = run_dir / "results.jsonl"

    def skipped(lineno: int, reason: str) -> None:
        err.print(f"warning: {results}:{lineno}: not a valid result, left out of the summary and reports ({reason})",
                  highlight=False, markup=False, soft_wrap=True)

    # A finished run on read-only media is read, not refused: its figures and verdict are computed, nothing is written.
    writable = store.writable(run_dir) and kept is None
    # A --baseline verdict is a one-off question about the run, not what the run said: it never replaces the run's
    # own summary.json and reports (a later `report`, `view` or `estimate` would read it as the run's).
    one_off = args.baseline is not None and in_place
    write = writable and not one_off and not (in_progress and in_place)
    summary, verdict = rebuild(run_dir, baseline=args.baseline, on_skipped=skipped, write=write, in_progress=in_progress)
    from tracejudge.core.inert_text import visible

    def shown(path: object) -> str:  # a run directory's name is the user's (or a trace store's): printed inert
        return visible(str(path))

    out = stdout_console()
    from tracejudge.stages.judge.error_note import with_first_error

    print_summary(with_first_error(summary, run_dir), out)  # (its judge errors line names the first's message, as run's does)
    if kept is not None:
        out.print(kept, highlight=False, markup=False, soft_wrap=True)
    elif in_progress and in_place:
        out.print(f"computed from {shown(run_dir / 'results.jsonl')} so far: the run is still in progress ({in_progress} holds it), so "
                  "summary.json and the reports are left for it to write when it finishes", highlight=False, markup=False, soft_wrap=True)
    elif write:
        out.print(f"rebuilt from {shown(run_dir / 'results.jsonl')}: summary.json, report.md, junit.xml, report.html", highlight=False, markup=False)
    elif writable:
        out.print(f"computed from {shown(run_dir / 'results.jsonl')} against the baseline {shown(args.baseline)}; summary.json and the reports "
                  f"in {shown(run_dir)} are left as the run wrote them (--out DIR writes this comparison's reports to a copy)",
                  highlight=False, markup=False, soft_wrap=True)
    else:
        out.print(f"computed from {shown(run_dir / 'results.jsonl')}; {shown(run_dir)} cannot be written (read-only), so summary.json and the "
                  "reports there are left as they are (--out DIR writes them to a copy)", highlight=False, markup=False, soft_wrap=True)
    # A copy (`--out`) of one run resumes as that run: the command is the original's, which the copy does not record.
    one_run = len(dirs) == 1 and not shards.is_shard(dirs[0]) and not shards.is_merge(dirs[0])
    if not one_run:
        _print_shard_retries(dirs, out)
    # A merge is no run of its own to resume: its interrupted shards are, each with the command its own run recorded.
    resume = (_resume_command(dirs[0]) if one_run else "; ".join(shard_resume_commands(summary)) or None) if verdict.interrupted else None
    print_verdict(verdict, out, resume=resume)
    return verdict.exit_code


def _merge_kept(target: Path, dirs: list[Path]) -> str | None:
    """The sentence to print when `target`, the default merged run of `dirs`, is a merge of shards `dirs` leave out
    (`report runs/x-shard-1-of-2` beside the merge `runs/x` of both): it is kept as it is, not replaced by a merge of
    part of it. None when `target` is no merge, or one of no other shard (then it is merged again as before).
    """
    from tracejudge.core.inert_text import visible
    from tracejudge.engine import shards, store

    manifest = store.read_manifest(target) if (target / store.MANIFEST).exists() else None
    recorded = (manifest or {}).get(shards.MERGED_KEY)
    if not isinstance(recorded, list):
        return None
    named = {Path(d).name for d in dirs}
    others = [str(d) for d in recorded if isinstance(d, str) and Path(d).name not in named]
    if not others:
        return None
    return visible(f"{target} is the merge of {', '.join(map(str, recorded))}; a report of {', '.join(map(str, dirs))} alone does not replace "
                   f"it with part of it, so nothing was written (report {target} to merge every shard again, or give --out DIR "
                   "to keep this report)")


def _print_shard_retries(dirs: list[Path], out: Console) -> None:
    """For each shard merged with transient failures standing, the command that retries them: what its own
    `tracejudge run` printed. The merge is no run of its own to resume (nor one reported as it stands, its shards gone)."""
    from tracejudge.engine import shards
    from tracejudge.engine.retries import standing_retries

    for run_dir in dirs:
        n, refused = standing_retries(run_dir) if shards.is_shard(run_dir) else (0, 0)
        if n:
            # (a refusal is the judge model's answer, not a transient failure: said apart, as `tracejudge run` says it)
            what = []
            if n > refused:
                what.append(f"{n - refused} result{'s' if n - refused != 1 else ''} ended in a transient failure (judge, target or provider)")
            if refused:
                what.append(f"{refused} result{'s' if refused != 1 else ''} ended because the judge model refused to judge "
                            f"{'them' if refused != 1 else 'it'} (most likely refused again)")
            out.print(f"{run_dir}: {'; '.join(what)}; its own command retries {'them' if n != 1 else 'it'}:\n  {_resume_command(run_dir)}",
                      highlight=False, markup=False, soft_wrap=True)


def _what_was_written(dirs: list[Path], run_dir: Path) -> str:
    """The line saying where the run's results went: a copy of one run (`report RUN --out DIR`), or a merge of shards."""
    from tracejudge.engine import shards

    if len(dirs) == 1 and not shards.is_shard(dirs[0]):
        return f"copied the results of {dirs[0]} into {run_dir}"
    kind = "shard" if all(shards.is_shard(d) for d in dirs) else "run"
    return f"merged {len(dirs)} {kind} director{'y' if len(dirs) == 1 else 'ies'} into {run_dir}"


def _resume_command(run_dir: Path) -> str:
    """The command that resumes an interrupted run (`tracejudge.engine.run_state.resume_command`)."""
    from tracejudge.engine.run_state import resume_command

    return resume_command(run_dir)


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

