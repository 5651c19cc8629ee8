"""The Cases page: one line per (case, trial) — id, the request's first words, status, one score chip per metric.

A chip is coloured by its verdict and carries the metric's reason in its
`title` (on hover); the ▸ button opens a row under it with every reason in
full (`static/view.js`). Column headers sort (a click on the sorted column
reverses it); the filters, search and pages are server-side
(`tracejudge.viewer.index.CaseQuery`). All run text is escaped.
"""

from __future__ import annotations


from tracejudge.viewer.case_nav import list_params
from tracejudge.viewer.html import case_url, e, f3, frame, name_html, shown_id, t, url
from tracejudge.viewer.case_query import metric_sort
from tracejudge.viewer.index import PAGE_SIZES, CaseQuery, Page
from tracejudge.viewer.runs import Run

__all__ = ["bad_line_links", "cases_page"]

_TITLE_CUT = 600
# A chip's hover shows the start of its reason (a tooltip of 600 characters is read by nobody); the ▸ row holds it all.
# At 600 the chips' titles were a third of a 200-row page (298 of 876 KB over the demo's five metrics).
_CHIP_TITLE_CUT = 160


def _options(values: list[tuple[str, str]], current: str) -> str:
    # A value the URL gives that the run has no option for (a status no result has, a tag or metric of another run)
    # is still what the table is filtered by: it is listed, and selected, rather than the select showing its first
    # option ("any …") over a table that is filtered.
    if current and all(v != current for v, _ in values):
        values = [*values, (current, f"{current} (not in this run)")]
    return "".join(f'<option value="{e(v)}"{" selected" if v == current else ""}>{t(label)}</option>' for v, label in values)


def _notes(run: Run, page: Page, statuses: list[str]) -> str:
    """What the filters of the URL mean here when the run has nothing they name (so no result matches them), and each
    value the page did not apply as the URL gave it (`CaseQuery.notes`)."""
    q, out = page.query, []
    if q.below and q.below != "*" and q.below not in page.metrics:
        have = ", ".join(page.metrics) or "none yet"
        out.append(f"below={q.below}: this run has no metric {q.below} (its metrics: {have}), so no result is below its threshold.")
    if q.status == "run_error" and page.total == 0 and not any((q.below, q.tag, q.q)):
        out.append("status=run_error: no case of this run has an agent run that ended in an error.")
    elif q.status and q.status not in ("failed", "run_error") and q.status not in statuses:
        out.append(f"status={q.status}: no result of this run has that status.")
    if q.tag and q.tag not in run.index.tags:
        out.append(f"tag={q.tag}: no result of this run has that tag.")
    out += q.notes  # (a value the page did not apply as given: `CaseQuery.notes`)
    html = [f'<p class="bad filter-note">{t(n)}</p>' for n in out] + [_bad_lines(run)]
    if (torn := run.index.torn_tail()) is not None and run.state()[0] != "in progress":  # (a live run's last line is being written)
        html.append(f'<p class="bad filter-note">results.jsonl: line {torn}, the last, ends without a line break (cut off as it was '
                    "written), so it is not shown here.</p>")
    return "".join(html)


def _bad_lines(run: Run) -> str:
    """The note naming the lines of results.jsonl that are not results (`bad_line_links`)."""
    bad, named = run.index.unreadable()
    if not bad:
        return ""
    more = f"; and {bad - len(named)} more" if bad > len(named) else ""
    return (f'<p class="bad filter-note" id="bad-lines">results.jsonl: {bad} line{"s" if bad != 1 else ""} not a result, not shown '
            f'here ({"; ".join(bad_line_links(run, named))}{more}).</p>')


