"""`report.md`: summary tables, pass@k, breakdowns, regressions, worst cases with reasons."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from tracejudge.core.inert_text import visible
from tracejudge.stages.aggregate.gate import Verdict
from tracejudge.stages.reports.cases import CaseMaterial
from tracejudge.stages.reports.judge_lines import budget_line, label_markdown, spend_line
from tracejudge.stages.reports.judge_spend import in_flight_line

if TYPE_CHECKING:  # a run without a baseline never compares
    from tracejudge.stages.comparison.runs import Comparison

__all__ = ["render_markdown", "run_errors_line"]


def _num(x: float | None, nd: int = 3) -> str:
    return "—" if x is None else f"{x:.{nd}f}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _text(text: Any) -> str:
    # Ids, names and reasons come from traces: Markdown viewers render inline HTML, so it is escaped; a terminal that
    # shows the file acts on control characters and a viewer hides them, so they are written as `\x1b`, and the text
    # `\x1b` as `\\x1b` (`inert_text.visible`).
    return visible(html.escape(str(text), quote=False))


def _cell(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return _text(text).replace("|", "\\|") or "—"


def _ci(ci: list[float] | None) -> str:
    return "—" if not ci else f"[{ci[0]:.3f}, {ci[1]:.3f}]"


def run_errors_line(summary: dict[str, Any]) -> str | None:
    """How many results' agent runs ended in an error (`summary.json`'s `run_errors`), as the reports say it; None for none.

    Such a result is scored as its trace recorded the run and is `ok` by status: the line says so, since nothing else in
    the summary tells a crashed or limit-stopped run from one that finished. (Cases, or results with several trials.)
    """
    n = summary.get("run_errors")
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        return None
    unit = "results" if summary.get("trials", 1) > 1 else "cases"
    return (f"{n} of {summary.get('results', 0)} {unit}: the agent's run ended in an error (`metadata.run_error`); "
            f"scored as the trace recorded it, {'it counts' if n == 1 else 'they count'} as ok")


def not_applicable_note(m: dict[str, Any], sep: str = " ") -> str:
    """`" (3 not applicable)"` for a metric some results do not carry (a case-level metric) or that does not apply to
    them (`rendered.NOT_APPLICABLE`), else `""`.

    The scored cell names them so a row adds up: scored + not computed +
    not applicable + excluded = results (`m` is one metric of summary.json).
    """
    n = m.get("not_applicable", 0)
    return f"{sep}({n} not applicable)" if n else ""


def not_computed_cell(m: dict[str, Any]) -> str:
    """The not computed count of metric `m` (a block of summary.json), naming those whose metric raised or timed out
    (`19 (19 raised)`): not a value the cases lack but a bug in the metric, which fails the gate by default."""
    raised = m.get("raised", 0)
    return f"{m.get('not_computed', 0)} ({raised} raised)" if raised else str(m.get("not_computed", 0))


def pass_at_k_note(summary: dict[str, Any]) -> str:
    """What the pass@k / pass^k figures of `summary["pass_at_k"]` are computed over, as one plain-text sentence.

    Every report says it the same way, so a user reading `cases` (which counts cases whose every trial failed)
    is not told those cases were left out; the rule itself is `tracejudge.stages.score.pass_at_k.PassAtK`'s.
    """
    figures = (summary.get("pass_at_k") or {}).values()
    note = ("Each figure is the mean, over the cases with at least k trials, of the estimate from a case's n trials and c "
            "passing ones; a trial the agent failed (raised, timed out) counts as failed for every metric, one the judge "
            "failed on only for the judge's metrics. Left out: cases the metric applies to on no trial (no scored trial) "
            "and cases with fewer than k trials.")
    if any(v.get("group_by") for v in figures):
        note += (" With group_by a case is a task, the results sharing the key's value; a result without the key is left "
                 "out, as is every unreadable record (invalid_input, no sample of the agent), and its task may then have "
                 "fewer than k trials.")
    return note


def metric_rows(summary: dict[str, Any]) -> list[list[str]]:
    """One row per metric: name, scored of results, excluded, not computed, mean, std, CI, pass rate, pass@k."""
    rows = []
    for key, m in summary.get("metrics", {}).items():
        excl = ", ".join(f"{k} {v}" for k, v in m.get("excluded", {}).items()) or "0"
        pk = m.get("pass_at_k") or {}
        pks = ", ".join(f"@{k} {_num(v.get('value'))}" for k, v in pk.items()) or "—"
        rate = f"{_pct(m.get('pass_rate'))} ({m.get('passed', 0)}/{m.get('with_verdict', m['scored'])})" if m.get("pass_rate") is not None else "—"
        rows.append([key, f"{m['scored']} of {m['results']}{not_applicable_note(m)}", excl, not_computed_cell(m), _num(m.get("mean")),
                     _num(m.get("std")), _ci(m.get("ci95")), rate, pks])
    return rows


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    # Headers are escaped as cells are: a breakdown's columns are metric names, and a case-level metric's name comes
    # from the dataset (HTML in it would render live, a `|` would split the column).
    out = ["| " + " | ".join(_cell(h) for h in header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return out


def render_markdown(summary: dict[str, Any], verdict: Verdict, cases: CaseMaterial, *, title: str = "tracejudge report") -> str:
    """The whole `report.md` text."""
    total = summary.get("results", 0)
    status = summary.get("status", {})
    ok = status.get("ok", 0)
    lines = [f"# {_text(title)}", "", f"**Verdict: {verdict.word}**", ""]  # (the title names the run's folder)
    for c in verdict.checks:
        lines.append(f"- {'ok' if c.ok else '**FAIL**'} `{_text(c.name)}`: {_text(c.detail)}")
    if not verdict.checks:
        lines.append("- no assertions configured")
    lines += ["", "## Summary", ""]
    errs = ", ".join(f"{k} {v}" for k, v in status.items() if k != "ok")
    lines.append(f"{total} results" + (f" ({summary.get('trials')} trials per case)" if summary.get("trials", 1) > 1 else "")
                 + f": {ok} ok" + (f", errors: {errs}" if errs else ", no errors") + ".")
    if ok != total:
        lines.append(f"Means, CIs and pass rates cover the **{ok} of {total}** results that were scored; the other {total - ok} are excluded and listed under *Errors*.")
    if run_errors := run_errors_line(summary):
        lines += ["", f"**{_text(run_errors)}** (listed under *Runs that ended in an error*)."]
    judge = summary.get("judge") or {}
    if judge.get("requests") or judge.get("cache_hits"):
        lines += ["", _text(spend_line(summary)) + "."]  # what the judge cost ("cost unknown" for a model without a price)
        if flying := in_flight_line(summary):  # (requests a kill cut off in flight: their tokens and dollars are estimates)
            lines += ["", _text(flying) + "."]
    budget = budget_line(summary)
    if budget:
        lines += ["", f"**{_text(budget)}**"]
    lines.append("")
    lines += _table(["metric", "scored", "excluded", "not computed", "mean", "std", "95% CI", "pass rate", "pass@k"], metric_rows(summary))
    if summary.get("pass_at_k"):
        hat = any(v.get("estimator") == "pass^k" for v in summary["pass_at_k"].values())
        lines += ["", "## pass@k and pass^k" if hat else "## pass@k", "", _text(pass_at_k_note(summary)), ""]
        rows = [[k, v["metric"], str(v["k"]), _num(v.get("value")), str(v.get("cases", 0)), str(v.get("no_scored_trial", 0)), str(v.get("too_few_trials", 0))]
                for k, v in summary["pass_at_k"].items()]
        header = ["name", "metric", "k", "value", "cases", "cases with no scored trial", "cases with fewer than k trials"]
        if any(v.get("group_by") for v in summary["pass_at_k"].values()):  # (then a "case" is a task: the results sharing a key's value)
            header.append("tasks by (results without the key)")
            for row, v in zip(rows, summary["pass_at_k"].values()):
                row.append(f"metadata.{v['group_by']} ({v.get('results_without_key', 0)})" if v.get("group_by") else "—")
        lines += _table(header, rows)
    for name, groups in summary.get("breakdowns", {}).items():
        lines += ["", f"## By {_text(name)}", ""]
        keys = list(summary.get("metrics", {}))
        rows = []
        for value, g in groups.items():
            row = [value, str(g["results"])]
            for k in keys:
                m = g["metrics"].get(k, {})
                row.append(f"{_num(m.get('mean'))} ({m.get('scored', 0)} of {m.get('results', 0)})")
            rows.append(row)
        lines += _table([name, "results", *[f"{k} mean (scored)" for k in keys]], rows)
    if verdict.comparison is not None:
        lines += ["", *_regressions(verdict.comparison)]
    lines += ["", "## Worst cases", ""]
    for key, worst in cases.worst.items():
        if not worst:
            continue
        lines += [f"### {_text(key)}", ""]
        if any(r.run_error for r in worst):  # (a column only where a row has one: its run ended in an error)
            lines += _table(["case", "trial", "value", "reason", "run ended in error"],
                            [[r.case_id, str(r.trial), _num(r.scores[key]["value"]), r.scores[key]["reason"], r.run_error] for r in worst])
        else:
            lines += _table(["case", "trial", "value", "reason"], [[r.case_id, str(r.trial), _num(r.scores[key]["value"]), r.scores[key]["reason"]] for r in worst])
        lines.append("")
    if cases.run_errors:
        lines += ["## Runs that ended in an error", ""]
        lines.append(f"{cases.run_error_total} of {cases.total} results: the agent's run ended in an error its trace records "
                     "(`metadata.run_error`); they are scored as recorded.")
        lines.append("")
        lines += _table(["case", "trial", "status", "run error"], [[r.case_id, str(r.trial), r.status, r.run_error] for r in cases.run_errors])
        if cases.run_error_total > len(cases.run_errors):
            lines.append(f"\n(first {len(cases.run_errors)} shown)")
        lines.append("")
    if cases.error_kinds:
        lines += ["## Errors", ""]
        lines.append(", ".join(f"{k}: {v}" for k, v in sorted(cases.error_kinds.items())) + f" (of {cases.total} results)")
        lines.append("")
        lines += _table(["case", "trial", "status", "error"], [[r.case_id, str(r.trial), r.status, r.error] for r in cases.errors])
        if sum(cases.error_kinds.values()) > len(cases.errors):
            lines.append(f"\n(first {len(cases.errors)} shown)")
    if summary.get("labels"):
        lines.append(label_markdown(summary["labels"]).rstrip("\n"))  # (before the footer, which closes the report)
    agg = summary.get("aggregate", {})
    if agg:
        lines += ["", "---", f"CI: {agg.get('ci', '')} (seed {agg.get('seed')}, {agg.get('bootstrap_resamples')} resamples)."]
    return "\n".join(lines) + "\n"


def _regressions(cmp: Comparison) -> list[str]:
    lines = ["## Baseline comparison", "", f"Baseline `{cmp.run_a}`; {cmp.paired} results paired by (case, trial) "
             f"({cmp.only_a} only in the baseline, {cmp.only_b} only in this run). Test: {cmp.test}.", ""]
    rows = []
    for k, md in cmp.metrics.items():
        ci = "—" if md.ci95 is None else f"[{md.ci95[0]:+.3f}, {md.ci95[1]:+.3f}]"
        rows.append([k, str(md.pairs), _num(md.mean_a), _num(md.mean_b), "—" if md.delta is None else f"{md.delta:+.3f}", ci,
                     _num(md.p_value, 4), str(md.regressed), str(md.improved)])
    lines += _table(["metric", "pairs", "baseline", "current", "delta", "95% CI", "p", "regressed", "improved"], rows)
    for k, md in cmp.metrics.items():
        if md.worst:
            lines += ["", f"### Regressed most: {_text(k)}", ""]
            lines += _table(["case", "trial", "baseline", "current", "baseline reason", "current reason"],
                            [[m.case_id, str(m.trial), _num(m.a), _num(m.b), m.reason_a, m.reason_b] for m in md.worst])
    return lines
