"""Stage `score`: deterministic metrics, no model call.

`score_case(case, metrics)` runs every metric on one case; a metric that
raises costs that metric's score for that case (`value: null`, the exception
in the reason), never the run. `ascore_case` is the same, awaiting metrics
that define `async def aevaluate` (custom async metrics); the stage uses it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache
from time import monotonic
from typing import TYPE_CHECKING, Any

from tracejudge.core.errors import describe
from tracejudge.core.records import Case, ErrorInfo, Score, Status
from tracejudge.core.registry import METRIC_CLASSES, SpecError, lazy_getattr
from tracejudge.core.work import AGENT_SECRETS, AGENT_TRACE, Stage, Work
from tracejudge.llm.redact import redact_quoted
from tracejudge.stages.load.depth import MAX_DEPTH
from tracejudge.stages.score import time_limit
from tracejudge.stages.score.base import FAILED, SCORE_TASK, Metric, ToolMetric, bounded, details_fault, metric_fault
from tracejudge.stages.score.faults import ON_LOOP, OWED, loop_task, own_cancel, self_cancelled, settle_owed
from tracejudge.stages.score.masking import config_keys, custom_keys, mask_echoes, mask_scores
from tracejudge.stages.score.views import close_scope, open_scope

if TYPE_CHECKING:  # at run time each metric class is imported on first use (`__getattr__`), as the registry imports it
    from tracejudge.stages.score.arguments import ArgumentCorrectness
    from tracejudge.stages.score.budget import MaxModelRequests, MaxToolCalls
    from tracejudge.stages.score.deepeval_tool_correctness import DeepEvalToolCorrectness
    from tracejudge.stages.score.output import Contains, ExactMatch, JsonSchema, Regex
    from tracejudge.stages.score.pass_at_k import PassAtK
    from tracejudge.stages.score.retrieval import RetrievalMRR, RetrievalPrecision, RetrievalRecall
    from tracejudge.stages.score.tool_call_accuracy import ToolCallAccuracy
    from tracejudge.stages.score.tool_calls import ToolCalls
    from tracejudge.stages.score.tool_correctness import ToolCorrectness
    from tracejudge.stages.score.trajectory import TrajectoryMatch
    from tracejudge.stages.score.usage import Cost, Latency, TokenUsage

# A run imports only the metrics its config names: a run of `TrajectoryMatch` does not import `ToolCalls` (nor the `regex` it uses).
_LAZY = {name: path for name, path in METRIC_CLASSES.items() if path.startswith(__name__ + ".")}
__getattr__ = lazy_getattr(globals(), _LAZY)

__all__ = [
    "ArgumentCorrectness",
    "Contains",
    "Cost",
    "DeepEvalToolCorrectness",
    "ExactMatch",
    "JsonSchema",
    "Latency",
    "MaxModelRequests",
    "MaxToolCalls",
    "Metric",
    "PassAtK",
    "Regex",
    "RetrievalMRR",
    "RetrievalPrecision",
    "RetrievalRecall",
    "TokenUsage",
    "ToolCallAccuracy",
    "ToolCalls",
    "ToolCorrectness",
    "ToolMetric",
    "TrajectoryMatch",
    "ascore_case",
    "metrics_for",
    "score_case",
    "score_stage",
]


def score_case(case: Case, metrics: Sequence[Metric]) -> dict[str, Score]:
    """Scores of one case by metric key, in the metrics' order; each call bounded by `run.metric_timeout_s` (`time_limit`).

    The metrics share the case's derived views (`views`: its calls flattened, filtered, rendered) for
    the length of this call, and one alarm watches all their calls (`time_limit.watch_case`).
    """
    scores: dict[str, Score] = {}
    keys, custom, masked = _keys(metrics)
    # On the event loop, a custom metric may cancel the task calling it (`faults.ON_LOOP`, `faults.own_cancel`; a built-in
    # never does): that task's cancel requests are counted before and after each call, one int compare a call.
    task = ON_LOOP.get() if custom else None
    before = task.cancelling() if task is not None else 0
    views = open_scope(case)
    watch = time_limit.watch_case()
    try:
        if watch is None:
            for key, metric in zip(keys, metrics):
                try:
                    scores[key] = metric.evaluate(case)
                except BaseException as exc:  # a metric bug must cost one score, not the run (`sys.exit()` included)
                    if not metric_fault(exc):
                        raise
                    scores[key] = _raised(exc)
                if task is not None and task.cancelling() > before:
                    scores[key] = own_cancel(task, before)
        else:
            started = watch.started
            for key, metric in zip(keys, metrics):
                try:
                    started[0] = monotonic()
                    try:
                        scores[key] = metric.evaluate(case)
                    finally:
                        started[0] = None
                except time_limit.MetricTimeout:
                    scores[key] = time_limit.timeout_score(key, time_limit.seconds())
                except BaseException as exc:  # a metric bug must cost one score, not the run (`sys.exit()` included)
                    if not metric_fault(exc):
                        raise
                    scores[key] = _raised(exc)
                if task is not None and task.cancelling() > before:
                    scores[key] = own_cancel(task, before)
        # Custom metrics' values are checked and their reasons, and tool names any reason copied, masked here (built-in
        # metrics give values in [0, 1] and mask reasons as they quote).
        for key in custom:
            score = scores[key]
            # A `Score` with its value in [0, 1] (most) is kept without the call; `bounded` decides the rest.
            if type(score) is not Score or not (score.value is None or 0.0 <= score.value <= 1.0):
                scores[key] = score = bounded(score, key)
            if isinstance(score, Score) and score.details:
                # Masked, pickled and written below the interpreter's recursion limit, as a record is read (`load.depth`),
                # and as JSON: details it cannot carry are the metric's failure, not the case's.
                scores[key] = details_fault(score, key, _DETAILS_DEPTH)
        mask_scores(scores, case, masked, views.calls if case.trace is not None else None)
        return scores
    finally:
        time_limit.unwatch_case(watch)
        close_scope(views)


# The keys of the metrics `score_case` was last called with: a run scores every case with the same metric
# objects, and each `key` (a property on a pydantic model) cost as much as a small metric's arithmetic.
_last_keys: tuple[tuple[Metric, ...], list[str], tuple[str, ...], tuple[str, ...]] = ((), [], (), ())

# A custom score's details nest at most this deep: with the result line's own levels (the line, `scores`, the score)
# the line stays a level within what a record may hold (`load.depth.MAX_DEPTH`): `CaseResult.model_validate_json`, whose
# model counts a level more than pydantic-core's parser alone for nested objects, reads it back as written.
_DETAILS_DEPTH = MAX_DEPTH - 4


def _keys(metrics: Sequence[Metric]) -> tuple[list[str], tuple[str, ...], tuple[str, ...]]:
    """`[m.key for m in metrics]`, the keys of the custom ones among them (`masking.custom_keys`) and the keys whose
    scores `mask_scores` masks (those, and the built-in ones configured with a credential in a tool's name:
    `masking.config_keys`), reused while the metrics are the same ones (a metric is frozen: its key stays; equal
    metrics have equal keys, and the same objects compare by identity, in C)."""
    global _last_keys
    objects, keys, custom, masked = _last_keys
    current = tuple(metrics)
    if current == objects:
        return keys, custom, masked
    keys = [m.key for m in metrics]
    custom = custom_keys(current, keys)
    masked = custom + config_keys(current, keys)
    _last_keys = (current, keys, custom, masked)
    return keys, custom, masked


def _raised(exc: BaseException) -> Score:
    return Score(value=None, passed=None, reason=f"metric raised {describe(exc)}")


async def ascore_case(case: Case, metrics: Sequence[Metric]) -> dict[str, Score]:
    """`score_case`, awaiting the metrics that have an `aevaluate` concurrently (each cancelled at the time limit).

    The scores keep the metrics' order whatever order the awaited ones finish in. Sync metrics are
    called one after another on the loop, as `score_case` calls them; async ones (I/O: a service, a
    model) are awaited side by side, as pydantic-evals runs a case's evaluators.
    """
    if not has_async(metrics):
        token = ON_LOOP.set(loop_task() if _keys(metrics)[1] else None)  # (a custom metric may cancel this task: `faults.own_cancel`)
        try:
            got = score_case(case, metrics)  # nothing to await: one alarm handler for the case, not one per metric
        finally:
            ON_LOOP.reset(token)
        if OWED.get():
            await settle_owed()
        return got
    import anyio  # here: a worker process scoring plain metrics never needs it

    keys, custom, masked = _keys(metrics)
    scores: dict[str, Score] = dict.fromkeys(keys, _UNSET)  # type: ignore[arg-type]  # (every key is set below)
    limit_s = time_limit.seconds()

    async def awaited(key: str, aevaluate: Any, metric: Metric) -> None:
        SCORE_TASK.set(True)  # (this task's context only: a cancellation no scope made is the metric's, `metric_fault`)
        try:
            with anyio.move_on_after(limit_s or math.inf) as scope:
                scores[key] = await aevaluate(metric, case)
            if scope.cancelled_caught:
                scores[key] = time_limit.timeout_score(key, limit_s)
            elif _cancelling() and anyio.current_effective_deadline() != -math.inf:
                # The metric returned with a cancel request of its task pending that no cancel scope of the run made
                # (`asyncio.current_task().cancel()`, not awaited after): the task ended cancelled, which cancelled the
                # task group, and the metrics still awaited were blamed (`ended without a score`) instead of this one.
                scores[key] = await _own_cancel()
        except time_limit.MetricTimeout:
            scores[key] = time_limit.timeout_score(key, limit_s)
        except BaseException as exc:  # a metric bug must cost one score, not the run (`sys.exit()` included)
            if not metric_fault(exc, awaited=True):  # (a cancellation here is the run's: a stop, the time limit)
                raise
            scores[key] = _raised(exc)

    task = loop_task() if custom else None  # (as in `score_case`: a sync custom metric may cancel this task)
    async with anyio.create_task_group() as tg:
        before = task.cancelling() if task is not None else 0
        for key, metric in zip(keys, metrics):
            aevaluate = _aevaluate_of(type(metric))
            if aevaluate is not None:
                tg.start_soon(awaited, key, aevaluate, metric)
                continue
            try:
                with time_limit.limit():
                    scores[key] = metric.evaluate(case)
            except time_limit.MetricTimeout:
                scores[key] = time_limit.timeout_score(key, limit_s)
            except BaseException as exc:  # a metric bug must cost one score, not the run (`sys.exit()` included)
                if not metric_fault(exc):
                    raise
                scores[key] = _raised(exc)
            if task is not None and task.cancelling() > before:
                scores[key] = own_cancel(task, before)
        if OWED.get():  # taken here, or the task group took it for a cancellation: the case was written with no scores
            await settle_owed()
    for key, score in scores.items():
        if score is _UNSET:  # (a metric's task that ended cancelled by no stop of the run: the group ignores such a task)
            scores[key] = Score(value=None, passed=None, reason=f"{FAILED}metric {key} ended without a score (its task "
                                "was cancelled, not by the run)")
    for key in custom:
        scores[key] = score = bounded(scores[key], key)
        if isinstance(score, Score) and score.details:
            scores[key] = details_fault(score, key, _DETAILS_DEPTH)
    mask_scores(scores, case, masked)
    return scores


_UNSET: Any = object()  # (`ascore_case`: the score of a metric not yet scored)


def _cancelling() -> int:
    """`Task.cancelling()` of the current task: its cancel requests not withdrawn (`ascore_case`, after a metric returned)."""
    import asyncio

    task = asyncio.current_task()
    return task.cancelling() if task is not None else 0


async def _own_cancel() -> Score:
    """The score of an awaited metric that returned with its own task's cancellation pending (`ascore_case`): its
    cancellation is taken where it would have ended the task, and its requests withdrawn (`Task.uncancel`), as
    `metric_fault` does for one the metric raised. A cancellation of the run's arriving meanwhile (a stop) goes on."""
    import asyncio

    import anyio

    task = asyncio.current_task()
    assert task is not None  # (`_cancelling` said so)
    try:
        await asyncio.sleep(0)  # (the pending cancellation, `Task.cancel` while running, is delivered here)
    except asyncio.CancelledError:
        if anyio.current_effective_deadline() == -math.inf:  # (a cancel scope of the run was cancelled meanwhile)
            raise
    while task.uncancel():
        pass
    return self_cancelled()


