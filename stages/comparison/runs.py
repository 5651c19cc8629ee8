"""Compare two runs result by result: `tracejudge compare RUN_A RUN_B`.

Results are paired by `(case_id, trial)`. For each metric, over the pairs
where both runs computed a value (status `ok`, value not null):

- `delta` = mean(B) − mean(A) over those pairs (B is the newer run);
- `ci95`: a paired percentile bootstrap interval of the mean delta (the pairs'
  deltas resampled with replacement, seeded; from a sample of deltas (keyed by case and trial),
  rescaled as in `tracejudge.stages.aggregate.stats.bootstrap_mean_ci`);
- `p_value`: a two-sided paired sign-flip randomization test of mean delta = 0
  (exact below 13 nonzero deltas, else Monte Carlo); no t distribution is
  assumed, so 0/1 scores are handled as they are;
- the pairs that regressed and improved most, each with both runs' reasons;
- `warnings` when a metric's judge (model, prompt version, structured-output
  mode) or options differ between the runs (`tracejudge.stages.comparison.identity`).

Memory: run A is indexed as `(case_id, trial) → values` (a few floats per
result); run B is streamed; reasons are read back only for the listed pairs.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracejudge.core.records import score_counts
from tracejudge.engine import shards
from tracejudge.engine.store import iter_results
from tracejudge.engine.keyset import result_key
from tracejudge.engine.run_lock import holder
from tracejudge.stages.aggregate.stats import KeyedSample, Moments, bootstrap_mean_ci, rank, rng_for, seed_bits, sign_flip_pvalue

__all__ = ["Comparison", "MetricDelta", "Mover", "compare_runs", "delta_is_noise"]


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


@dataclass
class Mover:
    """One (case, trial) whose score moved: values and reasons in A and in B."""

    case_id: str
    trial: int
    a: float
    b: float
    reason_a: str = ""
    reason_b: str = ""

    @property
    def delta(self) -> float:
        return self.b - self.a


@dataclass
class MetricDelta:
    """Paired comparison of one metric. Means and delta are over `pairs`."""

    metric: str
    pairs: int = 0
    mean_a: float | None = None
    mean_b: float | None = None
    delta: float | None = None
    ci95: tuple[float, float] | None = None
    p_value: float | None = None
    regressed: int = 0
    improved: int = 0
    unchanged: int = 0
    scored_only_a: int = 0
    scored_only_b: int = 0
    worst: list[Mover] = field(default_factory=list)
    best: list[Mover] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric, "pairs": self.pairs, "mean_a": _r(self.mean_a), "mean_b": _r(self.mean_b),
            "delta": _r(self.delta), "ci95": None if self.ci95 is None else [_r(self.ci95[0]), _r(self.ci95[1])],
            "p_value": _r(self.p_value), "regressed": self.regressed, "improved": self.improved,
            "unchanged": self.unchanged, "scored_only_a": self.scored_only_a, "scored_only_b": self.scored_only_b,
            "worst": [vars(m) for m in self.worst], "best": [vars(m) for m in self.best],
        }


@dataclass
class Comparison:
    """Everything `compare` reports: per-metric deltas plus how the runs' results paired up."""

    run_a: str
    run_b: str
    results_a: int
    results_b: int
    paired: int
    only_a: int
    only_b: int
    metrics: dict[str, MetricDelta]
    test: str = "paired bootstrap 95% CI of the mean delta + two-sided paired sign-flip randomization test"
    unreadable_a: int = 0  # lines of results.jsonl that are not results, left out (each side)
    unreadable_b: int = 0
    unreadable_lines_a: list[str] = field(default_factory=list)  # the first few of them: `DIR/results.jsonl:N: field: why`
    unreadable_lines_b: list[str] = field(default_factory=list)
    metrics_only_a: list[str] = field(default_factory=list)  # scored in one run only: not compared
    metrics_only_b: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # judges or metric options that differ (`tracejudge.stages.comparison.identity`)
    differences: dict[str, str] = field(default_factory=dict)  # the same, by metric: what differs (the gate's regression checks)
    # Lines repeating a (case, trial) already read on that side (an edited file): counted once, the
    # first line's values used; each names the first few repeats as "case_id#trial".
    repeated_a: list[str] = field(default_factory=list)
    repeated_b: list[str] = field(default_factory=list)
    repeats_a: int = 0
    repeats_b: int = 0
    # Every metric key either run scores, in the order first read (A's, then B's new ones): what a
    # caller asking for metrics by name checks them against (`unknown_metrics`).
    scored_metrics: list[str] = field(default_factory=list)

    def unknown_metrics(self) -> list[str]:
        """The metrics compared that neither run scores (only possible when they were asked for by name)."""
        return [k for k in self.metrics if k not in self.scored_metrics]

    def as_dict(self) -> dict[str, Any]:
        return {
            "run_a": self.run_a, "run_b": self.run_b, "results_a": self.results_a, "results_b": self.results_b,
            "paired": self.paired, "only_a": self.only_a, "only_b": self.only_b, "test": self.test,
            "unreadable_a": self.unreadable_a, "unreadable_b": self.unreadable_b,
            "unreadable_lines_a": self.unreadable_lines_a, "unreadable_lines_b": self.unreadable_lines_b,
            "repeats_a": self.repeats_a, "repeats_b": self.repeats_b, "repeated_a": self.repeated_a, "repeated_b": self.repeated_b,
            "metrics_only_a": self.metrics_only_a, "metrics_only_b": self.metrics_only_b,
            "metrics": {k: v.as_dict() for k, v in self.metrics.items()}, "warnings": self.warnings,
        }


