"""The Cases table's server-side query (`CaseQuery`), one page of its answer (`Page`), and the SQL `WHERE` and `ORDER BY`
a query becomes over `view.idx`'s `results` table (`where_and_order`; the index is `tracejudge.viewer.index`)."""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass, field
from typing import Any

__all__ = ["METRIC_SORT", "PAGE_SIZES", "CaseQuery", "Page", "metric_sort", "natural_key", "page_of", "search_text", "where_and_order"]

PAGE_SIZES = (25, 50, 100, 200)
# A metric's sort key is its name behind this prefix (`sort=metric:tc`): a metric may be named `case`, `status` or
# `duration` (nothing forbids it), and a bare name then meant both that column and the metric, one of them unreachable.
METRIC_SORT = "metric:"


def metric_sort(name: str) -> str:
    """The `sort` value that orders the Cases table by metric `name` (`metric:NAME`), never one of the built-in keys."""
    return METRIC_SORT + name


@dataclass
class CaseQuery:
    """Server-side filters of the Cases table (all optional; combined with AND).

    - `status`: a result status (`ok`, `invalid_input`, …), `failed` (any
      metric with `passed = false`, or a status other than `ok`) or `run_error` (the case's agent run ended in
      an error its trace records, `metadata.run_error`: scored, its status `ok`);
    - `below`: a metric key (or `metric:KEY`, as `sort` writes it); keeps results whose verdict on it is a fail
      (`*`: on any metric; a key the run has no metric of: none, as no result is below that threshold);
    - `tag`: a case tag; `q`: a substring (case-insensitive) of the id, tags,
      reasons, error, or the case's input, output and tool names;
    - `sort`: `case` (ids in natural order: `2-0` before `10-0`, `natural_key`), `trial`, `status`, `duration` or
      `metric:KEY` (`metric_sort`; a bare metric key that is none of the built-in ones, as links made before the prefix
      said, still sorts by that metric); `desc`;
    - `page` (1-based) of `size` rows.

    `notes`: each value of the URL the page did not apply as given, and what it did instead (`sort=scroe: … sorted by
    case id.`), filled as the query is answered; the page shows them, so a mistyped value is never a silent fall-back.
    """

    status: str = ""
    below: str = ""
    tag: str = ""
    q: str = ""
    sort: str = "case"
    desc: bool = False
    page: int = 1
    size: int = 50
    notes: list[str] = field(default_factory=list)


