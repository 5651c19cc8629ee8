"""summary.json, report.md and report.html of the floor with outputs (`_floor_outputs.py`), minimal and as tracejudge
writes them for `pipeline_throughput.CONFIG` (stages/reports/markdown.py, html.py, cases.py; aggregate's summary):

- the summary: per metric (and per tag) results, scored, excluded, not computed, mean, std, 95% CI (the floor's fold:
  every value, a multinomial bootstrap), passed, pass rate, 10-bin histogram; status counts, verdict, the segment;
- the case material, from the ranks the workers sent: the table's worst 2,000 results (errors first, then lowest mean
  value, ties in file order) and each metric's worst 10 below its threshold, chosen by numpy; the first 50 errors and
  runs that ended in an error; their lines read back from results.jsonl at their offsets, only the fields shown;
- report.md: verdict, summary and tag tables, worst cases (texts on one line, cut at 300 characters, HTML-escaped, `|`
  escaped, shown inert), errors, the CI note; report.html: the same tables, a histogram per metric as SVG, the case
  table's rows as JSON for its script (`<` and invisible characters escaped), without the page's CSS and script.
"""

from __future__ import annotations

import html
import json
import re
from array import array
from typing import Any

import msgspec

import _floor_run as floor
from _six_checks import CHECKS

MAX_ROWS, WORST, MAX_ERRORS, RUN_ERROR_CHARS = 2000, 10, 50, 500  # tracejudge's caps (`CaseCollector`, `cases.RUN_ERROR_CHARS`)
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f"
_INVISIBLE = "\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180e\u200b\u2028-\u202e\u2060-\u2064\u2066-\u206f\u3164\ufeff\uffa0\ufff9-\ufffb\U000e0001\U000e0020-\U000e007f"
_SHOWN = re.compile(rf"(\\+)(?=x[0-9a-fA-F]{{2}}|u\{{[0-9a-fA-F]+\}})|(\\*)([{_CONTROLS}])|(\\*)([{_INVISIBLE}])")
_ANY = re.compile(f"[{_CONTROLS}{_INVISIBLE}\\\\]")
_RAW = re.compile(f"[{_CONTROLS}{_INVISIBLE}]")
# The characters `_INVISIBLE` names that `str.isprintable` calls printable (letters and marks that show as nothing): a
# printable text holding none of these (nor a backslash) is shown as it is, told without a regex scan.
_PRINTABLE_HIDDEN = tuple(c for c in map(chr, [0x34F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0]) if c.isprintable())
CI_NOTE = ("95% percentile bootstrap of the mean over scored results, seeded; from a uniform sample of at most reservoir_size values "
           "(those whose (case, trial) keys hash lowest under the seed), deviations scaled by sqrt(sample/scored) when the sample is smaller")


def inert(text: str) -> bool:
    """Whether `visible(text)` is `text` itself (most text: a check of flags and a few searches for characters)."""
    if text.isprintable() and "\\" not in text:
        return text.isascii() or not any(c in text for c in _PRINTABLE_HIDDEN)
    return _ANY.search(text) is None


def visible(text: str) -> str:
    """`text` shown inert (`inert_text.visible`): each control character but tab and newline as `\\xNN`, each invisible
    one as `\\u{NNNN}`, a backslash before such an escape's shape or such a character doubled; the rest as it is."""
    if inert(text):
        return text
    return _SHOWN.sub(lambda m: m[1] * 2 if m[1] is not None else m[2] * 2 + f"\\x{ord(m[3]):02x}" if m[3] is not None
                      else m[4] * 2 + f"\\u{{{ord(m[5]):04x}}}", text)


def invalid_line(errors: int, results: int) -> str:
    """The gate's failed check when results are invalid_input (`assertions.max_invalid_share`: 0 by default)."""
    return (f"max_invalid_share: {errors} of {results} results are invalid_input (unreadable or invalid records) = "
            f"{100 * errors / results:.1f}%, allowed <= 0% (assertions.max_invalid_share)")


