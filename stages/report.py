"""Stage `report`: render a run's summary for people."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["print_summary", "summary_table"]


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def summary_table(summary: dict[str, Any]) -> Table:
    """A rich table: one row per metric with its denominator stated."""
    total = summary.get("results", 0)
    status = summary.get("status", {})
    ok = status.get("ok", 0)
    title = f"{total} results: " + ", ".join(f"{k} {v}" for k, v in status.items())
    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("scored", justify="right")
    table.add_column("not computed", justify="right")
    table.add_column("excluded", justify="right")
    table.add_column("mean", justify="right")
    table.add_column("pass rate", justify="right")
    for key, m in summary.get("metrics", {}).items():
        excluded = sum(m.get("excluded", {}).values())
        table.add_row(
            key,
            f"{m['scored']}/{total}",
            str(m.get("not_computed", 0)),
            str(excluded),
            "—" if m["mean"] is None else f"{m['mean']:.3f}",
            f"{_pct(m['pass_rate'])} ({m['passed']}/{m['scored']})" if m["pass_rate"] is not None else "—",
        )
    if ok != total:
        table.caption = f"means and pass rates cover the {ok} results with status ok; the other {total - ok} are counted under 'excluded'"
    return table


def print_summary(summary: dict[str, Any], console: Console | None = None) -> None:
    """Print the summary table to `console` (default: stdout)."""
    (console or Console()).print(summary_table(summary))
