"""`RUN_DIR/judge_spend.jsonl`: every judge attempt sent and what it was billed, a line each, written as it happens.

A result line carries what its scores cost, but a run killed (SIGKILL)
between a judge's answer and its case's result line loses that record while
the answer stays in the verdict cache: the resume redoes the case from the
cache for nothing, and money really paid would vanish from the summary. And
a request in flight at the kill was sent (a paid API bills it) but never
answered: nothing else records it at all.

So each attempt gets a line when it is sent, before the HTTP request goes out
(`SpendJournal.sent`: a request number and its prompt tokens as the client
estimated them, with their dollars at the model's price), and another when it
is settled (`SpendJournal.add`: the tokens and dollars billed, as ever, naming
the attempt it settles; a request that failed unanswered, a 5xx, is settled
at 0). Each line is flushed to the operating system, which keeps it through a
SIGKILL, before the request goes out or the answer is used. A resume takes
these totals (`spend_totals`) as the earlier segments' spending when they
exceed what the summary and the results show
(`tracejudge.engine.run_summary`): every attempt sent is a request, and one
never settled (in flight at a stop) counts its estimated prompt tokens and
their dollars, which the summary says are estimates (`in_flight_at_stop`).

A settle line of an answer (a verdict or a refusal the judge billed) says so (`"answered": true`), so a resume counts
the answers a killed segment got, whether or not their cases got a result line. A panel member's lines name it
(`"model": "provider:model"`, `SpendJournal.for_model`): the resume recounts each model's requests, answers, tokens
and dollars from them (`spend_by_model`), what a killed segment spent included, as it recounts the run's.

A line torn by the kill is skipped; the next segment starts its lines on a
line of their own. A journal written before attempts were journaled when sent
(lines of `input_tokens`, `output_tokens` and `cost_usd` only: one paid
attempt each) reads as it always did. Only counts are written: no prompt,
reply or key. A segment that sends nothing (a warm cache) writes nothing.

Dollars are written whole (the float the run added, in JSON's shortest exact form) and summed as the decimals written,
so a total rebuilt from the journal is the run's own to the value printed (6 places). Lines once rounded to 8 places
drifted by a millionth over a few hundred lines; journals written so still read.
"""

from __future__ import annotations

import contextvars
import json
import os
import threading
import zlib
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import IO, Any

from tracejudge.core.regular_file import open_regular

__all__ = ["SPEND", "MemberSpend", "SpendJournal", "spend_by_model", "spend_totals"]

SPEND = "judge_spend.jsonl"

# The attempt the current task sent last and has not settled yet: (its journal, its number). The attempt that sends a
# request settles it in the same task (`calls.sending.attempt`, through `calls.billing`), so the `add` that bills it
# finds it here without the number being handed through every caller.
_SENT: contextvars.ContextVar[tuple[SpendJournal, int] | None] = contextvars.ContextVar("spend_sent", default=None)


