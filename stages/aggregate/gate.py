"""The CI gate: turn a summary and the `assertions:` config into PASS or FAIL.

The gate rule (one rule, documented in README "CI gates"):

    The run PASSES when it is complete and every configured assertion holds;
    otherwise it FAILS. An assertion about a metric with no scored result
    fails (no evidence is not a pass). `tracejudge run` and `tracejudge report`
    print the verdict last and exit 1 exactly when it says FAIL, 0 when PASS.
    A run that was stopped before every case finished says INTERRUPTED (exit
    130) whatever its assertions say: CI must not read "not finished" as
    "the agent regressed".
    A run another process is still writing (`tracejudge report` while `run`
    holds the directory) says IN PROGRESS (exit 75): not finished, and not
    interrupted either. A result the judge budget skipped (`skipped_budget`)
    is not finished either: the `judge budget` check fails until a resume with
    a larger budget judges it (`gate_judge`).

Unreadable input: the share of `invalid_input` results must not exceed
`assertions.max_invalid_share` (default 0.0); a failed check lists the first
three `file:line` reasons. Metric errors: per metric, the share of its results
whose metric raised or timed out (`raised`) must not exceed
`assertions.max_metric_error_share` (default 0.0; `gate_metric_error`).

Assertions: per metric `min_mean` (mean >= x), `min_pass_rate` (pass rate >=
x), `max_error_share` ((results − scored) / results <= x, over the results that
carry the metric: a case-level metric's share leaves out the cases without it, and any metric's the cases it does not
apply to (a score `not applicable: …`, `score.base.no_expectation`), while
results kept by `--force` from before a config metric was added count as not scored), `min_kappa` (agreement
with reference labels, `summary.labels`); for a `PassAtK`
key, `min_mean` bounds its value. `"*"` gives every metric its keys; a
metric's own rule overrides only the keys it sets (`metric_rule`). Regression against a baseline run: see
`tracejudge.core.evalconfig.RegressionRule` and `gate_regression`. A figure a check compares with its threshold
is printed with the places that show why it held or failed (`gate_figures`: `mean 0.69996`, not `0.7000`, below 0.7).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracejudge.core.evalconfig import AssertionsConfig, MetricAssertion
from tracejudge.stages.aggregate.gate_figures import figure, limit as limit_shown
from tracejudge.stages.aggregate.gate_reasons import invalid_reasons

if TYPE_CHECKING:
    from rich.console import Console
    from tracejudge.stages.comparison.runs import Comparison

__all__ = ["Check", "Verdict", "baseline_note", "evaluate_gate", "invalid_reasons", "metric_rule", "print_verdict"]


@dataclass
class Check:
    """One assertion and its outcome. `detail` states the figures compared."""

    name: str
    ok: bool
    detail: str
    warning: bool = False  # holds, but says something a reader must see (a baseline metric this run dropped): printed `warn`


@dataclass
class Verdict:
    """All checks of a run; `passed` iff every check held."""

    checks: list[Check] = field(default_factory=list)
    comparison: Comparison | None = None
    interrupted: bool = False
    in_progress: str | None = None  # who is still writing the run ("process 4242"), when someone is
    stopped: str | None = None  # what stopped the run's last segment before it finished (an error, an abort), when known

    @property
    def unfinished(self) -> bool:
        """The run is not complete: interrupted, or still being written."""
        return self.interrupted or self.in_progress is not None

    @property
    def passed(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def word(self) -> str:
        if self.in_progress is not None:
            return "IN PROGRESS"
        if self.interrupted:
            return "INTERRUPTED"
        return "PASS" if self.passed else "FAIL"

    @property
    def exit_code(self) -> int:
        """0 for PASS, 1 for FAIL, 75 for IN PROGRESS, 130 for INTERRUPTED (the CLI returns exactly this)."""
        if self.in_progress is not None:
            return 75  # EX_TEMPFAIL: report again later
        if self.interrupted:
            return 130
        return 0 if self.passed else 1

    def as_dict(self) -> dict[str, Any]:
        return {"verdict": self.word, "checks": [{k: v for k, v in vars(c).items() if k != "warning" or v} for c in self.checks]}


def _f(x: float | None, bound: float | None = None, holds: bool = True, *, at_least: bool = True) -> str:
    # Four places, or as many more as show how `x` compares with `bound` as the check decided (`gate_figures`).
    if x is None or bound is None:
        return "none" if x is None else f"{x:.4f}"
    return figure(x, bound, holds, at_least=at_least)


def _share(x: float, bound: float, holds: bool) -> str:
    # A share of results as a percentage (`12.5%`), with the places that show how it compares with `bound` (at most).
    return figure(x, bound, holds, at_least=False, places=1, percent=True)


def metric_rule(assertions: AssertionsConfig, key: str, *, per_result: bool = True) -> MetricAssertion | None:
    """The thresholds `key` must meet: `"*"`'s keys, each overridden by the metric's own rule where that sets it.

    A rule of its own used to replace `"*"` whole, so `ToolCalls: {min_mean: 0}` beside
    `"*": {max_error_share: 0.05}` silently lifted the error limit `"*"` promised every metric.
    `"*"` does not reach a pass@k figure (`per_result=False`), which takes `min_mean` only.
    """
    own, star = assertions.metrics.get(key), assertions.metrics.get("*") if per_result else None
    if own is None or star is None:
        return own or star
    # Only the keys the metric's rule gives a value win: a run's manifest stores every key, unset ones as null.
    return star.model_copy(update={k: v for k, v in own.model_dump().items() if v is not None})


def _metric_checks(key: str, rule: MetricAssertion, summary: dict[str, Any]) -> list[Check]:
    checks: list[Check] = []
    pk = summary.get("pass_at_k", {}).get(key)
    if pk is not None:
        if rule.min_mean is not None:
            v = pk.get("value")
            ok = v is not None and v >= rule.min_mean - 1e-12
            checks.append(Check(f"{key} min_mean", ok,
                                f"{key} = {_f(v, rule.min_mean, ok)} over {pk.get('cases', 0)} cases, required >= {rule.min_mean}"))
        return checks
    m = summary.get("metrics", {}).get(key)
    if m is None:
        return [Check(f"{key}", False, f"metric {key!r} is not in this run's results")]
    if rule.min_kappa is not None:
        checks.append(_kappa_check(key, rule.min_kappa, summary))
    of = _denominator(key, m)
    if rule.min_mean is not None:
        v = m.get("mean")
        ci = m.get("ci95")
        # With repeated judging each value is already a mean of samples: the CI says how far the figure could move.
        spread = f" (95% CI [{ci[0]:.4f}, {ci[1]:.4f}], each value a mean of {summary['judge']['samples_per_request']} samples)" \
            if ci and key in ((summary.get("judge") or {}).get("samples") or {}) else ""
        ok = v is not None and v >= rule.min_mean - 1e-12
        checks.append(Check(f"{key} min_mean", ok, f"{of}, required mean >= {rule.min_mean}" if not m["scored"] else
                            f"mean {_f(v, rule.min_mean, ok)}{spread} {of}, required >= {rule.min_mean}"))
    if rule.min_pass_rate is not None:
        v = m.get("pass_rate")
        ok = v is not None and v >= rule.min_pass_rate - 1e-12
        checks.append(Check(f"{key} min_pass_rate", ok, f"{of}, required pass rate >= {rule.min_pass_rate}" if not m["scored"] else
                            f"pass rate {_f(v, rule.min_pass_rate, ok)} ({m['passed']}/{m.get('with_verdict', m['scored'])}) {of}, "
                            f"required >= {rule.min_pass_rate}"))
    if rule.max_error_share is not None:
        v = m.get("error_share")
        # The share is over the results that carry the metric (`metric_stats`): so is the count beside it.
        carrying, na = m["results"] - m.get("not_applicable", 0), m.get("not_applicable", 0)
        excl = ", ".join(f"{k} {n}" for k, n in m.get("excluded", {}).items()) or "none excluded"
        what = f"{carrying - m['scored']} of {carrying} results{' carrying ' + repr(key) if na else ''} not scored" if carrying \
            else f"no result carries {key!r}, so none scored it"
        lacking = f"; {na} of {m['results']} results do not carry it or it does not apply to them" if na and carrying else ""
        before = m.get("written_before", 0)
        older = f", {before} of them written before {key!r} was in the config: --fresh scores every case with it" if before else ""
        ok = v is not None and v <= rule.max_error_share + 1e-12
        checks.append(Check(f"{key} max_error_share", ok, f"{what} ({excl}; not computed {m.get('not_computed', 0)}{older}) = "
                            f"{_f(v, rule.max_error_share, ok, at_least=False)}{lacking}, allowed <= {rule.max_error_share}"))
    return checks


def _denominator(key: str, m: dict[str, Any]) -> str:
    """What `min_mean`/`min_pass_rate` figures are over ("over S of N results"), or, when none scored, a sentence saying so.

    A case-level metric's figures are over the results that carry it; the sentence says how many do not, and how
    many were written before the metric was in the config (`written_before`, kept by `--force`).
    """
    na = m.get("not_applicable", 0)
    carrying = m["results"] - na
    lacking = f" ({na} of {m['results']} results do not carry it or it does not apply to them)" if na else ""
    if m.get("written_before"):
        lacking += f" ({m['written_before']} written before {key!r} was in the config, not scored with it)"
    if not carrying:
        return f"no result scored {key!r}: none of the {m['results']} results carries it; no evidence is not a pass"
    if not m["scored"]:
        return f"no result scored {key!r}: 0 of the {carrying} results{' carrying it' if na else ''}{lacking}; no evidence is not a pass"
    return f"over {m['scored']} of {carrying} results{' carrying ' + repr(key) if na else ''}{lacking}"


def _kappa_check(key: str, least: float, summary: dict[str, Any]) -> Check:
    """`min_kappa`: the judge's agreement with the labels (`summary.labels`, `tracejudge.stages.judge.agreement`)."""
    block = summary.get("labels") or {}
    got = (block.get("metrics") or {}).get(key)
    if not got or got.get("kappa") is None:  # why, and what to do: the labels' error, no label, or agreement's `note`
        why = (f"labels: {block['error']}" if block.get("error") else (got.get("note") or "kappa undefined") if got else
               f"no label for {key!r} (configure judge.labels, or run tracejudge calibrate --labels)")
        return Check(f"{key} min_kappa", False, f"{why}; required kappa >= {least}")
    ci = got.get("kappa_ci")
    span = f", 95% CI [{ci[0]:.3f}, {ci[1]:.3f}]" if ci and None not in ci else ""
    cases = got.get("cases", got["n"])
    over = f"over {cases} labelled case{'s' if cases != 1 else ''} ({got['n']} verdict{'s' if got['n'] != 1 else ''})"
    if got.get("kappa_ci_informative") is False:
        # A κ over a handful of cases (2 of 2 agreeing: 1.000 [1.000, 1.000]) shows nothing about the judge: no pass on it.
        return Check(f"{key} min_kappa", False, f"{got.get('kappa_kind', 'kappa')} {got['kappa']:.3f}{span} {over}: not informative, "
                     f"{got.get('kappa_ci_why', 'too few labelled cases; label more cases')}, required kappa >= {least}")
    ok = got["kappa"] >= least - 1e-12
    return Check(f"{key} min_kappa", ok, f"{got.get('kappa_kind', 'kappa')} {_f(got['kappa'], least, ok)}{span} {over}, required >= {least}")


