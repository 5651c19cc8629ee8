"""Stage `report`: render a run's summary for people."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table
from tracejudge.core.records import LATE_STATUSES

__all__ = ["coverage_note", "pass_at_k_table", "print_summary", "summary_table"]


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def summary_table(summary: dict[str, Any]) -> Table:
    """A rich table: one row per metric with its denominator stated."""
    total = summary.get("results", 0)
    status = summary.get("status", {})
    title = f"{total} results: " + ", ".join(f"{k} {v}" for k, v in status.items())
    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("scored", justify="right")
    table.add_column("not computed", justify="right")
    table.add_column("excluded", justify="right")
    table.add_column("mean", justify="right")
    table.add_column("std", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("pass rate", justify="right")
    show_pk = any(m.get("pass_at_k") for m in summary.get("metrics", {}).values())
    if show_pk:
        table.add_column("pass@k", justify="right")
    for key, m in summary.get("metrics", {}).items():
        excluded = sum(m.get("excluded", {}).values())
        ci = m.get("ci95")
        row = [
            key,
            f"{m['scored']}/{total}",
            str(m.get("not_computed", 0)),
            str(excluded),
            "—" if m["mean"] is None else f"{m['mean']:.3f}",
            "—" if m.get("std") is None else f"{m['std']:.3f}",
            "—" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]",
            f"{_pct(m['pass_rate'])} ({m['passed']}/{m.get('with_verdict', m['scored'])})" if m["pass_rate"] is not None else "—",
        ]
        if show_pk:
            row.append(", ".join(f"@{k} {v['value']:.3f}" for k, v in (m.get("pass_at_k") or {}).items() if v.get("value") is not None) or "—")
        table.add_row(*row)
    return table


def coverage_note(summary: dict[str, Any]) -> str | None:
    """The sentence stating the denominator when some results were not scored, else `None`."""
    total = summary.get("results", 0)
    status = summary.get("status", {})
    ok = status.get("ok", 0)
    if ok == total:
        return None
    errors = ", ".join(f"{k} {v}" for k, v in status.items() if k != "ok")
    late = sum(v for k, v in status.items() if k in LATE_STATUSES)
    note = f"means, CIs and pass rates cover each metric's scored results ('scored' column; {ok} of {total} results are ok)"
    if late:
        note += "; a judge error or budget skip excludes only the metrics it left without a value"
    return f"{note}; not ok: {errors}"


def pass_at_k_table(summary: dict[str, Any]) -> Table | None:
    """A rich table of the configured PassAtK figures, or `None` when there are none."""
    figures = summary.get("pass_at_k") or {}
    if not figures:
        return None
    table = Table(title="pass@k over trials (unbiased estimator, averaged over cases with a scored trial)", title_justify="left")
    for col in ("name", "value", "cases", "no scored trial", "fewer than k trials"):
        table.add_column(col, justify="left" if col == "name" else "right")
    for key, v in figures.items():
        table.add_row(key, "—" if v.get("value") is None else f"{v['value']:.3f}", str(v.get("cases", 0)),
                      str(v.get("no_scored_trial", 0)), str(v.get("too_few_trials", 0)))
    return table


def print_summary(summary: dict[str, Any], console: Console | None = None) -> None:
    """Print the summary table (and the pass@k table, if any) to `console` (default: stdout)."""
    con = console or Console()
    con.print(summary_table(summary))
    note = coverage_note(summary)
    if note:
        con.print(note, highlight=False, soft_wrap=True)
    pk = pass_at_k_table(summary)
    if pk is not None:
        con.print(pk)
    from tracejudge.stages.reports.judge_lines import judge_lines

    for line in judge_lines(summary):
        con.print(line, highlight=False, soft_wrap=True)
