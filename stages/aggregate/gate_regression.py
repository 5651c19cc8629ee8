"""The gate's regression rule: this run's results against a baseline run's (`assertions.regression`).

A metric regresses when its mean over the (case, trial) pairs both runs scored dropped by more than
`max_mean_drop` and, with `noise: ci`, the paired 95% bootstrap interval of the delta lies entirely below
zero (`tracejudge.stages.comparison.runs`). What the comparison found about coverage and comparability
is said as `compare` says it (the same detection):

- metrics new in this run: listed (`regression: new metrics`), not compared;
- metrics of the baseline this run no longer scores: a warning (`regression: dropped metrics`, a check
  that holds, marked `warning`), so the coverage lost shows in the terminal, report.md and junit.xml. Not a
  failure: dropping a metric is a change of the config, not of the agent (and `regression.metrics` may only
  name metrics of the run's config);
- a metric whose judge (model, prompt version, structured-output mode) or options differ between the
  runs: its own check says so (`warning: ...`), failed or not, since its delta may be the change's;
- a rule with nothing to compare (no shared metric, no scored pair) fails;
- results of either run without a pair (a baseline interrupted or still being written, shards it lacks, cases
  absent from one side): the `regression coverage` check says how many of each run were paired and why the rest
  were not, and fails below `min_paired_share` of either run (default 1.0), else warns (`gate_coverage`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracejudge.stages.aggregate.gate import Check
from tracejudge.stages.aggregate.gate_figures import figure

if TYPE_CHECKING:
    from tracejudge.core.evalconfig import RegressionRule
    from tracejudge.stages.comparison.runs import Comparison, MetricDelta

__all__ = ["refuse_own_baseline", "regression_checks"]


def _f(x: float | None) -> str:
    return "none" if x is None else f"{x:.4f}"


def refuse_own_baseline(reg: RegressionRule, run_dir: Path) -> None:
    """Raise `ConfigError` when `reg.baseline` is (or stands for, as shards) the run directory `run_dir` itself.

    Checked before a run creates or touches its directory. A run compared with itself pairs every result with
    itself: every delta is 0, so the gate would pass whatever the agent did, while saying the baseline "is still
    being written" (by this very run).
    """
    if reg.baseline is None:
        return
    from tracejudge.core.errors import ConfigError, TracejudgeError
    from tracejudge.engine.shards import expand

    try:
        bases = {p.resolve() for p in expand(Path(reg.baseline))}
    except TracejudgeError:  # no run there yet: the config's own check says so; only the path itself can be this run
        bases = {Path(reg.baseline).resolve()}
    if run_dir.resolve() in bases:
        raise ConfigError(f"assertions.regression.baseline: {reg.baseline} is this run's own directory ({run_dir}): compared with "
                          "itself a run never regresses; name the previous run's directory, or give this run another "
                          "(run.dir, --run-dir, --fresh)")


def regression_checks(reg: RegressionRule, summary: dict[str, Any], run_dir: Path | None, *,
                      seed: int = 0) -> tuple[list[Check], Comparison | None]:
    """The regression rule's checks, and the comparison they were made from (None when the baseline is no run)."""
    from tracejudge.stages.aggregate.gate import _is_run
    from tracejudge.stages.comparison.runs import compare_runs  # only a run gated on a baseline compares

    base = Path(reg.baseline)
    if run_dir is None or not _is_run(base):
        return [Check("regression", False, f"baseline run {base} has no results.jsonl (nor {base.name}-shard-I-of-N directories)")], None
    checks: list[Check] = []
    current = list(summary.get("metrics", {}))
    if reg.metrics is not None:
        wanted = list(reg.metrics)
        cmp = compare_runs(base, run_dir, metrics=wanted, seed=seed)
    else:  # every metric both runs have; a metric new in this run has nothing to regress from
        cmp = compare_runs(base, run_dir, metrics=None, seed=seed)
        wanted = [k for k in current if k in cmp.metrics]
        new = [k for k in current if k not in cmp.metrics]
        # In the baseline's results, not in this run's (compare's "A only"): its regression goes unchecked.
        dropped = [k for k in cmp.metrics_only_a if k not in current]
        if new and wanted:
            checks.append(Check("regression: new metrics", True, f"not in the baseline, so not compared: {', '.join(new)}"))
        if dropped and wanted:
            checks.append(Check("regression: dropped metrics", True,
                                f"warning: in the baseline {base} but not scored in this run, so not compared (their regression "
                                f"is not checked): {', '.join(dropped)}; put a metric back in the config's metrics to gate on it again",
                                warning=True))
        elif current and not wanted:
            # A rule that compares nothing would pass every night (a renamed metric, the wrong baseline): it fails instead.
            theirs = f" (the baseline's: {', '.join(cmp.metrics)})" if cmp.metrics else ""
            checks.append(Check("regression", False, f"no metric of this run ({', '.join(current)}) is in the baseline {base}{theirs}: "
                                "nothing to compare; name the metrics in assertions.regression.metrics or point it at a matching baseline"))
        cmp.metrics = {k: cmp.metrics[k] for k in wanted}
    from tracejudge.stages.aggregate.gate_coverage import coverage_check

    # How much of each run the pairs cover, and why the rest was not compared (None: all of both, nothing to say).
    # A rule comparing no metric has already failed saying so: its coverage would add nothing.
    if wanted and (coverage := coverage_check(reg, cmp, base)) is not None:
        checks.append(coverage)
    for key in wanted:
        checks.append(_metric_check(key, cmp.metrics[key], reg, base, cmp.differences.get(key)))
    return checks, cmp


def _metric_check(key: str, md: MetricDelta, reg: RegressionRule, base: Path, differs: str | None) -> Check:
    """`KEY regression`: the drop of `key`'s mean over the pairs both runs scored, against `max_mean_drop` (and the noise rule)."""
    from tracejudge.stages.comparison.runs import delta_is_noise

    name = f"{key} regression"
    # The judge or options that differ from the baseline's: a delta may be theirs, so the check says so, held or failed.
    warn = "" if differs is None else (f"; warning: the judge or options differ from the baseline's ({differs}): "
                                       "the delta may be the change's, not the agent's")
    if md.pairs == 0:
        return Check(name, False, f"no (case, trial) pair scored in both this run and the baseline {base}{warn}")
    drop = -(md.delta or 0.0)
    too_big = drop > reg.max_mean_drop + 1e-12
    noise = reg.noise == "ci" and delta_is_noise(md)
    ok = not too_big or noise
    # Each figure printed with the places that show how it compares: a drop of 0.02001 is not "-0.0200" beside 0.02.
    delta = figure(md.delta or 0.0, -reg.max_mean_drop, not too_big, sign=True)
    ci = ""
    if md.ci95 is not None:
        # The upper bound carries the places that show which side of 0 it lies; the lower takes as many, so the
        # interval never reads backwards (`[-0.0000, -0.00005]`).
        upper = figure(md.ci95[1], 0.0, delta_is_noise(md), sign=True)
        places = len(upper.partition(".")[2]) if "." in upper else 4
        ci = f", 95% CI of delta [{md.ci95[0]:+.{places}f}, {upper}]"
    if too_big and noise:
        tail = "; the drop is within noise (the CI reaches 0)"
    elif too_big and reg.noise == "ci":
        tail = "; the drop is beyond noise (the CI lies below 0)"
    else:
        tail = ""
    return Check(name, ok, f"mean {_f(md.mean_a)} → {_f(md.mean_b)} over {md.pairs} paired results: delta {delta}{ci}; "
                           f"allowed drop {reg.max_mean_drop}{tail}{warn}", warning=ok and differs is not None)