def has_async(metrics: Sequence[Metric]) -> bool:
    """True when a metric of `metrics` is awaited (`aevaluate`): `ascore_case` then yields to the loop."""
    return any(_aevaluate_of(type(m)) is not None for m in metrics)


@lru_cache(maxsize=256)
def _aevaluate_of(cls: type) -> Any:
    """The `aevaluate` to await for a metric of class `cls`, or None: it is called as `evaluate`, under the alarm.

    A `@tracejudge.metric` class says whether its function is async (`is_async`): a sync one has an `aevaluate`
    too (the base class's), but awaited it would run on the loop where no alarm can cut it, and a metric that
    hangs would hang the run. Once per class: a miss goes through pydantic's metaclass `__getattr__` and
    costs an exception (on an instance, most of `ascore_case`'s time with six metrics).
    """
    if getattr(cls, "is_async", None) is False:
        return None
    return getattr(cls, "aevaluate", None)


def metrics_for(case: Case, metrics: Sequence[Metric], merge: Callable[[Sequence[Metric], list[dict[str, Any]]], Sequence[Metric]]
                ) -> tuple[Sequence[Metric] | None, ErrorInfo | None]:
    """The metrics to score `case` with (the run's plus its own specs), or the error that makes it `invalid_input`.

    Errors: the case has no trace (and no target made one); a case-level
    metric spec is invalid (the error names the spec's key path).
    """
    if case.trace is None:
        return None, ErrorInfo(kind="invalid_input", message="case has no trace and no target is configured to produce one", field="trace")
    try:
        return (merge(metrics, case.metrics) if case.metrics else metrics), None
    except SpecError as exc:
        return None, ErrorInfo(kind="invalid_input", message=redact_quoted(exc.msg), field="metrics." + ".".join(map(str, exc.loc)))


def score_stage(metrics: Sequence[Metric], merge: Callable[[Sequence[Metric], list[dict[str, Any]]], Sequence[Metric]]) -> Stage:
    """The `score` stage: run the deterministic metrics on each work item.

    `merge(run_metrics, case_specs)` adds a case's own metric specs; a bad
    case-level spec makes that case `invalid_input` naming the spec. A live
    agent's trace is scored as the agent produced it (`Work.scratch[AGENT_TRACE]`),
    not as the masked copy the case holds for the judge and the files; the
    secret values that copy was masked of are then masked in the scores'
    reasons and details (`masking.mask_echoes`), which quote the trace.
    """

    async def process(work: Work) -> None:
        case = work.case
        raw = work.scratch.pop(AGENT_TRACE, None)  # a live agent's trace as it produced it: `case.trace` is its masked copy
        if raw is not None:
            case = case.model_copy(update={"trace": raw})
        use, error = metrics_for(case, metrics, merge)
        if use is None:
            work.result.status = Status.invalid_input
            work.result.error = error
            return
        scores = await ascore_case(case, use)
        if raw is not None:
            mask_echoes(scores, work.scratch.pop(AGENT_SECRETS, ()))
        work.result.scores.update(scores)

    return Stage("score", process)
