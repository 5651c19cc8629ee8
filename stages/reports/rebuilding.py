"""Recomputing a run's summary and reports from its results.jsonl alone (`rebuild`: `tracejudge report RUN_DIR`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracejudge.core.config import RunConfig
from tracejudge.core.errors import TracejudgeError
from tracejudge.core.records import WORKER_ERROR, CaseResult
from tracejudge.engine import store
from tracejudge.engine.journal_counts import add_judge_counts, add_judge_tally, judge_block_with, standing_judge_counts
from tracejudge.engine.keyset import KeySet, result_key
from tracejudge.engine.result_lines import torn_line_problem
from tracejudge.engine.store import iter_results
from tracejudge.engine.result_shape import check_score_values, line_problem
from tracejudge.engine.segments_read import HEAD, LineCounts, resumed_judge_block, run_figures, settled_segments
from tracejudge.stages.aggregate.fold import Aggregator, aggregator_for
from tracejudge.stages.aggregate.gate import Verdict
from tracejudge.stages.judge.panel_spend import rebuilt_models
from tracejudge.stages.reports.finish import finish_run
from tracejudge.stages.reports.judge_spend import LineSpend, rebuilt_spend
from tracejudge.stages.reports.superseded import failed_stop, killed_stop

__all__ = ["rebuild", "regression_baseline"]


def regression_baseline(run_dir: Path) -> Path | None:
    """The baseline `run_dir`'s config (in its manifest) gates on, `assertions.regression.baseline`; None without one."""
    config = _config_of(run_dir)
    reg = config.assertions.regression if config is not None else None
    return reg.baseline if reg is not None else None


def _config_of(run_dir: Path) -> RunConfig | None:
    manifest = store.read_manifest(run_dir)
    if not manifest or "config" not in manifest:
        return None
    try:
        # Names were checked when the run started; checking them again builds every metric, a custom one by importing
        # its module, and reading a run directory never executes code (`_recorded_metric`).
        return RunConfig.model_validate(manifest["config"], context={"metric_names": "checked"})
    except ValueError:
        return None


def _last_segment_finished(run_dir: Path) -> bool:
    """False when `checkpoint.json` says the last segment did not finish (`tracejudge.engine.run_state`)."""
    from tracejudge.engine.run_state import last_segment_finished

    return last_segment_finished(run_dir)


def _stopped_last(run_dir: Path, stopped: Any) -> bool:
    """True when `stopped` (a summary's, `finish_stopped`) is about the last segment `checkpoint.json` records: a later
    segment killed since (which wrote no summary) was not stopped by that cause."""
    from tracejudge.engine.run_state import results_beyond_checkpoint

    if not isinstance(stopped, dict) or stopped.get("segment") is None or results_beyond_checkpoint(run_dir):
        return False
    try:
        segments = json.loads(store.read_text(Path(run_dir) / store.CHECKPOINT)).get("segments") or []
        return isinstance(segments[-1], dict) and segments[-1].get("segment") == stopped["segment"]
    except (OSError, ValueError, AttributeError, IndexError):
        return False


def _recorded_metric(spec: dict[str, Any], registry: Any) -> Any:
    """A metric of a run's recorded config as far as the summary needs it (`key`, `over_trials`), built without running
    code from the run: a built-in type is built; a custom one (`module:attribute`) is not imported — reading a run
    directory never executes code — and stands as its name (`name`, else the attribute, as `Metric.key` names a
    decorated function or class), scored per result. A spec that does not build stands as its name or type."""
    from types import SimpleNamespace

    kind = str(spec.get("type", ""))
    if kind in registry.metric_types():
        try:
            return registry.build_metric(spec)
        except registry.SpecError:
            pass
    attr = kind.rpartition(":")[2] if ":" in kind else kind.rpartition(".")[2]
    return SimpleNamespace(key=spec.get("name") or attr or kind, over_trials=False)