def _runs_of(path: Path) -> list[Path]:
    # The run directories `path` stands for: itself, or a sharded run's (`tracejudge.engine.shards`); none for a path that is neither.
    from tracejudge.core.errors import TracejudgeError
    from tracejudge.engine.shards import expand

    try:
        return expand(path)
    except TracejudgeError:
        return []


def _is_run(path: Path) -> bool:
    return bool(_runs_of(path))


def baseline_note(baseline: Path | None, again: str) -> str | None:
    """The line for stderr when another process still writes the regression baseline `baseline` (a run directory, or the
    name of a sharded run's directories), else None (also for no baseline, or a path that is no run: a failed check names it).

    The comparison is then with the baseline's results so far, in `run_lock.in_progress_note`'s words; `again` ends the
    line with how to compare once the baseline has finished (e.g. "report again when it has finished").
    """
    from tracejudge.engine.run_lock import in_progress_note

    if baseline is None:
        return None
    return in_progress_note(_runs_of(Path(baseline)),
                            f"it is the baseline, so the comparison is with its results so far and its figures may change; {again}")


def _incomplete_detail(summary: dict[str, Any]) -> str:
    """Why the run is not complete: the shards a merge lacks or that were interrupted, else an interrupted run (`gate_coverage`)."""
    from tracejudge.stages.aggregate.gate_coverage import incomplete_detail  # (it builds on this module's Check)

    return incomplete_detail(summary)


