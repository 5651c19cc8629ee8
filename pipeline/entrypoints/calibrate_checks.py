"""What `tracejudge calibrate` (`tracejudge.entrypoints.calibrate`) checks besides the agreement figures: which labelled
cases are worth judging at all (`judged_ids`), the judge's errors and budget over the labelled cases, and why no label
met a verdict (exit 2: nothing was measured).

With a labels file, calibrate judges only the labelled cases, in `RUN_DIR-calibrate`, which keeps the results of cases
an earlier labels file named; those measured nothing of these labels, so the judge's checks count only the labelled
cases' results (`labelled_checks`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["judge_errors", "judged_ids", "labelled_cases", "labelled_checks", "no_match", "unjudged"]


def judge_errors(outcome: Any, ids: set[str] | None = None) -> dict[str, Any]:
    """The run's judge error kinds, its first judge error (`error_note.first_judge_error`) and the line naming both; of the
    cases in `ids` only when given (`labelled_checks`)."""
    from tracejudge.engine.store import iter_results
    from tracejudge.stages.judge.error_note import error_line, first_judge_error

    if ids is None:
        kinds = dict((outcome.summary.get("judge") or {}).get("error_kinds") or {})
        first = first_judge_error(iter_results(outcome.run_dir)) if kinds else None
    else:
        mine = [r for r in iter_results(outcome.run_dir) if str(r.get("case_id")) in ids]
        kinds = {}
        for r in mine:
            for s in (r.get("scores") or {}).values():
                kind = (s.get("details") or {}).get("error_kind") if isinstance(s, dict) and s.get("value") is None else None
                if isinstance(kind, str):
                    kinds[kind] = kinds.get(kind, 0) + 1
        first = first_judge_error(mine) if kinds else None
    where = ""
    if first is not None:
        where = f"case {first['case_id']} trial {first['trial']}" + (f", {first['metric']}" if first["metric"] else "")
    return {"kinds": kinds, "first": first, "line": error_line(kinds, first, where)}


def labelled_checks(outcome: Any, ids: set[str]) -> list[Any]:
    """The run's judge checks (`gate_judge`: `judge max_error_share`, `judge budget`) over the results of the cases in
    `ids` only: `RUN_DIR-calibrate` keeps the results of cases an earlier labels file named, which measured nothing of
    these labels ("judge errors: 0 of 13 judged results" for 1 label). A result counts as the judge stage counts it
    (`tracejudge.engine.journal_counts`): judged when a score carries judge provenance or it ended at the judge."""
    from tracejudge.engine.store import iter_results
    from tracejudge.stages.aggregate.gate_judge import budget_check, judge_error_check

    judged = errors = skipped = results = 0
    for r in iter_results(outcome.run_dir):
        if str(r.get("case_id")) not in ids:
            continue
        status = r.get("status", "ok")
        results += 1
        error = status in ("judge_error", "rate_limited")
        skipped += status == "skipped_budget"
        errors += error
        judged += error or status == "skipped_budget" or any(isinstance(s, dict) and s.get("judge") is not None
                                                              for s in (r.get("scores") or {}).values())
    judge = dict(outcome.summary.get("judge") or {})
    if "judged_results" in judge:
        answered = judged - min(skipped, judged)
        judge.update(judged_results=judged, judge_error_results=errors, error_share=round(errors / answered, 6) if answered else 0.0)
    summary = {"judge": judge, "status": {"skipped_budget": skipped}, "results": results, "metrics": {}}
    return [c for c in (budget_check(summary), judge_error_check(summary)) if c is not None]


def no_match(block: dict[str, Any]) -> str:
    """Why no label met a scored verdict (`tracejudge calibrate` exits 2 on it): from the counts of `block`."""
    total = int(block.get("total_labels") or 0)
    if not total:
        return "no label was read: the labels file or field gave none (see the problems above); nothing was measured"
    why = []
    absent = block.get("cases_not_in_run") or {}
    unknown = [m for m, n in (block.get("unknown_metrics") or {}).items() if n > absent.get(m, 0)]
    if unknown:
        why.append("metric(s) " + ", ".join(repr(m) for m in unknown) + " that no result of the run has")
    if sum(absent.values()):
        why.append(f"{sum(absent.values())} label(s) for case ids not in the run")
    if block.get("out_of_range"):
        why.append(f"{block['out_of_range']} label(s) out of their metric's range")
    if block.get("mixed_kinds"):
        why.append(f"{block['mixed_kinds']} label(s) left out for mixing true/false with grades")
    if block.get("not_judged"):
        why.append(f"{block['not_judged']} label(s) whose verdicts the judge did not score")
    return (f"none of the {total} label(s) matched a scored verdict ({'; '.join(why) or 'see the problems above'}): nothing was "
            "measured, so there is no verdict; check the metric names and case ids against the config's dataset")


def judged_ids(config: Any, path: Path) -> tuple[set[str], str]:
    """`(the ids of the cases worth judging, the line saying which were left out and why, or "")` for the labels file at
    `path`: a case whose every label could meet no verdict — out of its metric's range or between two of its grades
    (`label_checks.unusable_labels`), or for a metric the config does not have (`TaskCompletoin`) — is not judged, as
    judging it would spend requests on nothing. Its labels are skipped and named, as other label faults are."""
    from tracejudge.core.suggest import did_you_mean
    from tracejudge.stages.judge.label_checks import metric_case_read, unusable_labels
    from tracejudge.stages.judge.label_grades import metric_keys, metric_scales, yes_no_metrics
    from tracejudge.stages.judge.labels import load_label_file

    names = metric_keys(config.metrics)
    read = metric_case_read(load_label_file(path), names)
    unusable = set(unusable_labels(read, metric_scales(config.metrics), yes_no_metrics(config.metrics)))
    lacked = {(lab.case_id, lab.metric, lab.trial): lab for lab in read.labels if lab.metric not in names}
    ids = {lab.case_id for lab in read.labels if (lab.case_id, lab.metric, lab.trial) not in unusable | set(lacked)}
    left = {lab.case_id for lab in read.labels} - ids
    if not left:
        return ids, ""
    n = sum(1 for key in unusable if key[0] in left)
    if not any(key[0] in left for key in lacked):  # (the wording this line had before metrics were checked)
        return ids, (f"labels: {len(left)} labelled case(s) left out, not judged: each of their {n} label(s) is out of its metric's range or "
                     "not a whole grade of its scale (named below), so no verdict of theirs could meet a label")
    off: dict[str, str] = {}  # each metric the config lacks: where the first label of it left out was written
    for key, lab in lacked.items():
        if key[0] in left:
            off.setdefault(lab.metric, lab.where)
    named = [f"{where + ': ' if where else ''}{metric!r}" + (f", {hint}" if (hint := did_you_mean(metric, names, n=1, typo=True)) else "")
             for metric, where in off.items()]
    why = [f"is out of its metric's range or not a whole grade of its scale ({n} label(s), named below)"] if n else []
    why.append(f"names a metric the config does not have ({'; '.join(named)})")
    return ids, (f"labels: {len(left)} labelled case(s) left out, not judged: each of their labels " + ", or ".join(why)
                 + ", so no verdict of theirs could meet a label")


def unjudged(out: Path | None, config: Any, labels: Any, err: Any) -> int:
    """Calibrate's end when no labelled case is worth judging (`judged_ids`): the label counts and problems, and exit 2
    (`--json OUT`'s `verdict` ERROR), nothing judged."""
    from tracejudge.core.console import stdout_console
    from tracejudge.entrypoints.calibrate import print_agreement
    from tracejudge.stages.judge.agreement import agreement_block, run_labels
    from tracejudge.stages.judge.label_grades import metric_keys, metric_scales, yes_no_metrics

    block = agreement_block([], run_labels([], labels), threshold=labels.threshold, resamples=labels.resamples, seed=labels.seed,
                            scales=metric_scales(config.metrics), listed=None, yes_no=yes_no_metrics(config.metrics),
                            config_metrics=metric_keys(config.metrics))
    print_agreement(block, stdout_console())
    why = no_match(block)
    if out is not None:
        out.write_text(json.dumps({"run_dir": None, **block, "verdict": "ERROR", "error": why}, indent=2, default=str) + "\n", encoding="utf-8")
    err.print(f"error: {why}", highlight=False, markup=False, soft_wrap=True)
    return 2


def labelled_cases(config: Any, ids: set[str]) -> tuple[Any, set[str]]:
    """`(the cases of `config`'s dataset whose id is in `ids`, as an in-memory source for the runner; the ids of all its
    cases)`, read with the config's format (records that cannot be read are left out: the full run reports them)."""
    from tracejudge.core import registry
    from tracejudge.core.records import Case
    from tracejudge.stages.extract import extract_record
    from tracejudge.stages.load.memory import MemorySource

    fmt = registry.format_for(config.dataset.format)
    ctx = fmt.prepare(config.dataset)
    kept, every = [], set()
    for got in (extract_record(raw, fmt, ctx) for raw in fmt.read(config.dataset)):
        if isinstance(got, Case):
            every.add(got.id)
            kept += [got] if got.id in ids else []
    return MemorySource(kept, label=str(config.dataset.path)), every
