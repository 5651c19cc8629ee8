"""What a run directory's standing results say — the final ones and the provisional ones a resume redoes — for the
summary and the command's last lines: the aggregate with budget skips folded in, the failures left to retry or spent,
and the judge's gate counts and tallies. The bodies of `RunJournal`'s methods of the same names (`checkpoint`)."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from tracejudge.core.records import UNTERMINATED_LINE, CaseResult
from tracejudge.engine import store
from tracejudge.engine.journal_counts import judge_block_with, standing_judge_counts, standing_judge_tally as _standing_tally

if TYPE_CHECKING:
    from tracejudge.engine.checkpoint import RunJournal

__all__ = ["fix_judge_block", "judge_gate_counts", "pending_retries", "spent_retries", "standing_judge_tally", "summary_aggregate"]


def summary_aggregate(journal: RunJournal) -> Any:
    """The aggregate with the standing budget-skipped results folded in (for summaries only)."""
    if not journal.provisional:
        return journal.agg
    agg = copy.deepcopy(journal.agg)
    for line in journal.provisional.values():
        if line:  # (empty: superseded, `_displace`)
            agg.fold(CaseResult.model_validate_json(line))
    return agg


def pending_retries(journal: RunJournal) -> int:
    """How many standing results are transient failures that the next run of the same command redoes."""
    # (a budget skip is not a failure; a torn last line's result is redone whenever its line is read again)
    return sum(1 for line in journal.provisional.values() if line and store.SKIPPED_MARK not in line.encode() and f'"kind":"{UNTERMINATED_LINE}"' not in line)


def spent_retries(journal: RunJournal) -> tuple[int, int]:
    """(how many standing results are failures left final because `max_retries` retries of their (case, trial) are
    spent, the most failures one of them has had). The same command does not retry them; with `run.max_resume_retries`
    raised to that many it does (`journal_open` then rebuilds the state the checkpoint holds)."""
    spent = [n for key, n in journal.failures.items() if n > journal.max_retries and key not in journal.provisional]
    return len(spent), max(spent, default=0)


def judge_gate_counts(journal: RunJournal) -> dict[str, Any]:
    """The judge's gate counts over the standing results, final and provisional (`journal_counts.standing_judge_counts`)."""
    return standing_judge_counts(journal.judge_final, journal.provisional.values())


def standing_judge_tally(journal: RunJournal) -> Any:
    """The `judge.samples` and panel counts (`judge_stats.JudgeTally`) of the standing results, final and provisional."""
    return _standing_tally(journal.judge_tally, journal.provisional.values())


def fix_judge_block(journal: RunJournal, block: dict[str, Any]) -> dict[str, Any]:
    """The judge stage's summary `block` with its gate counts, share, grouping figures and judge failures
    (`judge_errors`, `error_kinds`) replaced by `judge_gate_counts`, and its `samples` and `panel.metrics` by those of
    the standing results (`standing_judge_tally`): what a segment killed with SIGKILL judged is in them, though it
    wrote no summary to add up."""
    from tracejudge.stages.judge.judge_stats import standing_block

    return judge_block_with(standing_block(block, journal.standing_judge_tally()), journal.judge_gate_counts())
