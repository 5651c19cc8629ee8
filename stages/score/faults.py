"""A metric's faults become its score, never the run's end: what it returned that no score can be (`bounded`), details
JSON cannot carry (`details_fault`), what it raised (`metric_fault`), and a sync metric's cancellation of the task calling
it (`own_cancel`). Such a score's reason starts `FAILED` or `metric raised`, counted as raised
(`engine.rendered.METRIC_ERRORS`). Re-exported by `stages.score.base`."""

from __future__ import annotations

import math
from contextvars import ContextVar
from typing import Any

from tracejudge.core.records import Score

__all__ = ["FAILED", "ON_LOOP", "OWED", "SCORE_TASK", "OnLoop", "bounded", "details_fault", "loop_task", "metric_fault",
           "own_cancel", "self_cancelled", "settle_owed"]


def bounded(score: Any, key: str) -> Any:
    """`score` (what a custom metric returned for metric `key`), or, when its value is NaN, infinite or outside [0, 1],
    a `value: null` score saying so: as a bare number outside [0, 1] is (`custom.FunctionMetric`). Every figure of the
    run (mean, pass rate, the bootstrap) assumes values in [0, 1]; a NaN stopped the fold with an internal error.
    What is not a `Score` (a metric class's `evaluate` returning None, a dict, a number) is the metric's failure too:
    the result was written with it and the run ended with an internal error."""
    if not isinstance(score, Score):
        return Score(value=None, passed=None, reason=f"{FAILED}metric {key} returned {type(score).__name__}, not a Score")
    v = score.value
    if v is None or (v == v and 0.0 <= v <= 1.0):  # (`v == v`: not NaN)
        return score
    return Score(value=None, passed=None, reason=f"{FAILED}metric {key} returned a Score with value {v!r}, outside [0, 1]")


# How the reason of a score starts when its metric returned what no score can be (a value of the wrong type, a number
# outside [0, 1] or NaN, details that cannot be written as JSON): a bug in the metric, counted as a metric that raised
# (`engine.rendered.METRIC_ERRORS`). Returning None is not one: it is how a metric says a case cannot be scored.
FAILED = "metric failed: "
_PLAIN = frozenset({str, int, bool, type(None)})  # (a float is plain unless NaN or infinite: `details_fault`)
# How a NaN or infinite number in a custom metric's details is written: JSON has no number for it, and pydantic wrote
# each as `null`, a value the metric never gave (`{"ratio": null}` for 0/0). As pydantic's `ser_json_inf_nan="strings"`.
_NONFINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def details_fault(score: Score, key: str, depth: int) -> Score:
    """`score` (a custom metric's, with details), or the score to keep instead: its details nested more than `depth`
    levels (dicts, lists, tuples) deep (a dict holding itself too) or that JSON cannot carry (an object pydantic cannot
    serialize) is a score whose metric failed (`FAILED`), saying why. Details holding other values than plain
    JSON ones that JSON can carry (a set, a datetime, a model) are replaced by their JSON-ready form: the same text is
    written, and a worker process can send them back (an object pickle cannot carry killed the run). A NaN or
    infinite number in them is written as the string `"NaN"`, `"Infinity"` or `"-Infinity"` (`_NONFINITE`), never
    as the `null` JSON would otherwise make of it.

    Walked with a stack of its own, not recursion (a value nested past the interpreter's recursion limit is told
    apart, not raised on); the plain values (most details hold nothing else) cost a type lookup each, a float a
    subtraction more."""
    stack: list[tuple[object, int]] = [(score.details, 1)]
    plain = finite = True
    while stack:
        item, level = stack.pop()
        t = type(item)
        if t in _PLAIN:
            continue
        if t is float:
            # NaN or infinite: `x - x` is 0.0 for a finite float, NaN for the others.
            if item - item:  # type: ignore[operator]  # (a float: `t`)
                finite = False
            continue
        if isinstance(item, (dict, list, tuple)):
            if level > depth:
                # (A metric's failure, as details JSON cannot carry: a dict holding itself ends here.)
                return Score(value=None, passed=None, reason=f"{FAILED}metric {key} returned details nested more "
                             f"than {depth} levels deep (a result must be written and read back)")
            if isinstance(item, dict):
                if plain and not all(type(k) is str for k in item):
                    plain = False
                stack.extend((v, level + 1) for v in item.values())
            else:
                stack.extend((v, level + 1) for v in item)
        else:
            plain = False
    if plain:
        if finite:
            return score
        return score.model_copy(update={"details": _visible(score.details)})
    import pydantic_core

    try:
        details = pydantic_core.to_jsonable_python(score.details)
    except (ValueError, TypeError, RecursionError) as exc:
        why = str(exc).removeprefix("Unable to serialize unknown type: ")[:200]
        return Score(value=None, passed=None, reason=f"{FAILED}metric {key} returned details that cannot be written as JSON: "
                     f"{why}", details={"exception": "PydanticSerializationError"})
    # (What it made of an object may hold a NaN the walk did not see: a model's field, a numpy float.)
    return score.model_copy(update={"details": _visible(details)})


