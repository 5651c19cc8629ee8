"""The Runs, Run and Cases pages (HTML strings; all run text escaped)."""

from __future__ import annotations

from typing import Any

from tracejudge.stages.aggregate.group_labels import group_value
from tracejudge.stages.reports.html import render_breakdowns
from tracejudge.stages.reports.markdown import metric_rows, pass_at_k_note
from tracejudge.viewer.html import e, f3, frame, name_html, url
from tracejudge.viewer.pages_cases import bad_line_links
from tracejudge.viewer.runs import Run, differs, shown_time

__all__ = ["gone_page", "results_drift", "run_page", "runs_page", "unreadable_page"]


def _verdict(summary: dict[str, Any], state: tuple[str, str]) -> str:
    # (`state`: `Run.state()`.) A run killed before it wrote its verdict says INTERRUPTED, as `tracejudge report` does.
    word = (summary.get("verdict") or {}).get("verdict")
    if word:
        return f'<span class="badge {e(word)}">{e(word)}</span>'
    if state[0] == "in progress":
        return f'<span class="badge RUNNING" title="{e(state[1])} writes it">no verdict yet</span>'
    if state[0] == "interrupted":
        return '<span class="badge INTERRUPTED" title="killed or stopped before its end">INTERRUPTED</span>'
    return "—"


def _state(state: tuple[str, str], *, full: bool) -> str:
    """The run's state: complete, in progress (who writes it), or interrupted; `full` (a run's own page) adds the command
    that resumes it, which the runs table keeps in the cell's title."""
    word, detail = state
    if word == "in progress":
        return f"in progress ({e(detail)} writes it)"
    if word == "interrupted" and detail and full:
        return f'interrupted; resume with: <code class="resume">{e(detail)}</code>'
    if word == "interrupted" and detail:
        return f'interrupted<div class="muted small">resume with: <code class="resume">{e(detail)}</code></div>'
    return word


def _duration(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)):
        return "—"
    m, s = divmod(float(seconds), 60)
    return f"{int(m)} min {s:.0f} s" if m else f"{s:.1f} s"


def runs_page(runs: list[Run], counts: dict[str, dict[str, int]], baseline: str = "", drift: dict[str, str] | None = None) -> str:
    """Every run served: verdict, result counts, when it started, how long it took.

    The compare link goes from the `baseline` run (its id; `tracejudge view
    --baseline`) to the first other run; without one, from the first run to the second. `drift`: each run's
    `results_drift` text by id; a run with one is marked in its row, linking to where its page says what.
    """
    rows = []
    for r in runs:
        if (why := r.gone()) is not None:  # deleted or moved since the viewer started: no figures, the reason
            rows.append(f'<tr data-run="{e(r.rid)}" class="gone"><td>{e(r.name)}<div class="muted small">{e(r.path)}</div></td>'
                        f'<td colspan="7" class="muted">—</td><td class="bad">gone: {e(why)}</td></tr>')
            continue
        s, state = r.summary(), r.state()
        c = counts.get(r.rid, {})
        total = sum(v for k, v in c.items() if k != "failed")
        errors = total - c.get("ok", 0)
        rows.append(
            f'<tr data-run="{e(r.rid)}"><td><a href="/run/{e(r.rid)}">{e(r.name)}</a><div class="muted small">{e(r.path)}</div></td>'
            f"<td>{_verdict(s, state)}</td><td class=num>{total}</td><td class=num>{c.get('ok', 0)}</td><td class=num>{errors}</td>"
            f"<td class=num>{c.get('failed', 0)}</td><td>{e(r.started())}</td><td>{_duration(s.get('elapsed_s_total'))}</td>"
            f'<td class="state">{_state(state, full=False)}{_drift_mark(r, (drift or {}).get(r.rid, ""))}</td></tr>'
        )
    body = ("<h1>Runs</h1><table class=grid id=runs><thead><tr><th class=w30>run</th><th>verdict</th><th>results</th><th>ok</th>"
            "<th>errors</th><th>failed</th><th class=w15>started (UTC)</th><th>took</th><th>state</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")
    ordered = sorted((r for r in runs if r.gone() is None), key=lambda r: r.rid != baseline)  # the baseline first (a stable sort keeps the rest in order)
    pair = next(((a, b) for i, a in enumerate(ordered) for b in ordered[i + 1:] if differs(a, b) is None), None)
    if pair is not None:  # only runs of the same dataset pair up case by case
        a, b = pair
        body += f'<p><a id="diff-link" href="{url("/diff", a=a.rid, b=b.rid)}">Compare {e(a.name)} → {e(b.name)}</a></p>'
    elif len(runs) >= 2:
        body += '<p class="muted" id="no-diff">No two of these runs read the same dataset, so none can be compared case by case.</p>'
    return frame("Runs", body)


