"""What the gate's evidence covers: the parts of a sharded run that are not in it, and the regression rule's pairing.

- `incomplete_detail(summary)`: the `run complete` check's sentence for a run that is not complete. For a
  merge of shards (`summary.shards`, `tracejudge.engine.shards`) it names each part missing and what to do:
  a merged shard that was interrupted (`shard 2/2 was interrupted (runs/x-shard-2-of-2: 1,024 results):
  resume it with: CMD`), a shard left out although its directory lies beside the others (`… holds it
  (interrupted, 1,024 results) …`: never "no run directory" for a directory that exists), a shard never run.
- `coverage_check(reg, cmp, base)`: the `regression coverage` check. The regression rule compares means over
  the (case, trial) pairs both runs scored; results of either run without a pair are not compared at all, so
  a baseline killed at 18% of its cases, or a run of 20 cases against a baseline of 2,000, would otherwise
  pass in silence. The check states how many of this run's results and of the baseline's were paired, why the
  rest were not (the baseline interrupted or still being written, shards it lacks, cases absent from one side),
  and fails when either share is below `assertions.regression.min_paired_share` (default 1.0: every result
  of both runs paired; as `max_invalid_share` defaults to none, a partial comparison is not a pass unless the
  config states its tolerance). A check that holds with something unpaired, or with a baseline that did not
  finish, is a warning (`warn`), never a silent `ok`. Complete runs that pair in full with the default
  tolerance get no such check: their output is what it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracejudge.stages.aggregate.gate import Check
from tracejudge.stages.aggregate.gate_figures import figure, limit

if TYPE_CHECKING:
    from tracejudge.core.evalconfig import RegressionRule
    from tracejudge.stages.comparison.runs import Comparison

__all__ = ["baseline_gaps", "coverage_check", "incomplete_detail", "shard_resume_commands", "stopped_words"]


def _n(count: int, what: str = "result") -> str:
    return f"{count:,} {what}{'s' if count != 1 else ''}"


def stopped_words(stopped: dict[str, Any]) -> str:
    """`exit status 3` / `aborted, exit status 130`: how `summary.stopped` (`reports.finish_stopped`) says the run ended."""
    status = stopped.get("exit_status")
    return ", ".join(w for w in (str(stopped.get("how") or ""), f"exit status {status}" if status is not None else "") if w) or "stopped"


def incomplete_detail(summary: dict[str, Any]) -> str:
    """Why the run is not complete, from `summary.shards` (`missing`, `interrupted`, `beside`); else an interrupted run.

    Shapes: `missing` `["2/3", …]`; `interrupted` and `beside` `[{"shard": "2/3", "dir", "results", "resume"?, "state"?}]`.
    """
    block = summary.get("shards") or {}
    missing = [str(m) for m in block.get("missing") or []]
    beside = {str(b.get("shard")): b for b in block.get("beside") or [] if isinstance(b, dict)}
    parts = []
    for entry in block.get("interrupted") or []:
        if isinstance(entry, dict):
            parts.append(f"shard {entry.get('shard')} was interrupted ({entry.get('dir')}: {_n(int(entry.get('results') or 0))}): "
                         f"resume it with: {entry.get('resume')}")
    if beside:
        named = [str(d) for d in block.get("merged_from") or []]
        together = " ".join([*named, *(str(b.get("dir")) for b in beside.values())])
        for spec, b in beside.items():
            held = "in progress" if b.get("holder") else str(b.get("state"))
            resume = f"; resume it with: {b['resume']}" if b.get("resume") else ""
            parts.append(f"shard {spec} is not in this merge: {b.get('dir')} holds it ({held}, {_n(int(b.get('results') or 0))}{resume}) "
                         f"but was not named; report them together: tracejudge report {together}")
    absent = [m for m in missing if m not in beside]
    if absent:
        runs = "; ".join(f"`tracejudge run CONFIG --shard {m}`" for m in absent)
        has = f"shard {absent[0]} has" if len(absent) == 1 else f"shards {', '.join(absent)} have"
        parts.append(f"{has} no run directory yet: run {runs}")
    if not parts:
        stopped = summary.get("stopped")
        if isinstance(stopped, dict) and stopped.get("reason"):  # (an error or an abort ended it: `reports.finish_stopped`)
            return f"the run stopped before it finished ({stopped_words(stopped)}): {stopped['reason']}"
        return "the run was interrupted; resume it to finish the remaining cases"
    # (a shard beside the merge already ends with the report command that takes it in)
    return "; ".join(parts) + (", then report the shards again" if absent or block.get("interrupted") else "")


def shard_resume_commands(summary: dict[str, Any]) -> list[str]:
    """The commands that resume the interrupted shards of a merge (merged or lying beside it), for the verdict line; one
    that is not a command the tool writes (the merge's `summary.json` is input as well) is `resume_line.NOT_SHOWN`."""
    from tracejudge.engine.resume_line import checked_resume

    block = summary.get("shards") or {}
    found = [e.get("resume") for e in [*(block.get("interrupted") or []), *(block.get("beside") or [])] if isinstance(e, dict)]
    return [checked_resume(str(c)) for c in found if c]


def baseline_gaps(base: Path, dirs: list[Path], results: int) -> list[str]:
    """Why the baseline `base` (read as `dirs`, `results` standing results in all) is not complete, one phrase each;
    empty when every directory finished and no shard is missing.

    `the baseline runs/b was interrupted after 1,800 results (resume it with: CMD)`, `… is still being written
    (process 42 holds it) …`, `the baseline runs/b lacks shard(s) 2/2 …`.
    """
    from tracejudge.engine import shards
    from tracejudge.engine.run_state import run_state, summary_of

    gaps = []
    for d in dirs:
        st = run_state(d, results=results if len(dirs) == 1 else None)
        if st.state == "in progress":
            gaps.append(f"the baseline {d} is still being written ({st.holder} holds it; {_n(st.results)} so far): gate again when it has finished")
        elif st.state == "interrupted":
            lacking = [str(m) for m in ((summary_of(d) or {}).get("shards") or {}).get("missing") or []]
            if shards.is_merge(d) and lacking:  # a merge whose shards are gone stands for itself: it cannot be resumed
                gaps.append(f"the baseline {d} is a merge of shards that lacks shard(s) {', '.join(lacking)}")
            else:
                gaps.append(f"the baseline {d} was interrupted after {_n(st.results)}: resume it with: {st.resume}, then gate again")
    counts = {s[1] for d in dirs if (s := _shard_of(d)) is not None}
    if len(counts) == 1 and all(_shard_of(d) is not None for d in dirs):
        n = counts.pop()
        have = {_shard_of(d)[0] for d in dirs}  # type: ignore[index]
        lacking = [f"{i}/{n}" for i in range(1, n + 1) if i not in have]
        if lacking:
            gaps.append(f"the baseline {base} lacks shard(s) {', '.join(lacking)} (no run directory: run them with --shard)")
    return gaps


def _shard_of(run_dir: Path) -> tuple[int, int] | None:
    from tracejudge.engine.shards import _describe

    try:
        return _describe(Path(run_dir))[1]
    except ValueError:
        return None


def coverage_check(reg: RegressionRule, cmp: Comparison, base: Path) -> Check | None:
    """The `regression coverage` check of `cmp` (baseline = run A, this run = run B), or None when there is nothing to
    say: both runs' results all paired, the baseline complete, and `min_paired_share` at its default 1.0."""
    from tracejudge.engine import shards

    least = reg.min_paired_share
    dirs = shards.expand(base)
    gaps = baseline_gaps(base, dirs, cmp.results_a)
    if not cmp.only_a and not cmp.only_b and not gaps and least >= 1.0:
        return None
    run_share = cmp.paired / cmp.results_b if cmp.results_b else 1.0
    base_share = cmp.paired / cmp.results_a if cmp.results_a else 1.0
    ok = run_share >= least - 1e-12 and base_share >= least - 1e-12
    why = []
    if cmp.only_b:
        cause = "; ".join(gaps) if gaps else ("the baseline has no results" if not cmp.results_a else
                                              "cases or trials the baseline did not run: added to the dataset since, or a baseline "
                                              "of fewer cases or trials")
        why.append(f"{_n(cmp.only_b)} of this run have no baseline result, so their regression is not checked: {cause}")
    if cmp.only_a:
        why.append(f"{_n(cmp.only_a)} of the baseline have none in this run, so they are not compared: this run covers part of "
                   "the baseline's cases or trials (a smaller dataset, dataset.limit, fewer trials, or a run not finished)")
    if gaps and not cmp.only_b:
        why.append("; ".join(gaps) + ": the comparison covers only the cases it reached")
    shown = (f"{cmp.paired:,} of this run's {_n(cmp.results_b)} ({figure(run_share, least, run_share >= least - 1e-12, places=1, percent=True)}) "
             f"and {cmp.paired:,} of the baseline's {_n(cmp.results_a)} ({figure(base_share, least, base_share >= least - 1e-12, places=1, percent=True)}) "
             f"are paired by (case, trial), required >= {limit(least, percent=True)} of each (assertions.regression.min_paired_share)")
    fix = "" if ok else "; to gate on part of the runs, lower assertions.regression.min_paired_share"
    warn = ok and bool(why)
    return Check("regression coverage", ok, ("warning: " if warn else "") + shown + "".join(f"; {w}" for w in why) + fix, warning=warn)
