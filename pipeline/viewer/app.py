"""`tracejudge view`: a local, read-only aiohttp app over run directories.

Routes (all GET; nothing writes to a run except its derived `view.idx`):

- `/` — Runs (with one run served, a redirect to its Run page; a run directory written since the viewer started into a
  folder it watches is listed, and served, as it appears: `RunTable`); `/run/{rid}` — Run page; `/run/{rid}/cases` — Cases (query
  parameters of `tracejudge.viewer.index.CaseQuery`); `/run/{rid}/case?id=&trial=&vs=`
  — Case page, side by side with run `vs` (`h=<hash>` instead of `id=` for an id too long for a URL:
  `tracejudge.viewer.html.case_url`; the Cases parameters of the list it was opened from, to move along it: `case_nav`); `/run/{rid}/case/rest?id=&trial=&part=&from=` — the part of a long Case page
  left to be fetched (`pages_case.rest_html`); `/diff?a=&b=` — Diff page;
- `/api/run/{rid}/state` — `{"results": n, "complete": bool}` (and `"gone": why` once the run directory is
  deleted or moved), polled by the page script to follow a run still being written;
- a run whose directory is gone answers every page with a 410 page saying so (`Run.gone`);
- `/static/view.css`, `/static/view.js` — package data.

Index refreshes, queries, trace reads and run comparisons are blocking work:
they run in worker threads (`anyio.to_thread`), never on the event loop.
The server binds 127.0.0.1 only and answers only requests whose `Host` is a
loopback name (a page elsewhere cannot reach it through DNS rebinding); every
page is sent with a Content-Security-Policy that allows only its own assets.
"""

from __future__ import annotations

import asyncio
import importlib.resources
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import anyio.to_thread
from aiohttp import web
from tracejudge.core.shown_calls import capped_calls
from tracejudge.stages.comparison.runs import Comparison, compare_runs
from tracejudge.viewer.case_nav import Place, list_params, list_query, nav_html, place_of
from tracejudge.viewer.pages_case import CaseView, case_page, diff_page, rest_html
from tracejudge.viewer.pages_cases import cases_page
from tracejudge.viewer.pages_run import gone_page, results_drift, run_page, runs_page, unreadable_page
from tracejudge.viewer.run_table import RunTable
from tracejudge.viewer.runs import Run, differs
from tracejudge.viewer.server_log import server_log

__all__ = ["make_app", "start_viewer"]  # (`tracejudge view` itself: `tracejudge.viewer.command.serve_command`)

_CSP = "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'"
_STATIC = {"view.css": "text/css", "view.js": "text/javascript"}
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_RUNS = web.AppKey("runs", RunTable)
_BASELINE = web.AppKey("baseline", str)
_CACHE = web.AppKey("cache", dict)
_TEXT_JOBS = web.AppKey("text_jobs", set)
_TASKS = web.AppKey("tasks", set)
_FLIGHTS = web.AppKey("diff_flights", dict)
_DIFFS_KEPT = 16
# The longest request line served (aiohttp's default is 8,190 bytes): a link by `id=` to a case whose id is up to ~60 KB
# URL-encoded still opens; the viewer's own links to longer ids go by hash (`html.case_url`).
MAX_LINE = 64 * 1024
_SERVER_LOG = server_log()  # (a request it cannot parse logged as one line)


def _html(text: str, status: int = 200) -> web.Response:
    # backslashreplace: a run directory named with a byte that is not UTF-8 is a lone surrogate in its name and path,
    # shown escaped (`\udcfe`) rather than failing the page with a 500.
    return web.Response(body=text.encode("utf-8", "backslashreplace"), status=status, content_type="text/html", charset="utf-8")


