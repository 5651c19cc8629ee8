"""Terminal view of a run comparison (`tracejudge compare`).

Every string from the runs' data (run names, case ids, metric names, reasons, the warnings quoting them) is
printed inert, as report.md shows it (`tracejudge.core.inert_text.visible`): an ESC of a case id is written
`\\x1b`, a bidirectional override `\\u{202e}`, never sent to the terminal. `--json` keeps them exact.
"""

from __future__ import annotations

from collections.abc import Callable

from rich import box
from rich.console import Console
from rich.table import Table
from tracejudge.core.console import cell, fitted
from tracejudge.core.inert_text import visible
from tracejudge.stages.comparison.runs import Comparison

__all__ = ["print_comparison"]


def _f(x: float | None, nd: int = 3) -> str:
    return "—" if x is None else f"{x:.{nd}f}"


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return visible(text if len(text) <= limit else text[: limit - 1] + "…")


def _deltas(cmp: Comparison, keys: list[str], level: int, name: Callable[[str], str]) -> Table:
    # Without vertical rules, as every table of the terminal; narrower at each level: 1 drops the padding (the box
    # draws one space between columns) and breaks headers between words, 2 leaves "unchanged" out (it is pairs −
    # regressed − improved), 3 puts the CI under the delta.
    t = Table(title=f"B − A per metric over pairs scored in both ({cmp.test})", title_justify="left", box=box.SIMPLE_HEAD,
              show_edge=False, **({"padding": (0, 0)} if level else {"pad_edge": False}))
    cols = ["metric", "pairs", "A mean", "B mean", "delta" if level < 3 else "delta 95% CI", *(["95% CI"] if level < 3 else []), "p",
            "regressed", "improved", *(["unchanged"] if level < 2 else [])]
    for col in cols:
        t.add_column(col.replace(" ", "\n") if level else col, justify="left" if col == "metric" else "right", no_wrap=True)
    for k in keys:
        md = cmp.metrics[k]
        ci = "—" if md.ci95 is None else f"[{md.ci95[0]:+.3f}, {md.ci95[1]:+.3f}]"
        delta = "—" if md.delta is None else f"{md.delta:+.3f}"
        style = "red" if md.ci95 is not None and md.ci95[1] < 0 else ("green" if md.ci95 is not None and md.ci95[0] > 0 else "")
        figures = [cell(delta, style), cell(ci)] if level < 3 else [cell(f"{delta}\n{ci}", style)]
        t.add_row(cell(name(visible(k))), str(md.pairs), _f(md.mean_a), _f(md.mean_b), *figures, _f(md.p_value, 4), str(md.regressed), str(md.improved),
                  *([str(md.unchanged)] if level < 2 else []))
    return t


def print_comparison(cmp: Comparison, console: Console) -> None:
    """Per-metric deltas with the paired test, then the most regressed and improved cases with both reasons."""
    console.print(
        f"A (baseline) {visible(cmp.run_a)}: {cmp.results_a} results; B (current) {visible(cmp.run_b)}: {cmp.results_b} results; "
        f"{cmp.paired} paired by (case, trial), {cmp.only_a} only in A, {cmp.only_b} only in B",
        highlight=False, markup=False, emoji=False,
    )
    for side, bad, named in (("A", cmp.unreadable_a, cmp.unreadable_lines_a), ("B", cmp.unreadable_b, cmp.unreadable_lines_b)):
        if bad:
            more = f"; and {bad - len(named)} more" if bad > len(named) else ""
            console.print(f"warning: {bad} line(s) of {side}'s results.jsonl are not results and were left out: "
                          f"{'; '.join(map(visible, named))}{more}", highlight=False, markup=False, emoji=False, soft_wrap=True)
    for line in cmp.warnings:
        console.print(f"warning: {visible(line)}", highlight=False, markup=False, emoji=False, soft_wrap=True)
    for side, n, names in (("A", cmp.repeats_a, cmp.repeated_a), ("B", cmp.repeats_b, cmp.repeated_b)):
        if n:
            console.print(f"warning: {n} line(s) of {side}'s results.jsonl repeat a (case, trial) already read and were counted once: "
                          f"{visible(', '.join(names))}{' …' if n > len(names) else ''}", highlight=False, markup=False, emoji=False)
    if cmp.metrics_only_a or cmp.metrics_only_b:
        console.print(f"not compared (scored in one run only): A only: {visible(', '.join(cmp.metrics_only_a)) or '-'}; "
                      f"B only: {visible(', '.join(cmp.metrics_only_b)) or '-'}", highlight=False, markup=False, emoji=False)
    # A metric scored in one run only has no pair: named above as not compared, not a row of zeros here.
    one_side = {*cmp.metrics_only_a, *cmp.metrics_only_b}
    keys = [k for k in cmp.metrics if k not in one_side]
    if not keys:
        console.print("no metric is scored in both runs: nothing to compare", highlight=False, markup=False, emoji=False)
        return
    t = fitted(console, lambda level, name: _deltas(cmp, keys, level, name), 4)
    console.print(t)
    if len(t.columns) < 10:
        console.print("unchanged = pairs − regressed − improved", highlight=False, markup=False, emoji=False)
    for k, md in cmp.metrics.items():
        for title, movers in (("regressed most", md.worst), ("improved most", md.best)):
            if not movers:
                continue
            mt = Table(title=cell(f"{visible(k)}: {title}"), title_justify="left", show_lines=True)
            for col in ("case", "trial", "A", "B", "delta", "A reason", "B reason"):
                mt.add_column(col, overflow="fold", no_wrap=col in ("trial", "A", "B", "delta"))  # figures whole, text wraps
            for m in movers:
                mt.add_row(cell(visible(m.case_id)), str(m.trial), _f(m.a), _f(m.b), f"{m.delta:+.3f}", cell(_short(m.reason_a)), cell(_short(m.reason_b)))
            console.print(mt)
