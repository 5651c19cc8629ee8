"""Moving from one case to the next without going back to the list: a Case page opened from the Cases table carries
that table's filters and order in its URL (`status`, `below`, `tag`, `q`, `sort`, `desc`, `size`: none is a parameter
of the Case page itself), and shows where the case stands in it, with links to the previous and next (case, trial)
of the same list and back to the list's page that holds it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tracejudge.viewer.case_query import CaseQuery, where_and_order
from tracejudge.viewer.html import case_url, e, url
from tracejudge.viewer.index import RunIndex

__all__ = ["LIST_PARAMS", "Place", "list_params", "list_query", "nav_html", "place_of"]

# The Cases table's parameters a Case page keeps (its `page` is derived from where the case stands).
LIST_PARAMS = ("status", "below", "tag", "q", "sort", "desc", "size")
_YES = ("1", "on", "true")


@dataclass
class Place:
    """Where (case, trial) stands in a filtered, sorted list: `position` (1-based) of `total`, its neighbours as
    `(case_id, trial)` or None at either end, and the nearest result before and after it that failed (a check or an
    error: the Cases table's `status=failed`), or None."""

    position: int
    total: int
    prev: tuple[str, int] | None
    next: tuple[str, int] | None
    prev_failed: tuple[str, int] | None = None
    next_failed: tuple[str, int] | None = None


def list_query(params: Any, page: int = 1, size: int = 50) -> CaseQuery:
    """The `CaseQuery` of a request's query parameters (a mapping of str to str; a NUL read as U+FFFD, as pages show
    it: SQLite would cut the text there). `page` and `size` are parsed by the caller, which refuses one not a number."""
    p = {k: str(v).replace("\x00", "\ufffd") for k, v in params.items()}
    return CaseQuery(status=p.get("status", ""), below=p.get("below", ""), tag=p.get("tag", ""), q=p.get("q", "").strip(),
                     sort=p.get("sort", "case"), desc=p.get("desc", "") in _YES, page=page, size=size)


def list_params(q: CaseQuery) -> dict[str, Any]:
    """The non-default list parameters of `q`, as a Case page's links carry them (an empty dict for the plain list)."""
    out = {"status": q.status, "below": q.below, "tag": q.tag, "q": q.q, "sort": q.sort if q.sort != "case" else "",
           "desc": "1" if q.desc else "", "size": q.size if q.size != 50 else ""}
    return {k: v for k, v in out.items() if v not in ("", None)}


def place_of(index: RunIndex, q: CaseQuery, case_id: str, trial: int) -> Place | None:
    """Where (case_id, trial) stands among the results `q` matches, in `q`'s order; None when it is not among them (a
    filter it does not pass, a result not indexed). Raises `sqlite3.Error` when the index cannot be read."""
    cond, args, order = where_and_order(q, index.metrics)
    # (one numbering of the matching rows, computed once and read for the case, its neighbours and the nearest failed
    # results either side: a window over the list, never the rows themselves)
    rows = index.select(
        f"WITH o AS MATERIALIZED (SELECT case_id, trial, failed, ROW_NUMBER() OVER (ORDER BY {order}) AS n FROM results{cond}), "
        "me AS (SELECT n FROM o WHERE case_id = ? AND trial = ?), "
        "pf AS (SELECT MAX(o.n) AS n FROM o, me WHERE o.failed = 1 AND o.n < me.n), "
        "nf AS (SELECT MIN(o.n) AS n FROM o, me WHERE o.failed = 1 AND o.n > me.n) "
        "SELECT o.case_id, o.trial, o.n - me.n, o.failed, me.n, (SELECT COUNT(*) FROM o) FROM o, me, pf, nf "
        "WHERE o.n BETWEEN me.n - 1 AND me.n + 1 OR o.n = pf.n OR o.n = nf.n",
        [*args, case_id, trial])
    if not rows:
        return None
    at = {int(r[2]): (str(r[0]), int(r[1])) for r in rows}
    failed = sorted(int(r[2]) for r in rows if r[3] and r[2] != 0)
    before, after = [d for d in failed if d < 0], [d for d in failed if d > 0]
    return Place(int(rows[0][4]), int(rows[0][5]), at.get(-1), at.get(1),
                 at[before[-1]] if before else None, at[after[0]] if after else None)


def nav_html(rid: str, q: CaseQuery, place: Place | None, vs: str = "") -> str:
    """The Case page's bar: `case 3 of 113 in the list (below=writes_exact)`, previous and next links (keys k and j),
    the previous and next failed result of the list unless it holds failed ones only (keys p and n), and the list's page
    holding the case (key u); says so when the case is not in that list."""
    kept = list_params(q)
    shown = ", ".join(f"{k}={v}" for k, v in kept.items()) or "all results"
    if place is None:
        return (f'<nav id="case-nav" class="case-nav" aria-label="cases of the list"><a id="to-list" href="{url(f"/run/{rid}/cases", **kept)}" '
                f'aria-keyshortcuts="u">↑ list</a> <span class="muted">this case is not in the list ({e(shown)})</span></nav>')
    page = (place.position - 1) // q.size + 1
    links = [f'<a id="to-list" href="{url(f"/run/{rid}/cases", **kept, page=page if page > 1 else "")}" aria-keyshortcuts="u">'
             f'↑ list</a>']

    def step(to: tuple[str, int] | None, name: str, label: str, key: str, rel: str = "") -> str:
        if to is None:
            return f'<span class="muted" id="{name}">{label}</span>'
        attr = f' rel="{rel}"' if rel else ""
        return (f'<a id="{name}"{attr} aria-keyshortcuts="{key}" title="{e(label)} (key {key})" '
                f'href="{case_url(rid, to[0], trial=to[1], vs=vs, **kept)}">{label}</a>')

    links += [step(place.prev, "prev-case", "← previous", "k", "prev"), step(place.next, "next-case", "next →", "j", "next")]
    if q.status != "failed" and not q.below:  # (a list of failed results only: its previous and next are the failed ones)
        links += [step(place.prev_failed, "prev-failed", "← failed", "p"), step(place.next_failed, "next-failed", "failed →", "n")]
    return (f'<nav id="case-nav" class="case-nav" aria-label="cases of the list">{" ".join(links)} '
            f'<span>case <b id="case-pos">{place.position:,}</b> of {place.total:,} in the list '
            f'<span class="muted">({e(shown)})</span></span></nav>')
