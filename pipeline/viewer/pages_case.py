"""The Case page (transcript, expected/actual alignment, scores, judge answers; side by side with a baseline) and the Diff page."""

from __future__ import annotations

import re
from typing import Any

from tracejudge.core.inert_text import visible
from tracejudge.core.records import Case, ToolCall
from tracejudge.core.shown_calls import capped_calls
from tracejudge.stages.comparison.runs import Comparison
from tracejudge.stages.score.value_match import shown_expected
from tracejudge.viewer.html import case_url, e, f3, frame, name_html, pretty, shown_id, t, url
from tracejudge.viewer.labels import label_cell, labels_of
from tracejudge.viewer.reason_lines import reason_html
from tracejudge.viewer.runs import Run, differs
from tracejudge.viewer.transcript import FOLD_CALLS, call_html, rest_placeholder, steps_html, transcript_html

__all__ = ["CaseView", "case_page", "diff_page", "rest_html"]


class CaseView:
    """What one side of the case page shows: the run, its result line (or None) and the case with its trace (or None, with a
    note); `damaged`: `(line, what is wrong)` of each line of its results.jsonl written for this (case, trial) that is not
    a result (`RunIndex.bad_lines`)."""

    def __init__(self, run: Run, result: dict[str, Any] | None, case: Case | None, note: str,
                 damaged: list[tuple[int, str]] | None = None) -> None:
        self.run, self.result, self.case, self.note = run, result, case, note
        self.damaged = damaged or []


def _damaged(view: CaseView) -> str:
    """What the damaged lines of this (case, trial) are, as the Cases page names them: a result left out is said, never
    a page that reads as if the case had no line at all."""
    if not view.damaged:
        return ""
    lines = "".join(f"<li>line {n}: {t(why)}</li>" for n, why in view.damaged)
    if view.result is None:
        head = (f"results.jsonl holds {'a line' if len(view.damaged) == 1 else 'lines'} for this (case, trial) that "
                f"{'is' if len(view.damaged) == 1 else 'are'} not a result, so it has no result to show:")
        tail = ("<code>tracejudge report</code> names every such line; restore the file, or run the config again to redo "
                "the case (a resumed run redoes it).")
    else:
        head = "results.jsonl also holds a line for this (case, trial) that is not a result, left out; the result shown is another line's:"
        tail = ""
    return f'<div class="bad damaged" id="damaged"><p>{head}</p><ul>{lines}</ul>{f"<p>{tail}</p>" if tail else ""}</div>'


def _calls(case: Case) -> list[tuple[int, int, ToolCall]]:
    # (index over the whole trace, step index, call): the numbering ToolCalls' details use.
    out: list[tuple[int, int, ToolCall]] = []
    for si, step in enumerate(case.trace.steps if case.trace else []):
        for call in step.tool_calls:
            out.append((len(out), si, call))
    return out


_ENDS = ("; [", "; unexpected:", "; in order", "; first divergence")


def closest_call(reason: str, expected_index: int) -> tuple[int, str] | None:
    """`(actual call index, differing argument)` that ToolCalls' reason names for a missing expected call, if any.

    ToolCalls writes `missing: [i] name({...}) (closest: call #j, step s: <difference>)`.
    """
    m = re.search(rf"\[{expected_index}\] (?:(?!; \[).)*?\(closest: call #(\d+), step \d+: ", reason, re.S)
    if m is None:
        return None
    rest = reason[m.end():]
    cut = min([rest.find(x) for x in _ENDS if x in rest] + [len(rest)])
    return int(m.group(1)), rest[:cut].removesuffix(")")