def _value(result: dict[str, Any], metric: str) -> float | None:
    s = (result.get("scores") or {}).get(metric)
    if not isinstance(s, dict) or not score_counts(result.get("status", "ok"), s.get("value")):
        return None
    return float(s["value"])


def _key(result: dict[str, Any]) -> tuple[str, int]:
    return (str(result["case_id"]), int(result.get("trial", 0)))


_NAMED = 3  # unreadable lines a side names (`unreadable_lines_a`); the rest are counted


def _results_of(dirs: list[Path], unreadable: list[int] | None = None, named: list[str] | None = None) -> Iterator[dict[str, Any]]:
    # `unreadable[0]` counts the standing lines that are not results; `named` gets the first few, `DIR/results.jsonl:N: why`.
    for d in dirs:
        def name(lineno: int, why: str, d: Path = d) -> None:
            if named is not None and len(named) < _NAMED:
                named.append(f"{d / 'results.jsonl'}:{lineno}: {why}")

        # A last line cut off mid-write is named like any damaged line, unless a process still writes the run (it is
        # then a line being written, finished in a moment).
        yield from iter_results(d, unreadable, name, torn=holder(d) is None)


def compare_runs(
    run_a: Path | Sequence[Path],
    run_b: Path | Sequence[Path],
    *,
    metrics: list[str] | None = None,
    top: int = 10,
    seed: int = 0,
    resamples: int = 2000,
    reservoir_size: int = 5000,
) -> Comparison:
    """Pair the results of two run directories by (case, trial) and compare each metric.

    Args:
        run_a: the baseline (older) run directory, or its shard directories
            (several, or a name standing for them: `tracejudge.engine.shards.expand`).
        run_b: the current (newer) run, likewise; deltas are B − A.
        metrics: metric keys to compare (default: every key scored in either run).
        top: how many most-regressed and most-improved pairs to list per metric.
        seed: seeds the bootstrap and the randomization test.

    Raises `TracejudgeError` when a directory has no `results.jsonl`.
    """
    dirs_a, dirs_b = shards.expand(run_a), shards.expand(run_b)
    index: dict[tuple[str, int], tuple[float | None, ...]] = {}
    keys: list[str] = list(metrics or [])
    discover = metrics is None
    results_a = 0
    bad_a, bad_b = [0], [0]
    named_a: list[str] = []
    named_b: list[str] = []
    # Pass 1 needs the metric list before indexing values; discover it from A's first
    # lines lazily: values are stored by position in `keys`, which only grows.
    rep_a: list[str] = []
    rep_b: list[str] = []
    repeats = [0, 0]
    keys_a: dict[str, None] = {}
    for res in _results_of(dirs_a, bad_a, named_a):
        if _repeat(_key(res), index, rep_a, repeats, 0):
            continue
        results_a += 1
        for k in res.get("scores") or {}:
            keys_a[k] = None
            if discover and k not in keys:
                keys.append(k)
        index[_key(res)] = tuple(_value(res, k) for k in keys)

    moments = {k: (Moments(), Moments(), Moments()) for k in keys}
    # Sampled by a hash of each pair's (case, trial), so B's line order does not change the interval.
    deltas = {k: KeyedSample(reservoir_size) for k in keys}
    sample_seed = seed_bits(seed, "compare-sample")
    out = {k: MetricDelta(k) for k in keys}
    worst: dict[str, list[_HeapEntry]] = {k: [] for k in keys}
    best: dict[str, list[_HeapEntry]] = {k: [] for k in keys}
    seen_b: set[tuple[str, int]] = set()
    results_b = paired = only_b = 0
    keys_b: dict[str, None] = {}
    for res in _results_of(dirs_b, bad_b, named_b):
        key = _key(res)
        if _repeat(key, seen_b, rep_b, repeats, 1):
            continue
        results_b += 1
        for k in res.get("scores") or {}:
            keys_b[k] = None
        seen_b.add(key)
        a_vals = index.get(key)
        if a_vals is None:
            only_b += 1
            continue
        paired += 1
        h = rank(result_key(*key), sample_seed)
        for i, k in enumerate(keys):
            a = a_vals[i] if i < len(a_vals) else None
            b = _value(res, k)
            md = out[k]
            if a is None or b is None:
                md.scored_only_a += a is not None and b is None
                md.scored_only_b += b is not None and a is None
                continue
            d = b - a
            ma, mb, mdl = moments[k]
            ma.add(a)
            mb.add(b)
            mdl.add(d)
            deltas[k].add(h, d)
            if d < -1e-12:
                md.regressed += 1
                _push(worst[k], (-d, key[0], key[1], a, b), top)
            elif d > 1e-12:
                md.improved += 1
                _push(best[k], (d, key[0], key[1], a, b), top)
            else:
                md.unchanged += 1
    only_a = sum(1 for key in index if key not in seen_b)
    del index, seen_b

    wanted: dict[tuple[str, int], None] = {}
    for k in keys:
        md = out[k]
        ma, mb, mdl = moments[k]
        md.pairs = mdl.n
        if mdl.n:
            md.mean_a, md.mean_b, md.delta = ma.mean, mb.mean, mdl.mean
            md.ci95 = bootstrap_mean_ci(deltas[k].values, n_total=mdl.n, mean_total=mdl.mean,
                                        rng=rng_for(seed, "compare-bootstrap", k), resamples=resamples)
            md.p_value = sign_flip_pvalue(deltas[k].values, rng=rng_for(seed, "compare-signflip", k), resamples=resamples)
            if md.p_value is None:
                md.p_value = 1.0
        md.worst = [Mover(c, t, a, b) for _, c, t, a, b in _ranked(worst[k])]
        md.best = [Mover(c, t, a, b) for _, c, t, a, b in _ranked(best[k])]
        for m in md.worst + md.best:
            wanted[(m.case_id, m.trial)] = None
    if wanted:
        reasons_a = _reasons(dirs_a, wanted, keys)
        reasons_b = _reasons(dirs_b, wanted, keys)
        for k in keys:
            for m in out[k].worst + out[k].best:
                m.reason_a = reasons_a.get((m.case_id, m.trial, k), "")
                m.reason_b = reasons_b.get((m.case_id, m.trial, k), "")
    from tracejudge.stages.comparison.identity import identity_differences, warning_line

    differences = identity_differences(dirs_a, dirs_b, keys)
    return Comparison(_name(dirs_a), _name(dirs_b), results_a, results_b, paired, only_a, only_b, out,
                      unreadable_a=bad_a[0], unreadable_b=bad_b[0], unreadable_lines_a=named_a, unreadable_lines_b=named_b,
                      differences=differences,
                      warnings=[warning_line(m, d) for m, d in differences.items()],
                      # Of the metrics compared (every one, or those asked for by name), those one run alone scores: no pair.
                      metrics_only_a=[k for k in keys if k in keys_a and k not in keys_b],
                      metrics_only_b=[k for k in keys_b if k not in keys_a and (discover or k in out)],
                      repeated_a=rep_a, repeated_b=rep_b, repeats_a=repeats[0], repeats_b=repeats[1],
                      scored_metrics=list({**keys_a, **keys_b}))