def _drift_mark(run: Run, drift: str) -> str:
    # (the Runs table has no room for the whole text: what kind of mismatch, and a link to the Run page, which names the lines;
    # a summary.json that is not JSON has no figures to match: the Run page says why, and the row that it is damaged)
    if run.summary_problem() is not None:
        return f'<div class="bad small drift"><a href="/run/{e(run.rid)}#summary-unreadable">summary.json is damaged</a></div>'
    if not drift:
        return ""
    what = "results.jsonl no longer matches summary.json" if drift.startswith(_DRIFT) else "results.jsonl has lines that are not results"
    return f'<div class="bad small drift"><a href="/run/{e(run.rid)}#results-drift">{what}</a></div>'


def gone_page(run: Run, why: str) -> str:
    """The page of a run whose directory is not there any more (every page of that run, with status 410)."""
    body = (f'<h1>{e(run.name)}</h1><p class="bad" id="gone">{e(why)}.</p>'
            '<p class="muted">Nothing of it is shown: its results are not there to read. A run moved within a folder this viewer '
            'lists is in <a href="/?list">the runs</a> under its new name; else restart <code>tracejudge view</code> with the '
            'run directory where it is now.</p>')
    return frame(run.name, body, crumbs=[(run.name, f"/run/{e(run.rid)}")])


def unreadable_page(run: Run, why: str) -> str:
    """The page of a run whose results.jsonl is there but cannot be read (`why`: `results.jsonl cannot be read (Is a
    directory)`), served with status 503: it may be readable again (a permission given back), and the page then works."""
    body = (f'<h1>{e(run.name)}</h1><p class="bad" id="unreadable">{e(why)}: {e(run.path)}.</p>'
            '<p class="muted">Nothing of it is shown until it can be read; reload this page then, or go back to '
            '<a href="/?list">the runs</a>.</p>')
    return frame(run.name, body, crumbs=[(run.name, f"/run/{e(run.rid)}")])


