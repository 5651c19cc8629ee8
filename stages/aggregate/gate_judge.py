"""The gate's checks about the judge: results the budget left unjudged, and the judge's error share.

A result the judge budget skipped (`skipped_budget`) is provisional: the same command with a larger
budget judges it (README "LLM judges"). A run holding one is not complete, so it cannot PASS, whatever
its other figures say: a deterministic metric scoring every case used to carry the run to PASS while
every judge score was missing. The judge's `max_error_share` divides the results the judge answered;
with none answered it is no evidence, and says so instead of reading "ok".
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from tracejudge.stages.aggregate.gate import Check
from tracejudge.stages.aggregate.gate_figures import figure, limit

__all__ = ["budget_caps", "budget_check", "judge_error_check", "raised_command"]

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
    one, the same command. That command never repeats the cap that ran out: its `--set budget.…` is dropped and each
    cap is given as a setting to raise (`--set 'budget.max_cost_usd=<more than 0.05>'`, `raised_command`), since the
    same cap again sends nothing and stops the same way.
    """
    skipped = _skipped(summary)
    if not skipped:
        return None
    per_metric = {k: int(m.get("excluded", {}).get("skipped_budget", 0)) for k, m in (summary.get("metrics") or {}).items()}
    metrics = ", ".join(f"{k} {n}" for k, n in per_metric.items() if n)
    caps = budget_caps(summary)
    limits = {k: v for k, v in ((summary.get("judge") or {}).get("budget") or {}).items() if k in _CAPS and v is not None}
    return Check("judge budget", False,
                 f"{skipped} of {summary.get('results', skipped)} results were skipped for the judge budget"
                 f"{f' ({caps})' if caps else ''} and are not judged{f' (results without a value: {metrics})' if metrics else ''}, "
                 f"so the run is not complete; {_resume(run_dir, limits)}, which judges only the skipped results")


def _resume(run_dir: Path | None, limits: dict[str, Any]) -> str:
    # How to go on with the run: its recorded resume command (without `--fresh`, with its `--run-dir`) with the caps to
    # raise in place of the ones that ran out, else the same command with a larger budget.
    names = " / ".join(f"budget.{k}" for k in limits) or "budget.max_cost_usd / budget.max_judge_tokens"
    if run_dir is None:
        return f"raise the budget ({names}) and run the same command again"
    from tracejudge.engine import store
    from tracejudge.engine.run_state import resume_command
    from tracejudge.engine.shards import MERGED_KEY

    if (store.read_manifest(Path(run_dir), strict=False) or {}).get(MERGED_KEY):  # (a merge of shards: no run of its own to resume)
        return f"raise the budget ({names}), run each shard's command again, then merge them"
    from tracejudge.llm.redact import redact, redact_url_passwords

    command = redact(redact_url_passwords(raised_command(resume_command(run_dir), limits)))  # (a command as typed may hold a key)
    if not limits:
        return f"raise the budget ({names}) and resume with: {command}"
    return f"raise the budget and resume with: {command} (put a larger cap in place of each <more than …>)"


def raised_command(command: str, limits: dict[str, Any]) -> str:
    """`command` (a recorded `tracejudge run …`, maybe after `cd DIR && `) without its `--set` of a cap in `limits` (or of
    the whole `budget` section), and with `--set 'budget.<cap>=<more than N>'` for each cap (N: the cap that ran out):
    a placeholder the user must replace, as the config refuses it as it is. Its other options stay as they were, and so
    does the note after a command that had a value masked (`redact_command.MASKED_NOTE`)."""
    if not limits:
        return command
    from tracejudge.llm.redact_command import without_note

    command, note = without_note(command)
    prefix, sep, line = command.partition(" && ") if command.startswith("cd ") else ("", "", command)
    raised = [f"budget.{k}=<more than {format(v, 'g') if isinstance(v, float) else v}>" for k, v in limits.items()]
    try:
        words = shlex.split(line)
    except ValueError:  # (not a command shlex reads: left as it is, the caps to raise after it)
        return command + "".join(f" --set {shlex.quote(r)}" for r in raised) + note
    budget_keys = {"budget", *(f"budget.{k}" for k in limits)}
    kept: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        setting = words[i + 1] if word == "--set" and i + 1 < len(words) else word[len("--set="):] if word.startswith("--set=") else None
        if setting is not None and setting.split("=", 1)[0].strip() in budget_keys:
            i += 2 if word == "--set" else 1
            continue
        kept.append(word)
        i += 1
    for r in raised:
        kept += ["--set", r]
    return prefix + sep + " ".join(shlex.quote(w) for w in kept) + note


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
