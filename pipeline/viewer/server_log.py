"""The viewer server's log: a request aiohttp cannot parse is one line, not "Error handling request" and a traceback."""

from __future__ import annotations

import logging

from aiohttp.http_exceptions import HttpProcessingError

__all__ = ["server_log"]


class _OneLine(logging.Filter):
    """A request aiohttp cannot parse (a request line over `app.MAX_LINE`, a malformed header) is logged as one line saying
    so, not as "Error handling request" and a traceback: the client got its 400; nothing in the viewer failed."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            what = " ".join(str(exc.message).split())
            record.msg, record.args = "tracejudge view: refused a request it cannot read (%s: %s)", (exc.code, what[:160] + ("…" if len(what) > 160 else ""))
            record.exc_info, record.exc_text = None, None
        return True


def server_log() -> logging.Logger:
    """The logger `tracejudge view`'s server writes to (`tracejudge.viewer.server`), with its `_OneLine` filter, added once."""
    log = logging.getLogger("tracejudge.viewer.server")
    if not any(isinstance(f, _OneLine) for f in log.filters):
        log.addFilter(_OneLine())
    return log