def rebuild(run_dir: Path, *, baseline: Path | None = None, on_skipped: Callable[[int, str], None] | None = None,
            write: bool = True, in_progress: str | None = None) -> tuple[dict[str, Any], Verdict]:
    """Recompute summary.json and all reports of `run_dir` from its results.jsonl.

    `write=False` computes the summary and verdict and writes nothing (a run on read-only media, or one
    still being written). `in_progress`: who still writes it (`run_lock.holder`); the verdict is then IN PROGRESS.

    The manifest's config, when present, gives metric order, trials, pass@k
    specs, breakdowns and assertions; without it, metrics come from the
    results and trials from the highest trial seen. Run-level figures of an
    existing summary.json (elapsed time, completeness, judge spending) are
    kept; those of a run that did not finish (its segments, their time and
    usage) are read from its checkpoint as the resume will record them
    (`engine.segments_read`). `baseline` overrides the regression rule's
    baseline directory.

    A line that is not a valid result is left out of the summary and passed
    to `on_skipped(line number, reason)`.

    Raises `TracejudgeError` when there is no results.jsonl.
    """
    from tracejudge.core import registry

    run_dir = Path(run_dir)
    path = run_dir / store.RESULTS
    if not path.exists() and not (run_dir / store.MANIFEST).is_file():  # (a manifest alone: killed before its first result)
        raise TracejudgeError(f"{run_dir}: no {store.RESULTS} here (is this a run directory?)")
    config = _config_of(run_dir)
    if config is not None:
        agg = aggregator_for(config, [_recorded_metric(spec, registry) for spec in config.metrics])
    else:
        trials = 1 + max((int(r.get("trial", 0)) for r in iter_results(run_dir)), default=0)
        agg = Aggregator([], trials=trials)
    damaged: list[str] = []
    seen = KeySet()
    judged: dict[str, int] = {}  # the judge's gate counts (`journal_counts.add_judge_counts`), for a run without summary.json
    spent = LineSpend()  # and what its scores say the judge spent (`judge_spend.rebuilt_spend`)
    tally = None  # and its samples and panel counts (`judge_stats.JudgeTally`), made at the first result that has any
    died = 0  # results never scored because their worker process died: the gate fails on them (`gate.worker_error_check`)
    lines = LineCounts()  # and what a resume counts from every line (its judge spending, failures past their retries)

    def torn(lineno: int, line: bytes) -> None:
        # A last line cut off mid-write (a kill) is named as the damaged lines are, not only counted as "cut short or
        # deleted"; a run still being written is left alone (`in_progress`): its last line is being written.
        why = torn_line_problem(line)
        damaged.append(f"{store.RESULTS}:{lineno}: {why}")
        if on_skipped is not None:
            on_skipped(lineno, why)

    for lineno, line in store.iter_current_numbered(path, torn if in_progress is None else None):
        try:
            result = CaseResult.model_validate_json(line)
            check_score_values(result)
            if not seen.add_hash(result_key(result.case_id, result.trial)):
                # A run writes one standing line per (case, trial): a second one is an edit, never counted twice.
                raise ValueError(f"(case {result.case_id!r}, trial {result.trial}) repeats an earlier line")
        except ValueError as exc:  # damaged: named, never skipped silently
            why = line_problem(exc, line)
            damaged.append(f"{store.RESULTS}:{lineno}: {why}")
            if on_skipped is not None:
                on_skipped(lineno, why)
            continue
        agg.fold(result)
        add_judge_counts(judged, result)
        spent.add(result)
        tally = add_judge_tally(tally, result)
        died += result.error is not None and result.error.kind == WORKER_ERROR
        lines.add(result)
    prev: dict[str, Any] = {}
    try:
        prev = json.loads(store.read_text(run_dir / store.SUMMARY))
    except (OSError, ValueError):
        prev = {}
    unfinished = not _last_segment_finished(run_dir)
    # A killed run's figures are those its resume would write for the results present (an earlier segment's summary
    # leaves out the killed one's): from its files, the same code on the same files (`segments_read`).
    killed = unfinished and in_progress is None and config is not None
    if killed:
        lines.add_superseded(path)
    keep: dict[str, Any] = {k: prev[k] for k in ("tracejudge_version", "config_hash", "complete", "elapsed_s_total", "elapsed_measured", "usage", "segments", "configs", "judge", "shards",
                                                    "retries_spent") if k in prev and not (killed and k == "retries_spent")}
    spent_retries = lines.retries_spent(config.run.max_resume_retries) if killed else {}  # type: ignore[union-attr]
    summary = {**keep, **agg.summary(), **spent_retries, **({"worker_errors": died} if died else {})}
    segments = settled_segments(run_dir) if unfinished and in_progress is None else None
    if unfinished:
        summary["complete"] = False  # killed (or still running): summary.json, if any, is an earlier segment's
        # The error or abort that ended the last segment (`finish_stopped`), else the write error its checkpoint recorded
        # when it could not write its summary, else killed.
        if stopped := prev["stopped"] if _stopped_last(run_dir, prev.get("stopped")) else (
                failed_stop(run_dir, segments or []) or killed_stop(run_dir)) if killed else None:
            summary["stopped"] = stopped
    # The run's own summary says how many results it counted: fewer now means results were lost (damaged
    # lines, a file cut short or edited), which the gate fails on. A damaged line whose case a resumed run
    # redid on a later line costs nothing. (An earlier rebuild's summary keeps the run's own count, so
    # rebuilding twice does not forget the loss.)
    counted = int((prev.get("lost_results") or {}).get("counted", prev.get("results", agg.results)))
    if counted > agg.results:
        summary["lost_results"] = {"lost": counted - agg.results, "counted": counted, "damaged_lines": len(damaged), "first": damaged[:3]}
    from tracejudge.stages.judge.judge_stats import standing_block  # (light: no client, no metric)

    if killed and config.judge is not None and segments is not None:  # type: ignore[union-attr]
        summary["judge"] = resumed_judge_block(run_dir, config, lines.spent, standing_judge_counts(judged, ()), tally, segments)
    elif "judge" in prev:
        # Its samples and panel figures counted from the results as they stand, as the run counts them (a summary
        # an earlier version wrote after a kill left out what the killed segment judged).
        summary["judge"] = standing_block(prev["judge"], tally) if isinstance(prev["judge"], dict) else prev["judge"]
    elif judged.get("judged_results") or (config is not None and config.judge is not None):
        # No summary.json (a run killed before its first, or one deleted): the judge's gate is counted from the results,
        # as a resume counts it, so a run the judge failed is not reported PASS. Its spending, which the lines do not hold
        # whole, is rebuilt from the spend journal (`judge_spend`), and the block says from where.
        limit = (config.judge.max_error_share if config is not None and config.judge is not None else 0.0)
        block = rebuilt_models(run_dir, config, {"max_error_share": limit, **rebuilt_spend(run_dir, spent)})  # (a panel's per model)
        if config is not None and config.judge is not None:
            # (whose judge, as the run's block says it: the simulator's dollars were shown as if they had been spent)
            block.setdefault("model", config.judge.model)
            block.setdefault("provider", config.judge.provider)
            if config.judge.samples > 1:
                block["samples_per_request"] = config.judge.samples  # (as the run's block says it)
        summary["judge"] = judge_block_with(standing_block(block, tally) if tally is not None else block, standing_judge_counts(judged, ()))
    if segments is not None:
        # Its segments, their time and usage as the resume will record them (`segments_read`): a killed segment wrote
        # no summary to keep them from, and an earlier segment's leave it out.
        for k in ("elapsed_measured", "configs"):
            summary.pop(k, None)
        summary.update(run_figures(run_dir, summary.get("judge"), segments))
        summary = {**{k: summary[k] for k in HEAD if k in summary}, **summary}
    # In the order the run wrote its keys: a rebuild (then a resume, which writes the run's order again) changes no
    # key's place, so a diff of summary.json shows what changed, not a shuffle.
    summary = {**{k: summary[k] for k in prev if k in summary}, **summary}
    if config is None:
        from tracejudge.core.config import DatasetConfig

        config = RunConfig(dataset=DatasetConfig(path=Path(".")))
    if baseline is not None:
        from tracejudge.core.evalconfig import RegressionRule

        reg = config.assertions.regression
        rule = reg.model_copy(update={"baseline": Path(baseline)}) if reg else RegressionRule(baseline=Path(baseline), noise="ci")
        config = config.model_copy(update={"assertions": config.assertions.model_copy(update={"regression": rule})})
    verdict = finish_run(run_dir, summary, config, write=write, in_progress=in_progress)
    return summary, verdict
