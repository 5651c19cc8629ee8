"""A case's own `metrics` merged with the run's: the metric list one case is scored with.

Each function takes `(run_metrics, specs)` (the run's built metrics, the case's metric specs) and
returns the metrics for that case. They are module-level so a worker process can unpickle them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracejudge.core import registry
from tracejudge.llm.redact import redact_quoted

__all__ = ["merge_case_metrics", "merge_unjudged", "merge_without_judge_metrics"]


def merge_case_metrics(run_metrics: Sequence[Any], specs: list[dict[str, Any]]) -> list[Any]:
    """The run's metrics plus the case's own; a case metric with a run metric's key replaces it for this case.

    A spec that does not validate costs only itself: an `InvalidSpec` scoring null with the error as
    reason. Raises `registry.SpecError` (loc `(i, "name")`, or `(i, "type")` when the name defaults to
    the type) when two of the case's own specs have one key: which one to keep is not ours to guess,
    so the case is `invalid_input` (`tracejudge.stages.score.metrics_for`).
    """
    from tracejudge.stages.score.base import InvalidSpec

    extra = []
    first: dict[str, int] = {}
    for i, spec in enumerate(specs):
        try:
            metric = registry.build_metric(spec)
        except registry.SpecError as exc:
            named = spec if isinstance(spec, dict) else {}
            key = next((v for v in (named.get("name"), named.get("type")) if isinstance(v, str) and v), f"metrics[{i}]")
            field = ".".join(map(str, ("metrics", i, *exc.loc)))
            # The path holds the spec's own keys, which may be a credential pasted in the wrong place.
            metric = InvalidSpec(name=key, problem=redact_quoted(f"case metric spec {field} does not validate: {exc.msg}"))
        if metric.key in first:
            by = "name" if isinstance(spec, dict) and spec.get("name") else "type"
            raise registry.SpecError((i, by), f"two of this case's metrics are named {metric.key!r} (metrics.{first[metric.key]} and "
                                              f"metrics.{i}{'; a name defaults to the type' if by == 'type' else ''}): "
                                              "give one a distinct `name`")
        first[metric.key] = i
        extra.append(metric)
    return [m for m in run_metrics if m.key not in first] + extra


def merge_without_judge_metrics(run_metrics: Sequence[Any], specs: list[dict[str, Any]]) -> list[Any]:
    """`merge_case_metrics` less the judge metrics: with a judge stage, a case's own judge metrics are the judge's to score."""
    from tracejudge.stages.judge import is_judge_metric

    return [m for m in merge_case_metrics(run_metrics, specs) if not is_judge_metric(m)]


def merge_unjudged(run_metrics: Sequence[Any], specs: list[dict[str, Any]]) -> list[Any]:
    """`merge_case_metrics` for a run with no `judge:` section: a case's own judge metric scores null saying so.

    Without it the metric reached the deterministic scorer and ended as "metric raised TypeError".
    A judge metric is known by its prompt version, as the config's own check knows it (`validate_config`).
    """
    from tracejudge.stages.score.base import InvalidSpec

    return [InvalidSpec(name=m.key, problem=f"{type(m).__name__} is an LLM-judge metric and this run has no judge configured: "
                                            "add a `judge:` section (provider, model) to the config")
            if getattr(type(m), "prompt_version", None) else m for m in merge_case_metrics(run_metrics, specs)]
