"""Stage `aggregate`: fold results into a summary, one result at a time.

Every figure states its denominator. A metric's `mean`, `std`, `ci95` and
`pass_rate` cover its `scored` results (status `ok` and a non-null value);
`results` is every result of the run, and the results excluded by status
(`excluded`, by status), whose score could not be computed
(`not_computed`; among them `written_before`: results without any score for a
metric of the config's own list, which every result scored with it carries,
so they were written before it was added and kept by `--force`) or that do
not carry the metric at all (`not_applicable`: a case-level metric other
cases lack) are counted beside it, so `scored +
not_computed + not_applicable + sum(excluded) == results` always holds. Of
`not_computed`, `raised` counts the results whose metric raised or timed out
(a bug in the metric, not a value the case lacks), which the gate bounds.
`run_errors` counts the results whose agent run ended in an error its trace records (`metadata.run_error`: a
crashed or limit-stopped sample, a run out of steps or turns); they are scored as recorded, and stay `ok`.

Memory is bounded whatever the run's size: per metric and group, running
moments (Welford), a 10-bin histogram and a sample of at most
`reservoir_size` values for the bootstrap (the values whose (case, trial)
keys hash lowest under the seed, so the interval does not depend on the
order results arrive in: in-process, from workers, or resumed); per breakdown at most
`max_groups` groups (breakdown groups keep smaller reservoirs); for pass@k, a few integers per case whose trials are
not all in yet (trials of one case may arrive interleaved with others').

summary.json layout (per metric block, see `MetricStats.as_dict`)::

    {"results": 10, "status": {"ok": 7, "judge_error": 3}, "trials": 1,
     "metrics": {"writes_exact": {"results": 10, "scored": 7, ...}},
     "pass_at_k": {"pass@3(writes_exact)": {"value": .., "cases": .., ...}},
     "breakdowns": {"tag": {"retail": {"results": .., "status": {..}, "metrics": {..}}},
                    "metadata.domain": {...}},
     "aggregate": {"seed": 0, "ci": "...", ...}}
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from operator import itemgetter
from typing import Any

from tracejudge.core.evalconfig import AggregateConfig
from tracejudge.core.records import LATE_STATUSES, CaseResult, Score, Status
from tracejudge.engine.keyset import result_key, trial_key
from tracejudge.engine.rendered import Finished
from tracejudge.stages.aggregate.fold_summary import summary_of
from tracejudge.stages.aggregate.group_labels import MISSING, OTHER, group_label, group_value, metadata_key, natural_label
from tracejudge.stages.aggregate.metric_stats import _OK, HIST_BINS, MetricStats, _pair
from tracejudge.stages.aggregate.pass_at_k import GroupedPassTracker, PassAtKTracker, _KSum, _passed_on_verdict, new_tracker, tracker_key
from tracejudge.stages.aggregate.stats import rank, ranks, seed_bits

__all__ = ["HIST_BINS", "Aggregator", "MetricStats", "PassAtKTracker", "_KSum", "aggregator_for"]

# Results between two `Aggregator.settle` calls: bounds the scored values waiting to be folded.
SETTLE_EVERY = 1024
_value = itemgetter(0)  # a `Cell`'s value


# Below this many consecutive results in the same groups, a metric's column costs more to gather than it saves.
_SHORT_RUN = 4


def _fold_cells(rows: Any, cells: dict[str, Any], h: int) -> None:
    """Fold one result's `cells` (status `ok`) into `rows`' stats: `(metric, stats of each of its rows)` pairs."""
    get = cells.get
    for key, stats in rows:
        cell = get(key)
        if cell is not None and cell[0] is not None:  # scored: `MetricStats.fold`'s last branch
            for st in stats:
                st.pending.append(cell)
                st.pending_keys.append(h)
        else:
            for st in stats:
                st.fold(_OK, cell, h)


def _count_timed_out(rows: list[dict[str, MetricStats]], keys: tuple[str, ...]) -> None:
    """Count a rendered result's metrics that timed out (`Rendered.timed_out`: not computed, and folded so) as raised
    in each of `rows` (the whole run's stats and its groups')."""
    for row in rows:
        for key in keys:
            row[key].raised += 1


class Aggregator:
    """Fold `CaseResult`s into per-metric stats, breakdowns, pass@k and status counts.

    Args:
        metric_keys: the metrics reported (in order) even when no result has
            a score for them, so an all-error run still lists each metric
            with its exclusions. Other keys met in results are added.
        trials: `run.trials`; with more than one, every metric gets pass@1
            and pass@trials.
        pass_at_k: `PassAtK`/`PassHatK` metric objects (key, metric, k, threshold, group_by,
            estimator, trial_passed) reported under `pass_at_k`.
        settings: the `aggregate:` config section.
    """

    def __init__(
        self,
        metric_keys: list[str],
        *,
        trials: int = 1,
        pass_at_k: list[Any] | None = None,
        settings: AggregateConfig | None = None,
    ) -> None:
        self.settings = settings or AggregateConfig()
        self._sample_seed = seed_bits(self.settings.seed, "sample")
        self.trials = trials
        self.metric_keys = list(metric_keys)
        self._own = frozenset(metric_keys)
        self.status: Counter[str] = Counter()
        self.results = 0
        self.run_errors = 0  # results whose `metadata.run_error` is set (see the module docstring)
        self.duration_s = 0.0
        self.metrics: dict[str, MetricStats] = {k: self._stats(("", ""), k) for k in metric_keys}
        # (breakdown, value) -> {"results": n, "status": Counter, "metrics": {key: MetricStats}}
        self.groups: dict[tuple[str, str], dict[str, Any]] = {}
        self._group_counts: Counter[str] = Counter()
        self.pass_at_k_specs = list(pass_at_k or [])
        self.trackers: dict[tuple[Any, ...], PassAtKTracker | GroupedPassTracker] = {}  # by `pass_at_k.tracker_key`
        if trials > 1:
            for key in metric_keys:
                self._tracker(key, None, _passed_on_verdict, {1, trials})
        for spec in self.pass_at_k_specs:
            self._tracker(spec.metric, spec.threshold, spec.trial_passed, {spec.k},
                          getattr(spec, "group_by", None), getattr(spec, "estimator", "pass@k"))

    def _tracker(self, metric: str, threshold: float | None, passed: Callable[[Score | None], bool], ks: set[int],
                 group_by: str | None = None, estimator: str = "pass@k") -> None:
        key = tracker_key(metric, threshold, group_by, estimator)
        t = self.trackers.get(key)
        if t is None:
            self.trackers[key] = new_tracker(metric, threshold, passed, ks, self.trials, group_by, estimator)
        else:
            t.ks = sorted(set(t.ks) | ks)

    def _stats(self, group: tuple[str, str], key: str) -> MetricStats:
        size = self.settings.reservoir_size if group == ("", "") else self.settings.group_reservoir_size
        # Seeded by the label a metadata group shows alone, as before its key told the text "1" from the number 1:
        # a group's sample, and so its interval, stays what it was.
        label = natural_label(group[1]) if group[0].startswith("metadata.") else group[1]
        return MetricStats(size, f"{self.settings.seed}:{group[0]}={label}:{key}", own=key in self._own)

    def _late_stats(self, group: tuple[str, str], key: str, status_so_far: Counter[str], current: CaseResult | None) -> MetricStats:
        # Stats created after some results were folded must still count those results:
        # the non-ok ones as excluded, the ok ones as results without the metric. `status_so_far`
        # already includes `current`, which `fold` then counts itself.
        st = self._stats(group, key)
        before = Counter(status_so_far)
        if current is not None:
            before[current.status.value if isinstance(current.status, Status) else str(current.status)] -= 1
        for name, n in before.items():
            if n <= 0:
                continue
            if name == Status.ok.value:
                st.count_absent(n)
            else:
                st.excluded[name] += n
        return st

    def _groups_of(self, result: CaseResult) -> tuple[tuple[str, str], ...]:
        """The groups `result` counts in, each once, in the order first met (admitting new ones, see `_admit`).

        De-duplicated after admission: two values of one breakdown that both overflow into "(other)"
        (two tags, or a `group_by` field listed twice) are one group, and a result counts once in it.
        """
        out: list[tuple[str, str]] = []
        known = self.groups
        if self.settings.by_tags:
            tags = result.tags
            for t in (tags if len(tags) < 2 else dict.fromkeys(tags)):
                g = ("tag", group_label(t) if type(t) is str and t[:1] == "(" else t)
                out.append(g if g in known else self._admit(g))
        for name in self.settings.group_by:
            v = result.metadata.get(name, None) if name in result.metadata else None
            label = MISSING if name not in result.metadata else metadata_key(v)
            out.append(self._admit((f"metadata.{name}", label)))
        return tuple(out) if len(out) < 2 else tuple(dict.fromkeys(out))

    def _admit(self, g: tuple[str, str]) -> tuple[str, str]:
        # Bound memory: a breakdown with too many distinct values folds the rest into "(other)".
        if g in self.groups:
            return g
        if self._group_counts[g[0]] >= self.settings.max_groups:
            g = (g[0], OTHER)
            if g in self.groups:
                return g
        self._group_counts[g[0]] += 1
        self.groups[g] = {"results": 0, "status": Counter(), "metrics": {}}
        return g

    def fold(self, result: CaseResult) -> None:
        """Add one result. O(metrics × groups) time; memory bounded (scored values wait in batches of `SETTLE_EVERY` results)."""
        self.results += 1
        st = result.status
        status = st.value if isinstance(st, Status) else str(st)
        self.status[status] += 1
        self.duration_s += result.duration_s
        if result.metadata.get("run_error"):
            self.run_errors += 1
        scores = result.scores
        metrics = self.metrics
        for key in scores:
            if key not in metrics:  # a case-level metric: earlier results did not compute it
                metrics[key] = self._late_stats(("", ""), key, self.status, result)
        groups = self._groups_of(result)
        rows = [metrics]
        for g in groups:
            block = self.groups[g]
            block["results"] += 1
            block["status"][status] += 1
            gm = block["metrics"]
            if len(gm) != len(metrics):
                for key in metrics:
                    if key not in gm:
                        gm[key] = self._late_stats(g, key, block["status"], result)
            rows.append(gm)
        counts = status == _OK or status in LATE_STATUSES
        # Which values the bootstrap samples keep is decided by this hash of the (case, trial), not by arrival
        # order; a result rendered where it was scored brings its id's hash (what `result_key` would compute).
        if type(result) is Finished:
            key = trial_key(result.rendered.id_hash, result.trial)
            timed_out = result.rendered.timed_out  # (its `Cell`s carry no reason: `MetricStats.raised`)
        else:
            key, timed_out = result_key(result.case_id, result.trial), ()
        h = rank(key, self._sample_seed)
        for key in metrics:
            score = scores.get(key)
            if counts and score is not None and score.value is not None:  # scored: `MetricStats.fold`'s last branch, inlined
                pair = _pair(score)
                for row in rows:
                    st = row[key]
                    st.pending.append(pair)
                    st.pending_keys.append(h)
            else:
                for row in rows:
                    row[key].fold(status, score, h)
        if timed_out:
            _count_timed_out(rows, timed_out)
        for tracker in self.trackers.values():
            tracker.fold(result, status, groups)
        if self.results % SETTLE_EVERY == 0:
            self.settle()

    def fold_finished(self, batch: list[Any], keys: list[int] | None = None) -> None:
        """`fold` each result of `batch` in order: results rendered where they were scored (`engine.rendered.Finished`:
        status `ok`, `Cell` scores). `keys`: the results' `trial_key`s, when the caller has them already.

        The same counts, sums and pending values, in the same order, as one `fold` per result: the work `fold`
        does per result and metric is done per run of consecutive results that fall in the same groups,
        one metric at a time (a metric every result of the run scored: one `extend` of each row's pending
        lists). A result carrying a metric no earlier one had, and any run tracking pass@k, take `fold` itself.
        """
        if self.trackers:
            for result in batch:
                self.fold(result)
            return
        if keys is None:
            keys = [trial_key(r.rendered.id_hash, r.trial) for r in batch]
        # The sample's order (as `fold` computes it), for the whole batch in one pass.
        hashes = ranks(keys, self._sample_seed)
        groups_of: dict[tuple[str, ...], tuple[tuple[str, str], ...]] = {}  # by tags, while no group_by field is read
        rows_of: dict[tuple[tuple[str, str], ...], list[tuple[str, tuple[MetricStats, ...]]]] = {}
        at, n = 0, len(batch)
        while True:
            before = self.results
            at = self._fold_segment(batch, hashes, at, groups_of, rows_of)
            if at == n:
                break
            self.fold(batch[at])  # (a metric met late adds stats to every row)
            rows_of.clear()
            at += 1
        if self.results // SETTLE_EVERY != before // SETTLE_EVERY:
            self.settle()

    def _fold_segment(self, batch: list[Any], hashes: list[int], at: int, groups_of: dict[tuple[str, ...], tuple[tuple[str, str], ...]],
                      rows_of: dict[tuple[tuple[str, str], ...], list[tuple[str, tuple[MetricStats, ...]]]]) -> int:
        """Fold `batch[at:]` up to the first result carrying a metric not in `self.metrics`; return that result's index (or the batch's size).

        `groups_of` and `rows_of` are the caller's caches for the batch: the groups of a tags tuple (admitted
        once, then fixed), and each group tuple's metric stats per metric (valid while the metrics stay the same).
        """
        metrics = self.metrics
        known = metrics.keys()
        cache = None if self.settings.group_by else groups_of
        runs: list[tuple[tuple[tuple[str, str], ...], int]] = []  # (groups, first index) of each run of results in the same groups
        timed: list[tuple[tuple[tuple[str, str], ...], tuple[str, ...]]] = []  # (groups, metrics timed out) of each result with any
        prev = tags = None
        duration = self.duration_s
        run_errors = self.run_errors
        stop = len(batch)
        for i in range(at, stop):
            result = batch[i]
            if not result.scores.keys() <= known:
                stop = i
                break
            duration += result.duration_s
            if result.metadata.get("run_error"):  # (one lookup: most results have none)
                run_errors += 1
            if cache is None:
                groups = self._groups_of(result)
            elif result.tags != tags:  # (most results carry the tags of the one before)
                tags = result.tags
                groups = cache.get(key := tuple(tags))
                if groups is None:
                    groups = cache[key] = self._groups_of(result)
            if groups != prev:
                runs.append((groups, i))
                prev = groups
            if result.rendered.timed_out:
                timed.append((groups, result.rendered.timed_out))
        self.results += stop - at
        self.status[_OK] += stop - at
        self.duration_s = duration
        self.run_errors = run_errors
        for r, (groups, first) in enumerate(runs):
            last = runs[r + 1][1] if r + 1 < len(runs) else stop
            for g in groups:
                block = self.groups[g]
                gm = block["metrics"]
                if len(gm) != len(metrics):  # a new group (or one a late metric missed): its stats count its results before this run
                    for key in metrics:
                        if key not in gm:
                            gm[key] = self._late_stats(g, key, block["status"], None)
                    rows_of.pop(groups, None)
                block["results"] += last - first
                block["status"][_OK] += last - first
            rows = rows_of.get(groups)
            if rows is None:
                rows = rows_of[groups] = [(key, (st, *(self.groups[g]["metrics"][key] for g in groups))) for key, st in metrics.items()]
            if last - first < _SHORT_RUN:
                for i in range(first, last):
                    _fold_cells(rows, batch[i].scores, hashes[i])
                continue
            cells = [result.scores for result in batch[first:last]]
            hs = hashes[first:last]
            for key, stats in rows:
                try:
                    column = list(map(itemgetter(key), cells))
                except KeyError:
                    column = None
                if column is not None and None not in map(_value, column):  # all scored: `MetricStats.fold`'s last branch
                    for st in stats:
                        st.pending.extend(column)
                        st.pending_keys.extend(hs)
                else:
                    for cells_of, h in zip(cells, hs):
                        _fold_cells(((key, stats),), cells_of, h)
        for groups, keys in timed:  # (every group's stats exist by now)
            _count_timed_out([metrics, *(self.groups[g]["metrics"] for g in groups)], keys)
        return stop

    def settle(self) -> None:
        """Fold every metric's pending values (`MetricStats.settle`); readers of the figures call this first."""
        whole = {key: st.settle() for key, st in self.metrics.items()}
        for block in self.groups.values():
            for key, st in block["metrics"].items():
                st.settle(whole.get(key))

    def summary(self) -> dict[str, Any]:
        """The `summary.json` body (without the run-level figures the runner adds): `fold_summary.summary_of`."""
        return summary_of(self)


def aggregator_for(config: Any, metrics: list[Any]) -> Aggregator:
    """The aggregator a run of `config` uses; `metrics` are the built metric objects.

    Metrics computed over trials (`PassAtK`, `PassHatK`) are reported under `pass_at_k`,
    not as per-result metrics.
    """
    per_result = [m.key for m in metrics if not getattr(m, "over_trials", False)]
    over_trials = [m for m in metrics if getattr(m, "over_trials", False)]
    return Aggregator(per_result, trials=config.run.trials, pass_at_k=over_trials, settings=config.aggregate)
