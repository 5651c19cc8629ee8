"""HTML building blocks of the viewer: escaping, the page frame, number formats.

Every piece of text from a run (ids, reasons, trace content) is untrusted and
goes through `e()`; pages carry no inline script (the CSP forbids it), only
`/static/view.js`.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from typing import Any
from urllib.parse import quote, urlencode

from tracejudge.core.inert_text import visible

__all__ = ["LONG_ID", "case_url", "e", "f3", "frame", "id_hash", "name_html", "pretty", "shown_id", "t", "url"]

# A case id longer than this URL-encoded is linked by its hash (`h=`), not by itself (`id=`): aiohttp refuses a request
# line over `app.MAX_LINE` bytes, and 9,000 ASCII or 2,800 CJK characters made the case page unreachable.
LONG_ID = 1000


def e(value: Any) -> str:
    """HTML-escape any value's text (quotes included, so it is safe in attributes too).

    A NUL, which no HTML document may hold (a parser reads it as U+FFFD, or drops it), is written as U+FFFD: a search
    for `%00` or a trace holding one is shown as the browser would show it, not sent raw.
    """
    return html.escape("" if value is None else str(value), quote=True).replace("\x00", "\ufffd")


def t(value: Any) -> str:
    """Text a trace or a result holds (a message, an argument, a reason, a tag, an error), escaped (`e`) and inert: its
    control and invisible characters written `\\xNN` / `\\u{NNNN}` (`inert_text.visible`), as report.md and the
    terminal show them. A bidirectional override in a tool's output would otherwise reorder what the reader sees
    ("Trojan Source"); the marks right-to-left writing needs (LRM, RLM) and the joiners are shown as they are."""
    return e(visible("" if value is None else str(value)))


def name_html(name: Any) -> str:
    """A metric's name, escaped (`e`), that wraps at a word of it (`Tool<wbr>Correctness`, `writes_<wbr>exact`) in a narrow
    column, never mid-word."""
    return re.sub(r"([a-z])(?=[A-Z])|_", lambda m: m.group(0) + "<wbr>", e(name))


def f3(x: Any, signed: bool = False) -> str:
    """A number with 3 decimals (`+` sign when `signed`), `—` for none."""
    if x is None:
        return "—"
    try:
        return f"{float(x):+.3f}" if signed else f"{float(x):.3f}"
    except (TypeError, ValueError):
        return e(x)


def pretty(value: Any, limit: int = 20000) -> str:
    """Indented JSON (strings as they are), cut at `limit` characters, shown inert (`t`)."""
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[:limit] + f"\n… ({len(text) - limit} more characters)"
    return t(text)


def url(path: str, **params: Any) -> str:
    """`path?query` with the non-empty params, escaped for an attribute."""
    q = {k: v for k, v in params.items() if v not in (None, "", False)}
    return e(path + ("?" + urlencode(q) if q else ""))


def id_hash(case_id: str) -> str:
    """The `h=` of a case page's URL: the first 32 hex digits of the SHA-256 of the id's UTF-8."""
    return hashlib.sha256(case_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def case_url(rid: str, case_id: str, *, path: str = "case", **params: Any) -> str:
    """The Case page of `case_id` in run `rid` (`url`): `?id=<id>`, or `?h=<id_hash>` for an id longer than `LONG_ID`
    URL-encoded (a link by `id=` keeps working up to `app.MAX_LINE` bytes); `path="case/rest"`: the part of that page
    it leaves to be fetched (`transcript.rest_placeholder`)."""
    ref = {"h": id_hash(case_id)} if len(quote(case_id, safe="")) > LONG_ID else {"id": case_id}
    return url(f"/run/{rid}/{path}", **ref, **params)


def shown_id(case_id: Any) -> str:
    """A case id as a page shows it: escaped, its control and invisible characters (a bidirectional override, a zero-width
    space) written `\\xNN` / `\\u{NNNN}` as report.md, junit.xml and the terminal show them (`inert_text.visible`)."""
    return e(visible("" if case_id is None else str(case_id)))


def frame(title: str, body: str, *, live_run: str | None = None, crumbs: list[tuple[str, str]] | None = None) -> str:
    """A whole page: head, navigation, `body` inside `<main id="live">`.

    `live_run`: the run id whose growth the page's script polls for; the
    content of `#live` is reloaded in place when new results arrive.
    """
    nav = ['<a href="/?list">Runs</a>'] + [f'<a href="{href}">{e(label)}</a>' for label, href in crumbs or []]
    live = f' data-live-run="{e(live_run)}"' if live_run else ""
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        # An empty icon: without one every page asks for /favicon.ico, and the 404 shows as an error in the browser's console.
        f'<title>{e(title)} · tracejudge view</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/static/view.css"></head>'
        f'<body{live}><header><nav>{" › ".join(nav)}</nav><span id="live-state" class="muted"></span></header>'
        f'<main id="live">{body}</main><script src="/static/view.js"></script></body></html>'
    )