# ---- summary.json ----
def _blocks(table: Any, results: int, status: dict[str, int]) -> dict[str, Any]:
    """Each check's block over `table` (the ok results' values, six a row, NaN not computed) of `results` results. The
    histogram's bins as tracejudge's `metric_stats.bin_of`: a value up to 1e-10 under an edge counts in the bin above."""
    import numpy as np

    folded, excluded = floor.fold(table.tobytes(), 0)["metrics"], {k: v for k, v in status.items() if k != "ok"}
    out = {}
    for j, key in enumerate(CHECKS):
        col = table[:, j]
        got, f = col[~np.isnan(col)], folded[key]
        out[key] = {"results": results, "scored": len(got), "not_computed": f["not_computed"], "not_applicable": 0, "excluded": excluded,
                    "error_share": 0.0, "mean": f["mean"], "std": None if f["std"] is None else round(f["std"], 6),
                    "ci95": None if f["ci"] is None else [round(x, 6) for x in f["ci"]], "passed": int((got >= 1.0).sum()),
                    "with_verdict": len(got), "pass_rate": f["pass_rate"],
                    "histogram": np.bincount(np.clip((got * 10 + 1e-9).astype(np.int64), 0, 9), minlength=10).tolist()}
    return out


def summary(values: array, ranks: array, tags: dict[str, array], status: dict[str, int], config_hash: str,
            segment: dict[str, Any]) -> dict[str, Any]:
    """summary.json's content: `values` six a result for the ok ones (NaN: not computed), `ranks` one a result (-1: an
    error), `tags` each tag's results (indices)."""
    import numpy as np

    table, ok = np.frombuffer(values, dtype=np.float64).reshape(-1, len(CHECKS)), np.frombuffer(ranks, dtype=np.float64) != -1.0
    row = np.cumsum(ok) - 1  # a result's row in `table`, if ok
    groups = {}
    for tag, at in tags.items():
        seqs = np.frombuffer(at, dtype=np.uint32)
        mine = seqs[ok[seqs]]
        st = {"ok": len(mine), **({"invalid_input": len(seqs) - len(mine)} if len(seqs) > len(mine) else {})}
        groups[tag] = {"results": len(seqs), "status": st, "metrics": _blocks(table[row[mine]], len(seqs), st)}
    results, errors = len(ok), len(ok) - int(ok.sum())
    del segment["command"]
    return {"tracejudge_version": "0.1.0", "config_hash": config_hash, "complete": True, "elapsed_s_total": segment["elapsed_s"],
            "results": results, "status": status, "trials": 1, "metrics": _blocks(table, results, status), "pass_at_k": {},
            "breakdowns": {"tag": groups} if groups else {},
            "aggregate": {"seed": floor.SEED, "reservoir_size": 1000, "group_reservoir_size": 250, "bootstrap_resamples": floor.RESAMPLES,
                          "ci": CI_NOTE, "denominators": "mean, std, ci95 and pass_rate cover `scored` results; `results` counts every "
                          "result, and scored + not_computed + not_applicable + excluded == results"},
            "judge": {"requests": 0, "cache_hits": 0, "retries": 0, "rate_limited": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0},
            "usage": {}, "segments": [segment],
            "verdict": {"verdict": "FAIL" if errors else "PASS", "checks": [invalid_line(errors, results)] if errors else []}}


# ---- the cases the reports show ----
class _Cell(msgspec.Struct):
    value: float | None = None
    passed: bool | None = None
    reason: str = ""


class _Line(msgspec.Struct):  # the fields of a result line the reports show (the rest skipped unread)
    case_id: str
    trial: int = 0
    status: str = "ok"
    tags: list[str] = []
    metadata: Any = None
    scores: dict[str, _Cell] = {}
    error: dict[str, Any] | None = None


_read_line = msgspec.json.Decoder(_Line).decode


def _shown(line: _Line) -> dict[str, Any]:
    """A line as the reports' rows hold it (`cases.CaseRow`'s fields)."""
    msg, err = "", line.error
    if err:
        where = ":".join(str(x) for x in (err.get("file"), err.get("line")) if x)
        msg = (f"{err.get('kind', '')}: {err.get('message', '')}" + (f" [{err['field']}]" if err.get("field") else "")
               + (f" ({where})" if where else ""))
    said = line.metadata.get("run_error") if type(line.metadata) is dict else None
    said = "" if not said else said if type(said) is str else json.dumps(said, separators=(",", ":"), ensure_ascii=False)
    return {"case_id": line.case_id, "trial": line.trial, "status": line.status,
            "scores": {k: {"value": c.value, "passed": c.passed, "reason": c.reason} for k, c in line.scores.items()}, "error": msg,
            "tags": line.tags, "run_error": said if len(said) <= RUN_ERROR_CHARS else said[: RUN_ERROR_CHARS - 1] + "…"}