class SpendJournal:
    """Appends a line per judge attempt sent and a line per attempt settled to `run_dir/judge_spend.jsonl` (nothing
    without a run directory).

    Lines (JSON, one a line): `{"sent": n, "writer": w, "input_tokens_estimated": t, "cost_usd_estimated": c}` when
    attempt `n` is sent; `{"input_tokens": i, "output_tokens": o, "cost_usd": c, "settles": n, "writer": w}` when it is
    settled. `writer` is a random token of this journal object (a segment, a process), so that attempts of different
    segments, numbered alike, are never taken for one another. A billed answer not journaled when sent (a provider
    batch's) has a line without `settles`, as every line had before.

    Bookkeeping, not results: when the file cannot be written (disk full)
    the journal stops writing and the run goes on.
    """

    def __init__(self, run_dir: Path | None) -> None:
        self.path = run_dir / SPEND if run_dir is not None else None
        self._fh: IO[str] | None = None
        self._writer = ""
        self._serial = 0
        self._open: set[int] = set()  # attempts sent and not settled yet

    def sent(self, input_tokens_estimated: int, cost_usd_estimated: float, *, model: str | None = None) -> None:
        """Record one attempt about to be sent: its prompt tokens as the client estimated them and their dollars at the
        model's price (`model`: the panel member that sends it). The next `add` of the same task settles it."""
        if self.path is None:
            return
        self._serial += 1
        n = self._serial
        if self._write({"sent": n, "writer": self._writer or self._token(), "input_tokens_estimated": int(input_tokens_estimated),
                        "cost_usd_estimated": float(cost_usd_estimated), **_named(model)}):
            self._open.add(n)
            _SENT.set((self, n))

    def add(self, input_tokens: int, output_tokens: int, cost_usd: float, *, answered: bool = False, model: str | None = None) -> None:
        """Record one attempt billed: prompt and completion tokens, US dollars, and whether the judge `answered` it (a
        verdict or a refusal, not a request billed unanswered). It settles the attempt this task `sent` last, if any
        (written even when it billed nothing: a request refused or failed unanswered is settled unpaid); otherwise it is
        an answer billed without having been sent here (a batch's), written only when it billed tokens."""
        mark = {**({"answered": True} if answered else {}), **_named(model)}
        ticket = _SENT.get()
        if ticket is not None and ticket[0] is self:
            _SENT.set(None)
            n = ticket[1]
            if n in self._open:
                self._open.discard(n)
                self._write({"input_tokens": input_tokens, "output_tokens": output_tokens, "cost_usd": float(cost_usd),
                             "settles": n, "writer": self._writer, **mark})
                return
        if input_tokens + output_tokens <= 0:
            return
        self._write({"input_tokens": input_tokens, "output_tokens": output_tokens, "cost_usd": float(cost_usd), **mark})

    def for_model(self, model: str) -> MemberSpend:
        """This journal as panel member `model` writes to it: each of its lines names the model."""
        return MemberSpend(self, model)

    def close(self) -> None:
        """Settle unpaid the attempts sent and never settled (cut by a stop: the summary of a live segment counts them
        as requests, billing them nothing), then close the file (idempotent)."""
        for n in sorted(self._open):
            self._write({"input_tokens": 0, "output_tokens": 0, "cost_usd": 0, "settles": n, "writer": self._writer})
        self._open.clear()
        if self._fh is not None:
            try:
                self._fh.close()
            except OSError:
                pass
            self._fh = None

    def _token(self) -> str:
        self._writer = os.urandom(6).hex()
        return self._writer

    def _write(self, row: dict[str, Any]) -> bool:
        """Append `row` as a line and flush it; False (and no more writing) when the file cannot be written."""
        if self.path is None:
            return False
        try:
            if self._fh is None:
                self._fh = open(self.path, "a", encoding="utf-8")
                if self._fh.tell() > 0 and not _ends_a_line(self.path):
                    self._fh.write("\n")  # a line torn by a kill: this segment's first line is not glued to it
            self._fh.write(json.dumps(row) + "\n")
            self._fh.flush()
            return True
        except OSError:
            self.path = None
            return False


def _named(model: str | None) -> dict[str, str]:
    return {"model": model} if model else {}


class MemberSpend:
    """A panel member's view of the run's `SpendJournal`: its `sent` and `add` lines name the member (`model`)."""

    def __init__(self, journal: SpendJournal, model: str) -> None:
        self.journal = journal
        self.model = model

    @property
    def path(self) -> Path | None:
        return self.journal.path

    def sent(self, input_tokens_estimated: int, cost_usd_estimated: float) -> None:
        self.journal.sent(input_tokens_estimated, cost_usd_estimated, model=self.model)

    def add(self, input_tokens: int, output_tokens: int, cost_usd: float, *, answered: bool = False) -> None:
        self.journal.add(input_tokens, output_tokens, cost_usd, answered=answered, model=self.model)

    def close(self) -> None:
        self.journal.close()


def _ends_a_line(path: Path) -> bool:
    with open_regular(path) as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) == b"\n"