@web.middleware
async def _guard(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    if request.url.host not in _LOOPBACK:
        return web.Response(status=403, text="tracejudge view answers only loopback requests")
    resp = await handler(request)
    resp.headers["Content-Security-Policy"] = _CSP
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers["Referrer-Policy"] = "no-referrer"
    return resp


async def _run(request: web.Request, key: str = "rid", *, query: bool = False, present: bool = True) -> Run:
    """The run named by the URL; a 404 page when none is served by that id (after looking for one written since into a
    watched folder), a 410 page when its directory is gone (deleted or moved while the viewer was open: every page of it
    says so, none fails with a 500)."""
    rid = request.query.get(key, "") if query else request.match_info.get(key, "")
    table = request.app[_RUNS]
    run = table.get(rid)
    # (a run reached through a symlink: the link is followed again, for it may point at a run served under another name)
    if run is None or table.linked(rid):
        await anyio.to_thread.run_sync(table.scan)
        run = table.get(rid)
    if run is None:
        raise web.HTTPNotFound(text=f"no run {rid!r} is served here")
    if present and (why := run.gone()) is not None:
        raise web.HTTPGone(text=gone_page(run, why), content_type="text/html")
    return run


async def _refresh(request: web.Request, run: Run) -> dict[str, int]:
    """The run's counts by status, its index brought up to date first; a results.jsonl that cannot be read (a directory,
    no permission, an I/O error) is a 503 page saying so, not a 500 and a traceback in the log."""
    def work() -> tuple[dict[str, int], bool]:
        run.index.refresh()
        return run.index.counts(), run.index.has_case_text()

    try:
        counts, has_text = await anyio.to_thread.run_sync(work)
    except OSError as exc:
        raise web.HTTPServiceUnavailable(text=unreadable_page(run, _os_error(exc)), content_type="text/html") from None
    if not has_text:
        _start_text_job(request.app, run)
    return counts


def _os_error(exc: OSError) -> str:
    return f"{Path(exc.filename).name if exc.filename else 'results.jsonl'} cannot be read ({exc.strerror or type(exc).__name__})"


async def _counts_or_none(request: web.Request, run: Run) -> dict[str, int] | None:
    try:
        return await _refresh(request, run)
    except web.HTTPServiceUnavailable:  # (one run's unreadable file leaves the others listed)
        return None


def _start_text_job(app: web.Application, run: Run) -> None:
    # Input/output/tool-name search text comes from the dataset: read in the background, once per build of the
    # index. A run rewritten under the viewer rebuilds its index, which drops that text: it is read again then (its
    # `generation` keeps a read that the rewrite overtook from being stored as the new run's).
    jobs: set[str] = app[_TEXT_JOBS]
    if run.rid in jobs:
        return
    jobs.add(run.rid)

    def work() -> None:
        generation = run.index.generation
        if not run.index.has_case_text():
            run.index.add_case_text(run.source.iter_texts(), generation)

    async def job() -> None:
        try:
            await anyio.to_thread.run_sync(work)
        finally:
            jobs.discard(run.rid)

    task = asyncio.get_running_loop().create_task(job())
    app[_TASKS].add(task)
    task.add_done_callback(app[_TASKS].discard)


async def _runs(request: web.Request) -> web.Response:
    await anyio.to_thread.run_sync(request.app[_RUNS].scan)  # (a run written since the viewer started is listed)
    runs = request.app[_RUNS].values()
    if len(runs) == 1 and "list" not in request.query:  # one run served: open it (`/?list` still lists it)
        raise web.HTTPFound(f"/run/{quote(runs[0].rid)}")
    counts = {r.rid: got for r in runs if r.gone() is None and (got := await _counts_or_none(request, r)) is not None}

    def work() -> dict[str, str]:
        # As the Run page says it, from what the index keeps (its meta, one stat): no results file is read again here.
        return {rid: results_drift(r, sum(v for k, v in c.items() if k != "failed")) for r in runs if (c := counts.get(rid := r.rid)) is not None}

    drift = await anyio.to_thread.run_sync(work)
    return _html(runs_page(runs, counts, request.app[_BASELINE], drift))


async def _run_page(request: web.Request) -> web.Response:
    run = await _run(request)
    counts = await _refresh(request, run)
    others = [r for r in await anyio.to_thread.run_sync(request.app[_RUNS].present) if r.rid != run.rid]  # (written since too)
    baseline = request.app[_BASELINE]
    others.sort(key=lambda r: r.rid != baseline)

    def work() -> tuple[int, str]:
        return run.index.run_errors(), results_drift(run, sum(v for k, v in counts.items() if k != "failed"))

    run_errors, drift = await anyio.to_thread.run_sync(work)
    return _html(run_page(run, counts, others, run_errors, drift))


def _int(value: str | None, default: int, name: str, *, any_whole: bool = False) -> int:
    # A number no index can hold (trial=2**63) or no number at all (trial=abc) is the client's mistake: a 400 naming the
    # parameter, not a 500 from deep inside the lookup nor, quietly, the default's page. `any_whole`: every whole number
    # is returned, for the Cases page's `page` and `size`, which say on the page what they show instead of one out of
    # range (`size=-5` as `size=30`; `page=-1` as `page=0`).
    if value is None or value == "":
        return default
    try:
        got = int(value)
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name}={value[:40]!r}: not a whole number") from None
    if not any_whole and not 0 <= got < 1 << 62:
        raise web.HTTPBadRequest(text=f"{name}={value[:40]}: out of range (0 to 2**62-1)")
    return got


