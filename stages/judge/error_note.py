"""The line naming a failed judge's error kinds and its first error: `tracejudge run`'s terminal summary
(`with_first_error`), and the commands that judge and then report something other than a run's summary,
`tracejudge compare --judge` and `tracejudge calibrate`.

Their output was figures over the verdicts the judge gave: a judge that failed every request left "0 pairs judged" or
"n/a" everywhere, and nothing said why. The message is a score's reason, which the judge stage has redacted already; it
goes through `redact` again, as any text from a provider's reply does before it is shown.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tracejudge.core.inert_text import visible
from tracejudge.llm.redact import redact

__all__ = ["MESSAGE_CHARS", "error_line", "first_judge_error", "where_of", "with_first_error"]

MESSAGE_CHARS = 600  # a parse error's reason with its advice fits whole; a server's HTML error page does not


def first_judge_error(results: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """`{case_id, trial, metric, message}` of the `judge_error` result first by case id and trial (results come in
    completion order, so the first written would differ between two runs of the same command), or `None`."""
    best: tuple[tuple[str, int], dict[str, Any]] | None = None
    for res in results:
        if res.get("status") != "judge_error":
            continue
        key = (str(res.get("case_id")), int(res.get("trial", 0)))
        if best is not None and key >= best[0]:
            continue
        failed = [(m, s) for m, s in (res.get("scores") or {}).items() if isinstance(s, dict) and (s.get("details") or {}).get("error_kind")]
        metric, message = (failed[0][0], failed[0][1].get("reason")) if failed else (None, (res.get("error") or {}).get("message"))
        best = (key, {"case_id": key[0], "trial": key[1], "metric": metric, "message": str(message or "")})
    return None if best is None else best[1]


def error_line(kinds: dict[str, int], first: dict[str, Any] | None, where: str = "") -> str | None:
    """`judge errors: parse_error 40; the first (case c02 trial 0, TaskCompletion): parse_error: …`, or `None` without errors.
    `kinds` counts the scores by error kind (the summary's `judge.error_kinds`); `where` names the first's place."""
    if not kinds:
        return None
    line = "judge errors: " + ", ".join(f"{k} {n}" for k, n in kinds.items())
    if first is not None and first.get("message"):
        message = " ".join(redact(first["message"]).split())
        cut = message if len(message) <= MESSAGE_CHARS else message[: MESSAGE_CHARS - 1] + "…"
        line += f"; the first ({visible(where)}): {visible(cut)}"
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
