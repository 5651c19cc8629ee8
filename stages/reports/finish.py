"""Writing a run's reports (`write_reports`) and finishing a run (`finish_run`: the gate's verdict, summary.json, reports)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tracejudge.core.config import RunConfig
from tracejudge.core.errors import TracejudgeError
from tracejudge.core.records import score_counts
from tracejudge.engine import shards, store
from tracejudge.engine.store import iter_results
from tracejudge.stages.aggregate.fold import HIST_BINS
from tracejudge.stages.aggregate.metric_stats import bin_of
from tracejudge.stages.aggregate.gate import Verdict, evaluate_gate
from tracejudge.stages.reports.cases import collect_cases
from tracejudge.stages.reports.feed import ReportFeed
from tracejudge.stages.reports.html import render_html
from tracejudge.stages.reports.junit import JunitWriter
from tracejudge.stages.reports.markdown import render_markdown
from tracejudge.stages.reports.stand_in import REPORTS, stand_in_reports

__all__ = ["finish_run", "write_reports"]


def _baseline_histograms(baseline: list[Path], keys: list[str]) -> dict[str, list[int]]:
    hist = {k: [0] * HIST_BINS for k in keys}
    for res in (r for d in baseline for r in iter_results(d)):
        for k in keys:
            s = (res.get("scores") or {}).get(k)
            if isinstance(s, dict) and score_counts(res.get("status", "ok"), s.get("value")):
                hist[k][bin_of(float(s["value"]))] += 1
    return hist


def write_reports(run_dir: Path, summary: dict[str, Any], verdict: Verdict, *, baseline: Path | None = None,
                  feed: ReportFeed | None = None, stand_ins: bool = True) -> list[Path]:
    """Write report.md, junit.xml and report.html into `run_dir` (atomically); returns their paths.

    `feed`: what the run collected as it wrote its results; when it fits the summary, results.jsonl is not re-read.
    Raises what a write raised (`OSError` naming the file), after each report this pass did not write is replaced by
    a stand-in saying so, or removed (`stand_in.stand_in_reports`): never left as an earlier pass wrote it. Not with
    `stand_ins=False`: the reports there already say why the run stopped (`stopped.finish_stopped`), and still do.
    """
    run_dir = Path(run_dir)
    written: list[str] = []
    try:
        return _write_all(run_dir, summary, verdict, baseline, feed, written)
    except Exception as exc:
        failed = run_dir / REPORTS[len(written)]  # (written in their order: the one under way failed)
        if isinstance(exc, OSError) and exc.filename is None:  # (a write's error names no file: the user's is this one)
            exc.filename = str(failed)
        if stand_ins:
            stand_in_reports(run_dir, failed, exc, written)
        raise


def _write_all(run_dir: Path, summary: dict[str, Any], verdict: Verdict, baseline: Path | None, feed: ReportFeed | None,
               written: list[str]) -> list[Path]:
    # Each report's name goes in `written` once it holds this pass's text (`write_reports` stands in for the rest).
    keys = list(summary.get("metrics", {}))
    taken = feed.take(summary) if feed is not None else None
    if taken is not None:
        junit_writer, cases = taken
    else:
        junit_writer = JunitWriter(summary)
        cases = collect_cases(run_dir, keys, on_result=junit_writer.feed)
    from tracejudge.core.utf8 import safe_text

    # (a name holding a byte that is not UTF-8 arrives as a lone surrogate, which no report could be written with)
    title = f"tracejudge report: {safe_text(run_dir.name)}"
    paths = []
    md = run_dir / "report.md"
    store.write_text_if_changed(md, render_markdown(summary, verdict, cases, title=title))
    paths.append(md)
    written.append(md.name)
    junit = run_dir / "junit.xml"
    tmp = junit.with_name(".junit.xml.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            junit_writer.finish(fh, verdict)
        store.replace_if_changed(tmp, junit)
    except BaseException:
        tmp.unlink(missing_ok=True)  # (on a full disk, its blocks are what the record of the run's end needs)
        raise
    paths.append(junit)
    written.append(junit.name)
    hist = None
    if baseline is not None:
        try:
            hist = _baseline_histograms(shards.expand(Path(baseline)), keys)
        except TracejudgeError:
            hist = None  # the page says the configured baseline could not be read
    page = render_html(summary, verdict, cases, baseline_histograms=hist, baseline_configured=baseline is not None, title=title)
    html_path = run_dir / "report.html"
    store.write_text_if_changed(html_path, page)
    paths.append(html_path)
    written.append(html_path.name)
    return paths


def finish_run(run_dir: Path, summary: dict[str, Any], config: RunConfig, *, feed: ReportFeed | None = None,
               write: bool = True, in_progress: str | None = None, stand_ins: bool = True) -> Verdict:
    """Evaluate the gate, add the verdict to `summary.json`, write the reports (`feed`: see `write_reports`).

    With `judge.labels`, the verdicts' agreement with the labels goes in `summary.labels` first (the gate's `min_kappa` reads it).
    `write=False` (a run directory that cannot be written) computes the verdict into `summary` and writes nothing.
    `in_progress`: who still writes the run, when another process holds it (the verdict is then IN PROGRESS).
    A write that fails leaves no report of an earlier pass (`write_reports`; `stand_ins` as it takes it).
    """
    if config.judge is not None and config.judge.labels is not None:
        from tracejudge.stages.judge.agreement import metric_scales, run_agreement
        from tracejudge.stages.judge.label_grades import metric_keys, yes_no_metrics

        summary["labels"] = run_agreement(run_dir, config.judge.labels, scales=metric_scales(config.metrics),
                                          yes_no=yes_no_metrics(config.metrics), config_metrics=metric_keys(config.metrics))
    _count_budget_skips(summary, config)
    verdict = evaluate_gate(config.assertions, summary, run_dir, seed=config.aggregate.seed, in_progress=in_progress)
    summary["verdict"] = verdict.as_dict()
    if not write:
        return verdict
    path = Path(run_dir) / "summary.json"
    try:
        store.write_text_if_changed(path, json.dumps(summary, indent=2) + "\n")
    except OSError as exc:
        if stand_ins:
            stand_in_reports(Path(run_dir), path, exc)  # (the reports there are an earlier pass's, of an earlier summary)
        raise
    reg = config.assertions.regression
    write_reports(run_dir, summary, verdict, baseline=reg.baseline if reg else None, feed=feed, stand_ins=stand_ins)
    return verdict


def _count_budget_skips(summary: dict[str, Any], config: RunConfig) -> None:
    """Make `summary.judge.skipped_budget` the standing results the budget left unjudged, each (case, trial) once,
    and `error_share` the share of judge errors among the results the judge answered (the others skipped).

    The judge counts the requests it refused in each segment, and segments add up: a resume that met the
    cap again on the same cases counted them twice. With skips left, the caps that ran out go in `judge.budget`.
    """
    judge = summary.get("judge")
    if not isinstance(judge, dict) or "skipped_budget" not in judge:
        return
    judge["skipped_budget"] = int((summary.get("status") or {}).get("skipped_budget", 0))
    if "judged_results" in judge:
        # The error share is over the results the judge answered, as the gate's `judge max_error_share` takes it
        # (`gate_judge.judge_error_check`): a result the budget skipped was never asked, so it is neither.
        answered = int(judge["judged_results"]) - min(judge["skipped_budget"], int(judge["judged_results"]))
        judge["error_share"] = round(int(judge.get("judge_error_results", 0)) / answered, 6) if answered else 0.0
        if judge.get("max_error_share") is not None:
            judge["gate_failed"] = judge["error_share"] > judge["max_error_share"]
    caps = {k: v for k, v in config.budget.model_dump().items() if v is not None}
    if judge["skipped_budget"] and caps:
        judge["budget"] = caps
    else:
        judge.pop("budget", None)