_YES, _NO = ("1", "on", "true"), ("", "0", "off", "false")
_CASES_PARAMS = ("status", "below", "tag", "q", "sort", "desc", "page", "size")


async def _cases(request: web.Request) -> web.Response:
    run = await _run(request)
    counts = await _refresh(request, run)
    # A NUL (`%00`) is read as U+FFFD, as the page shows it (`html.e`): SQLite would cut the text there, applying a
    # search other than the one the box shows (`refund%00` matched as `refund`, `%00` as no search at all).
    p = {k: v.replace("\x00", "\ufffd") for k, v in request.query.items()}
    q = list_query(p, _int(p.get("page"), 1, "page", any_whole=True), _int(p.get("size"), 50, "size", any_whole=True))
    # A mistyped value or name is said on the page, never a silent fall-back to another table than the one asked for.
    if p.get("desc", "") not in (*_YES, *_NO):
        q.notes.append(f"desc={p['desc'][:40]}: not a yes or no the page reads (1, on or true; 0, off, false or nothing); sorted ascending.")
    q.notes += [f"{k[:40]}: not a parameter of this page (it takes {', '.join(_CASES_PARAMS)}); ignored."
                for k in dict.fromkeys(p) if k not in _CASES_PARAMS]

    def work() -> tuple[Any, dict[tuple[str, int], dict[str, str]], bool]:
        page = run.index.query(q)
        reasons = {}
        for r in page.rows:
            res = run.index.result(r["case_id"], r["trial"]) or {}
            reasons[(r["case_id"], r["trial"])] = {k: capped_calls(str(s.get("reason") or "")) for k, s in (res.get("scores") or {}).items()
                                                   if isinstance(s, dict)}
        return page, reasons, run.index.has_case_text()

    page, reasons, ready = await anyio.to_thread.run_sync(work)
    statuses = sorted(k for k in counts if k != "failed")
    return _html(cases_page(run, page, statuses, reasons, ready))