def _alignment_rows(details: dict[str, Any], case: Case | None, reason: str, start: int = 0, stop: int | None = None) -> list[str]:
    """The rows `start` to `stop` of the expected-vs-actual table: matched pairs, missing expected calls, unexpected calls
    (only those rows are rendered: a case of 5,000 calls has as many)."""
    expected = (case.expected_tool_calls or []) if case else []
    actual = {i: c for i, _, c in _calls(case)} if case else {}

    def exp_cell(i: int) -> str:
        if 0 <= i < len(expected):
            x = expected[i]
            # (as reasons show it: a `$python_eq` is the value it wraps, other matchers as written)
            return f'<span class="idx">[{i}]</span> <b class="tool">{t(x.name)}</b><pre class="args">{pretty(shown_expected(x.arguments or {}))}</pre>'
        return f"[{i}]"

    def act_cell(j: int) -> str:
        c = actual.get(j)
        return call_html(j, c, full=False) if c is not None else f"#{j}"

    def missing(i: int) -> str:
        near = closest_call(reason, i)
        other = (f'<div class="closest"><span class="muted">closest:</span> {act_cell(near[0])}<div class="reason">differs: {t(near[1])}</div></div>'
                 if near else '<span class="muted">—</span>')
        return f'<tr class="missing"><td>{exp_cell(i)}</td><td class="bad">missing</td><td>{other}</td></tr>'

    rows = [("pair", p) for p in details.get("pairs") or []] + [("missing", i) for i in details.get("missing") or []]
    rows += [("unexpected", j) for j in details.get("unexpected") or []]
    return [f'<tr class="pair"><td>{exp_cell(at[0])}</td><td class="ok">matched</td><td>{act_cell(at[1])}</td></tr>' if kind == "pair"
            else missing(at) if kind == "missing"
            else f'<tr class="unexpected"><td class="muted">—</td><td class="bad">unexpected</td><td>{act_cell(at)}</td></tr>'
            for kind, at in rows[start:stop]]