def _repeat(key: tuple[str, int], seen: Any, names: list[str], counts: list[int], side: int) -> bool:
    # A (case, trial) already read on this side: counted once (a run writes one standing line per key).
    if key not in seen:
        return False
    counts[side] += 1
    if len(names) < 5:
        names.append(f"{key[0]}#{key[1]}")
    return True


# A moved pair: (|delta|, case_id, trial, value in A, value in B).
_Move = tuple[float, str, int, float, float]
# A heap entry: (ordering key, move); see `_push`.
_HeapEntry = tuple[tuple[float, tuple[int, ...], int], _Move]


def _push(heap: list[_HeapEntry], item: _Move, top: int) -> None:
    # A min-heap of the `top` largest moves; ties broken by case id so the list is deterministic.
    key = (item[0], _neg(item[1]), -item[2])
    entry = (key, item)
    if len(heap) < top:
        heapq.heappush(heap, entry)
    elif entry > heap[0]:
        heapq.heapreplace(heap, entry)


def _ranked(heap: list[_HeapEntry]) -> list[_Move]:
    return [item for _, item in sorted(heap, reverse=True)]


def _neg(s: str) -> tuple[int, ...]:
    # Order strings descending inside a min-heap keyed ascending.
    return tuple(-ord(ch) for ch in s) + (1,)


def _name(dirs: list[Path]) -> str:
    return str(dirs[0]) if len(dirs) == 1 else " + ".join(map(str, dirs))


def _reasons(dirs: list[Path], wanted: dict[tuple[str, int], None], keys: list[str]) -> dict[tuple[str, int, str], str]:
    got: dict[tuple[str, int, str], str] = {}
    for res in _results_of(dirs):
        key = _key(res)
        if key not in wanted:
            continue
        for k in keys:
            s = (res.get("scores") or {}).get(k)
            if isinstance(s, dict):
                got[(key[0], key[1], k)] = str(s.get("reason", ""))
            elif res.get("status", "ok") != "ok":
                err = res.get("error") or {}
                got[(key[0], key[1], k)] = f"{res.get('status')}: {err.get('message', '')}"
    return got


def delta_is_noise(md: MetricDelta) -> bool:
    """True when the paired 95% CI of the delta contains 0 (or there is none)."""
    return md.ci95 is None or md.ci95[1] >= 0.0 or math.isclose(md.ci95[1], 0.0, abs_tol=1e-12)
