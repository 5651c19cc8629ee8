"""The judge learns, before its first cache read and again after each outage, which weights a self-hosted server serves.

What is asked and how it enters the cache key: `tracejudge.llm.served_model`. A judge with no cache, the simulator
(its name in keys holds its seed and flaws already) and a hosted API ask nothing: their keys are what they always were.
Then, for a self-hosted server:

- it says what it serves: that is the run's `served_model`, and the cache remembers it for this judge;
- it answers 503 (llama.cpp while it loads its model): asked again, as the gate tries a server that is down
  (`calls.gate`: `FIRST_TRY_S`, twice as late each time up to `LAST_TRY_S`), for at most `judge.max_retry_wait_s`;
- it answers nothing at all (not running, or not in time; an identity endpoint still silent at the probe's time limit
  counts, whatever the others said: it may hold what names the weights): the weights it said it served last are assumed (the
  cache's `last_served`), so a warm cache still answers a run while the server is off; a request the cache does not
  answer then fails as the server's absence makes it fail. With none remembered, the key is as without one;
- it answers, but nothing identifies its weights: the key is the one such a request always had.

The last two warn once a run: a weight swap behind the same name would be answered from the cache.

The server is asked again when it comes back from an outage (the judge's gate, `calls.gate`, reopens after it was
down: a llama-server restarted on another GGUF is that): keys made from then on hold what it says then, and a change
is logged once (`served model changed during the run: A → B`). A verdict is stored under the weights that answered it
(`keyed_as_answered`): a request made ready before the outage, and sent again once the server was back, was answered by
the new weights, so it is stored under theirs, not the key it was looked up with. A server that does not answer the
second asking keeps the weights it said before (it has just answered a request: a lost probe is no swap).

A server that says how many requests it computes at once (llama.cpp's `/props` `total_slots`) is sent no more than
that at a time (`_fit_slots`), with or without a cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
from tracejudge.core.log import get_logger
from tracejudge.llm import served_model
from tracejudge.llm.cache import cache_key
from tracejudge.llm.providers import public_url
from tracejudge.stages.judge.calls.gate import FIRST_TRY_S, LAST_TRY_S, answered_in

if TYPE_CHECKING:
    from tracejudge.stages.judge.client import Judge

__all__ = ["answered_by", "keyed_as_answered", "learn_served", "recorded_served"]

log = get_logger("tracejudge.judge")


async def learn_served(self: Judge) -> None:
    """Set `self.served_model` (`None`: not known, or not asked) the first time it is called, and again the first time
    after the server came back from an outage (`Gate.reopened` grew); other calls return at once, and a call made
    while one asks waits for its answer, so every key made after it holds that answer. Takes at most
    `served_model.PROBE_TIMEOUT_S` (and a little) seconds, or `judge.max_retry_wait_s` more for a server loading its
    model; never raises for anything the server or the cache does."""
    if self.served_learnt and self.served_epoch >= _epoch(self):
        return
    if self._served_lock is None:
        self._served_lock = anyio.Lock()
    async with self._served_lock:
        epoch = _epoch(self)  # (taken before asking: an outage during the asking is asked about again)
        if self.served_learnt and self.served_epoch >= epoch:
            return
        first = not self.served_learnt
        try:
            if _asks(self):
                self.served_model = await (_ask(self) if first else _ask_again(self))
        finally:
            self.served_learnt = True
            self.served_epoch = epoch
            self.served_at[epoch] = self.served_model


async def answered_by(self: Judge) -> dict[str, Any] | None:
    """The `served_model` of the weights that answered the current task's last reply (`gate.answered_in`): those the
    server said it served after the outage that reply came after, asked first if it was not yet (`learn_served`)."""
    epoch = answered_in.get()
    if epoch > self.served_epoch or not self.served_learnt:
        await self.learn_served()
    # The first asking at or after that outage: a later outage's answer is the nearest one known then.
    after = [e for e in self.served_at if e >= epoch]
    return self.served_at[min(after)] if after else self.served_model


async def keyed_as_answered(self: Judge, key: str, comps: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`(key, comps)` to store the current task's last reply under: as given, unless the weights that answered it
    (`answered_by`) are not those `comps` were made with (the server came back from an outage on other weights while
    the request waited), then the same components with the answering weights' `served_model`, and their key."""
    if not _asks(self):
        return key, comps
    served = await answered_by(self)
    if served == comps.get("served_model"):
        return key, comps
    comps = {k: v for k, v in comps.items() if k != "served_model"} | ({"served_model": served} if served is not None else {})
    return cache_key(comps), comps


def recorded_served(self: Judge) -> dict[str, Any] | None:
    """The `served_model` a result and the summary record for this judge: the weights its cache keys hold (those the
    server said it serves, or, when it did not answer, those it served last), else, without a cache, those it said it
    serves; `None` when not known (a hosted API, the simulator, a server that does not say)."""
    return self.served_model if self.served_model is not None else self.served_said


def _asks(self: Judge) -> bool:
    """Whether this judge asks its server what it serves: a self-hosted one (never the simulator's own provider)."""
    return self.cfg.provider != "simulator" and served_model.self_hosted(self.cache_base_url)


def _epoch(self: Judge) -> int:
    gate = getattr(self, "_gate", None)
    return gate.reopened if gate is not None else 0