def bad_line_links(run: Run, named: list[str]) -> list[str]:
    """Each of `named` (`RunIndex.unreadable`: `line N: field: what is wrong`) as HTML: a link to the page of the case its
    line was written for (which says what is wrong with it), or escaped text when the line names no case."""
    cases = {f"line {n}": (cid, trial) for n, cid, trial in run.index.first_bad() if cid is not None}
    return [f'<a class="bad-line" href="{case_url(run.rid, at[0], trial=at[1] or None)}">{t(text)}</a>'
            if (at := cases.get(text.split(":", 1)[0])) else t(text) for text in named]


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _form(run: Run, page: Page, statuses: list[str], base: str) -> str:
    q = page.query
    status_opts = ([("", "any status"), ("failed", "failed (a check or an error)"),
                    ("run_error", "run ended in an error")] + [(s, s) for s in statuses])
    # "" is no filter (what the form sends when nothing is chosen); "*" keeps a failed verdict on any metric. The empty
    # choice is not worded "any metric": that reads as the other one.
    below_opts = [("", "— (not filtered)"), ("*", "any metric failed")] + [(m, f"{m} failed") for m in page.metrics]
    tag_opts = [("", "any tag")] + [(tag, tag) for tag in run.index.tags]
    sort_opts = [("case", "case id"), ("trial", "trial"), ("status", "status"), ("duration", "duration")] + [(metric_sort(m), m) for m in page.metrics]
    return (
        f'<form id="filters" method="get" action="{e(base)}" class="filters">'
        f'<label>status <select name="status" id="f-status">{_options(status_opts, q.status)}</select></label>'
        f'<label>below threshold <select name="below" id="f-below">{_options(below_opts, q.below)}</select></label>'
        f'<label>tag <select name="tag" id="f-tag">{_options(tag_opts, q.tag)}</select></label>'
        f'<label>search <input type="search" name="q" id="f-q" value="{e(q.q)}" placeholder="id, input, output, reason, tool, argument"></label>'
        f'<label>sort <select name="sort" id="f-sort">{_options(sort_opts, q.sort)}</select></label>'
        f'<label><input type="checkbox" name="desc" value="1" id="f-desc"{" checked" if q.desc else ""}> descending</label>'
        f'<label>rows <select name="size">{_options([(str(n), str(n)) for n in PAGE_SIZES], str(q.size))}</select></label>'
        '<button type="submit" id="f-apply">Apply</button></form>'
    )


def _chip(metric: str, value: float | None, passed: bool | None, reason: str) -> str:
    cls = "pass" if passed is True else "fail" if passed is False else "none"
    word = "pass" if passed is True else "fail" if passed is False else "no verdict"
    title = f"{metric}: {word}" + (f" — {_cut(reason, _CHIP_TITLE_CUT)}" if reason else "")
    return f'<td data-metric="{e(metric)}"><span class="chip {cls}" title="{t(title)}">{f3(value) if value is not None else "—"}</span></td>'


