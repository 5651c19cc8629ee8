"""The aggregate's state as typed JSON, for `checkpoint.json`.

A checkpoint travels with its run directory (CI caches, shared disks), so
reading one must never execute anything: the state is plain JSON validated by
the pydantic models below, and `restore` only copies numbers and strings into
an `Aggregator` built from the *current* config. Anything that does not
validate, or that disagrees with that aggregator (a metric, a group seed, a
pass@k tracker it would not have made), raises `StateError`; the caller then
rebuilds the aggregate from `results.jsonl`.

Binary parts (a bootstrap sample's values and their key hashes) are base64
of little-endian arrays, so a 1,000-value sample costs about 21 kB, not a
JSON list of floats.
"""

from __future__ import annotations

import base64
import heapq
import json
import sys
from array import array
from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from tracejudge.core.record_fields import empty_list
from tracejudge.stages.aggregate.fold import HIST_BINS, Aggregator, MetricStats, _KSum
from tracejudge.stages.aggregate.pass_at_k import GroupedPassTracker, tracker_key
from tracejudge.stages.aggregate.stats import KeyedSample, Moments

__all__ = ["AggregatorState", "StateError", "dump_state", "restore"]

# 2: bootstrap samples chosen by key hash (format 1 held order-dependent reservoirs; rebuilt when met).
# 3: `written_before` (format 2 counted a config metric's results written before it as not applicable; rebuilt when met).
# 4: metadata keys tell the text "1" from the number 1 (`group_labels.metadata_key`).
# 5: each metric's exact sum, for a mean that does not depend on the order results were folded in (earlier formats, which
#    lack it, are rebuilt).
# 6: `raised` (format 5 counted a metric that raised or timed out as not computed alone; rebuilt when met).
# 7: `run_errors` (format 6 did not count the results whose agent run ended in an error; rebuilt when met).
STATE_FORMAT = 7

NonNeg = Annotated[int, Field(ge=0)]