def _visible(item: Any) -> Any:
    """`item` (JSON-ready details, nested within `details_fault`'s depth) with each NaN or infinite float replaced by
    its `_NONFINITE` text; the containers holding one are copies (a metric may keep and reuse its details)."""
    if isinstance(item, float):
        return item if item - item == 0.0 else _NONFINITE[repr(float(item))]
    if isinstance(item, dict):
        out = {k: _visible(v) for k, v in item.items()}
        return item if all(out[k] is v for k, v in item.items()) else out
    if isinstance(item, (list, tuple)):
        got = [_visible(v) for v in item]
        return item if all(a is b for a, b in zip(got, item)) else got
    return item


# True in a task `ascore_case` awaits a metric in: there the run's cancellations come through anyio cancel scopes only, so
# one that none of them made is the metric's own (`metric_fault`). Elsewhere (a caller awaiting `aevaluate` under its
# own `asyncio.timeout`) a task being cancelled stays the caller's cancellation.
SCORE_TASK: ContextVar[bool] = ContextVar("tracejudge_score_task", default=False)


def metric_fault(exc: BaseException, awaited: bool = False) -> bool:
    """True when `exc`, raised by a metric, costs that metric's score: an `Exception`, a `SystemExit` (a metric, or
    a library it calls, that calls `sys.exit()` or argparse's `parse_args()` failing: never the run's exit), any
    other `BaseException` the metric raised (a class of its own deriving from it, a `GeneratorExit`), or a group of
    them. A `KeyboardInterrupt` too where SIGINT is ignored (a worker process: a Ctrl-C never reaches it, so only
    code raised it); elsewhere a Ctrl-C is one and stops the run as one. What the run itself raises inside a metric
    goes on: the sync time limit's `MetricTimeout` and, where the metric was `awaited` and its task is being
    cancelled, the cancellation (a stop, an async metric's time limit; trio's `Cancelled` always), unless, in a task
    `ascore_case` started (`SCORE_TASK`), no cancel scope of the run made it: the metric cancelled its own task, which
    is then uncancelled (`Task.uncancel`) and the metric's failure. A sync call is never cancelled from outside (a
    cancellation arrives where a coroutine awaits), so a cancellation it raised is the metric's own. (Called only once
    a metric raised: the path of a metric that returns costs nothing.)"""
    if isinstance(exc, (Exception, SystemExit)):
        return True
    if isinstance(exc, KeyboardInterrupt):
        import signal

        return signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if isinstance(exc, BaseExceptionGroup):
        return all(metric_fault(e, awaited) for e in exc.exceptions)
    # A `BaseException` of the metric's own ended the run with an internal error (exit 3), as a `GeneratorExit` did,
    # and a sync metric's own `CancelledError` ended it as if stopped, with no results: one metric's bug cost every
    # case's scores. (A `GeneratorExit` reaches here only from the metric: a coroutine is closed that way only once
    # nothing awaits it, and the score stage awaits every metric it starts.)
    from tracejudge.stages.score.time_limit import MetricTimeout  # (here: the package imports this module)

    if isinstance(exc, MetricTimeout):
        return False
    if not awaited:
        return True
    import asyncio

    if isinstance(exc, asyncio.CancelledError):
        # The run's when the task is being cancelled (a cancel scope, a stop: `Task.cancelling`), else the metric's own
        # (one it raised, or a future it awaited that something else cancelled), which the run's task group took for
        # a cancellation: the run ended with no results, saying the dataset was empty.
        try:
            task = asyncio.current_task()
        except RuntimeError:  # (no loop running: not awaited after all)
            return True
        if task is None or not task.cancelling():
            return task is not None
        # In a task of `ascore_case` the run cancels a metric only through anyio's cancel scopes (a stop, the time
        # limit): with none of them cancelled, the metric cancelled its own task (`asyncio.current_task().cancel()`).
        # That is its failure: the task's cancel requests are withdrawn (`Task.uncancel`), or the task ended
        # cancelled, taken for the run's, and the case was written with no score for the metric (an internal error).
        if not SCORE_TASK.get():
            return False
        import anyio

        if anyio.current_effective_deadline() == -math.inf:  # (a cancelled scope encloses the task: the run's)
            return False
        while task.uncancel():
            pass
        return True
    t = type(exc)
    return not (t.__name__ == "Cancelled" and t.__module__.partition(".")[0] == "trio")


