"""Pin a worker's death on the records that cause it, by splitting the chunk it died on.

A chunk whose worker dies twice (`ProcessExecutor.map` tries it once more in a fresh worker
first) holds a record that kills whatever worker scores it (a metric that crashes the
interpreter, a C extension's segfault), or the machine kills every worker (out of memory).
Writing the whole chunk off costs its innocent records too, on every resume. So the chunk is
halved, each half tried in a worker (a fresh one where the last died), and a half that dies
halved again, down to single records: one culprit among 128 records costs 7 more deaths, and
every other record is scored.

The splitting is bounded: about log2 of the chunk's size in deaths while no part comes back,
so a worker that dies on everything costs a few more worker starts, not one per record; each
part that comes back allows one more, up to four times that, so several culprits in a chunk
are pinned too. The records left unresolved when the deaths are spent are lost together, as
before splitting.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

from tracejudge.engine.executors.base import Extracted

__all__ = ["CULPRIT", "budget_for", "pin_deaths"]

CULPRIT = "the worker process died while scoring this case: "
"""How a record's result starts when its worker died computing it alone, in a fresh worker."""


def budget_for(records: int) -> int:
    """Worker deaths `pin_deaths` may spend on a chunk of `records` while no part has come back: enough to pin one
    culprit (and try every other part), plus one."""
    return max(1, math.ceil(math.log2(max(records, 1)))) + 1


async def pin_deaths(compute: Callable[[list[Any]], Awaitable[list[Extracted]]], chunk: list[Any], why: str,
                     died: Callable[[BaseException], str | None], budget: int) -> list[Extracted | str]:
    """One entry per record of `chunk` (whose worker died, for reason `why`): its `Extracted`, or why it has none.

    `compute(part)` runs part of the chunk in a worker; `died(exc)` says why when `exc` is a
    worker's death (None: any other exception, which propagates). A record whose worker died
    with it alone gets `CULPRIT` and the reason. `budget` deaths may be spent, one more for each
    part that came back (the deaths are the records', so more culprits may be found), at most
    four times `budget` in all; once they are spent, the parts not yet tried get "the worker
    process died: " and the reason, every record of them.
    """
    out: list[Extracted | str | None] = [None] * len(chunk)
    spent = survived = 0

    async def split(lo: int, hi: int, reason: str) -> None:
        nonlocal spent, survived
        if hi - lo == 1:
            out[lo] = CULPRIT + reason
            return
        mid = (lo + hi) // 2
        dead: list[tuple[int, int, str]] = []
        for a, b in ((lo, mid), (mid, hi)):  # both halves before either is split: a half that comes back earns its death
            if spent >= min(budget + survived, 4 * budget):  # (a part is tried only while a death is left to spend on it)
                out[a:b] = [f"the worker process died: {reason}"] * (b - a)
                continue
            try:
                out[a:b] = await compute(chunk[a:b])
                survived += 1
            except BaseException as exc:
                cause = died(exc)
                if cause is None:
                    raise
                spent += 1
                dead.append((a, b, cause))
        for a, b, cause in dead:
            await split(a, b, cause)

    await split(0, len(chunk), why)
    return out  # type: ignore[return-value]  (every entry is set)
