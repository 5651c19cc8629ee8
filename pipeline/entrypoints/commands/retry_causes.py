"""The terminal's words for the failed results a run retried and those the next run of the same command retries.

A resume retries every failure still standing (`records.RETRYABLE_STATUSES`, a dead worker's case), but not all are
transient: an exception the agent raised is a bug, a worker that died no judge, target or provider failing, a judge
model's refusal its answer, and a request the judge server refused as too large (`journal_counts.OVERSIZED`) is refused
again until the server's limit or `judge.context_tokens` changes. Each is said for what it is.
"""

from __future__ import annotations

__all__ = ["pending_note", "retried_note"]

# Why each kind of too-large request fails again, and what changes that (`judge.context_tokens` is part of the config:
# a resume with it changed needs --force).
_OVERSIZED = {
    "context_exceeded": ("the judge server refused their prompt as longer than its context (error kind context_exceeded",
                         "the server's context is raised or judge.context_tokens is set to it, with --force"),
    "body_too_large": ("the judge server, or a proxy before it, refused their request body as too large (HTTP 413, error kind "
                       "body_too_large", "that body limit is raised or judge.context_tokens is set lower, with --force"),
}


def retried_note(retried: int, raised: int, died: int, refused: int = 0, oversized: int = 0) -> str:
    """`, N retried …` for a run's closing line: how many earlier failures it retried (`retried`) and, of them, how many
    were an agent's exception (`raised`), a dead worker (`died`), a judge's refusal (`refused`) or a request refused as
    too large (`oversized`); `""` when none. Never raises."""
    if not retried:
        return ""
    causes = [(retried - raised - died - refused - oversized, "after a transient failure"), (raised, "after the agent raised"),
              (died, "after the worker process scoring them died"), (refused, "after the judge model refused to judge them"),
              (oversized, "after the judge server refused them as too large")]
    causes = [(n, why) for n, why in causes if n]
    if len(causes) == 1:
        return f", {retried} retried {causes[0][1]}"
    return f", {retried} retried (" + ", ".join(f"{n} {why}" for n, why in causes) + ")"


def pending_note(pending: int, raised: list[str], died: int, refused: int = 0, oversized: dict[str, int] | None = None) -> str:
    """What the failures a resume retries were: transient ones (judge, target, provider), replies of the agent that could
    not be read and exceptions it raised (`raised`: the messages of both, `journal_counts.agent_raised`), cases whose
    worker process died (killed, out of memory: `engine.worker_deaths`), cases the judge model refused to judge
    (`refused`, `journal_counts.judge_refused`) and cases whose request the judge server refused as too large
    (`oversized`, by error kind: `journal_counts.judge_oversized`). Never raises."""
    oversized = oversized or {}
    parts = []
    if pending > len(raised) + died + refused + sum(oversized.values()):
        parts.append(f"{pending - len(raised) - died - refused - sum(oversized.values())} results ended in a transient failure (judge, target or provider)")
    bad = [m for m in raised if m.startswith("invalid reply: ")]
    raised = [m for m in raised if not m.startswith("invalid reply: ")]
    if bad:
        first = bad[0] if len(bad[0]) <= 160 else bad[0][:157] + "..."
        parts.append(f"{len(bad)} results ended because the agent's reply could not be read ({first}{'' if len(bad) == 1 else ', the first'}; "
                     "a bug in the agent, not a transient failure)")
    if raised:
        first = raised[0] if len(raised[0]) <= 120 else raised[0][:117] + "..."
        kinds = len(set(raised))
        # With several errors, how many results the one named ended with: "3 results ended because the agent raised
        # ValueError: …; 2 other error(s)" read as three ValueErrors.
        what = first if kinds == 1 else (f"exceptions: {first} in {raised.count(raised[0])}, "
                                         f"{kinds - 1} other kind{'s' if kinds > 2 else ''} in the rest")
        parts.append(f"{len(raised)} results ended because the agent raised {what} (a bug in the agent, not a transient "
                     "failure: error.details.traceback in results.jsonl shows where)")
    if died:
        parts.append(f"{died} results ended because the worker process scoring them died (killed, out of memory or crashed; "
                     "error kind worker_error in results.jsonl)")
    if refused:
        parts.append(f"{refused} results ended because the judge model refused to judge them (a refusal is the judge's answer, "
                     "not a transient failure: asked the same prompt again, it will most likely refuse again)")
    for kind, (why, fix) in _OVERSIZED.items():
        if oversized.get(kind):
            parts.append(f"{oversized[kind]} results ended because {why}; not a transient failure: retried, they are refused "
                         f"again unless {fix})")
    return "; ".join(parts)