@dataclass
class _Sums:
    """One model's totals of a journal's lines (`_Tally.models`): attempts sent, answers, tokens and dollars billed."""

    requests: int = 0
    answered: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usd: Decimal = Decimal(0)

    def bill(self, input_tokens: int, output_tokens: int, usd: Decimal, answered: bool | None) -> None:
        """Count one settled (or paid) line: its tokens, its dollars, and an answer when it marks one."""
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.usd += usd
        self.answered += bool(answered)


@dataclass
class _Tally(_Sums):
    """The totals of a journal's lines read so far; `open`: the attempts sent and not settled, (writer, number) → their
    estimated (prompt tokens, dollars) and the model that sent them ("": not named); `answered`: the settle lines of
    answers; `models`: each named model's totals (its attempts in flight left out, as in `open`)."""

    open: dict[tuple[str, int], tuple[int, Decimal, str]] = field(default_factory=dict)
    models: dict[str, _Sums] = field(default_factory=dict)

    def copy(self) -> _Tally:
        return _Tally(self.requests, self.answered, self.input_tokens, self.output_tokens, self.usd, dict(self.open),
                      {m: _Sums(**vars(s)) for m, s in self.models.items()})

    def _model(self, name: str) -> _Sums | None:
        if not name:
            return None
        got = self.models.get(name)
        if got is None:
            got = self.models[name] = _Sums()
        return got

    def feed(self, line: bytes) -> None:
        try:
            row = _decoder().decode(line)
        except ValueError:  # (msgspec's DecodeError and ValidationError are ValueErrors)
            return  # torn by a kill, or not ours
        if row.sent is not None:
            tin, cost = row.input_tokens_estimated, row.cost_usd_estimated
            if row.writer is None or tin is None or tin < 0 or cost is None or not cost.is_finite():
                return
            self.open[(row.writer, row.sent)] = (tin, cost, row.model or "")
            self.requests += 1
            if (sums := self._model(row.model or "")) is not None:
                sums.requests += 1
            return
        tin, tout, cost = row.input_tokens, row.output_tokens, row.cost_usd
        if tin is None or tout is None or cost is None or not cost.is_finite():
            return
        sent = None if row.settles is None else self.open.pop((row.writer or "", row.settles), None)
        sums = self._model(sent[2] if sent is not None else row.model or "")
        if sent is None:
            self.requests += 1  # a paid line of the old format, a batch's, or one whose sent line was lost: one request
            if sums is not None:
                sums.requests += 1
        self.bill(tin, tout, cost, row.answered)
        if sums is not None:
            sums.bill(tin, tout, cost, row.answered)


_DECODER: Any = None


def _decoder() -> Any:
    """A msgspec decoder of one journal line (numbers of dollars read as the decimals written; a line of another shape, or
    a number where a count belongs, does not decode). msgspec: a journal of a long run reads in a fraction of the time."""
    global _DECODER
    if _DECODER is None:
        import msgspec

        class Line(msgspec.Struct):
            sent: int | None = None
            settles: int | None = None
            writer: str | None = None
            input_tokens_estimated: int | None = None
            cost_usd_estimated: Decimal | None = None
            input_tokens: int | None = None
            output_tokens: int | None = None
            cost_usd: Decimal | None = None
            answered: bool | None = None
            model: str | None = None

        _DECODER = msgspec.json.Decoder(Line)
    return _DECODER


# What `spend_totals` read of each journal: (device, inode, bytes read, their CRC-32, the totals of their lines). A
# journal is only appended to, so a second reading (a segment's end, after its start) parses only the lines added since,
# once the bytes read before are checked unchanged (reading and checking them costs a fraction of parsing them).
_READ: dict[str, tuple[int, int, int, int, _Tally]] = {}
_READ_LOCK = threading.Lock()
_READ_KEEP = 32


