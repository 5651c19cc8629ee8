"""Which stages run between extract and aggregate for a config: (target) → (score) → (judge), in order.

Apart from the runner (`engine.runner`), which wires the stages this returns; it never names a metric or
a format itself, only whether a metric is a judge's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracejudge.engine.case_metrics import merge_case_metrics as _merge_case_metrics
from tracejudge.engine.case_metrics import merge_unjudged as _merge_unjudged

if TYPE_CHECKING:
    import anyio
    from tracejudge.core.config import RunConfig
    from tracejudge.core.work import Stage

__all__ = ["build_stages"]


def _per_case(metrics: list[Any]) -> list[Any]:
    # Metrics over trials (PassAtK) are computed by the aggregate, not per case.
    return [m for m in metrics if not getattr(m, "over_trials", False)]


def build_stages(
    config: RunConfig, metrics: list[Any], run_dir: Path | None = None, prior_judge: dict[str, Any] | None = None, score: bool = True,
    judge_resources: Callable[[RunConfig, dict[str, Any]], Any] | None = None, stop: anyio.Event | None = None,
    target_attempt: Callable[..., Any] | None = None,
) -> list[Stage]:
    """The stages between extract and aggregate that this config needs, in order.

    Unconfigured stages (no target, no judge metric) are left out, so their
    neighbours are joined directly. `run_dir` is where stages keep their own
    files (the target's `traces.jsonl`); without it they keep none.
    `prior_judge` is the judge block of an earlier segment of the same run
    (its spending counts against the budget). `score: false` leaves the
    score stage out (the executor scores while extracting). `judge_resources`
    gives the judge's limiter, budget and cache (default: in-process ones,
    `tracejudge.stages.judge.stage.local_resources`). `stop` is the run's stop
    event: the judge cuts requests still in flight `judge.stop_grace_s` after
    it is set. `target_attempt(case, trial)` runs the live target elsewhere
    (the Ray executor's workers) instead of on the event loop. Raises
    `ConfigError` when the judge's API key variable is unset.
    """
    from tracejudge.stages.judge import is_judge_metric
    from tracejudge.stages.score import score_stage

    plain = [m for m in metrics if not is_judge_metric(m)]
    judged = [m for m in metrics if is_judge_metric(m)]
    # A case's own judge metrics need the judge stage even when the run lists none; without a
    # `judge:` section they score null in the score stage, saying that the run has no judge.
    with_judge = bool(judged) or config.judge is not None

    def deterministic(run_metrics: Any, specs: list[dict[str, Any]]) -> list[Any]:
        if not with_judge:  # a case's own judge metric says the run has no judge
            return _merge_unjudged(run_metrics, specs)
        return [m for m in _merge_case_metrics(run_metrics, specs) if not is_judge_metric(m)]

    stages: list[Stage] = []
    if config.target is not None:
        from tracejudge.stages.target import target_stage

        stages.append(target_stage(config, run_dir, remote=target_attempt, stop=stop))
    if score:
        stages.append(score_stage(plain, deterministic))
    if with_judge:
        # Imported only here: the judge's HTTP client (aiohttp) and simulator cost a deterministic run ~0.4 s of start-up.
        from tracejudge.stages.judge.stage import judge_stage

        stages.append(judge_stage(config, judged, _merge_case_metrics, prior_judge, run_dir=run_dir, stop=stop, resources=judge_resources))
    return stages