class StateError(ValueError):
    """A stored aggregate state that cannot be used with the current aggregator."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class MomentsState(_Model):
    n: NonNeg
    mean: float
    m2: float


class SampleState(_Model):
    size: NonNeg
    seen: NonNeg
    values: str  # base64 of float64 little-endian, lowest key hash first
    keys: str  # base64 of the values' uint64 key hashes, little-endian, ascending


class MetricStatsState(_Model):
    reservoir_size: NonNeg
    rng_seed: str
    scored: NonNeg
    total: float
    exact: str | None  # the exact sum as hexadecimal text (units of 2**-1074: `metric_stats._fixed`), or null
    passed: NonNeg
    with_verdict: NonNeg
    not_computed: NonNeg
    not_applicable: NonNeg
    written_before: NonNeg
    raised: NonNeg
    excluded: dict[str, NonNeg]
    moments: MomentsState
    histogram: list[NonNeg] = Field(min_length=HIST_BINS, max_length=HIST_BINS)
    sample: SampleState | None = None


class GroupState(_Model):
    breakdown: str
    value: str
    results: NonNeg
    status: dict[str, NonNeg]
    metrics: list[tuple[str, MetricStatsState]]


class PendingCase(_Model):
    case_id: str
    n: NonNeg
    c: NonNeg
    scored: bool
    groups: list[tuple[str, str]]


class TrackerState(_Model):
    metric: str
    threshold: float | None
    ks: list[int]
    pending: list[PendingCase]
    sums: list[tuple[str, str, int, float, NonNeg]]  # breakdown, value, k, total, cases
    no_scored: list[tuple[str, str, NonNeg]]
    too_few: list[tuple[str, str, int, NonNeg]]
    # pass^k and `group_by` trackers (`pass_at_k.GroupedPassTracker`). Defaults: what a per-case pass@k tracker is, so a
    # state written before these fields existed still validates and means what it meant.
    estimator: Literal["pass@k", "pass^k"] = "pass@k"
    group_by: str | None = None
    tasks: list[tuple[str, str, str, NonNeg, NonNeg, bool]] = Field(default_factory=empty_list)  # breakdown, value, task, n, c, scored
    without_key: list[tuple[str, str, NonNeg]] = Field(default_factory=empty_list)  # breakdown, value, results


class AggregatorState(_Model):
    """Everything an `Aggregator` has folded, and nothing it is configured with."""

    format: int
    results: NonNeg
    # (A default only so that a format 6 state validates and is refused by its format, as "state format 6, expected 7".)
    run_errors: NonNeg = 0
    duration_s: float
    status: dict[str, NonNeg]
    metrics: list[tuple[str, MetricStatsState]]
    groups: list[GroupState]
    trackers: list[TrackerState]


def _b64(a: array[Any]) -> str:
    if sys.byteorder == "big":
        a = array(a.typecode, a)
        a.byteswap()
    return base64.b64encode(a.tobytes()).decode("ascii")


def _unb64(text: str, typecode: str) -> array[Any]:
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except ValueError as exc:
        raise StateError(f"bad base64: {exc}") from None
    a = array(typecode)
    if len(raw) % a.itemsize:
        raise StateError("array bytes are not a whole number of items")
    a.frombytes(raw)
    if sys.byteorder == "big":
        a.byteswap()
    return a


def _dump_sample(r: KeyedSample) -> SampleState:
    kept = r.kept()  # (-hash, value) items: no pair list made in between
    return SampleState(size=r.size, seen=r.seen, values=_b64(array("d", [v for _, v in kept])),
                       keys=_b64(array("Q", [-nh for nh, _ in kept])))


def _load_sample(s: SampleState) -> KeyedSample:
    values, keys = _unb64(s.values, "d"), _unb64(s.keys, "Q")
    if len(values) != min(s.seen, s.size) or len(keys) != len(values):
        raise StateError("bootstrap sample holds the wrong number of values")
    if any(a > b for a, b in zip(keys, keys[1:])):
        raise StateError("bootstrap sample's key hashes are not in order")
    heap = [(-h, v) for h, v in zip(keys, values)]
    heapq.heapify(heap)
    return KeyedSample(s.size, s.seen, heap)


def _dump_stats(st: MetricStats) -> MetricStatsState:
    st.settle()
    m = st.moments
    return MetricStatsState(
        reservoir_size=st.reservoir_size, rng_seed=st.rng_seed, scored=st.scored, total=st.total,
        exact=None if st.exact is None else format(st.exact, "x"), passed=st.passed,
        with_verdict=st.with_verdict, not_computed=st.not_computed, not_applicable=st.not_applicable,
        written_before=st.written_before, raised=st.raised, excluded=dict(st.excluded), moments=MomentsState(n=m.n, mean=m.mean, m2=m.m2),
        histogram=list(st.histogram),
        sample=None if st.sample is None else _dump_sample(st.sample),
    )


def _load_stats(s: MetricStatsState, fresh: MetricStats) -> MetricStats:
    if (s.reservoir_size, s.rng_seed) != (fresh.reservoir_size, fresh.rng_seed):
        raise StateError(f"metric stats seeded {s.rng_seed!r} do not belong to this aggregate ({fresh.rng_seed!r})")
    if s.sample is not None and s.sample.size != s.reservoir_size:
        raise StateError("bootstrap sample size disagrees with its metric")
    return MetricStats(
        reservoir_size=s.reservoir_size, rng_seed=s.rng_seed, own=fresh.own, scored=s.scored, total=s.total,
        exact=None if s.exact is None else _hex_int(s.exact), passed=s.passed,
        with_verdict=s.with_verdict, not_computed=s.not_computed, not_applicable=s.not_applicable,
        written_before=s.written_before, raised=s.raised, excluded=Counter(s.excluded), moments=Moments(s.moments.n, s.moments.mean, s.moments.m2),
        histogram=list(s.histogram), sample=None if s.sample is None else _load_sample(s.sample),
    )


def _hex_int(text: str) -> int:
    # A stored exact sum: hexadecimal digits after an optional '-' (`int(text, 16)` also takes '+', `0x`, spaces, '_').
    if not text.removeprefix("-") or len(text) > 2048 or text.removeprefix("-").strip("0123456789abcdef"):
        raise StateError("an exact sum that is not hexadecimal digits")
    return int(text, 16)


def dump_state(agg: Aggregator) -> dict[str, Any]:
    """The aggregate's folded state as a JSON-ready dict (see `AggregatorState`)."""
    agg.settle()  # (first: a group every result falls in then takes the whole run's figures instead of folding its values again)
    trackers = []
    for t in agg.trackers.values():
        if isinstance(t, GroupedPassTracker):  # (its figures are computed from the counts when asked: no sums to keep)
            trackers.append(TrackerState(
                metric=t.metric, threshold=t.threshold, ks=list(t.ks), pending=[], sums=[], no_scored=[], too_few=[],
                estimator=t.estimator, group_by=t.group_by,  # type: ignore[arg-type]
                tasks=[(g[0], g[1], task, e[0], e[1], bool(e[2])) for g, per_task in t.tasks.items() for task, e in per_task.items()],
                without_key=[(g[0], g[1], n) for g, n in t.without_key.items()],
            ))
            continue
        trackers.append(TrackerState(
            metric=t.metric, threshold=t.threshold, ks=list(t.ks), estimator=t.estimator,  # type: ignore[arg-type]
            pending=[PendingCase(case_id=cid, n=e[0], c=e[1], scored=bool(e[2]), groups=[tuple(g) for g in e[3]])
                     for cid, e in t.pending.items()],
            sums=[(g[0], g[1], k, s.total, s.cases) for g, per in t.sums.items() for k, s in per.items()],
            no_scored=[(g[0], g[1], n) for g, n in t.no_scored.items()],
            too_few=[(g[0], g[1], k, n) for (g, k), n in t.too_few.items()],
        ))
    state = AggregatorState(
        format=STATE_FORMAT, results=agg.results, run_errors=agg.run_errors, duration_s=agg.duration_s, status=dict(agg.status),
        metrics=[(k, _dump_stats(s)) for k, s in agg.metrics.items()],
        groups=[GroupState(breakdown=g[0], value=g[1], results=b["results"], status=dict(b["status"]),
                           metrics=[(k, _dump_stats(s)) for k, s in b["metrics"].items()])
                for g, b in agg.groups.items()],
        trackers=trackers,
    )
    return state.model_dump(mode="json")


