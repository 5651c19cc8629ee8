"""`report.html`: one self-contained file (inline CSS, JS and SVG; no external assets).

Sections: verdict and checks; the summary table; score distributions per
metric (10-bin histograms as inline SVG, the baseline's beside the current
run's when a baseline is configured); the baseline-vs-current comparison
with the most regressed cases and both runs' reasons side by side; and a
table of cases (the worst 2,000: `cases.CaseCollector`), one line each (a score chip per metric, its reason
on hover, every reason under the row on a click), sortable by clicking a column header and shown 50 rows a
page; headers and row toggles are buttons, so the table works from the keyboard. The table is built by the
page's script (`html_assets`) from JSON embedded in the file (its text shown as the rest of the page shows it:
control and invisible characters as `\\xNN`, `\\u{NNNN}`, as report.md writes them); a URL fragment `#sort=<column>` (or
`#sort=-<column>` for descending) and `page=<n>` (`#sort=case&page=2`) set it on load, which is how a
headless browser can check sorting; a part of it that does not decode is ignored.

Text in backticks in a reason, an error or a check's detail ("expected `get_weather`") is shown as code, as report.md
shows it: the text is escaped first and only then each `x` becomes `<code>x</code>` (`_code`), and the page's script
makes such spans as elements holding text, never markup. A case whose agent run ended in an error
(`metadata.run_error`) is marked in the case table (its status cell, and the error under the row) and listed apart.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Callable
from typing import Any

from tracejudge.core.inert_text import CONTROL, INVISIBLE, visible
from tracejudge.stages.aggregate.gate import Verdict
from tracejudge.stages.reports.cases import CaseMaterial
from tracejudge.stages.reports.html_assets import PAGE_CSS, PAGE_JS
from tracejudge.stages.reports.markdown import metric_rows, pass_at_k_note, run_errors_line

__all__ = ["render_breakdowns", "render_html"]


def _f3(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _e(s: Any) -> str:
    # Escaped, and shown inert as report.md and junit.xml show it (`inert_text.visible`): a bidirectional override in a
    # case id showed "\u202eRTL" as "LTR", a zero-width space not at all; they read `\u{202e}`, `\u{200b}`.
    return visible(html.escape(str(s), quote=True))


# Text between two backticks, on one line, as a code span (as report.md's Markdown reads it); applied to escaped text.
_CODE = re.compile(r"`([^`\r\n]+)`")


def _code(s: Any) -> str:
    """`_e(s)` with each `x` in backticks as `<code>x</code>`. Escaped first, so a span's text holds no markup (a
    `<script>` in backticks is the text `&lt;script&gt;` in a code element); a lone backtick stays as it is."""
    return _CODE.sub(r"<code>\1</code>", _e(s))


def _sort_header(name: str) -> str:
    # A button, so the header sorts from the keyboard too (the page's script handles its click on the cell).
    return f'<th><button type="button" class="sort">{_e(name)}</button></th>'


def _for_script(text: str) -> str:
    # Inside <script>, "</script>" or "<!--" in a reason would end the block: escape every "<". A control or invisible
    # character (only ever inside a JSON string) is written as its JSON escape, so the file holds none raw: an editor
    # showing its source would reorder it at a bidirectional override.
    text = text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return _RAW.sub(lambda m: json.dumps(m.group())[1:-1], text) if _RAW.search(text) else text


_RAW = re.compile(f"{CONTROL.pattern}|{INVISIBLE.pattern}")


def _axis(top: int) -> tuple[int, list[int]]:
    """The y axis for counts up to `top`: its maximum and its ticks, a round step apart (1, 2, 5, 10, 20, 50, …), at most 6."""
    step, scale = 1, 1
    while True:
        for m in (1, 2, 5):
            step = m * scale
            if top / step <= 5:
                axis_max = max(step, -(-top // step) * step)
                return axis_max, list(range(0, axis_max + 1, step))
        scale *= 10


def _histogram_svg(key: str, current: list[int], baseline: list[int] | None) -> str:
    """A 10-bin histogram of scores in [0, 1] as inline SVG: counts on the y axis, score bins on the x axis.

    With a baseline its bars (grey) stand beside the current run's (blue), on the same count scale.
    """
    w, h, left, right, top_pad = 370, 160, 52, 12, 12
    bins = len(current)
    top, ticks = _axis(max(current + (baseline or [])))
    plot_h = h - top_pad
    bw = (w - left - right) / bins
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h + 34}" width="{w}" height="{h + 34}" role="img" '
             f'aria-label="distribution of {_e(key)}" class="hist" data-metric="{_e(key)}">']
    for t in ticks:
        y = h - plot_h * t / top
        parts.append(f'<line class="tick" x1="{left - 4}" y1="{y:.1f}" x2="{w - right}" y2="{y:.1f}" stroke="#eaeef2"/>'
                     f'<text class="ytick" x="{left - 6}" y="{y + 3:.1f}" font-size="10" text-anchor="end">{t}</text>')
    parts.append(f'<line x1="{left}" y1="{top_pad}" x2="{left}" y2="{h}" stroke="#57606a"/>')
    parts.append(f'<text x="10" y="{top_pad + plot_h / 2:.1f}" font-size="10" text-anchor="middle" transform="rotate(-90 10 {top_pad + plot_h / 2:.1f})">results</text>')
    for i in range(bins):
        x = left + i * bw
        if baseline is not None:
            bh = plot_h * baseline[i] / top
            parts.append(f'<rect class="bar-baseline" x="{x + 1:.1f}" y="{h - bh:.1f}" width="{bw / 2 - 1:.1f}" height="{bh:.1f}" fill="#afb8c1"><title>baseline {i / bins:.1f}–{(i + 1) / bins:.1f}: {baseline[i]}</title></rect>')
            cx, cw = x + bw / 2, bw / 2 - 1
        else:
            cx, cw = x + 1, bw - 2
        ch = plot_h * current[i] / top
        parts.append(f'<rect class="bar" x="{cx:.1f}" y="{h - ch:.1f}" width="{cw:.1f}" height="{ch:.1f}" fill="#0969da"><title>{i / bins:.1f}–{(i + 1) / bins:.1f}: {current[i]}</title></rect>')
    parts.append(f'<line x1="{left}" y1="{h}" x2="{w - right}" y2="{h}" stroke="#57606a"/>')
    for i in range(0, bins + 1, 2):
        parts.append(f'<text x="{left + i * bw:.1f}" y="{h + 14}" font-size="10" text-anchor="middle">{i / bins:.1f}</text>')
    parts.append(f'<text x="{(left + w - right) / 2}" y="{h + 28}" font-size="11" text-anchor="middle">{_e(key)} ({sum(current)} scored)</text></svg>')
    return "".join(parts)


def render_breakdowns(summary: dict[str, Any], case_link: Callable[[str, str], str | None] | None = None) -> str:
    """The `breakdowns` of a summary (by tag and by each `aggregate.group_by` field) as HTML tables.

    One table per breakdown: a row per value with its result count and each
    metric's mean (scored of results) and pass rate. `case_link(name, value)`
    may return an (escaped) URL for the value's cell. Empty string when the
    summary has no breakdowns.
    """
    keys = list(summary.get("metrics", {}))
    out = []
    for name, groups in (summary.get("breakdowns") or {}).items():
        out.append(f'<h3>By {_e(name)}</h3><table class="grid breakdown" data-breakdown="{_e(name)}"><thead><tr><th>{_e(name)}</th><th>results</th>'
                   + "".join(f"<th>{_e(k)}</th>" for k in keys) + "</tr></thead><tbody>")
        for value, g in groups.items():
            link = case_link(name, value) if case_link else None
            cell = f'<a href="{link}">{_e(value)}</a>' if link else _e(value)
            row = [f"<td>{cell}</td>", f'<td class="num">{_e(g.get("results", 0))}</td>']
            for k in keys:
                m = (g.get("metrics") or {}).get(k, {})
                rate = m.get("pass_rate")
                row.append(f'<td class="num">{_f3(m.get("mean"))} <span class="muted">({m.get("scored", 0)} of {m.get("results", 0)}'
                           + (f"; pass {100 * rate:.0f}%" if rate is not None else "") + ")</span></td>")
            out.append("<tr>" + "".join(row) + "</tr>")
        out.append("</tbody></table>")
    return "".join(out)


def render_html(
    summary: dict[str, Any],
    verdict: Verdict,
    cases: CaseMaterial,
    *,
    baseline_histograms: dict[str, list[int]] | None = None,
    baseline_configured: bool = False,
    title: str = "tracejudge report",
) -> str:
    """The whole `report.html` text."""
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{_e(title)}</title><style>{PAGE_CSS}</style></head><body>"]
    out.append(f'<h1>{_e(title)}</h1><p><span id="verdict" class="badge {verdict.word}">{verdict.word}</span></p><ul id="checks">')
    for c in verdict.checks:
        out.append(f'<li class="{"ok" if c.ok else "bad"}"><b>{"ok" if c.ok else "FAIL"}</b> <code>{_e(c.name)}</code>: {_code(c.detail)}</li>')
    if not verdict.checks:
        out.append("<li>no assertions configured</li>")
    out.append("</ul>")
    out.append('<p class="muted" id="view-hint">Transcripts, filters, search and run diffs: <code>tracejudge view RUN_DIR</code> '
               '(a local web app; add <code>--baseline OTHER_RUN</code> to see each case beside the baseline\'s).</p>')

    total = summary.get("results", 0)
    status = summary.get("status", {})
    ok = status.get("ok", 0)
    errs = ", ".join(f"{k} {v}" for k, v in status.items() if k != "ok")
    out.append(f'<h2>Summary</h2><p id="coverage">{total} results: {ok} ok' + (f"; errors: {_e(errs)}" if errs else "; no errors") + ".")
    if ok != total:
        out.append(f" Means, CIs and pass rates cover the <b>{ok} of {total}</b> results that were scored.")
    out.append("</p>")
    if run_errors := run_errors_line(summary):
        out.append(f'<p id="run-errors" class="warn">{_code(run_errors)} (listed under <i>Runs that ended in an error</i>).</p>')
    out.append('<table id="summary"><thead><tr>')
    for hcell in ["metric", "scored", "excluded", "not computed", "mean", "std", "95% CI", "pass rate", "pass@k"]:
        out.append(f"<th>{hcell}</th>")
    out.append("</tr></thead><tbody>")
    for row in metric_rows(summary):
        out.append("<tr>" + "".join(f'<td{" class=num" if i in (3, 4, 5) else ""}>{_e(c)}</td>' for i, c in enumerate(row)) + "</tr>")
    out.append("</tbody></table>")
    if summary.get("pass_at_k"):
        out.append(f'<p id="pass-at-k-note">{_e(pass_at_k_note(summary))}</p>')
    for key, v in summary.get("pass_at_k", {}).items():
        val = "—" if v.get("value") is None else f"{v['value']:.3f}"
        unit = f"tasks by metadata.{_e(v['group_by'])}" if v.get("group_by") else "cases"  # (a grouped figure's "cases" are tasks)
        left = f", {v.get('results_without_key', 0)} results without the key" if v.get("group_by") else ""
        out.append(f"<p><b>{_e(key)}</b> = {val} over {v.get('cases', 0)} {unit} ({v.get('no_scored_trial', 0)} with no scored trial{left})</p>")

    breakdowns = render_breakdowns(summary)
    if breakdowns:
        out.append("<h2>Breakdowns</h2>" + breakdowns)

    out.append('<h2>Score distributions</h2>')
    if baseline_histograms:
        out.append('<p class="legend"><span style="background:#afb8c1"></span>baseline<span style="background:#0969da"></span>current</p>')
    out.append('<div class="charts">')
    for key, m in summary.get("metrics", {}).items():
        out.append('<div class="chart">' + _histogram_svg(key, m.get("histogram") or [0] * 10, (baseline_histograms or {}).get(key)) + "</div>")
    out.append("</div>")

    out.append('<h2>Baseline vs current</h2><div id="baseline">')
    cmp = verdict.comparison
    if cmp is None:
        out.append('<p class="muted">' + ("The configured baseline could not be read." if baseline_configured else "No baseline configured (assertions.regression.baseline).") + "</p>")
    else:
        out.append(f"<p>Baseline <code>{_e(cmp.run_a)}</code>: {cmp.paired} results paired by (case, trial); {cmp.only_a} only in the baseline, {cmp.only_b} only in this run. {_e(cmp.test)}.</p>")
        out.append("<table><thead><tr><th>metric</th><th>pairs</th><th>baseline</th><th>current</th><th>delta</th><th>95% CI</th><th>p</th><th>regressed</th><th>improved</th></tr></thead><tbody>")
        for k, md in cmp.metrics.items():
            ci = "—" if md.ci95 is None else f"[{md.ci95[0]:+.3f}, {md.ci95[1]:+.3f}]"
            delta = "—" if md.delta is None else f"{md.delta:+.3f}"
            out.append(f'<tr><td>{_e(k)}</td><td class="num">{md.pairs}</td><td class="num">{_f3(md.mean_a)}</td><td class="num">{_f3(md.mean_b)}</td>'
                       f'<td class="num {"bad" if (md.delta or 0) < 0 else ""}">{delta}</td><td>{ci}</td><td class="num">{"—" if md.p_value is None else f"{md.p_value:.4f}"}</td>'
                       f'<td class="num">{md.regressed}</td><td class="num">{md.improved}</td></tr>')
        out.append("</tbody></table>")
        for k, md in cmp.metrics.items():
            if not md.worst:
                continue
            out.append(f"<h3>Regressed most: {_e(k)}</h3><table class=\"movers\"><thead><tr><th>case</th><th>trial</th><th>baseline</th><th>current</th><th>baseline reason</th><th>current reason</th></tr></thead><tbody>")
            for mv in md.worst:
                out.append(f'<tr><td>{_e(mv.case_id)}</td><td class="num">{mv.trial}</td><td class="num">{mv.a:.3f}</td><td class="num bad">{mv.b:.3f}</td>'
                           f'<td class="reason">{_code(mv.reason_a)}</td><td class="reason">{_code(mv.reason_b)}</td></tr>')
            out.append("</tbody></table>")
    out.append("</div>")

    if cases.run_errors:
        out.append(f'<h2 id="runs-ended-in-error">Runs that ended in an error</h2><p>{cases.run_error_total} of {cases.total} results: the agent\'s '
                   "run ended in an error its trace records (<code>metadata.run_error</code>); they are scored as recorded."
                   + (f" The first {len(cases.run_errors)} are listed." if cases.run_error_total > len(cases.run_errors) else "") + "</p>")
        out.append('<table id="run-error-cases"><colgroup><col style="width:18%"><col style="width:5%"><col style="width:10%"><col></colgroup>'
                   "<thead><tr><th>case</th><th>trial</th><th>status</th><th>run error</th></tr></thead><tbody>")
        for r in cases.run_errors:
            out.append(f'<tr><td>{_e(r.case_id)}</td><td class="num">{r.trial}</td><td{" class=bad" if r.status != "ok" else ""}>{_e(r.status)}</td>'
                       f'<td class="reason">{_code(r.run_error)}</td></tr>')
        out.append("</tbody></table>")

    metrics = list(summary.get("metrics", {}))
    shown = cases.shown
    note = f"all {cases.total}" if shown == cases.total else f"the worst {shown} of {cases.total} (errored first, then lowest mean score)"
    out.append(f'<h2>Cases</h2><p>Showing <span id="rows-shown">0</span> results: {_e(note)}, 50 a page. '
               "Click a column header to sort, a row or its ▸ for its reasons (from the keyboard: Tab to either, then Enter).</p>")
    pager = ('<p class="pager"><button type="button" id="prev-page">← previous</button> page <b id="page-no">1</b> of <span id="pages">1</span>'
             ' <button type="button" id="next-page">next →</button></p>')
    out.append('<table id="cases"><colgroup><col style="width:18%"><col style="width:5%"><col style="width:10%">' + "<col>" * len(metrics) + "</colgroup>"
               "<thead><tr>" + "".join(map(_sort_header, ["case", "trial", "status", *metrics])) + "</tr></thead><tbody></tbody></table>" + pager)
    # `{"metrics": metrics, "rows": rows}` as json.dumps writes it (compact, non-ASCII kept), the rows as made.
    metrics_json = json.dumps(metrics, ensure_ascii=False, separators=(",", ":"))
    out.append(f'<script type="application/json" id="case-data">{{"metrics":{_for_script(metrics_json)},"rows":[{_for_script(cases.rows_json)}]}}</script>')
    out.append(f"<script>{PAGE_JS}</script></body></html>")
    return "\n".join(out) + "\n"