def _tally(path: Path) -> _Tally | None:
    """The totals of every line of the journal at `path` (`None` when it cannot be read)."""
    try:
        with open_regular(path) as fh:  # (a FIFO in its place is no journal: `report` waited on it for a writer)
            st = os.fstat(fh.fileno())
            with _READ_LOCK:
                seen = _READ.get(str(path))
            tally, done, crc = _Tally(), 0, 0
            if seen is not None and seen[:2] == (st.st_dev, st.st_ino) and st.st_size >= seen[2]:
                head = fh.read(seen[2])
                if len(head) == seen[2] and zlib.crc32(head) == seen[3]:
                    tally, done, crc = seen[4].copy(), seen[2], seen[3]
                else:
                    fh.seek(0)
            data = fh.read()
    except OSError:
        return None
    end = data.rfind(b"\n") + 1  # lines after it are not finished (torn by a kill, or being written now)
    for line in data[:end].split(b"\n"):
        if line.strip():
            tally.feed(line)
    with _READ_LOCK:
        _READ.pop(str(path), None)
        while len(_READ) >= _READ_KEEP:
            _READ.pop(next(iter(_READ)))
        _READ[str(path)] = (st.st_dev, st.st_ino, done + end, zlib.crc32(data[:end], crc), tally.copy())
    if data[end:].strip():
        tally.feed(data[end:])  # (a last line that reads is counted, as it always was; one torn is skipped)
    return tally


def spend_totals(run_dir: Path) -> dict[str, Any] | None:
    """`{requests, input_tokens, output_tokens, cost_usd, cost_usd_exact, in_flight_at_stop}` summed over the journal;
    `None` when there is none.

    `requests` counts every attempt sent (a paid line of the old format, one each). An attempt sent and never settled was
    in flight at a stop (a SIGKILL): it counts its estimated prompt tokens in `input_tokens` and their dollars in
    `cost_usd`, and `in_flight_at_stop` says how much of the totals that is: `{requests, input_tokens_estimated,
    cost_usd_estimated}` (all 0 when none was).

    `cost_usd` is rounded to 6 places, as the summary shows dollars; `cost_usd_exact` is the sum unrounded (each line's
    dollars are added as the decimals written, so the sum does not depend on the lines' order), for a resume to carry on
    from: adding up segments' rounded figures drifted from an unstopped run's total by up to a millionth a segment.
    """
    tally = _tally(run_dir / SPEND)
    if tally is None:
        return None
    flying = len(tally.open)
    guessed = sum(t for t, _, _ in tally.open.values())
    guessed_usd = sum((c for _, c, _ in tally.open.values()), Decimal(0))
    usd = tally.usd + guessed_usd
    return {"requests": tally.requests, "input_tokens": tally.input_tokens + guessed, "output_tokens": tally.output_tokens,
            "cost_usd": round(float(usd), 6), "cost_usd_exact": float(usd),
            "in_flight_at_stop": {"requests": flying, "input_tokens_estimated": guessed, "cost_usd_estimated": round(float(guessed_usd), 6)}}


def spend_by_model(run_dir: Path) -> dict[str, Any] | None:
    """`{answered, models: {model: {requests, answered, input_tokens, output_tokens, cost_usd_exact}}}` over the journal;
    `None` when there is none.

    `answered` counts the settle lines of answers (a line written before they were marked counts none); `models` sums
    the lines of each panel member (`SpendJournal.for_model`; a line naming no model is in none), an attempt in flight at
    a stop counting its estimated prompt tokens and their dollars, as `spend_totals` counts it. `cost_usd_exact` is the
    sum of the dollars written, unrounded (the journal counts an unpriced model's as 0: the judge's summary says unknown).
    """
    tally = _tally(run_dir / SPEND)
    if tally is None:
        return None
    models = {m: _Sums(**vars(s)) for m, s in tally.models.items()}
    for tin, cost, m in tally.open.values():
        if m:
            sums = models.setdefault(m, _Sums())
            sums.input_tokens += tin
            sums.usd += cost
    return {"answered": tally.answered,
            "models": {m: {"requests": s.requests, "answered": s.answered, "input_tokens": s.input_tokens, "output_tokens": s.output_tokens,
                           "cost_usd_exact": float(s.usd)} for m, s in sorted(models.items())}}
