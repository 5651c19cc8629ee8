"""How the judge stage stops: the one-line error of a reply that ends the run, and the grace given to requests in flight."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from tracejudge.llm.redact import variable_name
from tracejudge.stages.judge.client import STOPS, Outcome

__all__ = ["_stopping", "_within_grace"]


def _stopping(fatal: Outcome, cfg: Any) -> Exception:
    """The one-line error that stops the run after `fatal` (a kind of `STOPS`)."""
    msg = " ".join(fatal.message.split())[:600]  # one line, whatever the server's text held
    tail = "stopped without marking any unjudged case; fix it and run the same command to resume"
    if fatal.kind == "auth_error":
        where = f" (check the key in {variable_name(cfg.api_key_env)})" if cfg.api_key_env else ""
        return STOPS["auth_error"](f"judge: the provider refused the credentials{where}: {msg}; {tail}")
    if fatal.kind == "request_error" and fatal.message.startswith("no batch API: "):  # (`calls.failure.failure`)
        return STOPS["request_error"](f"judge: {msg.removeprefix('no batch API: ')}; {tail}")
    if fatal.kind == "request_error":
        return STOPS["request_error"](f"judge: the server refused the request itself, not a transient failure: {msg}; {tail}")
    if "accepted connections but never replied" in msg:  # (a frozen server: `calls.gate`) it runs, at the right URL
        return STOPS["unreachable"](f"judge: {msg}; is the server stuck, or judge.timeout_s too short for its first reply? {tail}")
    return STOPS["unreachable"](f"judge: {msg}; is the server running and judge.base_url right? {tail}")


async def _within_grace(stop: anyio.Event, grace_s: float, job: Callable[[], Any]) -> bool:
    """Run `job`; cancel it when `stop` has been set for `grace_s` seconds. True when it finished."""
    cut = False

    async def guard(scope: anyio.CancelScope) -> None:
        nonlocal cut
        await stop.wait()
        await anyio.sleep(grace_s)
        cut = True
        scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(guard, tg.cancel_scope)
        await job()
        tg.cancel_scope.cancel()  # finished: the guard is no longer needed
    return not cut