def restore(data: Any, fresh: Aggregator) -> Aggregator:
    """Fill `fresh` (an empty aggregator built from the current config) with a stored state.

    Raises `StateError` when `data` does not validate as an `AggregatorState`
    or does not fit `fresh`: unknown format, a configured metric missing, a
    seed or reservoir size from other settings, or a pass@k tracker the
    config does not ask for. `fresh` may be partly filled when it raises.
    """
    try:
        # Validated as JSON text: strict mode accepts arrays for tuples only when parsing JSON.
        s = AggregatorState.model_validate_json(json.dumps(data))
    except (ValidationError, TypeError, ValueError) as exc:
        raise StateError(f"does not validate: {str(exc).splitlines()[0]}") from None
    if s.format != STATE_FORMAT:
        raise StateError(f"state format {s.format}, expected {STATE_FORMAT}")
    agg = fresh
    stored = dict(s.metrics)
    missing = [k for k in agg.metric_keys if k not in stored]
    if missing:
        raise StateError(f"no state for metric(s) {missing}")
    agg.results, agg.duration_s, agg.status = s.results, s.duration_s, Counter(s.status)
    if s.run_errors > s.results:
        raise StateError(f"{s.run_errors} run errors among {s.results} results")
    agg.run_errors = s.run_errors
    agg.metrics = {k: _load_stats(v, agg._stats(("", ""), k)) for k, v in s.metrics}
    agg.groups = {}
    agg._group_counts = Counter()
    for g in s.groups:
        key = (g.breakdown, g.value)
        if key in agg.groups:
            raise StateError(f"group {key} stored twice")
        agg.groups[key] = {
            "results": g.results, "status": Counter(g.status),
            "metrics": {k: _load_stats(v, agg._stats(key, k)) for k, v in g.metrics},
        }
        agg._group_counts[g.breakdown] += 1
    keys = [tracker_key(t.metric, t.threshold, t.group_by, t.estimator) for t in s.trackers]
    if set(keys) != set(agg.trackers) or len(s.trackers) != len(agg.trackers):
        raise StateError("pass@k trackers differ from the config's")
    for key, ts in zip(keys, s.trackers):
        t = agg.trackers[key]
        if ts.ks != t.ks:
            raise StateError(f"pass@k of {ts.metric} tracks k={ts.ks}, the config asks for {t.ks}")
        if isinstance(t, GroupedPassTracker):
            _restore_grouped(ts, t)
            continue
        if ts.tasks or ts.without_key:
            raise StateError(f"the per-case tracker of {ts.metric} holds tasks")
        t.pending = {p.case_id: [p.n, p.c, p.scored, tuple(tuple(g) for g in p.groups)] for p in ts.pending}
        t.sums = {}
        for b, v, k, total, cases in ts.sums:
            t.sums.setdefault((b, v), {})[k] = _KSum(total, cases)
        t.no_scored = Counter({(b, v): n for b, v, n in ts.no_scored})
        t.too_few = Counter({((b, v), k): n for b, v, k, n in ts.too_few})
    return agg


def _restore_grouped(ts: TrackerState, t: GroupedPassTracker) -> None:
    """Fill a `group_by` tracker from its stored counts; raises `StateError` for a state no such tracker holds."""
    if ts.pending or ts.sums or ts.no_scored or ts.too_few:
        raise StateError(f"the {ts.group_by!r} tracker of {ts.metric} holds per-case sums")
    t.tasks = {}
    for b, v, task, n, c, scored in ts.tasks:
        per_task = t.tasks.setdefault((b, v), {})
        if task in per_task or c > n or (n and not scored and c):
            raise StateError(f"task {task!r} of group {(b, v)} stored twice or with impossible counts")
        per_task[task] = [n, c, scored]
    t.without_key = Counter({(b, v): n for b, v, n in ts.without_key})