@dataclass
class Page:
    """One page of the Cases table: `rows` (dicts with case_id, trial, status, error, run_error, tags, duration_s, snippet, values,
    passed), `total` matching."""

    rows: list[dict[str, Any]]
    total: int
    metrics: list[str]
    query: CaseQuery
    pages: int = field(init=False)

    def __post_init__(self) -> None:
        self.pages = max(1, -(-self.total // self.query.size))


_DIGITS = re.compile(r"[0-9]+")


def where_and_order(q: CaseQuery, metrics: list[str]) -> tuple[str, list[Any], str]:
    """`(" WHERE …" or "", its parameters, the ORDER BY terms)` of `q` over the index's columns (`metrics[i]`'s value is
    `m<i>`, its verdict `p<i>`). Sets `q.sort` to the order applied and `q.size` to a size of `PAGE_SIZES` (50 if not one),
    so the page shows what it did, and says so in `q.notes` when that is not what the URL asked for."""
    where, args = [], []
    if q.status == "failed":
        where.append("failed = 1")
    elif q.status == "run_error":
        where.append("run_error IS NOT NULL")
    elif q.status:
        where.append("status = ?")
        args.append(q.status)
    if q.below not in metrics and q.below.startswith(METRIC_SORT) and q.below[len(METRIC_SORT):] in metrics:
        q.below = q.below[len(METRIC_SORT):]  # (`below=metric:KEY`, as `sort` names a metric: that metric)
    if q.below == "*":
        where.append("(" + " OR ".join(f"p{i} = 0" for i in range(len(metrics))) + ")" if metrics else "0")
    elif q.below:  # a metric not (yet) in the run filters everything out, never nothing: the page says why
        where.append(f"p{metrics.index(q.below)} = 0" if q.below in metrics else "0")
    if q.tag:
        where.append("('\x1f' || tags || '\x1f') LIKE ? ESCAPE '\\'")
        args.append("%\x1f" + _like(q.tag) + "\x1f%")
    if q.q:
        pat = "%" + _like(q.q.lower()) + "%"
        where.append("(text LIKE ? ESCAPE '\\' OR case_id IN (SELECT case_id FROM casetext WHERE text LIKE ? ESCAPE '\\'))")
        args += [pat, pat]
    cond = (" WHERE " + " AND ".join(where)) if where else ""
    direction = "DESC" if q.desc else "ASC"
    metric = _sorted_metric(q.sort, metrics)
    if metric is not None:
        q.sort = metric_sort(metric)  # (a bare name from an older link: shown, and linked on, as the prefixed key)
        col = f"m{metrics.index(metric)}"
        order = f"{col} IS NULL, {col} {direction}, case_key, case_id, trial"
    else:
        if q.sort not in _SORTS:  # the page shows the order it applied, and why it is not the one asked for
            keys = ", ".join((*_SORTS, *map(metric_sort, metrics)))
            q.notes.append(f"sort={q.sort[:40]}: this run has no column or metric of that name (it sorts by {keys}); sorted by case id.")
            q.sort = "case"
        if q.sort == "case":
            order = f"case_key {direction}, case_id {direction}, trial"
        else:
            order = f"{q.sort} {direction}, case_key, case_id, trial"
    if q.size not in PAGE_SIZES:
        q.notes.append(f"size={str(q.size)[:40]}: a page holds {', '.join(map(str, PAGE_SIZES[:-1]))} or {PAGE_SIZES[-1]} rows; showing 50.")
        q.size = 50
    return cond, args, order


_SORTS = ("case", "trial", "status", "duration")


def _sorted_metric(sort: str, metrics: list[str]) -> str | None:
    """The metric `sort` orders by, else None: `metric:KEY` first; then a bare key, unless it is a built-in one (which
    a metric of that name never takes over); then, for a metric whose own name starts `metric:`, that name whole."""
    if sort.startswith(METRIC_SORT) and sort[len(METRIC_SORT):] in metrics:
        return sort[len(METRIC_SORT):]
    return sort if sort in metrics and sort not in _SORTS else None


def natural_key(case_id: str) -> str:
    """The text `case_id` sorts by in the Cases table: each run of digits as its value, so `2-0` comes before `10-0`
    (as a reader counts) where the plain text order puts `10-0` first. Every digit run (leading zeros dropped)
    becomes its length in three digits then its digits, so a longer number sorts after a shorter one and runs of equal
    length by their digits; the rest of the id is kept as it is. Ids equal but for leading zeros (`7`, `007`) share
    a key: the table then orders them by the id itself."""
    return _DIGITS.sub(lambda m: _number(m.group().lstrip("0") or "0"), case_id)


def _number(digits: str) -> str:
    return f"{min(len(digits), 999):03d}{digits}"


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def search_text(res: dict[str, Any], run_error: str) -> str:
    """The lower-cased text a result is found by in the Cases search (`view.idx`'s `text`): id, tags, the run error, each
    score's reason and a judge's reason on each question, the error's message."""
    parts = [str(res.get("case_id", "")), " ".join(map(str, res.get("tags") or [])), run_error]
    for s in (res.get("scores") or {}).values():
        if isinstance(s, dict):
            parts.append(str(s.get("reason") or ""))
            # A judge's reason for each question it answered (the score's reason quotes only those that failed).
            answers = s.get("details", {}).get("answers") if isinstance(s.get("details"), dict) else None
            if isinstance(answers, dict):
                parts += [str(a.get("reason") or "") for a in answers.values() if isinstance(a, dict)]
    err = res.get("error")
    if isinstance(err, dict):
        parts.append(str(err.get("message") or ""))
    return "\n".join(parts).lower()


def page_of(db: sqlite3.Connection, metrics: list[str], q: CaseQuery) -> Page:
    """One page of the rows of `view.idx` (`db`, whose metric columns are `metrics` in order) matching `q`; a `page`
    beyond the last (or 0) shows the nearest, and `q.notes` says so. The caller holds the index's lock."""
    cond, args, order = where_and_order(q, metrics)
    size = q.size
    total = int(db.execute(f"SELECT COUNT(*) FROM results{cond}", args).fetchone()[0])
    pages = max(1, -(-total // size))
    if not 1 <= q.page <= pages:  # (past the last page, or 0: the nearest page, and the page says so)
        shown = max(1, min(q.page, pages))
        q.notes.append(f"page={str(q.page)[:40]}: pages count from 1 and this query has {pages}; showing page {shown}.")
        q.page = shown
    vcols = "".join(f", m{i}, p{i}" for i in range(len(metrics)))
    found = db.execute(
        f"SELECT case_id, trial, status, tags, error, duration, run_error{vcols} FROM results{cond} ORDER BY {order} LIMIT ? OFFSET ?",
        [*args, size, (q.page - 1) * size],
    ).fetchall()
    ids = sorted({r[0] for r in found})
    snips = dict(db.execute(f"SELECT case_id, snippet FROM casetext WHERE case_id IN ({','.join('?' * len(ids))})", ids)) if ids else {}
    rows = []
    for r in found:
        vals = r[7:]
        rows.append({
            "case_id": r[0], "trial": r[1], "status": r[2], "tags": [t for t in (r[3] or "").split("\x1f") if t],
            "error": json.loads(r[4]) if r[4] else None, "duration_s": r[5], "run_error": r[6] or "", "snippet": snips.get(r[0]) or "",
            "values": {k: vals[2 * i] for i, k in enumerate(metrics)},
            "passed": {k: None if vals[2 * i + 1] is None else bool(vals[2 * i + 1]) for i, k in enumerate(metrics)},
        })
    return Page(rows, total, list(metrics), q)