def material(path: str, values: array, ranks: array, lengths: array, run_errors: array) -> dict[str, Any]:
    """The rows the reports show: `table` (worst first), `worst` per check, `errors` and `run_errors` (the first 50),
    `total`; chosen from `ranks` and `values`, read from `path` at the offsets `lengths` give (a newline after each)."""
    import numpy as np

    r = np.frombuffer(ranks, dtype=np.float64)
    seq = np.arange(len(r))
    table = np.lexsort((seq, r))[:MAX_ROWS]  # by rank, ties in file order: errors (-1) first
    ok = np.flatnonzero(r != -1.0)
    vals = np.frombuffer(values, dtype=np.float64).reshape(-1, len(CHECKS))
    worst = {}
    for j, key in enumerate(CHECKS):
        short = np.flatnonzero(vals[:, j] < 1.0)  # (NaN, not computed, compares false: left out)
        worst[key] = ok[short[np.lexsort((short, vals[short, j]))[:WORST]]]
    errors, runs = np.flatnonzero(r == -1.0)[:MAX_ERRORS], np.frombuffer(run_errors, dtype=np.uint32)[:MAX_ERRORS]
    starts = np.concatenate(([0], np.cumsum(np.frombuffer(lengths, dtype=np.uint32).astype(np.int64) + 1)))
    rows: dict[int, dict[str, Any]] = {}
    with open(path, "rb") as fh:
        for i in sorted({*table.tolist(), *errors.tolist(), *runs.tolist(), *(i for w in worst.values() for i in w.tolist())}):
            fh.seek(int(starts[i]))
            rows[i] = _shown(_read_line(fh.read(int(starts[i + 1] - starts[i]) - 1)))
    return {"table": [rows[i] for i in table.tolist()], "worst": {k: [rows[i] for i in w.tolist()] for k, w in worst.items()},
            "errors": [rows[i] for i in errors.tolist()], "error_total": int((r == -1.0).sum()),
            "run_errors": [rows[i] for i in runs.tolist()], "run_error_total": len(run_errors), "total": len(r)}


