"""Keep a loopback aiohttp server up until Ctrl-C or SIGTERM (`simulate`, `view`)."""

from __future__ import annotations

import signal

import anyio
from aiohttp import web

__all__ = ["until_signal"]


async def until_signal(runner: web.AppRunner) -> None:
    """Wait for SIGINT or SIGTERM, then clean `runner` up (also when cancelled)."""
    try:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                break
    finally:
        await runner.cleanup()