async def _case(request: web.Request) -> web.Response:
    run = await _run(request)
    case_id = await _case_id(request, run)
    trial = _int(request.query.get("trial"), 0, "trial")
    vs = request.query.get("vs", "") or (request.app[_BASELINE] if request.app[_BASELINE] != run.rid else "")
    # (its `vs=` choices, and the run `vs=` names, include a run written since the viewer started and not one removed)
    choices = await anyio.to_thread.run_sync(request.app[_RUNS].present)
    other = request.app[_RUNS].get(vs) if vs and vs not in ("-", run.rid) else None  # vs=- : alone
    if other is not None and other.gone() is not None:
        other = None  # a baseline deleted meanwhile: the case alone
    await _refresh(request, run)
    if other is not None and await _counts_or_none(request, other) is None:
        other = None  # (a baseline whose results cannot be read: the case alone)

    def view_of(r: Run) -> CaseView:
        res = r.index.result(case_id, trial)
        damaged = [(n, why) for n, _, why in r.index.bad_lines(case_id, trial)]
        if res is None and not damaged:  # no result, no trace lookup (which may scan a dataset)
            return CaseView(r, None, None, f"{r.name} has no result for this (case, trial)")
        case, note = r.source.get(case_id, trial)
        return CaseView(r, res, case, note, damaged)

    # (opened from the Cases table, the page carries its filters and order: where the case stands in that list)
    listed = list_query(request.query, size=_int(request.query.get("size"), 50, "size", any_whole=True))

    def work() -> tuple[CaseView, CaseView | None, list[int], Place | None]:
        trials = sorted({*run.index.trials(case_id), *(tr for _, tr, _ in run.index.bad_lines(case_id))})
        return view_of(run), (view_of(other) if other is not None else None), trials, place_of(run.index, listed, case_id, trial)

    main, side, trials, place = await anyio.to_thread.run_sync(work)
    if side is not None and side.result is None and not side.damaged and not request.query.get("vs"):
        side = None  # the default baseline lacks this case: show it alone
    if main.result is None and not main.damaged and (side is None or side.result is None):
        raise web.HTTPNotFound(text=f"{run.name} has no result for case {case_id!r} trial {trial}")
    asked = request.query.get("vs", "")
    # (a `vs` naming no run served, or one whose directory is gone: the case alone, and the page says why)
    note = "" if not asked or asked in ("-", run.rid) or other is not None else (
        f"vs={asked[:40]}: " + ("that run's directory is gone" if asked in request.app[_RUNS] else "no run of that id is served here")
        + "; the case is shown alone.")
    nav = nav_html(run.rid, listed, place, request.query.get("vs", ""))
    return _html(case_page(case_id, trial, trials or [trial], main, side, choices, note, nav, list_params(listed)))


async def _case_id(request: web.Request, run: Run) -> str:
    """The case a Case page's URL names: `id=`, or `h=` the hash of a long id (a 404 when no case of `run` has it)."""
    if "id" not in request.query and (h := request.query.get("h", "")):  # a long id, linked by its hash
        await _refresh(request, run)
        found = await anyio.to_thread.run_sync(run.index.case_by_hash, h.strip().lower())
        if found is None:
            raise web.HTTPNotFound(text=f"{run.name} has no case whose id hashes to {h[:64]!r}")
        return str(found)
    return request.query.get("id", "")


async def _case_rest(request: web.Request) -> web.Response:
    """The part of a long Case page it left to be fetched (`pages_case.rest_html`: `part=transcript` or `align:KEY`,
    `from=`), an HTML fragment; a 404 when the run has no such part."""
    run = await _run(request)
    case_id = await _case_id(request, run)
    trial, start = _int(request.query.get("trial"), 0, "trial"), _int(request.query.get("from"), 0, "from")
    await _refresh(request, run)

    def work() -> str | None:
        res = run.index.result(case_id, trial)
        return rest_html(request.query.get("part", ""), start, run, res, run.source.get(case_id, trial)[0] if res is not None else None)

    html = await anyio.to_thread.run_sync(work)
    if html is None:
        raise web.HTTPNotFound(text=f"{run.name} has no such part of case {case_id[:200]!r} trial {trial}")
    return _html(html)


async def _diff(request: web.Request) -> web.Response:
    a, b = await _run(request, "a", query=True), await _run(request, "b", query=True)
    runs = await anyio.to_thread.run_sync(request.app[_RUNS].present)  # (the runs to pick from as the Case page's)
    if differs(a, b) is not None:  # different datasets: the page says what differs, nothing is paired
        return _html(diff_page(a, b, None, runs))
    for r in (a, b):
        await _refresh(request, r)  # (a results.jsonl that cannot be read: its 503 page, not a failed comparison)
    return _html(diff_page(a, b, await _comparison(request.app, a, b), runs))