def _alignment(key: str, details: dict[str, Any], case: Case | None, reason: str = "", rest_url: str = "") -> str:
    total = sum(len(details.get(k) or []) for k in ("pairs", "missing", "unexpected"))
    fold = rest_url != "" and total > FOLD_CALLS
    rows = _alignment_rows(details, case, reason, 0, FOLD_CALLS if fold else None)
    if fold:  # (the other rows are fetched when asked for: `rest_html`)
        part = url("", part=f"align:{key}", **{"from": FOLD_CALLS}).removeprefix("?")
        rows.append(rest_placeholder(f"{rest_url}&amp;{part}", f"show the other {total - FOLD_CALLS:,} rows", row=3))
    figures = ", ".join(f"{k} {f3(details[k])}" for k in ("precision", "recall", "f1") if k in details)
    return (f'<div class="alignment" data-metric="{e(key)}"><h4>Expected vs actual calls: {e(key)}</h4>'
            f'<p class="muted small">{e(figures)}</p><table class="grid align"><colgroup><col class="w42"><col class="w16"><col class="w42"></colgroup>'
            f'<thead><tr><th>expected</th><th></th><th>actual</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def rest_html(part: str, start: int, run: Run, result: dict[str, Any] | None, case: Case | None) -> str | None:
    """The part of a Case page it left to be fetched (`transcript.rest_placeholder`): `transcript`, its steps from `start`;
    `align:KEY`, the rows of metric KEY's expected-vs-actual table from `start`. None when there is no such part."""
    if part == "transcript":
        return steps_html(case, run.rid, start) if case is not None else None
    score = ((result or {}).get("scores") or {}).get(part.removeprefix("align:")) if part.startswith("align:") else None
    details = score.get("details") if isinstance(score, dict) else None
    if not isinstance(details, dict):
        return None
    return "".join(_alignment_rows(details, case, str(score.get("reason") or ""), start))


_ABOUT = re.compile(r"(call|step) ([1-9][0-9]{0,5})")


def _in_transcript(text: str, case: Case | None, anchor: str) -> str:
    """For a question about one call or step as the judge read the trace (`call k`, `step k`: numbered from 1), a link to
    it in the transcript, which numbers from 0 (`#k-1`, `step k-1`); "" for any other question."""
    m = _ABOUT.fullmatch(text)
    if m is None or case is None or case.trace is None:
        return ""
    i = int(m.group(2)) - 1
    if m.group(1) == "call":
        calls = [c for step in case.trace.steps for c in step.tool_calls]
        return f' <a class="to-trace" href="#{e(anchor)}-call-{i}">→ #{i} {t(calls[i].name)}</a>' if i < len(calls) else ""
    return f' <a class="to-trace" href="#{e(anchor)}-step-{i}">→ step {i}</a>' if i < len(case.trace.steps) else ""


def _judge_answers(key: str, details: dict[str, Any], case: Case | None = None, anchor: str = "") -> str:
    answers = details.get("answers") or {}
    questions = details.get("questions") or {}
    rows = []
    linked = False
    for qid, a in answers.items():
        a = a if isinstance(a, dict) else {"answer": a}
        verdict = a.get("answer", a.get("score"))
        text = str(questions.get(qid, ""))
        there = _in_transcript(text, case, anchor)
        linked = linked or bool(there)
        rows.append(f"<tr><td>{e(qid)}</td><td>{e(text)}{there}</td><td><b>{t(verdict)}</b></td><td class=reason>{t(a.get('reason', ''))}</td></tr>")
    # The judge read steps and calls numbered from 1; the transcript numbers them from 0 (as ToolCalls does): said, so
    # that "call 1" is not taken for the call the transcript shows as #1.
    note = ('<p class="muted small numbering">The judge read the steps and calls numbered from 1: its call k is #k−1 in the '
            "transcript, its step k is step k−1.</p>") if linked else ""
    return (f'<div class="judge-answers" data-metric="{e(key)}"><h4>Judge questions: {e(key)}</h4>{note}<table class="grid">'
            '<colgroup><col class="w12"><col class="w35"><col class="w12"><col class="w41"></colgroup>'
            f'<thead><tr><th>question</th><th>text</th><th>verdict</th><th>reason</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def _vs_baseline(score: dict[str, Any], before: Any, name: str) -> str:
    """Under a score's value, how it moved from the baseline's (`before`, that metric's score there, or None): `+0.250`
    (green) or `−0.250` (red), `= baseline`, or `not in baseline`; its title gives the baseline's value and verdict."""
    if not isinstance(before, dict):
        return f'<br><span class="muted small delta">not in {e(name)}</span>'
    was, now = before.get("value"), score.get("value")
    verdict = {True: "pass", False: "fail"}.get(before.get("passed"), "no verdict")
    title = f"{name}: {f3(was)} ({verdict})"
    try:
        d = float(now) - float(was)
    except (TypeError, ValueError):
        return f'<br><span class="muted small delta" title="{e(title)}">was {f3(was)}</span>'
    if abs(d) < 5e-4:  # (what f3 shows as the same number)
        return f'<br><span class="muted small delta" title="{e(title)}">= baseline</span>'
    return f'<br><span class="{"ok" if d > 0 else "bad"} small delta" title="{e(title)}">{"+" if d > 0 else "−"}{abs(d):.3f}</span>'


def _side(view: CaseView, case_id: str, trial: int, baseline: CaseView | None = None) -> str:
    """One run's column of the case page; `baseline`: the run beside it, whose scores each of this one's is told against."""
    res = view.result
    rid = view.run.rid
    rest = case_url(rid, case_id, path="case/rest", trial=trial, part="transcript")
    out = [f'<div class="side" data-run="{e(rid)}"><h2><a href="/run/{e(rid)}">{e(view.run.name)}</a></h2>']
    if res is None:
        out.append(_damaged(view) or '<p class="muted">This run has no result for this (case, trial).</p>')
        return "".join(out) + transcript_html(view.case, view.note, rid, rest) + "</div>"
    out.append(_damaged(view))
    status = str(res.get("status", "ok"))
    out.append(f'<p>status <b class="{"ok" if status == "ok" else "bad"}">{e(status)}</b> · {f3(res.get("duration_s"))} s'
               + (f' · tags {t(", ".join(map(str, res.get("tags") or [])))}' if res.get("tags") else "")
               + f' · <a class="to-part" href="#{e(rid)}-transcript">transcript ↓</a></p>')
    if res.get("error"):
        err = res["error"]
        where = ":".join(str(x) for x in (err.get("file"), err.get("line")) if x is not None)
        out.append(f'<p class="bad reason">{t(err.get("kind"))}: {t(err.get("message"))}'
                   + (f' <span class="muted">({e(where)}{" field " + e(err.get("field")) if err.get("field") else ""})</span>' if where else "") + "</p>")
    scores = res.get("scores") or {}
    out.append('<h3>Scores</h3><table class="grid scores"><colgroup><col class="w20"><col class="c-val"><col class="c-val"><col></colgroup>'
               "<thead><tr><th>metric</th><th>value</th><th>verdict</th><th>reason</th></tr></thead><tbody>")
    extras = []
    labels, threshold = labels_of(view.run.manifest(), res)
    before = ((baseline.result or {}).get("scores") or {}) if baseline is not None and baseline.result is not None else None
    for key, s in scores.items():
        if not isinstance(s, dict):
            continue
        p = s.get("passed")
        shown, wrong = label_cell(labels.get(key), p, threshold)
        label = f'<br><span class="{"bad" if wrong else "muted"} label">{e(shown)}{" ≠ verdict" if wrong else ""}</span>' if shown else ""
        d = s.get("details")
        aligned = isinstance(d, dict) and "pairs" in d and ("missing" in d or "unexpected" in d)
        answered = isinstance(d, dict) and isinstance(d.get("answers"), dict)
        # (the table a reason sums up is further down the page, below every score: a link to it, not a scroll to find it)
        jumps = " · ".join(f'<a class="to-part" href="#{e(rid)}-{part}-{e(key)}">{words} ↓</a>'
                           for part, words, has in (("align", "expected vs actual", aligned), ("judge", "the judge's answers", answered)) if has)
        jumps = f'<div class="to-parts">{jumps}</div>' if jumps else ""
        out.append(f'<tr data-metric="{e(key)}"><td class="metric">{name_html(key)}</td><td class=num><span class="v">{f3(s.get("value"))}</span>{_vs_baseline(s, before.get(key), baseline.run.name) if before is not None and baseline else ""}</td>'
                   f'<td class="{"ok" if p is True else "bad" if p is False else "muted"}">{"pass" if p is True else "fail" if p is False else "—"}{label}</td>'
                   f'<td class="reason">{reason_html(capped_calls(str(s.get("reason") or "")))}{jumps}'
                   + (f'<details><summary>details</summary><pre>{pretty(s["details"])}</pre></details>' if s.get("details") else "")
                   + "</td></tr>")
        if aligned:
            extras.append(f'<div id="{e(rid)}-align-{e(key)}">'
                          + _alignment(key, d, view.case, str(s.get("reason") or ""), rest.removesuffix("&amp;part=transcript")) + "</div>")
        if answered:
            extras.append(f'<div id="{e(rid)}-judge-{e(key)}">' + _judge_answers(key, d, view.case, rid) + "</div>")
    out.append("</tbody></table>")
    out += extras
    out.append(f'<div id="{e(rid)}-transcript">' + transcript_html(view.case, view.note, rid, rest) + "</div>")
    return "".join(out) + "</div>"


def case_page(case_id: str, trial: int, trials: list[int], main: CaseView, other: CaseView | None, runs: list[Run], note: str = "",
              nav: str = "", kept: dict[str, Any] | None = None) -> str:
    """The case page of `main`, with `other` (a baseline) side by side when given; `note`: why the baseline the URL
    named is not beside it (shown above the case), or ""; `nav`: the bar moving along the list it was opened from
    (`case_nav.nav_html`), whose parameters `kept` its other links keep."""
    rid, kept = main.run.rid, kept or {}
    links = [f'<a href="{case_url(rid, case_id, trial=t, vs=other.run.rid if other else "", **kept)}">trial {t}</a>' if t != trial else f"<b>trial {t}</b>"
             for t in trials]
    vs = [f'<a class="vs-link" href="{case_url(rid, case_id, trial=trial, vs=r.rid, **kept)}">beside {e(r.name)}</a>'
          for r in runs if r.rid != rid and differs(r, main.run) is None]
    if other is not None:
        vs.append(f'<a id="alone-link" href="{case_url(rid, case_id, trial=trial, vs="-", **kept)}">alone</a>')
    head = (f'{nav}<h1>Case <code id="case-id">{shown_id(case_id)}</code></h1><p>{" · ".join(links)}'
            + (" — " + " · ".join(vs) if vs else "") + "</p>" + (f'<p class="bad filter-note" id="vs-note">{t(note)}</p>' if note else ""))
    if other is None:
        body = head + f'<div class="sides one">{_side(main, case_id, trial)}</div>'
    else:
        body = head + f'<div class="sides two">{_side(other, case_id, trial)}{_side(main, case_id, trial, other)}</div>'
    short = visible(case_id) if len(case_id) <= 120 else visible(case_id[:119]) + "…"  # (the title and crumb of a long id: its start)
    return frame(f"{short} · {main.run.name}", body, live_run=None,
                 crumbs=[(main.run.name, f"/run/{e(rid)}"), ("Cases", url(f"/run/{rid}/cases", **kept)), (short, case_url(rid, case_id, trial=trial))])


def diff_page(a: Run, b: Run, cmp: Comparison | None, runs: list[Run]) -> str:
    """Two runs paired by (case, trial): per metric the delta, its paired 95% CI and p-value; the most regressed and improved cases.

    Runs of different datasets (`differs`) get what differs instead of a table (`cmp` is then not needed).
    """
    opts_a = "".join(f'<option value="{e(r.rid)}"{" selected" if r.rid == a.rid else ""}>{e(r.name)}</option>' for r in runs)
    opts_b = "".join(f'<option value="{e(r.rid)}"{" selected" if r.rid == b.rid else ""}>{e(r.name)}</option>' for r in runs)
    apart = differs(a, b)
    out = [f"<h1>Diff: {e(a.name)} → {e(b.name)}</h1>",
           f'<form method="get" action="/diff" class="filters"><label>baseline <select name="a">{opts_a}</select></label>'
           f'<label>current <select name="b">{opts_b}</select></label><button type="submit">Compare</button></form>',
           f'<p class="bad" id="not-comparable">These runs cannot be compared case by case: {e(apart)}.</p>' if apart else "",
           ]
    crumbs = [(f"Diff {a.name} → {b.name}", url("/diff", a=a.rid, b=b.rid))]
    if apart or cmp is None:
        return frame(f"Diff {a.name} → {b.name}", "".join(out), crumbs=crumbs)
    out += [
           f'<p>{cmp.paired} results paired by (case, trial); {cmp.only_a} only in {e(a.name)}, {cmp.only_b} only in {e(b.name)}. '
           f'<span class="muted">{e(cmp.test)}.</span></p>',
           '<table class="grid" id="deltas"><thead><tr><th class=w20>metric</th><th>pairs</th><th>baseline</th><th>current</th><th>delta</th>'
           "<th class=w15>95% CI</th><th>p</th><th>regressed</th><th>improved</th></tr></thead><tbody>"]
    for k, md in cmp.metrics.items():
        ci = "—" if md.ci95 is None else f"[{md.ci95[0]:+.3f}, {md.ci95[1]:+.3f}]"
        cls = "bad" if (md.delta or 0) < 0 else "ok" if (md.delta or 0) > 0 else ""
        out.append(f'<tr data-metric="{e(k)}"><td>{e(k)}</td><td class=num>{md.pairs}</td><td class=num>{f3(md.mean_a)}</td>'
                   f'<td class=num>{f3(md.mean_b)}</td><td class="num {cls}">{f3(md.delta, signed=True)}</td><td>{ci}</td>'
                   f'<td class=num>{"—" if md.p_value is None else f"{md.p_value:.4f}"}</td><td class=num>{md.regressed}</td><td class=num>{md.improved}</td></tr>')
    out.append("</tbody></table>")
    for k, md in cmp.metrics.items():
        for title, movers, cls in (("Regressed most", md.worst, "regressed"), ("Improved most", md.best, "improved")):
            if not movers:
                continue
            out.append(f'<h3>{title}: {e(k)}</h3><table class="grid movers {cls}"><colgroup><col class="w15"><col class="w5"><col class="w10">'
                       '<col class="w10"><col><col></colgroup><thead><tr><th>case</th><th>trial</th><th>baseline</th><th>current</th>'
                       "<th>baseline reason</th><th>current reason</th></tr></thead><tbody>")
            for mv in movers:
                link = case_url(b.rid, mv.case_id, trial=mv.trial, vs=a.rid)
                out.append(f'<tr><td><a class="mover-link" href="{link}">{shown_id(mv.case_id)}</a></td><td class=num>{mv.trial}</td>'
                           f'<td class=num>{f3(mv.a)}</td><td class="num {"bad" if mv.b < mv.a else "ok"}">{f3(mv.b)}</td>'
                           f'<td class="reason">{reason_html(mv.reason_a)}</td><td class="reason">{reason_html(mv.reason_b)}</td></tr>')
            out.append("</tbody></table>")
    return frame(f"Diff {a.name} → {b.name}", "".join(out), crumbs=crumbs)
