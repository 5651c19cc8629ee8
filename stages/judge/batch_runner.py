"""`judge.mode: batch`: judge requests go through the provider's batch API instead of one call each.

`BatchRunner.submit(custom_id, payload)` is what `Judge.call` awaits in
batch mode; it returns the request's `Reply` once its batch has ended.

- Grouping: requests gather in one open batch (`tracejudge.stages.judge.batcher`),
  submitted when it holds the provider's (or the config's) request count
  or bytes, or `batch.flush_after_s` after its first request.
- The `custom_id` is the request's cache key; results are joined by it.
  The same `custom_id` asked twice while a batch is open is sent once.
- As soon as the provider returned a batch id, it is written to
  `RUN_DIR/batches.jsonl` and fsynced (`tracejudge.llm.batch_journal`), before
  the batch is polled or anything else happens.
- One task polls each batch (every `batch.poll_interval_s`); when it is
  terminal, the output file and the error file are both read (the error
  file even when the batch says `completed`). A request missing from both
  counts as an error. One whose answer's line could not be read (`unread`)
  does too, but the provider billed it: `take_unread` tells the judge how
  many such answers a request had, which it bills at their estimated prompt.
  A billed answer's line naming no request is billed so as the unread
  answer of a request of its batch left without a result.
- A request that came back with an error, expired or was canceled is put
  in a later batch, at most `batch.max_resubmits` times; then `submit`
  raises `ProviderError` and the case ends `judge_error`.
- Re-attach: batches the journal lists as submitted and not ended (a
  killed run) are followed again when one of their requests is asked:
  the requester waits for that batch instead of submitting, so nothing is
  paid twice. Before a batch is created, an `intent` line with a hash of
  its custom ids (`chunk`, also sent as the batch's metadata) is logged;
  a batch whose creation timed out, or that a killed run created but never
  logged, is found again by that metadata in the provider's batch list
  (OpenAI; Anthropic batches carry no metadata, so there a kill in the
  instant between creation and the log line can still cost a second
  submission). Control calls (upload, poll, download) are retried on 429 /
  5xx / timeouts with backoff; creation is retried on 429 / 5xx only.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
import anyio
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_random_exponential
from tracejudge.core.config import JudgeConfig
from tracejudge.core.judge_modes import PROVIDER_BATCH_LIMITS
from tracejudge.llm.batch_api import BatchResult, BatchState, batch_line, fetch_results, find_batch, poll_batch, submit_batch
from tracejudge.llm.batch_journal import BatchJournal
from tracejudge.llm.providers import ProviderError, Reply
from tracejudge.stages.judge.batcher import Batcher

__all__ = ["BatchRunner", "BatchCounters"]

V = TypeVar("V")
CHUNK_KEY = "tracejudge_chunk"  # batch metadata: a hash of the batch's custom ids


@dataclass
class BatchCounters:
    """What batch mode did in one segment (counts)."""

    batches_submitted: int = 0
    batches_reattached: int = 0
    batch_requests: int = 0
    batch_resubmits: int = 0
    batch_request_errors: int = 0
    batch_expired: int = 0
    batch_unread_billed: int = 0  # answers the provider billed whose result line could not be read
    batch_nameless_billed: int = 0  # of those, lines naming no request, billed as a request of their batch without a result
    batch_nameless_unbilled: int = 0  # lines naming no request beyond the requests of their batch left without a result
    batch_polls: int = 0


@dataclass
class _Watch:
    done: anyio.Event = field(default_factory=anyio.Event)
    error: BaseException | None = None


def _refused(result: BatchResult) -> None:
    """Raise, for a request the model refused in a batch, the `fatal` error a synchronous refusal is (`reply`: its
    usage, which the provider billed): it is not resubmitted, as a refusal comes back the same and is paid each time."""
    if result.kind == "refused":
        err = ProviderError("fatal", result.message, 200)
        err.reply = result.reply
        raise err


class BatchRunner:
    """Submits, journals, polls and joins provider batches for one run (see the module doc).

    `journal_base` is the endpoint as the journal records it (stable across
    restarts); `base_url` is where requests go now.
    """

    def __init__(self, cfg: JudgeConfig, *, session: aiohttp.ClientSession, protocol: str, base_url: str, headers: dict[str, str],
                 journal: BatchJournal, journal_base: str) -> None:
        self.cfg = cfg
        self.session = session
        self.protocol = protocol
        self.base_url = base_url
        self.headers = headers
        self.journal = journal
        self.journal_base = journal_base
        self.counters = BatchCounters()
        max_requests, max_bytes = PROVIDER_BATCH_LIMITS["anthropic" if protocol == "anthropic" else "openai"]
        self.max_requests = min(cfg.batch.max_requests or max_requests, max_requests)
        self.max_bytes = min(cfg.batch.max_bytes or max_bytes, max_bytes)
        self._batcher: Batcher[tuple[str, bytes], BatchResult] = Batcher(
            self._flush, self.max_requests, cfg.batch.flush_after_s, max_bytes=self.max_bytes, size=lambda it: len(it[1]))
        self._results: dict[str, BatchResult] = {}
        self._members: dict[str, list[str]] = {}
        self._attached: dict[str, str] = {}
        # The in-process simulator of `provider: simulator` dies with the run: its batches cannot be re-attached.
        in_flight = journal.in_flight(cfg.provider, journal_base) if cfg.provider != "simulator" else {}
        for bid, cids in in_flight.items():
            self._members[bid] = cids
            for cid in cids:
                self._attached[cid] = bid  # a later batch of the same request wins
        self._reattach = set(self._members)
        self._watches: dict[str, _Watch] = {}
        self._fetched: set[str] = set()
        self._orphans = journal.orphan_intents(cfg.provider, journal_base) if cfg.provider != "simulator" else {}
        self._recovered: anyio.Event | None = None
        self._unread: dict[str, list[Reply | None]] = {}  # custom_id → its billed answers that could not be read (`take_unread`)

    # ------------------------------------------------------------------ public

    async def submit(self, custom_id: str, payload: dict[str, Any]) -> Reply:
        """The reply to `payload`, sent in a batch as `custom_id`. Raises `ProviderError` when it never succeeded (a
        refusal at once, `fatal` with its `reply`, never resubmitted)."""
        await self._recover()
        used = 0
        result: BatchResult | None = None
        bid = self._attached.pop(custom_id, None)
        if bid is not None:
            await self._follow(bid)
        if custom_id in self._results:  # from a re-attached batch (followed by this or another requester)
            result = self._results.pop(custom_id)
            if result.kind == "ok" and result.reply is not None:
                return result.reply
            _refused(result)
            self._count(result)
            used = 1
        line = batch_line(self.protocol, custom_id, payload)
        for attempt in range(used, self.cfg.batch.max_resubmits + 1):
            if attempt > 0:
                self.counters.batch_resubmits += 1
            result = await self._batcher.submit("batch", (custom_id, line))
            if result.kind == "ok" and result.reply is not None:
                return result.reply
            _refused(result)
            self._count(result)
        assert result is not None
        raise ProviderError("server", f"batch request {result.kind} in {self.cfg.batch.max_resubmits + 1} submissions: {result.message}")

    def take_unread(self, custom_id: str) -> list[Reply | None]:
        """The answers to `custom_id` the provider billed that could not be read, since last asked (none: `[]`), each the
        usage it reported (a `Reply` holding it) or None when that is unknown too: the judge bills them, once each, when
        `submit` for it returns or raises."""
        return self._unread.pop(custom_id, [])

    def close(self) -> None:
        """Mark in the journal the batches whose every result was handed out (call when the segment ends cleanly)."""
        for bid in sorted(self._fetched):
            if all(cid not in self._results and cid not in self._attached for cid in self._members.get(bid, [])):
                self.journal.record_ended(bid)

    # ------------------------------------------------------------------ internals

    def _count(self, result: BatchResult) -> None:
        if result.kind == "expired":
            self.counters.batch_expired += 1
        else:
            self.counters.batch_request_errors += 1
        if result.kind == "unread" and not result.billed:
            result.billed = True
            self.counters.batch_unread_billed += 1
            self._unread.setdefault(result.custom_id, []).append(result.reply)

    async def _retry(self, call: Callable[[], Awaitable[V]], *, blind: bool = True) -> V:
        # `blind`: retry timeouts and lost connections too (safe for reads and uploads, not for creating a batch).
        def retryable(exc: BaseException) -> bool:
            return isinstance(exc, ProviderError) and (
                exc.kind in ("rate_limited", "server", "unreachable") or (blind and exc.kind in ("timeout", "connection")))

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            if isinstance(exc, ProviderError) and exc.retry_after_s is not None:
                return exc.retry_after_s + random.uniform(0, 0.1)
            return wait_random_exponential(multiplier=0.5, max=30)(state)

        retrying = AsyncRetrying(stop=stop_after_attempt(self.cfg.max_attempts), wait=wait, sleep=anyio.sleep, reraise=True,
                                 retry=retry_if_exception(retryable))
        async for attempt in retrying:
            with attempt:
                result = await call()
        return result

    async def _recover(self) -> None:
        # Once per segment, before the first request: find batches a killed run created but never logged.
        if self._recovered is not None:
            await self._recovered.wait()
            return
        self._recovered = anyio.Event()
        try:
            for chunk, cids in self._orphans.items():
                bid = await self._retry(lambda: find_batch(self.session, self.protocol, self.base_url, self.headers, CHUNK_KEY, chunk))
                if bid is None:
                    continue  # never created: its requests are submitted as usual
                self.journal.record_submitted(bid, self.cfg.provider, self.journal_base, cids, chunk)
                self._members[bid] = cids
                self._reattach.add(bid)
                for cid in cids:
                    self._attached[cid] = bid
        finally:
            self._recovered.set()

    async def _create(self, lines: list[bytes], chunk: str) -> str:
        try:
            return await self._retry(lambda: submit_batch(self.session, self.protocol, self.base_url, self.headers, lines,
                                                          completion_window=self.cfg.batch.completion_window, metadata={CHUNK_KEY: chunk},
                                                          timeout_s=max(60.0, self.cfg.timeout_s)), blind=False)
        except ProviderError as exc:
            if exc.kind not in ("timeout", "connection"):
                raise
            # The provider may have created it before the reply was lost: look before trying again.
            found = await self._retry(lambda: find_batch(self.session, self.protocol, self.base_url, self.headers, CHUNK_KEY, chunk))
            if found is not None:
                return found
            raise

    async def _flush(self, items: list[tuple[str, bytes]]) -> list[BatchResult]:
        unique: dict[str, bytes] = {}
        for cid, line in items:
            unique.setdefault(cid, line)
        cids = list(unique)
        lines = list(unique.values())
        chunk = hashlib.sha256(",".join(cids).encode()).hexdigest()[:32]
        self.journal.record_intent(chunk, self.cfg.provider, self.journal_base, cids)
        bid = await self._create(lines, chunk)
        # Before anything else: a run killed from here on re-attaches instead of paying again.
        self.journal.record_submitted(bid, self.cfg.provider, self.journal_base, cids, chunk)
        self.counters.batches_submitted += 1
        self.counters.batch_requests += len(cids)
        self._members[bid] = cids
        await self._follow(bid)
        out = [self._results.get(cid) or BatchResult(cid, "error", message="no result") for cid, _ in items]
        for cid in cids:
            self._results.pop(cid, None)
        return out

    async def _follow(self, bid: str) -> None:
        watch = self._watches.get(bid)
        if watch is not None:
            await watch.done.wait()
            if watch.error is not None:
                raise watch.error
            return
        watch = self._watches[bid] = _Watch()
        try:
            if bid in self._reattach:
                self.counters.batches_reattached += 1
            state = await self._poll_until_done(bid)
            results, nameless = await self._retry(lambda: fetch_results(self.session, self.protocol, self.base_url, self.headers, state))
            for cid in self._members.get(bid, []):
                if cid not in results and nameless > 0:
                    # A billed answer's line named no request: which one it answered cannot be known, so it is billed as
                    # the unread answer of a request the batch left without a result (at that request's estimated prompt).
                    nameless -= 1
                    self.counters.batch_nameless_billed += 1
                    results[cid] = BatchResult(cid, "unread", message=f"batch {bid} returned no result naming this request, "
                                               "and an answer's line naming no request, billed as this one's")
                self._results[cid] = results.get(cid) or BatchResult(
                    cid, "error", message=f"batch {bid} ended {state.status} without a result for this request")
            self.counters.batch_nameless_unbilled += nameless  # (more such lines than requests without a result)
            self._fetched.add(bid)
        except Exception as exc:
            watch.error = exc
            del self._watches[bid]  # a later requester may try again
            raise
        except BaseException:
            watch.error = RuntimeError(f"following batch {bid} was cancelled")
            self._watches.pop(bid, None)
            raise
        finally:
            watch.done.set()

    async def _poll_until_done(self, bid: str) -> BatchState:
        while True:
            state = await self._retry(lambda: poll_batch(self.session, self.protocol, self.base_url, self.headers, bid))
            self.counters.batch_polls += 1
            if state.terminal:
                return state
            await anyio.sleep(self.cfg.batch.poll_interval_s)