async def _comparison(app: web.Application, a: Run, b: Run) -> Comparison:
    """`compare_runs(a, b)` computed once per pair and results size: identical requests at once share one computation.

    Fifty viewers opening the same Diff page at once each compared both runs (271 s for the last, 370 MiB): now the
    first starts the comparison (a task, shielded so a closed tab does not cancel it for the others), the rest await it,
    and the result is kept until a run's results change size. Each computation writes one line to stderr.
    """
    size = tuple((r.path / "results.jsonl").stat().st_size if (r.path / "results.jsonl").exists() else 0 for r in (a, b))
    key = ("diff", a.rid, b.rid, size)
    cache: dict[Any, Any] = app[_CACHE]
    if key in cache:
        return cache[key]
    flights: dict[Any, asyncio.Task[Comparison]] = app[_FLIGHTS]
    task = flights.get(key)
    if task is None:
        async def compute() -> Comparison:
            started = time.monotonic()
            cmp = await anyio.to_thread.run_sync(lambda: compare_runs(a.path, b.path, top=10))
            if len(cache) >= _DIFFS_KEPT:  # a run being written changes size often: drop stale comparisons
                cache.clear()
            cache[key] = cmp
            print(f"tracejudge view: compared {a.name} with {b.name} ({time.monotonic() - started:.1f} s)", file=sys.stderr, flush=True)
            return cmp

        task = flights[key] = asyncio.get_running_loop().create_task(compute())
        app[_TASKS].add(task)
        task.add_done_callback(lambda t: (flights.pop(key, None), app[_TASKS].discard(t)))
    return await asyncio.shield(task)


async def _state(request: web.Request) -> web.Response:
    """`{"results": n, "complete": bool}`, and `"gone": why` once the run directory is not there any more."""
    run = await _run(request, present=False)
    try:
        n = await anyio.to_thread.run_sync(run.index.refresh)
    except OSError as exc:  # (said, as the pages say it; the page script then stops following the run)
        return web.json_response({"results": 0, "complete": False, "unreadable": _os_error(exc)})
    state: dict[str, Any] = {"results": n, "complete": bool(run.summary().get("complete"))}
    if (why := run.gone()) is not None:
        state["gone"] = why
    return web.json_response(state)


async def _static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in _STATIC:
        raise web.HTTPNotFound()
    data = importlib.resources.files("tracejudge.viewer").joinpath("static", name).read_bytes()
    return web.Response(body=data, content_type=_STATIC[name], charset="utf-8")


async def _close(app: web.Application) -> None:
    for task in list(app[_TASKS]):
        task.cancel()
    app[_RUNS].close()


def make_app(runs: list[Run], baseline: Run | None = None, folders: list[Path] | None = None) -> web.Application:
    """The aiohttp application serving `runs` (and `baseline`, which is also listed), and each run written since into one
    of `folders` (`watched_folders`)."""
    app = web.Application(middlewares=[_guard])
    extra = [baseline] if baseline is not None and all(r.rid != baseline.rid for r in runs) else []
    app[_RUNS] = RunTable([*runs, *extra], folders or [])
    app[_BASELINE] = baseline.rid if baseline is not None else ""
    app[_CACHE] = {}
    app[_TEXT_JOBS] = set()
    app[_TASKS] = set()
    app[_FLIGHTS] = {}
    app.router.add_get("/", _runs)
    app.router.add_get("/run/{rid}", _run_page)
    app.router.add_get("/run/{rid}/cases", _cases)
    app.router.add_get("/run/{rid}/case", _case)
    app.router.add_get("/run/{rid}/case/rest", _case_rest)
    app.router.add_get("/diff", _diff)
    app.router.add_get("/api/run/{rid}/state", _state)
    app.router.add_get("/static/{name}", _static)
    app.on_cleanup.append(_close)
    return app


async def start_viewer(runs: list[Run], port: int = 0, baseline: Run | None = None,
                       folders: list[Path] | None = None) -> tuple[web.AppRunner, str]:
    """Serve the viewer on 127.0.0.1:`port` (0 picks a free port); returns the runner (call `cleanup()`) and the URL."""
    runner = web.AppRunner(make_app(runs, baseline, folders), access_log=None, max_line_size=MAX_LINE, logger=_SERVER_LOG)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    sockets = getattr(site._server, "sockets", None) or []
    bound = sockets[0].getsockname()[1] if sockets else port
    return runner, f"http://127.0.0.1:{bound}"
