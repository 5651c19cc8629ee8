"""The `summary.json` body of an `Aggregator` (`fold.Aggregator.summary`): every metric's block, pass@k, breakdowns
by group in the order their labels are shown, and how the figures were made (`CI_METHOD`, the denominators)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tracejudge.stages.aggregate.group_labels import shown_labels
from tracejudge.stages.aggregate.pass_at_k import PassAtKTracker, _Group, _Snapshot, spec_figure

if TYPE_CHECKING:
    from tracejudge.stages.aggregate.fold import Aggregator

__all__ = ["CI_METHOD", "summary_of"]

CI_METHOD = (
    "95% percentile bootstrap of the mean over scored results, seeded; from a uniform sample "
    "of at most reservoir_size values (those whose (case, trial) keys hash lowest under the seed), "
    "deviations scaled by sqrt(sample/scored) when the sample is smaller"
)


def _pass_at_k_of(agg: Aggregator, snaps: dict[tuple[Any, ...], _Snapshot], metric: str, group: _Group) -> dict[str, Any] | None:
    snap = snaps.get((metric, None))
    if snap is None or agg.trials <= 1:
        return None
    t = agg.trackers[(metric, None)]
    return {str(k): PassAtKTracker.figure(*snap, group, k) for k in t.ks}


def summary_of(agg: Aggregator) -> dict[str, Any]:
    """The `summary.json` body of `agg` (without the run-level figures the runner adds); layout in `fold`'s docstring."""
    resamples = agg.settings.bootstrap_resamples
    agg.settle()
    snaps = {key: t.snapshot() for key, t in agg.trackers.items()}
    metrics: dict[str, Any] = {}
    for key, s in agg.metrics.items():
        block = s.as_dict(agg.results, resamples)
        pk = _pass_at_k_of(agg, snaps, key, ("", ""))
        if pk is not None:
            block["pass_at_k"] = pk
        metrics[key] = block
    pass_at_k_block: dict[str, Any] = {}
    for spec in agg.pass_at_k_specs:
        pass_at_k_block[spec.key] = {
            "metric": spec.metric, "k": spec.k, "threshold": spec.threshold, "trials": agg.trials,
            "estimator": getattr(spec, "estimator", "pass@k"), "group_by": getattr(spec, "group_by", None),
            **spec_figure(agg.trackers, snaps, spec, ("", "")),
        }
    breakdowns: dict[str, dict[str, Any]] = {}
    shown: dict[str, dict[str, str]] = {}
    for name, value in agg.groups:
        if name.startswith("metadata."):
            shown.setdefault(name, {})[value] = value
    shown = {name: shown_labels(keys) for name, keys in shown.items()}
    # In the order of the labels shown alone (a run whose values never collide lists its groups as it did).
    ordered = sorted(agg.groups.items(), key=lambda item: (item[0][0], shown.get(item[0][0], {}).get(item[0][1], item[0][1]), item[0][1]))
    for (name, value), g in ordered:
        gm = {}
        for key in agg.metrics:
            st = g["metrics"].get(key)
            if st is None:  # a metric first seen after this group's last result
                st = agg._late_stats((name, value), key, g["status"], None)
            block = st.as_dict(g["results"], resamples)
            pk = _pass_at_k_of(agg, snaps, key, (name, value))
            if pk is not None:
                block["pass_at_k"] = pk
            gm[key] = block
        group_pk = {spec.key: spec_figure(agg.trackers, snaps, spec, (name, value)) for spec in agg.pass_at_k_specs}
        entry = {"results": g["results"], "status": dict(sorted(g["status"].items())), "metrics": gm}
        if group_pk:
            entry["pass_at_k"] = group_pk
        breakdowns.setdefault(name, {})[shown[name][value] if name in shown else value] = entry
    return {
        "results": agg.results,
        "status": dict(sorted(agg.status.items())),
        # Results whose agent run ended in an error its trace records (`metadata.run_error`), scored and counted by
        # status as any other; absent when there are none (a run without any writes the summary it wrote before).
        **({"run_errors": agg.run_errors} if agg.run_errors else {}),
        "trials": agg.trials,
        "metrics": metrics,
        "pass_at_k": pass_at_k_block,
        "breakdowns": breakdowns,
        "aggregate": {
            "seed": agg.settings.seed,
            "reservoir_size": agg.settings.reservoir_size,
            "group_reservoir_size": agg.settings.group_reservoir_size,
            "bootstrap_resamples": resamples,
            "ci": CI_METHOD,
            "denominators": "mean, std, ci95 and pass_rate cover `scored` results; `results` counts every result, "
            "and scored + not_computed + not_applicable + excluded == results",
        },
    }
