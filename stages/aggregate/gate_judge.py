"""The gate's checks about the judge: results the budget left unjudged, and the judge's error share.

A result the judge budget skipped (`skipped_budget`) is provisional: the same command with a larger
budget judges it (README "LLM judges"). A run holding one is not complete, so it cannot PASS, whatever
its other figures say: a deterministic metric scoring every case used to carry the run to PASS while
every judge score was missing. The judge's `max_error_share` divides the results the judge answered;
with none answered it is no evidence, and says so instead of reading "ok".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tracejudge.stages.aggregate.gate import Check
from tracejudge.stages.aggregate.gate_figures import figure, limit

__all__ = ["budget_caps", "budget_check", "judge_error_check"]

_CAPS = {"max_judge_tokens": lambda v: f"budget.max_judge_tokens {v:,}", "max_cost_usd": lambda v: f"budget.max_cost_usd ${v:g}"}


def budget_caps(summary: dict[str, Any]) -> str:
    """The caps that ran out as `budget.max_cost_usd $0.0001, budget.max_judge_tokens 5,000` (`summary.judge.budget`), or ""."""
    return ", ".join(_CAPS[k](v) for k, v in ((summary.get("judge") or {}).get("budget") or {}).items() if k in _CAPS)


def _skipped(summary: dict[str, Any]) -> int:
    return int((summary.get("status") or {}).get("skipped_budget", 0))


def budget_check(summary: dict[str, Any], run_dir: Path | None = None) -> Check | None:
    """The `judge budget` check: FAIL when any standing result is `skipped_budget`, else None (nothing to list).

    The detail counts the results, names each metric left without a value by the skips (its
    `excluded.skipped_budget`), the caps that ran out, and how to finish the run: the command that resumes
    `run_dir` (`engine.run_state.resume_command`; a `--fresh` run's "same command" would start over), or, without
    one, the same command.
    """
    skipped = _skipped(summary)
    if not skipped:
        return None
    per_metric = {k: int(m.get("excluded", {}).get("skipped_budget", 0)) for k, m in (summary.get("metrics") or {}).items()}
    metrics = ", ".join(f"{k} {n}" for k, n in per_metric.items() if n)
    caps = budget_caps(summary)
    return Check("judge budget", False,
                 f"{skipped} of {summary.get('results', skipped)} results were skipped for the judge budget"
                 f"{f' ({caps})' if caps else ''} and are not judged{f' (results without a value: {metrics})' if metrics else ''}, "
                 "so the run is not complete; raise the budget (budget.max_cost_usd / budget.max_judge_tokens) and "
                 f"{_resume(run_dir)}, which judges only the skipped results")


def _resume(run_dir: Path | None) -> str:
    # How to go on with the run: its recorded resume command (without `--fresh`, with its `--run-dir`), else the same command.
    if run_dir is None:
        return "run the same command again"
    from tracejudge.engine import store
    from tracejudge.engine.run_state import resume_command
    from tracejudge.engine.shards import MERGED_KEY

    if (store.read_manifest(Path(run_dir), strict=False) or {}).get(MERGED_KEY):  # (a merge of shards: no run of its own to resume)
        return "run each shard's command again, then merge them"
    from tracejudge.llm.redact import redact, redact_url_passwords

    return f"resume with: {redact(redact_url_passwords(resume_command(run_dir)))}"  # (a command as typed may hold a key: the verdict is kept)


def judge_error_check(summary: dict[str, Any]) -> Check | None:
    """The `judge max_error_share` check, over the results the judge answered (not those the budget skipped).

    None when no result reached the judge at all (a judge section and no judge metric: nothing to bound).
    FAIL when results reached it but none was answered (all skipped for the budget): a share over
    none is no evidence. A summary without the counts (older) falls back on its `gate_failed`.
    """
    judge = summary.get("judge") or {}
    if judge.get("max_error_share") is None or judge.get("error_share") is None:
        return None
    allowed = judge["max_error_share"]
    # Shares printed with the places that show how they compare with the limit (`gate_figures`): not "10.0%, allowed <= 10.0%" failed.
    allowed_at = f"allowed <= {limit(allowed, percent=True)} (judge.max_error_share)"
    if "judged_results" not in judge:
        ok = not judge.get("gate_failed")
        share = figure(judge["error_share"], allowed, ok, at_least=False, places=1, percent=True)
        return Check("judge max_error_share", ok, f"judge errors: {share} of judged results, {allowed_at}")
    skipped = min(_skipped(summary), int(judge["judged_results"]))
    answered, errors = int(judge["judged_results"]) - skipped, int(judge.get("judge_error_results", 0))
    if not answered:
        if not skipped:
            return None
        return Check("judge max_error_share", False,
                     f"judge errors: no result was judged ({skipped} skipped for the judge budget), so there is no error share "
                     f"to bound; no evidence is not a pass, {allowed_at}")
    share = errors / answered
    aside = f"; {skipped} more skipped for the judge budget, not judged" if skipped else ""
    ok = share <= allowed + 1e-12
    return Check("judge max_error_share", ok, f"judge errors: {errors} of {answered} judged results = "
                 f"{figure(share, allowed, ok, at_least=False, places=1, percent=True)}{aside}, {allowed_at}")