def self_cancelled() -> Score:
    """The score of a metric that cancelled the task it runs in (`asyncio.current_task().cancel()`) and returned with
    that cancellation pending: the metric's failure, counted as raised."""
    return Score(value=None, passed=None, reason="metric raised CancelledError (it cancelled its own task, "
                 "asyncio.current_task().cancel(), and returned with the cancellation pending)",
                 details={"exception": "CancelledError"})


# The task that calls sync metrics on the event loop while it does (None elsewhere: a worker process, a caller of
# `score_case` of its own), set by that caller around its sync section, with no await inside it (`CpuJob.arun`,
# `ascore_case`): `score_case` watches its cancel requests around each custom metric's call (`own_cancel`). Looked up
# per case it cost more than a small metric (`asyncio.current_task` reads the process id from the system each time).
ON_LOOP: ContextVar[Any] = ContextVar("tracejudge_on_loop", default=None)

# True in a task a sync metric cancelled (`own_cancel`): its requests are withdrawn, but before Python 3.13
# `Task.uncancel` leaves the cancellation itself pending, delivered at the task's next suspension. Each async caller of
# sync metrics takes it there first (`if OWED.get(): await settle_owed()`): left to the code after it, it ended the run
# as if stopped. (Set by sync code running in the task: the task's own context holds it.)
OWED: ContextVar[bool] = ContextVar("tracejudge_owed", default=False)


def loop_task() -> Any:
    """The asyncio task this call runs in, or None (no asyncio loop running: a worker process, trio): what a caller of
    sync metrics on the loop notes in `ON_LOOP`. A sync metric cancels it with `asyncio.current_task().cancel()`."""
    import asyncio  # (imported by custom metrics already: `stages.score.custom`)

    loop = asyncio._get_running_loop()
    return None if loop is None else asyncio.current_task(loop)


class OnLoop:
    """`with OnLoop():` around sync metric calls on the event loop, with no await in the body: the current task is
    `ON_LOOP` in it (`loop_task`, looked up once), the one noted before it once it ends."""

    __slots__ = ("token",)

    def __enter__(self) -> None:
        self.token = ON_LOOP.set(loop_task())

    def __exit__(self, *exc: object) -> None:
        ON_LOOP.reset(self.token)


def own_cancel(task: Any, before: int) -> Score:
    """The score of a sync metric after whose call `task` (`loop_task`) has more cancel requests than the `before` it had:
    the metric cancelled the task it runs in (a sync call is never cancelled from outside: a request arrives while the
    task waits). Its requests are withdrawn (`Task.uncancel`), the task noted as `OWED`. Otherwise the cancellation
    surfaced at the task's next await: a run of sync metrics ended saying the dataset was empty, and beside an async
    metric the case was written with no scores at all, which a resume took as finished."""
    while task.cancelling() > before:
        task.uncancel()
    OWED.set(True)
    return self_cancelled()


async def settle_owed() -> None:
    """Take the cancellation a sync metric left pending on the current task (`own_cancel`), if any: here, where the
    caller expects it, not at whatever the task awaits next. A cancellation of the run's (a stop, a cancelled scope)
    that arrives meanwhile, or was requested before the metric's, goes on."""
    import asyncio

    task = asyncio.current_task()
    if task is None or not OWED.get():
        return
    OWED.set(False)
    try:
        await asyncio.sleep(0)  # (the pending cancellation is delivered here; from Python 3.13 `uncancel` dropped it)
    except asyncio.CancelledError:
        import anyio

        if task.cancelling() or anyio.current_effective_deadline() == -math.inf:
            raise
