"""Stage `report`: render a run's summary for people."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from tracejudge.core.console import cell, fits, plain_console
from tracejudge.core.inert_text import visible
from tracejudge.core.records import LATE_STATUSES
from tracejudge.stages.reports.markdown import not_applicable_note, not_computed_cell, pass_at_k_note, run_errors_line

__all__ = ["coverage_note", "pass_at_k_table", "print_summary", "summary_table"]


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def summary_table(summary: dict[str, Any], compact: int = 0) -> Table:
    """A rich table: one row per metric with its denominator stated.

    No cell is ever cut short or wrapped by rich (every column is as wide as
    its widest cell), so metric names and figures stay whole; vertical rules
    are left out, and columns that are zero for every metric ("not
    computed", "excluded") are dropped: the coverage note states the
    denominator. A not computed cell names those whose metric raised or timed out (`19 (19 raised)`). Results that do not carry a case-level metric are named in
    its scored cell (`0/18 (18 not applicable)`), so every row adds up. `compact` fits narrower consoles (`print_summary` picks
    the first level that fits): 1 puts one space between columns, breaks
    headers between words and leaves the pass@k column out (printed below
    the table instead); 2 also puts a pass rate's count under its
    percentage; 3 also leaves `std` out (summary.json and report.md keep it).
    """
    total = summary.get("results", 0)
    status = summary.get("status", {})
    metrics = summary.get("metrics", {})
    not_computed = any(m.get("not_computed", 0) for m in metrics.values())
    excluded = any(sum(m.get("excluded", {}).values()) for m in metrics.values())
    show_pk = compact == 0 and any(m.get("pass_at_k") for m in metrics.values())
    headers = ["metric", "scored", *(["not computed"] if not_computed else []), *(["excluded"] if excluded else []), "mean", *(["std"] if compact < 3 else []), "95% CI",
               "pass rate", *(["pass@k"] if show_pk else [])]
    title = f"{total} results: " + ", ".join(f"{k} {v}" for k, v in status.items())
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True,
                  padding=(0, 0) if compact else (0, 1))
    for i, header in enumerate(headers):
        table.add_column(header.replace(" ", "\n") if compact else header, justify="left" if i == 0 else "right", no_wrap=True)
    for key, m in metrics.items():
        ci = m.get("ci95")
        row = [cell(visible(key)), f"{m['scored']}/{total}" + not_applicable_note(m, "\n" if compact > 1 else " ")]
        if not_computed:
            row.append(not_computed_cell(m))
        if excluded:
            row.append(str(sum(m.get("excluded", {}).values())))
        rate = "—" if m["pass_rate"] is None else f"{_pct(m['pass_rate'])}{chr(10) if compact > 1 else ' '}{m['passed']}/{m.get('with_verdict', m['scored'])}"
        row.append("—" if m["mean"] is None else f"{m['mean']:.3f}")
        if compact < 3:
            row.append("—" if m.get("std") is None else f"{m['std']:.3f}")
        row += ["—" if not ci else f"{ci[0]:.3f}–{ci[1]:.3f}", rate]
        if show_pk:
            row.append(_pass_at_k(m) or "—")
        table.add_row(cell(row[0]), *row[1:])
    return table


def _pass_at_k(m: dict[str, Any]) -> str:
    return ", ".join(f"@{k} {v['value']:.3f}" for k, v in (m.get("pass_at_k") or {}).items() if v.get("value") is not None)


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


def pass_at_k_table(summary: dict[str, Any], compact: bool = False) -> Table | None:
    """A rich table of the configured PassAtK and PassHatK figures, or `None` when there are none.

    Laid out as `summary_table`: no cell is cut short (names stay whole), no vertical rules; `compact`
    breaks the headers between words, for a console the table does not fit otherwise.
    """
    figures = summary.get("pass_at_k") or {}
    if not figures:
        return None
    # A figure over `group_by` tasks counts tasks where the others count cases, and may leave results out (no key).
    grouped = any(v.get("group_by") for v in figures.values())
    hat = any(v.get("estimator") == "pass^k" for v in figures.values())
    notes = ["pass@k: unbiased estimator" if hat else "unbiased estimator", "mean over cases with k or more trials",
             *(["with group_by: over tasks"] if grouped else [])]
    table = Table(title=f"{'pass@k and pass^k' if hat else 'pass@k'} over trials ({', '.join(notes)})", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    for col in ("name", "value", "cases", "no scored trial", "fewer than k trials", *(["without key"] if grouped else [])):
        table.add_column(col.replace(" ", "\n") if compact else col, justify="left" if col == "name" else "right", no_wrap=True)
    for key, v in figures.items():
        table.add_row(cell(visible(key)), "—" if v.get("value") is None else f"{v['value']:.3f}", str(v.get("cases", 0)),
                      str(v.get("no_scored_trial", 0)), str(v.get("too_few_trials", 0)),
                      *([str(v.get("results_without_key", "—"))] if grouped else []))
    return table


def print_summary(summary: dict[str, Any], console: Console | None = None) -> None:
    """Print the summary table (and the pass@k table, if any) to `console` (default: stdout)."""
    con = console or plain_console()
    compact = next((level for level in (0, 1, 2) if fits(con, summary_table(summary, level))), 3)
    con.print(summary_table(summary, compact))
    for key, m in summary.get("metrics", {}).items():
        if compact and _pass_at_k(m):
            con.print(f"pass@k {visible(key)}: {_pass_at_k(m)}", highlight=False, markup=False, emoji=False, soft_wrap=True)
    note = coverage_note(summary)
    if note:
        con.print(note, highlight=False, markup=False, emoji=False, soft_wrap=True)
    if run_errors := run_errors_line(summary):  # (ok by status, so nothing above tells these results apart)
        con.print(run_errors.replace("`", "") + " (report.md lists them)", highlight=False, markup=False, emoji=False, soft_wrap=True)
    pk = pass_at_k_table(summary)
    if pk is not None and not fits(con, pk):
        pk = pass_at_k_table(summary, compact=True)
    if pk is not None:
        con.print(pk)
        con.print(pass_at_k_note(summary), highlight=False, markup=False, emoji=False, soft_wrap=True)
    from tracejudge.stages.reports.judge_lines import judge_lines

    for line in judge_lines(summary):
        con.print(line, highlight=False, markup=False, emoji=False, soft_wrap=True)