def cases_page(run: Run, page: Page, statuses: list[str], reasons: dict[tuple[str, int], dict[str, str]], text_ready: bool) -> str:
    """The filtered, sorted, paginated Cases table; `reasons` maps (case, trial) to each metric's reason."""
    q: CaseQuery = page.query
    rid = run.rid
    base = f"/run/{rid}/cases"
    params = {"status": q.status, "below": q.below, "tag": q.tag, "q": q.q, "sort": q.sort, "desc": "1" if q.desc else "", "size": q.size}

    def head(label: str, key: str, cls: str = "") -> str:
        on = q.sort == key
        mark = (" ▼" if q.desc else " ▲") if on else ""
        link = url(base, **{**params, "sort": key, "desc": "1" if on and not q.desc else "", "page": 1})
        shown = name_html(label)
        return f'<th class="{cls}{" sorted" if on else ""}" data-sort="{e(key)}"><a class="sort" href="{link}" title="sort by {e(label)}">{shown}{mark}</a></th>'

    kept = list_params(q)
    nav = []
    if q.page > 1:
        nav.append(f'<a rel="prev" href="{url(base, **params, page=q.page - 1)}">← previous</a>')
    nav.append(f'page <b id="page-no">{q.page}</b> of {page.pages}')
    if q.page < page.pages:
        nav.append(f'<a rel="next" id="next-page" href="{url(base, **params, page=q.page + 1)}">next →</a>')
    note = "" if text_ready else ' <span class="muted">(input/output text of the dataset is still being indexed: search covers ids, tags and reasons)</span>'
    ncols = 5 + len(page.metrics)
    rows = []
    for r in page.rows:
        key = (r["case_id"], r["trial"])
        why = reasons.get(key, {})
        link = case_url(rid, r["case_id"], trial=r["trial"], **kept)  # (the case page moves along this list: `case_nav`)
        err = str((r["error"] or {}).get("message", "")) if r["error"] else ""
        said = r["run_error"]  # the agent's run ended in an error (the result is scored, `ok` all the same): marked, as report.html does
        tags = " ".join(f"<span class=tag>{t(tag)}</span>" for tag in r["tags"])
        # (named for a screen reader, as report.html names it: its text alone, "▸", says nothing of what it opens)
        cells = [f'<td class="clip"><button type="button" class="expand" aria-expanded="false" title="all reasons" '
                 f'aria-label="reasons of {shown_id(r["case_id"])}{" trial " + str(r["trial"]) if r["trial"] else ""}">▸</button> '
                 f'<a class="case-link" href="{link}" title="{shown_id(r["case_id"])}">{shown_id(r["case_id"])}</a> {tags}</td>',
                 f'<td class=num>{r["trial"]}</td>',
                 f'<td class="clip snippet" title="{t(r["snippet"])}">{t(r["snippet"])}</td>',
                 f'<td class="clip {"bad" if r["status"] != "ok" else "warn run-error" if said else "ok"}" '
                 f'title="{t(r["status"] + (": " + _cut(err, _TITLE_CUT) if err else "") + (" · run error: " + _cut(said, _TITLE_CUT) if said else ""))}">'
                 f'{e(r["status"])}{" · run error" if said else ""}</td>']
        cells += [_chip(m, r["values"].get(m), r["passed"].get(m), why.get(m, "")) for m in page.metrics]
        cells.append(f'<td class=num>{f3(r["duration_s"])}</td>')
        detail = "".join(f'<div><b>{e(m)}</b> <span class="{"ok" if r["passed"].get(m) else "bad" if r["passed"].get(m) is False else "muted"}">'
                         f'{f3(r["values"].get(m))}</span> <span class="reason">{t(why.get(m, ""))}</span></div>' for m in page.metrics)
        if said:
            detail = f'<div class="warn reason run-error">the run ended in an error: {t(said)}</div>' + detail
        if err:
            detail = f'<div class="bad reason">{t(err)}</div>' + detail
        rows.append(f'<tr data-case="{e(r["case_id"])}" data-trial="{r["trial"]}">' + "".join(cells) + "</tr>"
                    f'<tr class="why" hidden><td colspan="{ncols}">{detail}</td></tr>')
    heads = head("case", "case", "c-id") + head("trial", "trial") + '<th class="c-input">input</th>' + head("status", "status")
    heads += "".join(head(m, metric_sort(m), "c-metric") for m in page.metrics) + head("took (s)", "duration")
    body = (f'<h1>Cases of {e(run.name)} <span class="small muted"><b id="n-matching">{page.total}</b> {"result matches" if page.total == 1 else "results match"}.{note}</span></h1>'
            f'{_form(run, page, statuses, base)}{_notes(run, page, statuses)}'
            f'<table class="grid cases compact" id="cases"><colgroup><col class="c-id"><col class="c-trial"><col class="c-input"><col class="c-status">'
            + '<col class="c-metric">' * len(page.metrics) + f'<col class="c-dur"></colgroup><thead><tr>{heads}</tr></thead><tbody>'
            + "".join(rows) + f'</tbody></table><p class="pager">{" · ".join(nav)}</p>')
    return frame(f"Cases of {run.name}", body, live_run=rid, crumbs=[(run.name, f"/run/{e(rid)}"), ("Cases", e(base))])