def evaluate_gate(assertions: AssertionsConfig, summary: dict[str, Any], run_dir: Path | None, *, seed: int = 0,
                  in_progress: str | None = None) -> Verdict:
    """Check `summary` (and, with a regression rule, the run's results against the baseline's).

    Args:
        assertions: the `assertions:` config section.
        summary: the run's `summary.json` body.
        run_dir: the run directory (needed for the regression rule's pairing).
        seed: seeds the paired bootstrap of the regression rule.
        in_progress: who still writes the run ("process 4242"), when another process holds it: the verdict
            is IN PROGRESS, the figures are those so far.

    Never raises for a missing baseline: that is a failed check naming the path.
    A run with no results, or in which no metric scored anything (an empty
    dataset, every record invalid), always FAILS: a sweep that measured
    nothing must not pass a CI gate. So does a summary rebuilt from a
    results file holding fewer results than the run had counted
    (`lost_results`: damaged lines, a file cut short or edited).
    """
    verdict = Verdict(interrupted=summary.get("complete") is False and in_progress is None, in_progress=in_progress)
    stopped = summary.get("stopped")
    if verdict.interrupted and isinstance(stopped, dict) and stopped.get("reason"):
        # The segment ended on an error or an abort (`reports.finish_stopped`): the reports name it, as the exit status did.
        from tracejudge.stages.aggregate.gate_coverage import stopped_words

        verdict.stopped = f"the run stopped before it finished ({stopped_words(stopped)}): {stopped['reason']}"
    if in_progress is not None:
        verdict.checks.append(Check("run complete", False, f"the run is still in progress ({in_progress} holds it): these are its "
                                    "results so far; report again when it has finished"))
    elif verdict.interrupted:
        verdict.checks.append(Check("run complete", False, _incomplete_detail(summary)))
    scored = sum(m.get("scored", 0) for m in summary.get("metrics", {}).values())
    lost = summary.get("lost_results") or {}
    if not summary.get("results"):
        # (A run that counted results and whose file holds none lost them: `results readable` below says so, not an empty dataset.)
        verdict.checks.append(Check("results", False, "the run has no results yet" if in_progress is not None else
                                    "the run has no results: it was interrupted before its first one" if verdict.interrupted
                                    else "the run has no readable results: see `results readable`" if lost.get("lost")
                                    else "the run has no results: the dataset is empty or nothing was read"))
    elif not scored:
        verdict.checks.append(Check("scored", False, f"no metric scored any of the {summary['results']} results "
                                    f"(status: {summary.get('status', {})}; metrics: {list(summary.get('metrics', {})) or 'none'})"))
    if lost.get("lost"):
        first = "".join(f"\n      {r}" for r in lost.get("first", []))
        damaged = int(lost.get("damaged_lines") or 0)
        # A damaged line holds one result at most: the others missing were cut off or deleted, which the file cannot show.
        where = ("results.jsonl (cut short or edited)" if not damaged else f"{damaged} damaged line(s) of results.jsonl" if damaged >= lost["lost"]
                 else f"results.jsonl ({damaged} in damaged line(s), the other {lost['lost'] - damaged} cut short or deleted)")
        verdict.checks.append(Check("results readable", False, f"{lost['lost']} of the {lost['counted']} results the run counted are missing from "
                                    f"{where} and left out of every figure; restore the file, or re-run the config to redo them{first}"))
    invalid = int((summary.get("status") or {}).get("invalid_input", 0))
    # Checked when a record was invalid, or when the config allows some (a share above the default 0): a
    # tolerance that held is shown as held, not as "no assertions configured". By value, not by what the
    # config spelt out, so `report` (reading the manifest's full config) shows what the run showed.
    if summary.get("results") and (invalid or assertions.max_invalid_share > 0):
        share = invalid / summary["results"]
        ok = share <= assertions.max_invalid_share + 1e-12
        reasons = "" if ok or run_dir is None else "".join(f"\n      {r}" for r in invalid_reasons(run_dir))
        verdict.checks.append(Check("max_invalid_share", ok, f"{invalid} of {summary['results']} results are invalid_input "
                                    f"(unreadable or invalid records) = {_share(share, assertions.max_invalid_share, ok)}, "
                                    f"allowed <= {limit_shown(assertions.max_invalid_share, percent=True)} "
                                    f"(assertions.max_invalid_share){reasons}"))
    died = summary.get("worker_errors")
    if isinstance(died, int) and died > 0:
        # Never scored: a metric or adapter crashed its worker process, or the process was killed. Not an invalid
        # record, so no tolerance of `max_invalid_share` covers it.
        verdict.checks.append(Check("worker errors", False, f"{died} of {summary.get('results', 0)} results were never scored: the "
                                    "worker process scoring them died (a crash in a metric or adapter, or the process was killed); "
                                    "the same command redoes them"))
    failed = int((summary.get("status") or {}).get("target_error", 0))
    if summary.get("results") and (failed or assertions.max_target_error_share > 0):
        share = failed / summary["results"]
        ok = share <= assertions.max_target_error_share + 1e-12
        reasons = "" if ok or run_dir is None else "".join(f"\n      {r}" for r in invalid_reasons(run_dir, status="target_error"))
        verdict.checks.append(Check("max_target_error_share", ok, f"{failed} of {summary['results']} results are target_error "
                                    f"(the agent raised, timed out or gave no usable answer) = "
                                    f"{_share(share, assertions.max_target_error_share, ok)}, allowed <= "
                                    f"{limit_shown(assertions.max_target_error_share, percent=True)} (assertions.max_target_error_share){reasons}"))
    # Imported here: gate_judge builds on this module's Check.
    from tracejudge.stages.aggregate.gate_judge import budget_check, judge_error_check

    verdict.checks.extend(c for c in (budget_check(summary, run_dir), judge_error_check(summary)) if c is not None)
    from tracejudge.stages.aggregate.gate_metric_error import metric_error_checks

    verdict.checks.extend(metric_error_checks(assertions, summary, run_dir))
    keys = list(summary.get("metrics", {})) + list(summary.get("pass_at_k", {}))
    for key in keys:
        rule = metric_rule(assertions, key, per_result=key in summary.get("metrics", {}))
        if rule is not None:
            verdict.checks.extend(_metric_checks(key, rule, summary))
    for key, rule in assertions.metrics.items():
        if key != "*" and key not in keys:
            verdict.checks.append(Check(key, False, f"metric {key!r} named in assertions is not in this run's results"))
    if assertions.regression is not None:
        # The regression rule, its coverage warnings and the comparison it was made from (`gate_regression`).
        from tracejudge.stages.aggregate.gate_regression import regression_checks

        checks, verdict.comparison = regression_checks(assertions.regression, summary, run_dir, seed=seed)
        verdict.checks.extend(checks)
    return verdict


