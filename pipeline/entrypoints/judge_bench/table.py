"""The bench report on a terminal: one table of figures, the hints, the `limits:` block."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.table import Table
from tracejudge.core.console import cell
from tracejudge.entrypoints.judge_bench.ramp import MIN_SAMPLES

__all__ = ["print_report", "unusable_counts"]


def print_report(report: dict[str, Any], console: Console) -> None:
    """The bench report (`tracejudge.entrypoints.bench._run`'s dict) as a table of figures, then hints and the `limits:` block."""
    m, p = report["measured"], report.get("projection")
    table = Table(title=f"judge bench: {report['model']} at {report['endpoint']}", title_justify="left")
    table.add_column("figure")
    table.add_column("value")

    def ms(v: float | None) -> str:
        return f"{v * 1000:,.0f} ms" if v is not None else "n/a"

    ramp = ", ".join(f"{s['level']}: {s['throughput_rps'] * 60:,.0f}/min" for s in report["ramp"])
    rows = [
        ("ramp (in flight: answered/min)", ramp),
        ("ramp stopped", report["ramp_stopped"]),
        ("held level (in flight)", str(report["best_level"])),
        ("rate-limit headers", (f"{_num(report['headers'].get('limit_requests'))} RPM, {_num(report['headers'].get('limit_tokens'))} TPM "
                                f"({report['window']} limits)") if report["headers"]["present"] else "none (measured by the knee)"),
        ("measured phase", f"{m.get('seconds', 0):.1f} s, {m.get('requests', 0)} requests"),
        ("sustained requests/min", f"{m.get('rpm', 0):,.0f} (bound by {m.get('binds', 'n/a')})"),
        ("sustained input / output tokens/min", f"{m.get('input_tpm', 0):,.0f} / {m.get('output_tpm', 0):,.0f}"),
        ("latency p50 / p95 / p99", f"{ms(m.get('latency_p50_s'))} / {ms(m.get('latency_p95_s'))} / {ms(m.get('latency_p99_s'))}"),
        ("429 share", f"{m.get('rate_limited_share', 0):.1%}"),
        # (the held level's, as the rows above; `unusable replies` below counts every reply of the bench)
        ("errors (measured phase)", ", ".join(f"{k} {v}" for k, v in m.get("errors", {}).items()) or "none"),
        *((f"  {kind}", msg) for kind, msg in report.get("error_messages", {}).items()),
        *_reply_rows(report.get("replies")),
        ("cached-token share", f"{m.get('cached_token_share', 0):.1%}"),
        ("output tokens per request", f"{m['output_tokens_per_request']:.1f}" if m.get("output_tokens_per_request") is not None else "n/a"),
        *((("usage reported", f"by {m.get('answered', 0) - m['usage_estimated']} of {m.get('answered', 0)} replies: the others' tokens "
            "are estimated (the prompt as counted, the reply's text by judge.tokenizer), and so are the token rates and the cost"),)
          if m.get("usage_estimated") else ()),
        ("bench spent", f"{_usd(report['spent_usd'])} ({report['requests_sent']} requests; stopped by {report['stopped_by']})"),
    ]
    if p:
        rows += _sweep_rows(p)
    for k, v in rows:
        table.add_row(cell(k), cell(v))
    console.print(table)
    for hint in report.get("hints", []):
        console.print(hint, highlight=False, soft_wrap=True)
    lim = report["recommended_limits"]
    if lim is None:
        n = m.get("answered") or 0
        console.print("limits: none to recommend (" + ("no request was answered)" if not n else
                      "no reply was usable)" if (report.get("replies") or {}).get("usable") == 0 else
                      f"only {n} answers at level {report['best_level']}, at least {MIN_SAMPLES} measure a level: raise --requests)"), highlight=False)
        return
    console.print(f"limits: {{rpm: {lim['rpm']}, tpm: {lim['tpm']}, max_in_flight: {lim['max_in_flight']}, window: {lim['window']}}}", highlight=False)


def _reply_rows(replies: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The row counting answered replies the run could not use (over the whole bench: ramp and held level, so more
    than the `errors (measured phase)` row counts), with each problem's first message; none when every reply was
    usable (or nothing was answered)."""
    if not replies or not replies["answered"] or replies["usable"] == replies["answered"]:
        return []
    counts = unusable_counts(replies)
    verdict = "none usable: the judge is not usable as configured" if replies["usable"] == 0 else f"{replies['usable']} usable"
    return [("unusable replies (whole bench)", f"{counts} of {replies['answered']} answered ({verdict})"),
            *((f"  {_LABELS.get(kind, kind)}", msg) for kind, msg in replies.get("messages", {}).items())]


_LABELS = {"in_reasoning": "unparseable: text in reasoning"}


def unusable_counts(replies: dict[str, Any]) -> str:
    """`truncated 2, unparseable 20 (20 with the reply's text in a reasoning field), refused 1`: the unusable replies by problem."""
    parts = []
    for k in ("truncated", "unparseable", "refused"):
        if replies.get(k):
            inside = (replies.get("in_reasoning") or 0) if k == "unparseable" else 0
            parts.append(f"{k} {replies[k]}" + (f" ({inside} with the reply's text in a reasoning field)" if inside else ""))
    return ", ".join(parts)


def _sweep_rows(p: dict[str, Any]) -> list[tuple[str, str]]:
    """The projection's rows: what the judge cache answers, then each mode's paid requests, wall time and dollars."""
    hits = p.get("cache_hits", 0)
    cached = (f"the judge cache answers {hits:,} of their requests (free; a cold cache would need {p.get('cold_cache_requests', 0):,}), "
              if hits else "")
    rows = [("full sweep", f"{p['cases']:,} judged cases: {cached}{p['requests']:,} requests to send, "
                           f"{p['input_tokens']:,} in + {p['output_tokens']:,} out tokens")]
    for mode, v in p["modes"].items():
        wall = v.get("wall") or _duration(v["wall_s"])
        usd = f"${v['usd']:,.2f}" if v["usd"] is not None else "no price"
        note = ""
        if hits and v.get("cache_hits") is not None and v["cache_hits"] < hits:
            note = f" (grouped prompts are cached apart: the cache answers {v['cache_hits']:,} of them)"
        rows.append((f"  {mode}", f"{v['requests']:,} requests, {wall}, {usd}{note}"))
    return rows


def _usd(v: float | None) -> str:
    """Dollars, or `cost unknown` (a model without a price: never shown as $0)."""
    return "cost unknown: no price for the model" if v is None else f"${v:.4f}"


def _num(v: int | None) -> str:
    return f"{v:,}" if v else "-"


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "n/a"
    h, rest = divmod(int(round(seconds)), 3600)
    return f"{h} h {rest // 60} min" if h else f"{rest // 60} min {rest % 60} s"
