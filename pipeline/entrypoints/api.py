"""The Python API: `evaluate` / `aevaluate` run the CLI's pipeline on cases from memory.

`evaluate(cases, metrics)` builds a `RunConfig` from its arguments, hands the
cases to `tracejudge.engine.runner.run` as an in-memory source and returns a
`RunReport`. Nothing else differs from `tracejudge run`: the same stages,
the same results and summary files in the run directory, the same resume
(pass the same `run_dir` again and finished cases are skipped), the same
judge cache and budget.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import tempfile
from collections.abc import AsyncIterable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import anyio
from pydantic import BaseModel, ValidationError
from tracejudge.core import registry, suggest
from tracejudge.core.config import RunConfig
from tracejudge.core.errors import ConfigError, ParameterError
from tracejudge.core.field_paths import shown_path
from tracejudge.core.records import Case, CaseResult
from tracejudge.engine import store
from tracejudge.engine.manifest import ManifestMismatch, refusal
from tracejudge.entrypoints.run_report import RunReport
from tracejudge.stages.score.base import Metric

__all__ = ["CaseLike", "Cases", "Evaluator", "MetricLike", "aevaluate", "build_config", "evaluate", "metric_spec", "resolve_metrics"]

CaseLike: TypeAlias = "Case | Mapping[str, Any]"
"""A `Case`, or a mapping in the native record shape (validated like a JSONL line)."""

Cases: TypeAlias = "Iterable[CaseLike] | AsyncIterable[CaseLike]"
"""What `evaluate` takes: any iterable or async iterable of cases (streamed, not copied)."""

MetricLike: TypeAlias = "Metric | type[Metric] | Mapping[str, Any]"
"""A metric instance, a metric class (built with its defaults), or a spec `{"type": ..., **params}`."""

Section: TypeAlias = "BaseModel | Mapping[str, Any]"

MEMORY_DATASET = "<memory>"

_OPTIONS = "Pass force=True to resume anyway (results already there are kept), or another run_dir (or none) to start over."


def resolve_metrics(metrics: Iterable[MetricLike]) -> tuple[list[Metric], list[dict[str, Any]]]:
    """Metric instances and the specs that name them in the run's config.

    Raises `ConfigError` for a spec that does not build (unknown type, bad
    dotted path, bad parameter), a class that cannot be built with its
    defaults, or two metrics with one key; `TypeError` for anything that is
    not a metric, a metric class or a mapping.
    """
    if isinstance(metrics, (Metric, Mapping)) or (isinstance(metrics, type) and issubclass(metrics, Metric)):
        metrics = [metrics]
    instances: list[Metric] = []
    specs: list[dict[str, Any]] = []
    for i, m in enumerate(metrics):
        if isinstance(m, Metric):
            instances.append(m)
            specs.append(metric_spec(m))
        elif isinstance(m, type) and issubclass(m, Metric):
            try:
                built = m()
            except ParameterError as exc:  # (each line `Type: key: message`)
                first = str(exc).splitlines()[0].removeprefix(f"{m.__name__}: ")
                raise ConfigError(f"metrics[{i}]: {m.__name__} cannot be built with its defaults: {first}; pass an instance") from None
            instances.append(built)
            specs.append(metric_spec(built))
        elif isinstance(m, Mapping):
            spec = dict(m)
            try:
                instances.append(registry.build_metric(spec))
            except registry.SpecError as exc:
                where = ".".join(map(str, exc.loc))
                raise ConfigError(f"metrics[{i}]{'.' + where if where else ''}: {exc.msg}") from None
            specs.append(spec)
        else:
            raise TypeError(f"metrics[{i}]: expected a metric, a metric class or a spec mapping, got {type(m).__name__}")
    seen: set[str] = set()
    for m in instances:
        if m.key in seen:
            raise ConfigError(f"metrics: two metrics are named {m.key!r}; give one a distinct `name`")
        seen.add(m.key)
    return instances, specs


def metric_spec(metric: Metric) -> dict[str, Any]:
    """The config spec naming `metric`: `{"type": ..., **non-default params}`.

    `type` is the registered name for built-in metrics, else the class's
    `module:qualname` (what a config would use to import it).
    """
    cls = type(metric)
    kind = cls.__name__ if registry.metric_types().get(cls.__name__) is cls else f"{cls.__module__}:{cls.__qualname__}"
    return {"type": kind, **metric.model_dump(mode="json", exclude_defaults=True)}


def build_config(
    specs: list[dict[str, Any]],
    *,
    judge: Section | None = None,
    limits: Section | None = None,
    budget: Section | None = None,
    cache: Section | str | Path | None = None,
    run_dir: str | Path | None = None,
    target: Section | None = None,
    trials: int = 1,
    metric_timeout_s: float | None = 60.0,
) -> RunConfig:
    """The `RunConfig` that `evaluate` runs: the given sections, an in-memory dataset.

    Raises `ConfigError` naming the argument and key for an invalid section,
    and `NotImplementedError` for `target` while this version has no target stage.
    """
    data: dict[str, Any] = {"dataset": {"path": MEMORY_DATASET, "format": "native"}, "metrics": specs,
                            "run": {"trials": trials, "metric_timeout_s": metric_timeout_s}}
    if run_dir is not None:
        data["run"]["dir"] = str(run_dir)
    if isinstance(cache, (str, Path)):
        cache = {"dir": str(cache)}
    for key, value in (("judge", judge), ("limits", limits), ("budget", budget), ("cache", cache)):
        if value is not None:
            data[key] = value
    if target is not None:
        data["target"] = target
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = list(map(str, err["loc"]))
            if loc[:1] == ["run"] and loc[1:2] in (["trials"], ["metric_timeout_s"]):
                loc = loc[1:2]
            # (a key holding a dot, a price table's `gpt-4.1`, in brackets as the config's own errors write it)
            problems.append(f"evaluate({loc[0]}=...): {shown_path(loc[1:]) or '(value)'}: {suggest.message(err)}")
        raise ConfigError("\n".join(problems)) from None
    if config.judge is None:
        # As the command refuses it (`validate_config`): without a judge an LLM-judge metric would be answered by the
        # simulator, whose verdicts mean nothing, under a real model's name.
        judged = [spec.get("name") or spec.get("type") for spec in specs if _judged(spec)]
        if judged:
            raise ConfigError(f"evaluate(metrics=...): {', '.join(map(str, judged))}: LLM-judge metric(s): pass judge={{...}} "
                              "(provider, model) to say which judge answers them, e.g. judge={'provider': 'openai', 'model': 'gpt-4o-mini'}")
    return config


def _judged(spec: dict[str, Any]) -> bool:
    # An LLM-judge metric (one with a prompt version); a spec that does not build is the run's to report, as today.
    try:
        metric = registry.build_metric(spec)
    except Exception:
        return False
    return bool(getattr(type(metric), "prompt_version", None))


async def aevaluate(
    cases: Cases,
    metrics: Iterable[MetricLike],
    *,
    judge: Section | None = None,
    limits: Section | None = None,
    budget: Section | None = None,
    cache: Section | str | Path | None = None,
    run_dir: str | Path | None = None,
    target: Section | None = None,
    trials: int = 1,
    force: bool = False,
    metric_timeout_s: float | None = 60.0,
) -> RunReport:
    """Run the pipeline on `cases` and return the report (async; see `evaluate`)."""
    from tracejudge.engine import runner
    from tracejudge.stages.load.memory import MemorySource

    instances, specs = resolve_metrics(metrics)
    keep = run_dir is not None
    source = MemorySource(cases, label="<cases>", fingerprinted=keep)  # a temporary run directory is never resumed
    tmp: tempfile.TemporaryDirectory[str] | None = None
    if run_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="tracejudge-run-")
        path = Path(tmp.name)
    else:
        path = Path(run_dir)
    try:
        config = build_config(
            specs, judge=judge, limits=limits, budget=budget, cache=cache, run_dir=path, target=target, trials=trials,
            metric_timeout_s=metric_timeout_s,
        )
        try:
            outcome = await runner.run(config, run_dir=path, source=source, metrics=instances, force=force)
        except ManifestMismatch as exc:  # the CLI's refusal names its flags; here the arguments that do the same
            raise refusal(path, exc.changes, _OPTIONS) from None
        results = _standing_results(path)
        report = RunReport(
            results=results,
            summary=outcome.summary,
            run_dir=path if keep else None,
            new_results=outcome.new_results,
            skipped_finished=outcome.skipped_finished,
            interrupted=outcome.interrupted,
        )
        report._temporary = not keep
        return report
    finally:
        if tmp is not None:
            tmp.cleanup()


def evaluate(
    cases: Cases,
    metrics: Iterable[MetricLike],
    *,
    judge: Section | None = None,
    limits: Section | None = None,
    budget: Section | None = None,
    cache: Section | str | Path | None = None,
    run_dir: str | Path | None = None,
    target: Section | None = None,
    trials: int = 1,
    force: bool = False,
    metric_timeout_s: float | None = 60.0,
) -> RunReport:
    """Run exactly the pipeline `tracejudge run` runs, on cases from memory.

    Args:
        cases: an iterable or async iterable of `Case` objects or mappings in
            the native record shape; consumed lazily. An invalid item becomes
            an `invalid_input` result located at `<cases>:N` (its 1-based
            position), it does not stop the run.
        metrics: metric instances (`ToolCalls(arguments="exact")`), metric
            classes (built with defaults, e.g. a `@metric` function), or specs
            as in a config (`{"type": "TrajectoryMatch", "order": "exact"}`,
            `{"type": "mypkg.metrics:no_failed_tools"}`).
        judge, limits, budget, cache: the config sections of the same names,
            as models or mappings (`cache` may also be a folder path).
        run_dir: the run directory; pass the same one again to resume. `None`
            runs in a temporary directory that is removed afterwards.
        target: a live target section (`{kind: python, callable: ...}`, see README).
        trials: runs per case (`run.trials`).
        force: resume a `run_dir` started with another config, or with cases
            since changed (the CLI's `--force`): the results already there are kept.
        metric_timeout_s: seconds one deterministic metric call may take before it is cut and scored as
            an error (`run.metric_timeout_s`; `None`: unbounded). Sync metrics are cut only when the run
            is on the main thread (not when `evaluate` is called inside a running event loop).

    Returns a `RunReport`. Raises `ConfigError` for invalid metrics or
    sections, the run directory's `LockedError` / `ManifestMismatch` as the CLI does
    (a case whose content changed since its result was written is a change, as an edited dataset file is),
    and an exception the `cases` iterable raises as itself (not in an exception group).
    Called inside a running event loop (a notebook), it runs the pipeline
    on a worker thread; async-iterable `cases` then need `await aevaluate`.
    """

    async def main() -> RunReport:
        return await aevaluate(
            cases, metrics, judge=judge, limits=limits, budget=budget, cache=cache, run_dir=run_dir, target=target, trials=trials,
            force=force, metric_timeout_s=metric_timeout_s,
        )

    if not _in_event_loop():
        return anyio.run(main)
    if isinstance(cases, AsyncIterable):
        raise TypeError("evaluate() was called inside a running event loop with async-iterable cases; use `await aevaluate(...)`")
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, main).result()


def _standing_results(run_dir: Path) -> list[CaseResult]:
    """The results of `run_dir` in file order, as `report` counts them: a damaged line (not JSON, a score of NaN typed in
    by hand) is left out, not raised as a `ValidationError` after the run; the run warned of it and redid its case."""
    from tracejudge.engine.result_shape import check_score_values

    out: list[CaseResult] = []
    for line in store.iter_current_result_lines(run_dir / store.RESULTS):
        try:
            result = CaseResult.model_validate_json(line)
            check_score_values(result)
        except ValueError:
            continue
        out.append(result)
    return out


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class Evaluator:
    """`evaluate` with run settings bound once (the pytest fixture hands one out).

    Keyword arguments are the defaults of every call (`judge`, `limits`,
    `budget`, `cache`, `target`, `trials`, `run_dir`, `force`); a call may override
    any of them.
    """

    def __init__(self, **defaults: Any) -> None:
        allowed = {"judge", "limits", "budget", "cache", "target", "trials", "run_dir", "force"}
        unknown = set(defaults) - allowed
        if unknown:
            raise TypeError(f"Evaluator: unknown setting(s) {sorted(unknown)}; expected some of {sorted(allowed)}")
        self.defaults = defaults

    def evaluate(self, cases: Cases, metrics: Iterable[MetricLike], **overrides: Any) -> RunReport:
        """`tracejudge.evaluate` with this evaluator's settings."""
        return evaluate(cases, metrics, **{**self.defaults, **overrides})

    async def aevaluate(self, cases: Cases, metrics: Iterable[MetricLike], **overrides: Any) -> RunReport:
        """`tracejudge.aevaluate` with this evaluator's settings."""
        return await aevaluate(cases, metrics, **{**self.defaults, **overrides})

    def evaluate_case(self, case: CaseLike, metrics: Sequence[MetricLike] | MetricLike, **overrides: Any) -> CaseResult:
        """Run one case through the pipeline and return its `CaseResult` (trial 0)."""
        many = metrics if isinstance(metrics, Sequence) and not isinstance(metrics, (str, Mapping)) else [metrics]
        report = self.evaluate([case], many, **overrides)
        return report.results[0]