def _judge_figure(key: str, value: Any) -> str:
    """A figure of the judge block as read: counts with thousands separators (`1,234,567` tokens), dollars as `$0.0123`;
    anything else (a mode, `unknown (no price)`) as written."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if key == "cost_usd":
        return f"${value:,.4f}"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.2f}"


def _judge_block(summary: dict[str, Any]) -> str:
    j = summary.get("judge") or {}
    if not j:
        return '<p class="muted">No judge block in summary.json.</p>'
    keys = ["requests", "cache_hits", "retries", "rate_limited", "input_tokens", "output_tokens", "cost_usd", "items_per_request", "mode"]
    shown = {**j, "cost_usd": "unknown (no price)"} if "cost_usd" in j and j["cost_usd"] is None else j  # null: a model without a price
    cells = "".join(f"<tr><th>{e(k.replace('_', ' '))}</th><td class=num>{e(_judge_figure(k, shown[k]))}</td></tr>" for k in keys if k in j)
    segs = summary.get("segments") or []
    seg_rows = "".join(
        f"<tr><td class=num>{e(s.get('segment'))}</td><td>{e(shown_time(str(s['started_at'])) if s.get('started_at') else '—')}</td><td>{_duration(s.get('elapsed_s'))}</td>"
        f"<td class=num>{e(s.get('results'))}</td><td>{e(s.get('ended') or '—')}</td></tr>" for s in segs
    )
    out = f'<table class="grid narrow" id="judge"><tbody>{cells}</tbody></table>'
    if segs:
        out += ("<h3>Segments</h3><table class=\"grid\" id=\"segments\"><thead><tr><th>segment</th><th>started (UTC)</th><th>took</th>"
                f"<th>results</th><th>ended</th></tr></thead><tbody>{seg_rows}</tbody></table>")
    return out


_DRIFT = "The results no longer match the summary"


def results_drift(run: Run, total: int) -> str:
    """What makes `summary.json`'s figures no longer those of `results.jsonl` (`total`: the results the file holds now),
    or "": lines of it that are not results (a hand edit, a cut), a last line cut off mid-write, a count that differs.

    A run a process still writes is left alone: its summary is rewritten at its end. Reads the index (a worker thread)."""
    s = run.summary()
    if not s or run.state()[0] == "in progress":
        return ""
    bad, named = run.index.unreadable()
    torn = run.index.torn_tail()
    said = s.get("results")
    if not bad and torn is None and (not isinstance(said, int) or said == total):
        return ""
    what = []
    if bad:
        more = f"; and {bad - len(named)} more" if bad > len(named) else ""
        what.append(f"{bad} line{'s' if bad != 1 else ''} of it {'are' if bad != 1 else 'is'} not a result ({'; '.join(bad_line_links(run, named))}{more})")
    if torn is not None:
        what.append(f"line {torn}, the last, ends without a line break (cut off as it was written)")
    counted = f"summary.json counts {said} result{'s' if said != 1 else ''}; " if isinstance(said, int) else ""
    if isinstance(said, int) and said == total:  # (its figures were computed from the damaged file, which they leave out)
        return (f"results.jsonl: {'; '.join(what)}. {counted}the figures below leave {'them' if bad + (torn is not None) != 1 else 'it'} "
                "out, as the Cases page does.")
    return (f"{_DRIFT}: {counted}results.jsonl now holds {total} readable result{'s' if total != 1 else ''}"
            + (f" ({'; '.join(what)})" if what else "") + ". The figures below are summary.json's, not the file's; "
            f"<code>tracejudge report {e(run.path)}</code> rebuilds them from results.jsonl.")


def run_page(run: Run, counts: dict[str, int], others: list[Run], run_errors: int = 0, drift: str = "") -> str:
    """A run's summary: metrics with CIs, pass rates, pass@k, exclusions, breakdowns, judge block, assertions and verdict.

    `run_errors`: how many results' agent run ended in an error (`metadata.run_error`; scored, `ok` all the same), said
    under the counts with a link to those cases, as the reports say it. `drift`: `results_drift`'s text (HTML: its run
    text escaped here), said above the figures it concerns."""
    s, state = run.summary(), run.state()
    rid = run.rid
    total = sum(v for k, v in counts.items() if k != "failed")
    status = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k != "failed") or "none yet"
    out = [f"<h1>{e(run.name)} {_verdict(s, state)}</h1>",
           f'<p class="muted">{e(run.path)} · started {e(run.started())}{" UTC" if run.started() != "—" else ""} · took {_duration(s.get("elapsed_s_total"))}'
           f' · <span id="state">{_state(state, full=True)}</span></p>',
           f'<p id="counts"><b id="n-results">{total}</b> results ({e(status)}); <b>{counts.get("failed", 0)}</b> failed a check or errored. '
           + (f'<a id="run-errors" href="{url(f"/run/{rid}/cases", status="run_error")}">{run_errors} of {total} '
              f'{"result" if total == 1 else "results"}: the agent\'s run ended in an error</a>. ' if run_errors else "")
           + f'<a id="cases-link" href="/run/{e(rid)}/cases">All cases</a> · <a id="failed-link" href="{url(f"/run/{rid}/cases", status="failed")}">Failed cases</a>']
    apart = []
    for o in others:
        why = differs(o, run)
        if why is None:
            out.append(f' · <a class="diff-link" href="{url("/diff", a=o.rid, b=rid)}">Diff vs {e(o.name)}</a>')
        else:
            apart.append(f'<li data-run="{e(o.rid)}">{e(o.name)}: {e(why)}</li>')
    out.append("</p>")
    if drift:
        out.append(f'<p class="bad" id="results-drift">{drift}</p>')
    if apart:
        out.append(f'<details class="small" id="not-comparable"><summary>{len(apart)} other run{"s" if len(apart) != 1 else ""} '
                   f'cannot be compared with this one</summary><ul>{"".join(apart)}</ul></details>')
    verdict = s.get("verdict") or {}
    out.append("<h2>Assertions</h2><ul id=checks>")
    for c in verdict.get("checks") or []:
        out.append(f'<li class="{"ok" if c.get("ok") else "bad"}"><b>{"ok" if c.get("ok") else "FAIL"}</b> '
                   f'<code>{e(c.get("name"))}</code>: {e(c.get("detail"))}</li>')
    if not verdict.get("checks"):
        unwritten = "" if s else " (summary.json unreadable)" if run.summary_problem() is not None else " (summary.json not written yet)"
        out.append(f"<li class=muted>no assertions evaluated{unwritten}</li>")
    out.append("</ul><h2>Summary</h2>")
    if not s and (why := run.summary_problem()) is not None:  # (damaged, not unwritten: the run may well have ended)
        out.append(f'<p class="bad" id="summary-unreadable">summary.json is there but {e(why)}, so no figure of it is shown; '
                   f'<code>tracejudge report {e(run.path)}</code> rebuilds it from results.jsonl. The Cases table shows the results.</p>')
    elif not s:
        out.append('<p class="muted">summary.json is written when the run finishes; the Cases table follows the results as they arrive.</p>')
    else:
        out.append('<table class="grid" id="summary"><thead><tr>' + "".join(
            f"<th>{h}</th>" for h in ["metric", "scored", "excluded by status", "not computed", "mean", "std", "95% CI", "pass rate", "pass@k"]
        ) + "</tr></thead><tbody>")
        for row in metric_rows(s):
            key = row[0]
            link = f'<a href="{url(f"/run/{rid}/cases", below=key)}" title="cases failing {e(key)}">{name_html(key)}</a>'
            out.append("<tr><td>" + link + "</td>" + "".join(f'<td{" class=num" if i in (3, 4, 5) else ""}>{e(c)}</td>'
                                                            for i, c in enumerate(row[1:], 1)) + "</tr>")
        out.append("</tbody></table>")
        if s.get("pass_at_k"):
            out.append(f'<p class="muted">{e(pass_at_k_note(s))}</p>')
        for key, v in (s.get("pass_at_k") or {}).items():
            unit = f"tasks by metadata.{e(v['group_by'])}" if v.get("group_by") else "cases"  # (a grouped figure's "cases" are tasks)
            left = f", {e(v.get('results_without_key', 0))} results without the key" if v.get("group_by") else ""
            out.append(f"<p><b>{e(key)}</b> = {f3(v.get('value'))} over {e(v.get('cases', 0))} {unit} "
                       f"({e(v.get('no_scored_trial', 0))} with no scored trial{left})</p>")
        # A tag group's cases are the cases with that tag (`group_value`: its label may be escaped); "(other)" is no one tag.
        out.append(render_breakdowns(s, case_link=lambda name, value: url(f"/run/{rid}/cases", tag=tag)
                                     if name == "tag" and (tag := group_value(value)) is not None else None))
    out.append("<h2>Judge</h2>" + _judge_block(s))
    return frame(run.name, "".join(out), live_run=rid, crumbs=[(run.name, f"/run/{e(rid)}")])