# ---- report.md and report.html ----
def _f3(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _cell(text: Any) -> str:
    text = " ".join(str(text).split())
    if len(text) > 300:
        text = text[:299] + "…"
    return visible(html.escape(text, quote=False)).replace("|", "\\|") or "—"


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return ["| " + " | ".join(map(_cell, header)) + " |", "|" + "|".join("---" for _ in header) + "|",
            *["| " + " | ".join(map(_cell, r)) + " |" for r in rows]]


def metric_rows(summary: dict[str, Any]) -> list[list[str]]:
    """A row per check: name, scored of results, excluded, not computed, mean, std, CI, pass rate, pass@k."""
    return [[k, f"{m['scored']} of {m['results']}", ", ".join(f"{s} {n}" for s, n in m["excluded"].items()) or "0", str(m["not_computed"]),
             _f3(m["mean"]), _f3(m["std"]), "—" if not m["ci95"] else f"[{m['ci95'][0]:.3f}, {m['ci95'][1]:.3f}]",
             "—" if m["pass_rate"] is None else f"{100 * m['pass_rate']:.1f}% ({m['passed']}/{m['with_verdict']})", "—"]
            for k, m in summary["metrics"].items()]


def _coverage(summary: dict[str, Any]) -> tuple[int, int, str]:
    status = summary["status"]
    return summary["results"], status.get("ok", 0), ", ".join(f"{k} {v}" for k, v in status.items() if k != "ok")


def markdown(summary: dict[str, Any], cases: dict[str, Any], title: str) -> str:
    """report.md's text."""
    total, ok, errs = _coverage(summary)
    checks = summary["verdict"]["checks"]
    lines = [f"# {visible(html.escape(title, quote=False))}", "", f"**Verdict: {summary['verdict']['verdict']}**", "",
             *([f"- **FAIL** `{c.split(':')[0]}`: {visible(html.escape(c.split(': ', 1)[1], quote=False))}" for c in checks] or ["- no assertions configured"]),
             "", "## Summary", "", f"{total} results: {ok} ok" + (f", errors: {errs}" if errs else ", no errors") + "."]
    if ok != total:
        lines.append(f"Means, CIs and pass rates cover the **{ok} of {total}** results that were scored; the other {total - ok} are excluded and listed under *Errors*.")
    lines += ["", *_table(["metric", "scored", "excluded", "not computed", "mean", "std", "95% CI", "pass rate", "pass@k"], metric_rows(summary))]
    for name, groups in summary["breakdowns"].items():
        lines += ["", f"## By {name}", "", *_table([name, "results", *[f"{k} mean (scored)" for k in CHECKS]], [
            [v, str(g["results"]), *[f"{_f3(g['metrics'][k]['mean'])} ({g['metrics'][k]['scored']} of {g['metrics'][k]['results']})" for k in CHECKS]]
            for v, g in groups.items()])]
    lines += ["", "## Worst cases", ""]
    for key, rows in cases["worst"].items():
        if rows:
            lines += [f"### {key}", "", *_table(["case", "trial", "value", "reason"], [
                [r["case_id"], str(r["trial"]), _f3(r["scores"][key]["value"]), r["scores"][key]["reason"]] for r in rows]), ""]
    if cases["run_errors"]:
        lines += ["## Runs that ended in an error", "", f"{cases['run_error_total']} of {cases['total']} results: the agent's run ended in an "
                  "error its trace records (`metadata.run_error`); they are scored as recorded.", "",
                  *_table(["case", "trial", "status", "run error"], [[r["case_id"], str(r["trial"]), r["status"], r["run_error"]] for r in cases["run_errors"]]), ""]
    if cases["errors"]:
        lines += ["## Errors", "", f"invalid_input: {cases['error_total']} (of {cases['total']} results)", "",
                  *_table(["case", "trial", "status", "error"], [[r["case_id"], str(r["trial"]), r["status"], r["error"]] for r in cases["errors"]])]
        if cases["error_total"] > len(cases["errors"]):
            lines.append(f"\n(first {len(cases['errors'])} shown)")
    agg = summary["aggregate"]
    lines += ["", "---", f"CI: {agg['ci']} (seed {agg['seed']}, {agg['bootstrap_resamples']} resamples)."]
    return "\n".join(lines) + "\n"


def _e(s: Any) -> str:
    return visible(html.escape(str(s), quote=True))


def _svg(key: str, counts: list[int]) -> str:
    """A 10-bin histogram of `counts` as inline SVG: the y axis in round steps, a bar and its title per bin."""
    top = max(counts) or 1
    step = next(m * 10 ** e for e in range(12) for m in (1, 2, 5) if top / (m * 10 ** e) <= 5)
    axis = max(step, -(-top // step) * step)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 370 194" width="370" height="194" role="img" aria-label="distribution of '
             f'{_e(key)}" class="hist" data-metric="{_e(key)}">']
    for t in range(0, axis + 1, step):
        y = 160 - 148 * t / axis
        parts.append(f'<line class="tick" x1="48" y1="{y:.1f}" x2="358" y2="{y:.1f}" stroke="#eaeef2"/><text class="ytick" x="46" y="{y + 3:.1f}" '
                     f'font-size="10" text-anchor="end">{t}</text>')
    for i, c in enumerate(counts):
        h = 148 * c / axis
        parts.append(f'<rect class="bar" x="{53 + i * 30.6:.1f}" y="{160 - h:.1f}" width="28.6" height="{h:.1f}" fill="#0969da"><title>'
                     f'{i / 10:.1f}–{(i + 1) / 10:.1f}: {c}</title></rect>')
    parts += [f'<text x="{52 + i * 30.6:.1f}" y="174" font-size="10" text-anchor="middle">{i / 10:.1f}</text>' for i in range(0, 11, 2)]
    return "".join(parts) + f'<text x="205" y="188" font-size="11" text-anchor="middle">{_e(key)} ({sum(counts)} scored)</text></svg>'


def _script(text: str) -> str:
    text = text.replace("<", "\\u003c")  # (JSON text holds no newline: printable unless a character below is in it)
    if text.isprintable() and not any(c in text for c in _PRINTABLE_HIDDEN):
        return text
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return _RAW.sub(lambda m: json.dumps(m[0])[1:-1], text) if _RAW.search(text) else text


def page(summary: dict[str, Any], cases: dict[str, Any], title: str) -> str:
    """report.html's text (without the page's CSS and script)."""
    total, ok, errs = _coverage(summary)
    word, checks = summary["verdict"]["verdict"], summary["verdict"]["checks"]
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{_e(title)}</title><style></style></head><body>",
           f'<h1>{_e(title)}</h1><p><span id="verdict" class="badge {word}">{word}</span></p><ul id="checks">',
           *([f'<li class="bad"><b>FAIL</b> <code>{_e(c.split(":")[0])}</code>: {_e(c.split(": ", 1)[1])}</li>' for c in checks]
             or ["<li>no assertions configured</li>"]), "</ul>",
           '<p class="muted" id="view-hint">Transcripts, filters, search and run diffs: <code>tracejudge view RUN_DIR</code> (a local web app; add '
           "<code>--baseline OTHER_RUN</code> to see each case beside the baseline's).</p>",
           f'<h2>Summary</h2><p id="coverage">{total} results: {ok} ok' + (f"; errors: {_e(errs)}" if errs else "; no errors") + "."
           + (f" Means, CIs and pass rates cover the <b>{ok} of {total}</b> results that were scored." if ok != total else "") + "</p>",
           '<table id="summary"><thead><tr>' + "".join(f"<th>{h}</th>" for h in ("metric", "scored", "excluded", "not computed", "mean", "std",
                                                                                 "95% CI", "pass rate", "pass@k")) + "</tr></thead><tbody>",
           *["<tr>" + "".join(f'<td{" class=num" if i in (3, 4, 5) else ""}>{_e(c)}</td>' for i, c in enumerate(row)) + "</tr>" for row in metric_rows(summary)],
           "</tbody></table>"]
    if summary["breakdowns"]:
        out.append("<h2>Breakdowns</h2>")
    for name, groups in summary["breakdowns"].items():
        out.append(f'<h3>By {_e(name)}</h3><table class="grid breakdown" data-breakdown="{_e(name)}"><thead><tr><th>{_e(name)}</th><th>results</th>'
                   + "".join(f"<th>{_e(k)}</th>" for k in CHECKS) + "</tr></thead><tbody>"
                   + "".join(f'<tr><td>{_e(v)}</td><td class="num">{g["results"]}</td>' + "".join(
                       f'<td class="num">{_f3(m["mean"])} <span class="muted">({m["scored"]} of {m["results"]}'
                       + ("" if m["pass_rate"] is None else f"; pass {100 * m['pass_rate']:.0f}%") + ")</span></td>"
                       for m in (g["metrics"][k] for k in CHECKS)) + "</tr>" for v, g in groups.items()) + "</tbody></table>")
    out += ['<h2>Score distributions</h2><div class="charts">', *[f'<div class="chart">{_svg(k, m["histogram"])}</div>' for k, m in summary["metrics"].items()],
            "</div>", '<h2>Baseline vs current</h2><div id="baseline"><p class="muted">No baseline configured (assertions.regression.baseline).</p></div>']
    shown = len(cases["table"])
    note = f"all {total}" if shown == total else f"the worst {shown} of {total} (errored first, then lowest mean score)"
    out += [f'<h2>Cases</h2><p>Showing <span id="rows-shown">0</span> results: {_e(note)}, 50 a page. Click a column header to sort, a row or its ▸ '
            "for its reasons (from the keyboard: Tab to either, then Enter).</p>",
            '<table id="cases"><colgroup><col style="width:18%"><col style="width:5%"><col style="width:10%">' + "<col>" * len(CHECKS) + "</colgroup><thead><tr>"
            + "".join(f'<th><button type="button" class="sort">{_e(h)}</button></th>' for h in ("case", "trial", "status", *CHECKS))
            + '</tr></thead><tbody></tbody></table><p class="pager"><button type="button" id="prev-page">← previous</button> page <b id="page-no">1</b> of '
            '<span id="pages">1</span> <button type="button" id="next-page">next →</button></p>',
            f'<script type="application/json" id="case-data">{{"metrics":{_script(json.dumps(list(CHECKS), ensure_ascii=False, separators=(",", ":")))},'
            f'"rows":{_script(msgspec.json.encode(cases["table"]).decode())}}}</script>', "<script></script></body></html>"]
    return "\n".join(out) + "\n"
