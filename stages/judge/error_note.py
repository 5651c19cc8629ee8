"""The line naming a failed judge's error kinds and its decisive error: `tracejudge run`'s terminal summary
(`with_first_error`), and the commands that judge and then report something other than a run's summary,
`tracejudge compare --judge` and `tracejudge calibrate`.

Their output was figures over the verdicts the judge gave: a judge that failed every request left "0 pairs judged" or
"n/a" everywhere, and nothing said why. The message is a score's reason, which the judge stage has redacted already; it
goes through `redact` again, as any text from a provider's reply does before it is shown. The error named is the first
of the cause that failed the run's judging (`first_judge_error`): a judge given up as unavailable, else the commonest
kind, not a timeout that merely came first.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tracejudge.core.inert_text import visible
from tracejudge.llm.redact import redact

__all__ = ["GIVEN_UP", "MESSAGE_CHARS", "error_line", "first_judge_error", "where_of", "with_first_error"]

MESSAGE_CHARS = 600  # a parse error's reason with its advice fits whole; a server's HTML error page does not


# The cause a judge that was given up as unavailable (`details.given_up`) failed its scores with: it decides the run's
# judge errors whatever came before it (a timeout or two that led to it).
GIVEN_UP = "given up"


def first_judge_error(results: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """`{case_id, trial, metric, message}` of the run's decisive judge error, or `None` without a `judge_error` result.

    The decisive cause is the judge given up as unavailable (a score's `details.given_up`: it failed every case after
    it) when it was, else the error kind that failed the most scores (a tie: the kind met first). Its error named is
    the one first by case id and trial (results come in completion order, so the first written would differ between
    two runs of the same command). When that is not the run's first error, the dict also holds `lead`, the words that
    say which cause it is (`the judge was given up, failing 27`, `most are parse_error (40)`): a line naming the
    first error alone named the timeout that came before a frozen judge was given up, not what failed the cases."""
    first: tuple[tuple[str, int], dict[str, Any]] | None = None
    by_cause: dict[str, tuple[tuple[str, int], dict[str, Any]]] = {}
    counts: dict[str, int] = {}
    for res in results:
        if res.get("status") != "judge_error":
            continue
        key = (str(res.get("case_id")), int(res.get("trial", 0)))
        failed = [(m, s) for m, s in (res.get("scores") or {}).items() if isinstance(s, dict) and (s.get("details") or {}).get("error_kind")]
        named = [(m, s.get("reason"), GIVEN_UP if s["details"].get("given_up") else str(s["details"]["error_kind"])) for m, s in failed]
        error = res.get("error") or {}
        for metric, message, cause in named or [(None, error.get("message"), str(error.get("kind") or ""))]:
            entry = {"case_id": key[0], "trial": key[1], "metric": metric, "message": str(message or "")}
            counts[cause] = counts.get(cause, 0) + 1
            if cause not in by_cause or key < by_cause[cause][0]:
                by_cause[cause] = (key, entry)
            if first is None or key < first[0]:
                first = (key, entry)
    if first is None:
        return None
    cause = GIVEN_UP if GIVEN_UP in counts else min(counts, key=lambda c: (-counts[c], by_cause[c][0]))
    entry = by_cause[cause][1]
    if entry is first[1]:
        return entry
    lead = f"the judge was given up, failing {counts[cause]}" if cause == GIVEN_UP else f"most are {cause} ({counts[cause]})"
    return {**entry, "lead": lead}


def error_line(kinds: dict[str, int], first: dict[str, Any] | None, where: str = "") -> str | None:
    """`judge errors: parse_error 40; the first (case c02 trial 0, TaskCompletion): parse_error: …`, or `None` without errors.
    `kinds` counts the scores by error kind (the summary's `judge.error_kinds`); `where` names the place of `first`
    (`first_judge_error`'s), which, when its cause is not the first error's, is led by its `lead`:
    `judge errors: timeout 3, provider_error 27; the judge was given up, failing 27 (the first: case c04 trial 0, …): …`."""
    if not kinds:
        return None
    line = "judge errors: " + ", ".join(f"{k} {n}" for k, n in kinds.items())
    if first is not None and first.get("message"):
        message = " ".join(redact(first["message"]).split())
        cut = message if len(message) <= MESSAGE_CHARS else message[: MESSAGE_CHARS - 1] + "…"
        head = f"{first['lead']} (the first: {visible(where)})" if first.get("lead") else f"the first ({visible(where)})"
        line += f"; {head}: {visible(cut)}"
    return line


def where_of(first: dict[str, Any] | None) -> str:
    """`case c02 trial 0, TaskCompletion`: where `first` (`first_judge_error`'s) failed ("" for `None`)."""
    if first is None:
        return ""
    return f"case {first['case_id']} trial {first['trial']}" + (f", {first['metric']}" if first.get("metric") else "")


def with_first_error(summary: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """`summary` (a run's) for the terminal: when its judge left errors (`judge.error_kinds`), a copy whose judge block
    also holds `first_error`, `first_judge_error` of `run_dir`'s results, which the terminal's `judge errors:` line
    names (`tracejudge.stages.reports.judge_lines`); else `summary` itself. summary.json is not changed."""
    judge = summary.get("judge") or {}
    if not judge.get("error_kinds"):
        return summary
    from tracejudge.core.errors import TracejudgeError
    from tracejudge.engine.store import iter_results

    try:
        first = first_judge_error(iter_results(run_dir))
    except (OSError, ValueError, TracejudgeError):  # (the line then names the kinds only, as before)
        return summary
    return {**summary, "judge": {**judge, "first_error": first}}
