"""structlog set-up: readable lines on a terminal, JSON lines otherwise."""

from __future__ import annotations

import logging
import sys

import structlog
from tracejudge.llm.redact import redact

__all__ = ["configure", "get_logger"]


def _redact_event(_logger: object, _name: str, event: dict[str, object]) -> dict[str, object]:
    # Log fields may carry provider text (an error body echoing headers): no credential reaches a log line.
    return {k: redact(v) if isinstance(v, str) else v for k, v in event.items()}


def configure(level: str = "info") -> None:
    """Configure structlog for the CLI; logs go to stderr so stdout stays for data."""
    renderer: structlog.typing.Processor
    if sys.stderr.isatty():
        renderer = structlog.dev.ConsoleRenderer(colors=True)
    else:
        renderer = structlog.processors.JSONRenderer()
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            _redact_event,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper(), logging.INFO)),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )


def get_logger(name: str = "tracejudge") -> structlog.typing.FilteringBoundLogger:
    """A bound logger carrying `logger=name`."""
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger().bind(logger=name)
    return logger
