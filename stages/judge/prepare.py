"""Judge requests made ready many at a time: fitted, keyed and looked up in the cache in one worker-thread trip.

Before a request can be answered from the cache or sent, `Judge.ask` needs it
fitted to the context window (`tracejudge.stages.judge.fit.fit_request`:
rendering, sometimes counting), its cache key (sha256 of the canonical JSON of
its components), a cache read and, for a request the cache does not answer, its
form on the wire (`Wire`: the payload, its JSON body, its prompt-token count, by which the
rate limiter admits it): off the event loop, where they held a strict window's burst
back (tiktoken counts without holding the GIL).
One ask at a time that is a thread hop and
an SQLite query per request; on a warm re-run, where nothing is sent, those
hops were most of the judge's time. `Preparer.prepare` gathers the asks that
arrive while a trip is under way (group commit: the first ask of a group leads
it, the others wait for it) and does the whole group in one trip — each request
fitted and keyed, then one `get_many` over all the keys. Each ask gets exactly
what it would have got alone: the same request, key, cached answer and wire form. An ask
whose leader was cancelled (a stop) makes its own trip.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.lowlevel

from tracejudge.core.config import JudgeConfig
from tracejudge.llm.cache import cache_key
from tracejudge.llm.judge_tokenizer import spec_of
from tracejudge.llm.providers import JudgeRequest
from tracejudge.stages.judge.base import Plan, Question
from tracejudge.stages.judge.calls.request import Wire, request_tokens
from tracejudge.stages.judge.fit import Fitted, fit_request

__all__ = ["Prepared", "Preparer"]


@dataclass
class Prepared:
    """One ask made ready: the `fitted` request; its cache key `components` and `key` (`None` when it does not fit, so is
    never asked); the cached answer `hit` (`None`: a miss, or no cache); `wire`, the request ready to send, its prompt
    counted as `request_tokens` counts it under `judge.tokenizer` (`None`: a hit, or a request that does not fit)."""

    fitted: Fitted
    components: dict[str, Any] | None = None
    key: str | None = None
    hit: dict[str, Any] | None = None
    wire: Wire | None = None
    began: float = 0.0  # when its making ready began (`time.monotonic()`): an identical flight that landed after it is shared


@dataclass
class _Trip:
    asks: list[tuple[Plan, list[Question], int]] = field(default_factory=list)
    done: anyio.Event = field(default_factory=anyio.Event)
    out: list[Prepared | Exception] | None = None
    read_error: Exception | None = None


class Preparer:
    """Makes asks ready in shared worker-thread trips (see the module doc); a trip takes up to `MAX_TRIP` asks (more
    only when one `prepare_many` brings them), the asks beyond it form the next trip.

    `components(plan, request, trial)` gives a request's cache key components
    (`tracejudge.stages.judge.client.key_components` with the judge's provider,
    base URL and structured-output mode); `wire(request, tokens)` its `Wire` in the judge's
    protocol (`None`: none is made, `Judge.call` builds it); `cache` is the judge's raw cache (`None`:
    off), read with its `get_many` when it has one, else key by key; `read_failed(exc, n)`
    is called on the event loop when a trip's read of `n` keys raised `exc` (those asks
    then see misses).
    """

    # A trip's asks wait for its last one: past a few dozen, the first of them (a strict window's burst) would wait
    # longer for the rest than the hop they share saves.
    MAX_TRIP = 32

    def __init__(self, cfg: JudgeConfig, components: Callable[[Plan, JudgeRequest, int], dict[str, Any]], cache: Any | None,
                 read_failed: Callable[[Exception, int], None], wire: Callable[[JudgeRequest, int], Wire] | None = None) -> None:
        self.cfg = cfg
        self._wire = wire
        self._components = components
        self._cache = cache
        self._read_failed = read_failed
        self._open: _Trip | None = None
        self._turn = anyio.Lock()

    async def prepare(self, plan: Plan, questions: list[Question], trial: int) -> Prepared:
        """`questions` of `plan` made ready for trial `trial`. Raises what `fit_request` raised for this ask."""
        got = (await self.prepare_many([(plan, questions, trial)]))[0]
        if isinstance(got, Exception):
            raise got
        return got

    async def prepare_many(self, asks: list[tuple[Plan, list[Question], int]]) -> list[Prepared | Exception]:
        """Each `(plan, questions, trial)` of `asks` made ready, all in one trip (in order; what `fit_request` raised for an
        ask stands in its place). The same as `prepare` of each, without a wait per ask."""
        if not asks:
            return []
        began = time.monotonic()
        trip = self._open
        if trip is not None and len(trip.asks) < self.MAX_TRIP:
            start = len(trip.asks)
            trip.asks.extend(asks)
            await trip.done.wait()
            if trip.out is None:  # the leader was cancelled before the trip ended: these asks go alone
                return await self.prepare_many(asks)
        else:
            trip = self._open = _Trip()
            start = 0
            trip.asks.extend(asks)
            try:
                # One trip at a time: the asks that arrive while the one before is in the thread join this one. (Trips side
                # by side gain nothing: the work holds the GIL; they only multiply the hops.)
                async with self._turn:
                    await anyio.lowlevel.checkpoint()  # the asks that are ready now join too
                    if self._open is trip:
                        self._open = None  # asks arriving from here on form the next trip
                    trip.out = await anyio.to_thread.run_sync(self._run, trip, abandon_on_cancel=True)
            finally:
                if self._open is trip:
                    self._open = None
                trip.done.set()
            if trip.read_error is not None:
                self._read_failed(trip.read_error, sum(1 for p in trip.out if isinstance(p, Prepared) and p.key is not None))
        mine = trip.out[start:start + len(asks)]
        for p in mine:
            if isinstance(p, Prepared):
                p.began = began
        return mine

    def _run(self, trip: _Trip) -> list[Prepared | Exception]:
        # In a worker thread: plain CPU work and one read, nothing shared is changed.
        out: list[Prepared | Exception] = []
        for plan, questions, trial in trip.asks:
            try:
                fitted = fit_request(plan, questions, self.cfg)
                ready = Prepared(fitted)
                if fitted.fits:
                    ready.components = self._components(plan, fitted.req, trial)
                    ready.key = cache_key(ready.components)
                out.append(ready)
            except Exception as exc:  # this ask's own failure (a metric's rendering bug), raised to it alone
                out.append(exc)
        keys = [p.key for p in out if isinstance(p, Prepared) and p.key is not None]
        if self._cache is not None and keys:
            self._read(trip, out, keys)
        if self._wire is not None:
            self._ready_to_send(out, self._wire)
        return out

    def _ready_to_send(self, out: list[Prepared | Exception], wire: Callable[[JudgeRequest, int], Wire]) -> None:
        # Each request the cache does not answer is counted and encoded once, here: what `Judge.call` would do on the loop.
        tokenizer = spec_of(self.cfg)
        for p in out:
            if isinstance(p, Prepared) and p.key is not None and p.hit is None:
                try:
                    fitted = p.fitted
                    # `fit_request` counted a long prompt already (that very request, unless cut to fit).
                    tokens = fitted.tokens if fitted.tokens and not fitted.truncated else request_tokens(fitted.req, tokenizer)
                    p.wire = wire(fitted.req, tokens)
                except Exception:  # left to `Judge.call`, which does it again and raises to this ask alone
                    p.wire = None

    def _read(self, trip: _Trip, out: list[Prepared | Exception], keys: list[str]) -> None:
        try:
            many = getattr(self._cache, "get_many", None)
            hits = many(keys) if many is not None else {k: v for k in keys if (v := self._cache.get(k)) is not None}
        except Exception as exc:  # any storage fault: every ask of the trip misses (the cache is an optimisation)
            trip.read_error = exc
            return
        given: set[str] = set()
        for p in out:
            if isinstance(p, Prepared) and p.key is not None and (hit := hits.get(p.key)) is not None:
                # Two asks of one request (identical cases) each get their own copy, as from reads of their own.
                p.hit = copy.deepcopy(hit) if p.key in given else hit
                given.add(p.key)
