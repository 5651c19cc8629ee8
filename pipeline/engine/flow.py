"""The run's pipeline of tasks (`_Flow`): load → executor (extract, score) → admit → stages → sink.

Built and started by `tracejudge.engine.runner.run`; the sink writes every finished result through
the run's journal (`tracejudge.engine.checkpoint.RunJournal`).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import aclosing
from typing import Any

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from tracejudge.core.config import RunConfig
from tracejudge.core.errors import TracejudgeError, describe
from tracejudge.core.log import get_logger
from tracejudge.core.records import CaseResult, ErrorInfo, Status
from tracejudge.core.utf8 import filed_id
from tracejudge.core.work import AGENT_ANSWERED, Stage, Work
from tracejudge.engine import cursor
from tracejudge.engine.admit import Admission, safe_text, torn_standing
from tracejudge.engine.checkpoint import RunJournal
from tracejudge.engine.executors import STOP_GRACE_S, Executor, Extracted
from tracejudge.engine.executors.pump import Mapped, ordered_map
from tracejudge.engine.flow_streams import _EAGER, _Eager, _emit, _slices  # (`_EAGER`: as `flow._EAGER` too)
from tracejudge.engine.keyset import FirstSeen, key_hash, result_key, trial_key
from tracejudge.engine.live import LiveStatus
from tracejudge.engine.read_ahead import ReadLeft
from tracejudge.engine.rendered import Finished
from tracejudge.engine.shards import Shard, shard_index
from tracejudge.engine.unwritable import unencodable as _unencodable
from tracejudge.engine.worker_deaths import died_results

log = get_logger("tracejudge.runner")

# The status of a case a stage raised on (a bug in it, not a failure it reports): the score stage's is the record's
# (`invalid_input`, final), a judge stage's the judge's (`judge_error`: it was the agent's failure, `target_error`, and
# the terminal said the agent raised); any other stage runs the agent.
_STATUS_OF_BUG = {"score": Status.invalid_input, "judge": Status.judge_error}
_PLAIN_CHUNK = 64  # raw records per chunk when nothing runs after the executor, unless it says (`plain_chunk`)


class _Flow:
    """The pipeline's shape: load → executor (extract, score) → admit → stages (target, score, judge) → sink.

    Consecutive steps are joined by bounded memory object streams carrying
    small chunks (one hop per chunk keeps the loop's share of a case low); a
    stream feeding a concurrent (I/O) stage carries single items, so that
    stage's `workers` is its true concurrency.
    """

    def __init__(self, config: RunConfig, journal: RunJournal, stop: anyio.Event, on_result: Callable[[CaseResult], None] | None,
                 stages: list[Stage], peek: Callable[[Any], str | None] | None, shard: Shard | None = None, live: LiveStatus | None = None,
                 resume: cursor.Resume | None = None) -> None:
        self.config, self.journal, self.stop, self.on_result, self.stages, self.peek = config, journal, stop, on_result, stages, peek
        self.live = live if live is not None else LiveStatus()
        self.shard = shard
        self.trials = config.run.trials
        self.chunk = min(config.run.chunk_size, config.run.queue_size)
        self.capacity = max(2, config.run.queue_size // self.chunk)
        self.raw_chunk = self.chunk
        seen = resume.seen if resume is not None else FirstSeen(size_hint=len(journal.done))
        self.admission = Admission(journal.done, journal.is_done, seen, self.trials)
        self.admission.torn_before = torn_standing(journal.provisional)
        self.new = 0
        # The resume cursor (`tracejudge.engine.cursor`) notes every record read and is saved with each checkpoint;
        # the records it skipped count as the full read would have counted them.
        self.tracker = resume.tracker if resume is not None else None
        self.read_skipped = resume.skipped if resume is not None else 0
        if resume is not None:
            resume.tracker.added = self.admission.added
            journal.on_checkpoint = lambda: resume.save(journal.done, journal.provisional)
            journal.on_progress = lambda: resume.advance(journal.done, journal.provisional)
        self.cut_short = False
        self.cut_at_grace = 0  # cases a stage cut short once a stop's grace ran out: under way, not finished

    @property
    def skipped(self) -> int:
        return self.read_skipped + self.admission.skipped

    async def run(self, executor: Executor, records: AsyncIterator[Any]) -> None:
        # An executor that pays a hop per chunk (a pipe to a worker) asks for larger chunks of raw records;
        # so does a run with no stage after the executor, whose every hop is pure overhead (no I/O waits on it).
        plain = 0 if self.stages else (getattr(executor, "plain_chunk", None) or _PLAIN_CHUNK)
        self.raw_chunk = max(self.chunk, getattr(executor, "min_chunk", 0), plain)
        sink_done = anyio.Event()
        async with anyio.create_task_group() as tg:
            raw_send, raw_recv = anyio.create_memory_object_stream[list[Any]](self.capacity)
            tg.start_soon(self.load, records, raw_send)
            mapped_send, mapped_recv = anyio.create_memory_object_stream[Mapped](self.capacity)
            tg.start_soon(ordered_map, executor, raw_recv, mapped_send, self.stop, STOP_GRACE_S, self.live)
            send, recv = anyio.create_memory_object_stream[list[Work]](self.capacity)
            tg.start_soon(self.admit, mapped_recv, send, self.feeds_concurrent(0))
            for i, stage in enumerate(self.stages):
                nxt_send, nxt_recv = anyio.create_memory_object_stream[list[Work]](self.capacity)
                async with nxt_send:
                    if stage.settle is not None:  # its chunks settled first (the settler owns `recv`); the works left go to its workers
                        left_send, left_recv = anyio.create_memory_object_stream[list[Work]](self.capacity)
                        tg.start_soon(self.settler, stage, recv, left_send, nxt_send.clone(), self.feeds_concurrent(i + 1))
                        recv = left_recv
                    async with recv:
                        for _ in range(stage.workers):
                            tg.start_soon(self.worker, stage, recv.clone(), nxt_send.clone(), self.feeds_concurrent(i + 1))
                recv = nxt_recv
            tg.start_soon(self.sink, recv, sink_done)
            tg.start_soon(self.flusher, sink_done)

    def feeds_concurrent(self, i: int) -> bool:
        # (A stage that settles chunks is fed chunks: it hands its workers what it leaves one by one itself.)
        return i < len(self.stages) and self.stages[i].settle is None and (self.stages[i].workers > 1 or self.stages[i].io)

    def foreign(self, case_id: str | None) -> bool:
        # Another shard's case (`run.shard`): not scored, not written, not counted.
        return self.shard is not None and case_id is not None and shard_index(safe_text(case_id), self.shard[1]) != self.shard[0]

    def finished(self, raw: Any, pid: str | None) -> bool:
        # Resume fast path: a record whose every trial is finished is skipped unparsed,
        # unless it repeats an id seen earlier (then extract decides, as it did the first time).
        # `pid` is the record's peeked id (None: unreadable, or no id to peek).
        if pid is None:
            return False
        h = key_hash(pid)
        if not all(self.journal.is_done(trial_key(h, t)) for t in range(self.trials)):
            return False
        seen = self.admission.seen
        if seen.claim_first(h, raw.file, raw.line):
            return True
        # Claimed at an earlier line, on the id peeked in it. When a segment before read that line as unreadable (its
        # one result is filed under its place, as `admit` files it), its peeked id was never the case's: this record is
        # the id's first readable one, as the first reading found (it was read as a duplicate of the broken line).
        first = seen.where(h)
        if first is not None and self.journal.is_done(result_key(f"{first[0]}:{first[1]}", 0)):
            seen.move(h, raw.file, raw.line)
            return True
        return False

    async def load(self, records: AsyncIterator[Any], send: MemoryObjectSendStream[list[Any]]) -> None:
        # Nothing finished yet (a fresh run): no record can be skipped, so none is peeked and hashed for it.
        peek = self.peek if len(self.journal.done) or self.shard is not None else None
        async with send, aclosing(records):  # type: ignore[type-var]
            batch: list[Any] = []
            try:
                async for raw in records:
                    if self.stop.is_set():
                        self.cut_short = True
                        break
                    # One peek a record, shared by the cursor, the shard filter and the skip of finished records.
                    pid = self.peek(raw.payload) if (peek is not None or self.tracker is not None) and raw.error is None else None
                    if self.tracker is not None:
                        self.tracker.read(raw, pid)
                    if type(raw.payload) is bytes and not raw.payload.endswith(b"\n"):  # a JSONL file's last line, torn?
                        self.admission.note_torn(raw, self.peek)
                    if peek is not None and self.shard is not None and self.foreign(pid):
                        continue  # known from the id alone: not even parsed
                    if peek is not None and self.finished(raw, pid):
                        self.read_skipped += self.trials
                        if self.read_skipped % 512 == 0:
                            await anyio.lowlevel.checkpoint()  # let signals and flushes in
                        continue
                    batch.append(raw)
                    if len(batch) >= self.raw_chunk:
                        await send.send(batch)
                        batch = []
            except ReadLeft:  # a stop came while the reader waited (`read_ahead`): the records after are the resume's
                self.cut_short = True
            if batch:
                await send.send(batch)

    async def admit(self, recv: MemoryObjectReceiveStream[Mapped], send: MemoryObjectSendStream[list[Work]], single: bool) -> None:
        from tracejudge.stages.extract import line_case_id, raw_case_id

        async with recv, send:
            async for mapped in recv:
                if self.stop.is_set():
                    # Stopping: a chunk the executor hands back now is not admitted (nothing is
                    # written for it; the resume redoes it), so a stop takes effect at once even
                    # when no stage follows the executor.
                    self.cut_short = True
                    continue
                out = mapped.out
                if out is None and mapped.broken is not None:
                    out, unwritten = died_results(mapped, line_case_id if self.peek is not None else None, raw_case_id)
                    self.cut_short = self.cut_short or unwritten
                if out is None:  # cut short by a stop: not written, redone on resume
                    self.cut_short = True
                    continue
                # Every record's id is claimed now, before the first await (the loader claims ids too); its trials
                # are made a chunk at a time as the stages take them, so `run.trials` × a chunk never sits in memory.
                works_of, started = self.admission.works, mapped.started
                if self.shard is None and self.trials == 1:  # (one work a record at most: the chunk's made at once)
                    made: Iterator[Work] = iter(self.admission.works_all(out, started))
                elif self.shard is None:  # (no shard: no id to look up per item)
                    made = itertools.chain.from_iterable([works_of(item, started) for item in out])
                else:
                    made = itertools.chain.from_iterable([works_of(item, started) for item in out if not self.foreign(_case_id(item))])
                for works in _slices(made, max(self.raw_chunk, self.chunk)):
                    self.live.in_flight += len(works)
                    if not self.stages:  # straight to the sink: written whatever a stop says
                        self.live.writing += len(works)
                    await _emit(send, works, single)
                    if self.stop.is_set():
                        self.cut_short = True
                        break

    async def worker(self, stage: Stage, recv: MemoryObjectReceiveStream[list[Work]], send: MemoryObjectSendStream[list[Work]], single: bool) -> None:
        async with recv, send:
            async for works in _Eager(recv):
                if self.stop.is_set() and not any(AGENT_ANSWERED in w.scratch for w in works):
                    # Stopping: work no stage has started is dropped, not written, so the
                    # resume redoes it; only what is already in a stage's hands finishes, and
                    # what a live agent answered (the target stage is fed one case at a time),
                    # whose agent call redoing it would pay again.
                    self.cut_short = True
                    self.live.in_flight -= len(works)
                    continue
                for work in works:
                    if not work.failed:
                        self.live.working += 1
                        try:
                            await stage.process(work)
                        except TracejudgeError:
                            raise  # the stage says no case can succeed (bad judge credentials): stop, write nothing of it
                        except Exception as exc:  # a stage bug must cost one case, not the run
                            work.result.status = _STATUS_OF_BUG.get(stage.name, Status.target_error)
                            work.result.error = ErrorInfo(kind=f"{stage.name}_error", message=describe(exc))
                        finally:
                            self.live.working -= 1
                if stage is self.stages[-1]:
                    self.live.writing += len(works)
                await _emit(send, works, single)

    async def settler(self, stage: Stage, recv: MemoryObjectReceiveStream[list[Work]], left: MemoryObjectSendStream[list[Work]],
                      send: MemoryObjectSendStream[list[Work]], single: bool) -> None:
        """Each chunk for `stage` through its `settle` first: the works it settled are sent on at once, the others fed
        to its workers one by one. While the run stops every work goes to the workers, which drop what no stage started."""
        assert stage.settle is not None
        async with recv, left, send:
            async for works in _Eager(recv):
                rest = works
                if not self.stop.is_set():
                    self.live.working += len(works)
                    try:
                        rest = await stage.settle(works)
                    except TracejudgeError:
                        raise  # the stage says no case can succeed: stop, as a worker does
                    except Exception as exc:  # a stage bug: its works go the usual way, where it costs each case at most
                        log.warning("a stage could not settle a chunk; its cases go one by one", stage=stage.name, error=describe(exc))
                    finally:
                        self.live.working -= len(works)
                    if len(rest) < len(works):
                        kept = {id(w) for w in rest}
                        if stage is self.stages[-1]:
                            self.live.writing += len(works) - len(rest)
                        await _emit(send, [w for w in works if id(w) not in kept], single)
                for work in rest:
                    await left.send([work])

    async def sink(self, recv: MemoryObjectReceiveStream[list[Work]], sink_done: anyio.Event) -> None:
        async with recv:
            async for works in _Eager(recv):
                batch: list[Finished] = []  # results rendered where they were scored: recorded together, in order
                for work in works:
                    self.live.in_flight -= 1
                    if work.scratch.get("unfinished"):
                        # A stage cut this work short (a stop's grace ran out): not written, so the resume redoes it.
                        self.live.writing -= 1
                        self.cut_short = True
                        self.cut_at_grace += 1
                        continue
                    result = work.result
                    result.duration_s = round((work.ended or time.perf_counter()) - work.started, 6)
                    if type(result) is Finished:
                        batch.append(result)
                        continue
                    await self.record_finished(batch)
                    try:
                        written = self.journal.record(result)
                    except ValueError as exc:  # text JSON cannot carry (a lone surrogate), a value nested too deeply
                        result = _unencodable(result, exc, self._place(result.case_id))
                        written = self.journal.record(result)
                    if written:
                        self._after_write(result)
                    else:
                        self.live.writing -= 1
                await self.record_finished(batch)
        sink_done.set()

    async def record_finished(self, batch: list[Finished]) -> None:
        """Record `batch` (results rendered where they were scored, in arrival order), then empty it.

        In pieces that fill the writer's pending group up to `run.flush_every`, each recorded at once and
        flushed (its fsync off the event loop) when due: groups are what one `record` per result makes.
        """
        journal, at = self.journal, 0
        while at < len(batch):
            piece = batch[at:at + journal.room()]
            at += len(piece)
            try:
                due = journal.record_finished(piece)
            except ValueError:  # (nothing of the piece was recorded) text JSON cannot carry: each takes the general path
                for done in piece:
                    try:
                        journal.record(done)
                        result: Any = done
                    except ValueError as exc:
                        result = _unencodable(done, exc, self._place(done.case_id))  # type: ignore[arg-type]
                        journal.record(result)
                    self._after_write(result)
                continue
            if due:
                await journal.aflush()
            for done in piece:
                self._after_write(done)
        batch.clear()

    def _place(self, case_id: str) -> tuple[str, int] | None:
        # (file, line) of the record whose id is `case_id`: where the admission saw it first (None: not known).
        try:
            return self.admission.seen.where(key_hash(case_id))
        except (UnicodeError, ValueError):
            return None

    def _after_write(self, result: CaseResult | Finished) -> None:
        """What follows the writing of one new result: warnings for its timed-out metrics, the count, `on_result`."""
        timed_out = result.rendered.timed_out if type(result) is Finished else (
            k for k, s in result.scores.items() if s.value is None and s.reason.startswith("metric_timeout:"))
        for key in timed_out:
            log.warning("metric timed out; the case goes on without its score", metric=key, case_id=result.case_id,
                        trial=result.trial, limit_s=self.config.run.metric_timeout_s)
        self.new += 1
        self.live.writing -= 1  # (counted until written: a batch is written with awaits between its pieces)
        if self.on_result is not None:
            self.on_result(result)

    async def flusher(self, sink_done: anyio.Event) -> None:
        # Results that trickle in (a slow judge) still reach the disk within flush_seconds.
        while not sink_done.is_set():
            with anyio.move_on_after(0.1):
                await sink_done.wait()
            self.journal.tick()


def _case_id(item: Extracted) -> str:
    if item.rendered is not None:
        return item.rendered.id
    # (The id its result is filed under (`Admission.works`): the shard that writes it is the one its id assigns.)
    return filed_id(item.case.id if item.case is not None else item.error[0], f"{item.file}:{item.line}")  # type: ignore[index]
