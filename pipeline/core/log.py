"""Logging: structlog-style calls, delivered through the standard `logging` module.

Every tracejudge logger (`get_logger(name)`, names under `tracejudge.`) hands
its records to stdlib `logging`, so in library mode (the Python API, the
pytest plugin) tracejudge never prints anything itself: the application's
logging set-up decides (pytest's `caplog` sees the records; with no set-up
at all, Python's last-resort handler writes warnings to stderr, never
stdout). Each record's message is the event followed by its fields
(`resuming run_dir='runs/demo' finished=12`); the fields are also on the
record as `record.tracejudge` (a dict) and the bare event as
`record.tracejudge_event`. Credentials in string fields are redacted
before anything leaves the logger.

The global structlog configuration is never touched, so an application's
own structlog set-up is left as it is. The CLI calls `configure(level)`,
which attaches one handler to the `tracejudge` logger: readable lines on a
terminal, JSON lines otherwise, on stderr (stdout stays for data).
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any

__all__ = ["configure", "get_logger", "reset"]

ROOT = "tracejudge"


def _redact_event(_logger: object, _name: str, event: dict[str, Any]) -> dict[str, Any]:
    # Log fields may carry provider text (an error body echoing headers): no credential reaches a log line.
    from tracejudge.llm.redact import redact  # here: a process that never logs does not compile its patterns

    return {k: redact(v) if isinstance(v, str) else v for k, v in event.items()}


def _to_stdlib(_logger: object, _name: str, event: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    # The (args, kwargs) of the stdlib call: a readable message, and the fields kept whole for handlers.
    text = str(event.pop("event", ""))
    fields = event
    message = text + "".join(f" {k}={v!r}" for k, v in fields.items())
    return (message,), {"extra": {"tracejudge": fields, "tracejudge_event": text}}


def get_logger(name: str = ROOT) -> Any:
    """A structlog-style logger (`log.info("event", key=value)`) over stdlib `logging.getLogger(name)`.

    `name` should be `tracejudge` or start with `tracejudge.` (the CLI's
    handler sits on `tracejudge`). Fields bound with `.bind(...)` are kept.
    structlog itself is imported at the first call on the logger that its
    level lets through: modules make their loggers at import, and a process
    that never logs (a worker, a run at the CLI's default level `warning`)
    does not pay for structlog (and the `rich` it imports).
    """
    return _Deferred(name)


_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "warn": logging.WARNING, "error": logging.ERROR,
           "exception": logging.ERROR, "critical": logging.CRITICAL, "fatal": logging.CRITICAL}


def _dropped(*_args: Any, **_kwargs: Any) -> None:
    """A log call below the logger's level: what stdlib logging would do with it after structlog's processors (nothing)."""


class _Deferred:
    """Stands in for the structlog logger of `name` until it is first used."""

    __slots__ = ("_name", "_real")

    def __init__(self, name: str) -> None:
        self._name = name
        self._real: Any = None

    def __getattr__(self, attr: str) -> Any:
        real = self._real
        if real is None:
            level = _LEVELS.get(attr)
            if level is not None and not logging.getLogger(self._name).isEnabledFor(level):
                return _dropped
            import structlog

            real = self._real = structlog.wrap_logger(logging.getLogger(self._name), processors=[_redact_event, _to_stdlib],
                                                      wrapper_class=structlog.stdlib.BoundLogger, cache_logger_on_first_use=False)
        return getattr(real, attr)


class _Formatter(logging.Formatter):
    """Renders a record as structlog would: JSON, or coloured key=value on a terminal (`colors`).

    structlog's renderer is made at the first record: a run that logs nothing
    does not import structlog, nor the rich tracebacks its console renderer loads.
    """

    def __init__(self, colors: bool) -> None:
        super().__init__()
        self.colors = colors
        self._renderer: Any = None

    @property
    def renderer(self) -> Any:
        if self._renderer is None:
            import structlog

            self._renderer = structlog.dev.ConsoleRenderer(colors=True) if self.colors else structlog.processors.JSONRenderer()
        return self._renderer

    def format(self, record: logging.LogRecord) -> str:
        event: dict[str, Any] = {"event": getattr(record, "tracejudge_event", record.getMessage()), **getattr(record, "tracejudge", {})}
        event.update(logger=record.name, level=record.levelname.lower(),
                     timestamp=datetime.fromtimestamp(record.created, UTC).isoformat().replace("+00:00", "Z"))
        if record.exc_info:
            event["exception"] = self.formatException(record.exc_info)
        return str(self.renderer(None, record.levelname.lower(), _redact_event(None, "", event)))


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever `sys.stderr` is when a record comes (a test may have swapped it since)."""

    _tracejudge_cli = True

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def reset() -> None:
    """Undo `configure`: tracejudge's records go back to the application's logging set-up."""
    root = logging.getLogger(ROOT)
    for old in [h for h in root.handlers if getattr(h, "_tracejudge_cli", False)]:
        root.removeHandler(old)
    root.setLevel(logging.NOTSET)
    root.propagate = True


def configure(level: str = "info") -> None:
    """For the CLI: log records of `level` and above from tracejudge to stderr (readable on a terminal, JSON otherwise).

    Replaces the handler an earlier call attached, so calling it again (tests
    running the CLI in-process) never doubles lines or writes to a closed stream.
    """
    colors = sys.stderr.isatty()
    reset()
    root = logging.getLogger(ROOT)
    handler = _StderrHandler()
    handler.setFormatter(_Formatter(colors))
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    root.propagate = False  # the CLI owns the process: no second copy through the root logger
