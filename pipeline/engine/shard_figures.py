"""The run-level figures of a merge of shards (`shards.merge_runs`): what `rebuild` keeps from a summary and cannot
recompute from the merged results (judge spending, elapsed time, completeness, how many results the shards counted)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tracejudge.engine import store

__all__ = ["merged_run_figures"]


def merged_run_figures(dirs: Iterable[Path], missing: list[str], readable: list[int]) -> dict[str, Any]:
    """The run-level part of the merged summary: what `rebuild` keeps and cannot recompute.

    `readable`: each shard's results that are not damaged lines. `results` is what the shards counted (each shard's own
    summary, or its readable results when it has none, whichever is more), so the merge's gate fails on a result a
    shard lost (a damaged line, a file cut short) as that shard's own report does.
    """
    from tracejudge.engine.run_state import last_segment_finished
    from tracejudge.stages.judge.calls.stats import add_counts
    from tracejudge.stages.judge.stage import _ADDITIVE as additive  # the counters the judge itself carries over segments

    complete = not missing
    elapsed = 0.0
    died = 0
    judge: dict[str, Any] = {}
    version = None
    counted = 0
    for d, n in zip(dirs, readable, strict=True):
        try:
            s = json.loads(store.read_text(Path(d) / store.SUMMARY))
        except (OSError, ValueError):
            complete = False  # a shard that never wrote its summary did not finish
            counted += n
            continue
        counted += max(n, _counted(s))
        # A shard killed after a resume keeps the summary of the segment before it: its checkpoint says it did not finish.
        complete = complete and s.get("complete") is True and last_segment_finished(Path(d))
        died += s.get("worker_errors") if isinstance(s.get("worker_errors"), int) else 0
        elapsed = max(elapsed, float(s.get("elapsed_s_total") or 0.0))  # shards run side by side
        version = version or s.get("tracejudge_version")
        for k, v in (s.get("judge") or {}).items():
            if k in additive and (v is None or isinstance(v, (int, float))):  # None: dollars not known in a shard, nor then in all
                judge[k] = add_counts(judge.get(k, 0), v)
            elif k == "error_kinds" and isinstance(v, dict):  # judge errors by kind: each shard's results, added up
                kinds = judge.setdefault(k, {})
                for kind, n in v.items():
                    kinds[kind] = kinds.get(kind, 0) + (n if isinstance(n, int) else 0)
            elif k.startswith("latency_") and isinstance(v, (int, float)):
                judge[k] = max(judge.get(k) or 0, v)  # a percentile does not add up: the slowest shard's (None: one that sent nothing)
            else:
                judge.setdefault(k, v)  # settings (model, mode, caps): the same in every shard
    if "error_kinds" in judge:
        judge["error_kinds"] = dict(sorted(judge["error_kinds"].items()))
    if judge.get("judged_results"):
        judge["error_share"] = round(judge.get("judge_error_results", 0) / judge["judged_results"], 6)
        judge["gate_failed"] = judge["error_share"] > judge.get("max_error_share", 0.0)
    if judge.get("judged_items"):
        judge["parse_failure_rate"] = round(judge.get("parse_failed_items", 0) / judge["judged_items"], 6)
    return {"tracejudge_version": version, "complete": complete, "elapsed_s_total": round(elapsed, 6), "results": counted, "judge": judge,
            **({"worker_errors": died} if died else {}), "shards": {"merged_from": [str(d) for d in dirs], "missing": missing}}


def _counted(summary: Any) -> int:
    """How many results a shard's `summary.json` says its run counted (an earlier report's `lost_results` keeps the
    run's own count), 0 when it says none."""
    if not isinstance(summary, dict):
        return 0
    lost = summary.get("lost_results")
    n = lost.get("counted") if isinstance(lost, dict) else summary.get("results")
    return n if isinstance(n, int) and not isinstance(n, bool) else 0