def print_verdict(verdict: Verdict, console: Console | None = None, *, resume: str | None = None) -> None:
    """Print each check and then the verdict line `verdict: PASS` / `FAIL` / `INTERRUPTED`.

    `resume`, the command that finishes an interrupted run, goes on the verdict line.
    """
    from rich.markup import escape  # here: a run through the Python API prints nothing and need not import rich
    from tracejudge.core.console import plain_console
    from tracejudge.core.inert_text import visible

    con = console or plain_console()
    for c in verdict.checks:
        mark = "[bold red]FAIL[/]" if not c.ok else "[yellow]warn[/]" if c.warning else "[green]ok  [/]"
        # Metric names, ids and reasons in a check are data: shown inert (an ESC as `\x1b`), as report.md shows them.
        detail = c.detail.removeprefix("warning: ") if c.warning else c.detail  # the mark says it
        con.print(f"  {mark} {escape(visible(c.name))}: {escape(visible(detail))}", highlight=False, markup=True, emoji=False, soft_wrap=True)
    if not verdict.checks:
        con.print("  (no assertions configured)", highlight=False, markup=False)
    color = "yellow" if verdict.unfinished else "green" if verdict.passed else "red"
    tail = f" (resume with: {escape(resume)})" if verdict.interrupted and resume else ""
    con.print(f"[bold {color}]verdict: {verdict.word}[/]{tail}", highlight=False, markup=True, emoji=False, soft_wrap=True)
