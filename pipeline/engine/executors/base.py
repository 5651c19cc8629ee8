"""The executor interface: where the CPU stages (extract, deterministic score) run.

The runner reads raw records on the event loop, cuts them into chunks and
hands each chunk to an *executor*; the executor returns one `Extracted` per
raw record, in the chunk's order. Everything else — resume bookkeeping,
duplicate ids, trials, the live target, the judge, writing the run
directory — stays in the main process, on the loop. So an executor is only
"a place that can run `CpuJob.run(chunk)`":

    class Executor(Protocol):
        name: str              # "inprocess", "processes", "ray": logged and kept in the usage block
        concurrency: int       # chunks the runner keeps in flight at once (1 = strictly one after another)
        async def __aenter__(self) -> Executor: ...   # start workers, ship the job
        async def __aexit__(self, *exc) -> None: ...   # stop workers (also on cancellation)
        async def map(self, chunk: list[RawRecord]) -> list[Extracted]: ...

An executor may ask for larger chunks with `min_chunk` (records per `map`
call; the process executor's trips cost per chunk). It may also carry `judge_resources`, a factory `(config, prior) ->
JudgeResources` (`tracejudge.stages.judge.stage`): the judge stage then
takes its rate limiter, budget and cache from it (shared ones, for workers on
other machines) instead of building in-process ones.

An executor is built by a factory `(config, job) -> Executor` (see
`tracejudge.engine.executors.open_executor`). The contract:

- `map` returns `job.run(chunk)` — computed wherever the executor likes, but
  equal to it. The runner keeps chunks in their input order itself (so the
  first occurrence of a duplicate id is the same under every executor) and
  bounds how many are in flight (`concurrency`, through a bounded anyio
  memory object stream), which is the backpressure: memory stays flat.
- `map` must be cancellable: when the run stops (Ctrl-C, SIGTERM) the runner
  waits `STOP_GRACE_S` for chunks in flight and then cancels them; an
  executor kills whatever is still computing (a worker stuck in a long C
  call). A cancelled chunk's cases are not written, so a resume redoes them.
- A worker that dies (`ExecutorBroken`) costs its chunk's cases, not the run:
  the runner records them under their real ids as `invalid_input` with kind
  `worker_error`, provisional (an infrastructure fault): the next run redoes
  them and its results supersede those lines. An executor that split the chunk
  to pin the death on the records causing it (`ExecutorBroken.results`) costs
  only those: the other records' results are written as computed.
- The job travels as the small picklable `CpuJob` (format name, dataset
  config, metric specs); a worker rebuilds the adapter and metrics from it
  once (`CpuJob.build`) and keeps them for the job's later chunks. A job
  that cannot travel (`CpuJob.portable()` says why: cases from memory,
  metrics defined inside a function, custom async metrics) runs in-process.

A new executor (Ray: a remote task or actor per worker calling
`CpuJob.run`) is one module implementing the five members above.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case, ErrorInfo, Score, bare_case
from tracejudge.core.registry import Format
from tracejudge.engine.rendered import Rendered, render

__all__ = ["STOP_GRACE_S", "ChunkLeft", "CpuJob", "Executor", "ExecutorBroken", "Extracted", "deterministic_metrics"]

STOP_GRACE_S = 1.0
"""After a stop, chunks still computing this many seconds later are cancelled (their workers killed)."""


class ExecutorBroken(RuntimeError):
    """A worker died while computing a chunk (killed, out of memory, a crash in C code).

    `results`, when the executor split the chunk to find the records its worker dies on, holds one
    entry per record of the chunk, in order: the record's `Extracted`, or (a str) why no result came
    for it. None: the whole chunk is lost, for the reason the message gives.
    """

    def __init__(self, message: str, results: list[Extracted | str] | None = None) -> None:
        super().__init__(message)
        self.results = results


class ChunkLeft(RuntimeError):
    """A worker ended while the run was stopping: its chunk is left to the resume, as a chunk cut by the stop is.

    A stop cancels and kills what is still computing; a worker that ends then (a stand-in killed while it
    started, a death the stop raced with) is no fault to retry or warn about. Raised by an executor's `map`
    when the run's stop (`Executor.stopping`, set by `ordered_map`) is set.
    """


@dataclass(slots=True)
class Extracted:
    """What the CPU stages made of one raw record.

    Exactly one of `case`, `error` and `rendered` is set. `error` is `(case_id, ErrorInfo)`
    for a record that could not be read. When the job scores (`CpuJob.score`),
    `scores` holds the deterministic scores by metric key, or `failure` says
    why the case could not be scored (status `invalid_input`). From `run`
    (what a worker sends back) `case` is only the id, tags and metadata unless
    the job keeps whole cases (`CpuJob.keep_case`: a later stage — target,
    judge — needs the trace); from `arun` (in-process) it is the whole case.
    When the job renders (`CpuJob.render_keys`), a case scored without a
    failure comes back as `rendered` alone (`engine.rendered.Rendered`: its
    result line's body, JUnit test cases and figures), with no case or scores.
    """

    file: str
    line: int
    case: Case | None = None
    error: tuple[str, ErrorInfo] | None = None
    scores: dict[str, Score] | None = None
    failure: ErrorInfo | None = None
    rendered: Rendered | None = None


def deterministic_metrics(metrics: Sequence[Any]) -> list[Any]:
    """The metrics the score stage runs per case: neither judge metrics nor metrics over trials (pass@k)."""
    from tracejudge.stages.judge import is_judge_metric

    return [m for m in metrics if not is_judge_metric(m) and not getattr(m, "over_trials", False)]


@dataclass
class CpuJob:
    """The CPU work of one run, in a form a worker process can rebuild.

    `format_name` and `dataset` give the adapter and its context
    (`Format.prepare`); `metric_specs` (the config's) or `metrics` (instances,
    from the Python API) give the deterministic metrics; `merge` adds a case's
    own metric specs (a module-level function). `score` is false when a live
    target runs first (then the score stage runs after it, in-process).
    `fmt`/`ctx` are set when the job was built in this process (in-process
    runs, cases from memory) and never travel. When the job renders and its metrics are all audited
    built-ins, native records are scored on their decoded structs (`stages.extract.struct_score`).
    """

    format_name: str
    dataset: DatasetConfig
    metric_specs: list[dict[str, Any]] | None
    metrics: list[Any] | None
    merge: Callable[[Sequence[Any], list[dict[str, Any]]], Sequence[Any]]
    score: bool
    keep_case: bool
    metric_timeout_s: float | None = 60.0  # each metric call's limit (`run.metric_timeout_s`), set in every process that runs the job
    # Set when nothing runs after the executor: scored cases come back rendered (`Extracted.rendered`), with one JUnit
    # test case end per key given here (the run's metric keys when its reports are fed as it goes, else none).
    render_keys: list[str] | None = None
    fmt: Format | None = field(default=None, repr=False)
    ctx: Any = field(default=None, repr=False)
    _built: tuple[Format, Any, list[Any]] | None = field(default=None, repr=False)
    _struct: Any = field(default=False, repr=False)  # the struct path (`_struct_path`); False: not decided yet

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.update(fmt=None, ctx=None, _built=None, _struct=False)  # rebuilt on the other side
        return state

    def portable(self) -> str | None:
        """None when the job can run in another process, else the reason it cannot."""
        if self.fmt is not None and self.format_name == "":
            return "the cases come from memory (Python API), not from a file a worker can read"
        if self.metrics is not None:
            try:
                pickle.dumps(self.metrics)
            except Exception as exc:  # local classes, lambdas, open handles: pickle says which
                return f"a metric cannot be sent to a worker process ({type(exc).__name__}: {exc}); define it at module level"
        if any(_is_async(m) for m in self.build()[2]):
            return "a custom metric is async (aevaluate): it runs on the event loop"
        return None

    def build(self) -> tuple[Format, Any, list[Any]]:
        """`(format, ctx, metrics)`, built once per process."""
        if self._built is None:
            from tracejudge.core import registry
            from tracejudge.stages.score import time_limit

            time_limit.set_default(self.metric_timeout_s)

            fmt = self.fmt or registry.format_for(self.format_name)
            ctx = self.ctx if self.fmt is not None else fmt.prepare(self.dataset)
            metrics = self.metrics if self.metrics is not None else [registry.build_metric(s) for s in self.metric_specs or []]
            self._built = (fmt, ctx, deterministic_metrics(metrics))
        return self._built

    def run(self, chunk: Sequence[Any]) -> list[Extracted]:
        """Extract (and score) each raw record of `chunk`, in order."""
        from tracejudge.stages.score import score_case, time_limit

        out = []
        with time_limit.across_cases():  # one alarm for the chunk's metric calls, not one armed and disarmed per case
            for raw in chunk:
                item, use = self._extract(raw)
                if use is not None:
                    item.scores = score_case(item.case, use)  # type: ignore[arg-type]
                    self._render(item)
                out.append(self._finish(item))
        return out

    async def arun(self, chunk: Sequence[Any]) -> list[Extracted]:
        """`run`, awaiting custom async metrics (`aevaluate`) on the event loop.

        The cases of a chunk whose metrics include async ones are scored concurrently (an async
        metric waits on I/O: one at a time, a chunk of 64 cases took 64 of its round trips).
        The items keep the chunk's order.
        """
        import anyio

        from tracejudge.stages.score import ascore_case, has_async, score_case, time_limit
        from tracejudge.stages.score.faults import OWED, OnLoop, settle_owed

        async def scored(item: Extracted, use: Sequence[Any]) -> None:
            item.scores = await ascore_case(item.case, use)  # type: ignore[arg-type]
            self._render(item)

        out = []
        waiting = []
        # One alarm for the chunk's sync metric calls, as `run` has (nothing awaits inside): armed and disarmed
        # per case, it cost four system calls a case on the event loop's thread. `OnLoop`: a sync custom metric may
        # cancel this task (`stages.score.faults.own_cancel`).
        with time_limit.across_cases(), OnLoop():
            for raw in chunk:
                item, use = self._extract(raw)
                if use is not None and has_async(use):
                    waiting.append((item, use))
                elif use is not None:
                    item.scores = score_case(item.case, use)  # type: ignore[arg-type]
                    self._render(item)
                out.append(item)  # in this process: nothing to pickle, so no lighter copy to make
        if OWED.get():  # a sync metric cancelled this task (`stages.score.faults.own_cancel`): taken here, not by the run
            await settle_owed()
        if waiting:
            async with anyio.create_task_group() as tg:
                for item, use in waiting:
                    tg.start_soon(scored, item, use)
        return out

    def _render(self, item: Extracted) -> None:
        # A scored case whose result is settled (`render_keys` set: nothing runs after the executor) goes on rendered.
        if self.render_keys is None or item.failure is not None or item.scores is None or item.case is None:
            return
        done = render(item.case, item.scores, self.render_keys)
        if done is not None:
            item.rendered, item.case, item.scores = done, None, None

    def _extract(self, raw: Any) -> tuple[Extracted, Sequence[Any] | None]:
        # The extracted record, and the metrics to score it with (None: nothing to score).
        struct_path = self._struct if self._struct is not False else self._struct_path()
        got = struct_path(raw) if struct_path is not None else None
        if type(got) is Rendered:
            return Extracted(raw.file, raw.line, rendered=got), None
        from tracejudge.stages.extract import extract_record
        from tracejudge.stages.score import metrics_for

        fmt, ctx, metrics = self.build()
        if got is None:
            got = extract_record(raw, fmt, ctx)
        if isinstance(got, tuple):
            return Extracted(raw.file, raw.line, error=got), None
        item = Extracted(raw.file, raw.line, case=got)
        if not self.score:
            return item, None
        use, item.failure = metrics_for(got, metrics, self.merge)
        return item, use

    def _struct_path(self) -> Any:
        # Cases scored on their decoded structs, when the result settles here (`stages.extract.struct_score.scorer`):
        # a record gives its `Rendered` result, or the `Case` the general path goes on with, or None (extracted as ever).
        self._struct = None
        if self.score and self.render_keys is not None and not self.keep_case:
            from tracejudge.stages.extract.struct_score import scorer

            fmt, _, metrics = self.build()
            self._struct = scorer(fmt, metrics, self.merge, self.render_keys)
        return self._struct

    def _finish(self, item: Extracted) -> Extracted:
        if item.case is not None and not self.keep_case:
            item.case = _light(item.case)
        return item


def _is_async(metric: Any) -> bool:
    # `@tracejudge.metric` classes say whether their function is async; other classes are async when they define `aevaluate`.
    flag = getattr(metric, "is_async", None)
    return bool(flag) if flag is not None else getattr(metric, "aevaluate", None) is not None


def _light(case: Case) -> Case:
    # What the main process needs when no later stage reads the trace: id, tags, metadata. They were
    # validated with the case: copied onto a bare case, not validated again (`model_construct` would
    # inspect every default factory).
    return bare_case().model_copy(update={"id": case.id, "tags": case.tags, "metadata": case.metadata})


class Executor(Protocol):
    """Runs `CpuJob.run` on chunks of raw records (see the module docstring for the contract)."""

    name: str
    concurrency: int

    async def __aenter__(self) -> Executor: ...

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None: ...

    async def map(self, chunk: list[Any]) -> list[Extracted]:
        """`job.run(chunk)`, computed by this executor; cancellable."""
        ...