async def _probe(self: Judge) -> served_model.Learnt:
    """What the server says it serves, asked again while it says it is loading, up to `judge.max_retry_wait_s`."""
    cfg, where = self.cfg, public_url(self.cache_base_url)
    give_up = anyio.current_time() + cfg.max_retry_wait_s
    wait = FIRST_TRY_S
    while True:
        got = await served_model.learn(self.cache_base_url, cfg.model, self._headers, self._secrets)
        if not got.loading or got.component is not None or anyio.current_time() + wait > give_up:
            return got
        if wait == FIRST_TRY_S:
            log.warning("the judge server is loading its model: waiting for it to say which weights it serves", url=where,
                        max_retry_wait_s=cfg.max_retry_wait_s)
        await anyio.sleep(wait)
        wait = min(2 * wait, LAST_TRY_S)


async def _ask(self: Judge) -> dict[str, Any] | None:
    cfg, where = self.cfg, public_url(self.cache_base_url)
    judge_id = (cfg.provider, self.cache_base_url, cfg.model)
    got = await _probe(self)
    self.served_said = got.component or self.served_said
    if got.slots is not None:
        _fit_slots(self, got.slots, where)
    if self.cache is None:  # (asked for its slots alone: a run without a cache keys nothing)
        return None
    raw: Any = getattr(self.cache, "raw", self.cache)
    last = None if got.answered else _cache_call(raw, "last_served", *judge_id)
    if isinstance(last, dict):
        log.warning("the judge server did not answer when asked which weights it serves: its verdicts are looked up as "
                    "those of the weights it served last; a weight swap since then would be answered from the cache",
                    url=where, model=cfg.model, served=served_model.describe(last))
        return last
    if got.component is not None:  # (what it said; or an endpoint was silent, the others named weights, and none are remembered)
        log.info("judge server weights", url=where, model=cfg.model, served=served_model.describe(got.component))
        _cache_call(raw, "remember_served", *judge_id, got.component)
        return got.component
    if not got.answered:  # (nothing answered at all: no claim about what the server says, which it may never say)
        log.warning("the judge server did not answer when asked which weights it serves (not running yet, not reachable, or "
                    "not in time): until it does, its cached verdicts are keyed by the model name alone", url=where, model=cfg.model)
        return None
    log.warning("the judge server does not say which weights it serves (none of llama.cpp's /props, Ollama's /api/tags, "
                "vLLM's /v1/models root, LM Studio's /api/v0/models or TGI's /info identified them): its cached verdicts are "
                "keyed by the model name alone, so weights swapped behind that name would be answered from the cache; after "
                "a swap, clear the cache or use another cache.dir", url=where, model=cfg.model)
    return None


async def _ask_again(self: Judge) -> dict[str, Any] | None:
    """What the server serves now that it is back from an outage (see the module doc); the change, if any, logged once."""
    cfg, where, before = self.cfg, public_url(self.cache_base_url), self.served_model
    got = await _probe(self)
    self.served_said = got.component or self.served_said
    if got.slots is not None and got.slots != self.slot_count:  # (the same count kept: the requests holding a slot keep theirs)
        _fit_slots(self, got.slots, where)
    if self.cache is None:
        return None
    if not got.answered and (got.component is None or before is not None):  # (what a silent endpoint left out is no swap)
        log.warning("the judge server is back from an outage but did not answer when asked again which weights it serves: "
                    "its verdicts are still keyed by the weights it said before", url=where, model=cfg.model,
                    served=served_model.describe(before))
        return before
    if got.component == before:
        log.info("the judge server is back from an outage serving the same weights", url=where, served=served_model.describe(before))
        return before
    if got.component is not None:
        _cache_call(getattr(self.cache, "raw", self.cache), "remember_served", cfg.provider, self.cache_base_url, cfg.model, got.component)
    log.warning(f"served model changed during the run: {served_model.describe(before)} → {served_model.describe(got.component)}; "
                "verdicts from here on are cached under the weights served now", url=where, model=cfg.model)
    return got.component


def _fit_slots(self: Judge, slots: int, where: str) -> None:
    """Send at most `slots` requests at a time to a server that computes that many at once (llama.cpp's `--parallel`).

    One sent beyond them waits in the server's queue while `judge.timeout_s` runs: with `limits.max_in_flight` 64
    against a one-slot server, the requests at the back timed out unanswered, closed the gate as a slow server and
    ended their cases `timeout`. Held here instead (`sending.attempt_in_slot`), a request's time limit counts only the
    time the server works on it. The judge's own hold, not the limiter's cap: panel members may share one limiter.
    """
    cap = getattr(self.limiter, "max_in_flight", None)
    if type(cap) is int and cap <= slots:
        return
    self.slots, self.slot_count = anyio.Semaphore(slots), slots
    log.info("the judge server computes a few requests at once: at most that many are sent at a time", url=where,
             total_slots=slots, max_in_flight=cap)


def _cache_call(cache: Any, name: str, *args: Any) -> Any:
    """`cache.name(*args)`, or `None` for a cache without it or one that fails: remembering is an optimisation."""
    method = getattr(cache, name, None)
    if method is None:
        return None
    try:
        return method(*args)
    except Exception:  # any storage fault (the guarded reads and writes count and report those)
        return None
