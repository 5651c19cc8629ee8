"""Admission: which (case, trial) pairs an extracted record becomes, given what is already done.

The main process's half of extraction (the executor does the CPU half): an
unreadable record becomes one `invalid_input` result; a repeated case id
becomes an `invalid_input` result naming the first occurrence; otherwise one
`Work` per trial not yet finished, carrying the scores the executor computed.
State: the run's done set (`RunJournal.done`) and the ids seen so far.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from tracejudge.core.records import UNTERMINATED_LINE, Case, CaseResult, ErrorInfo, Status, bare_case
from tracejudge.core.utf8 import encodable, filed_id, safe_text
from tracejudge.core.work import Work
from tracejudge.engine.executors.base import Extracted
from tracejudge.engine.keyset import FirstSeen, KeySet, key_hash, result_key, trial_key
from tracejudge.engine.rendered import Finished, Rendered
from tracejudge.engine.unwritable import ID_UNENCODABLE
from tracejudge.llm.redact import redact_quoted

__all__ = ["Admission", "duplicate_error", "encodable", "safe_text", "torn_standing"]


def duplicate_error(case_id: str, first: str, file: str, line: int, also: str | None = None, nth: int = 0) -> ErrorInfo:
    """The one `invalid_input` a repeated case id gets: both places named, plus its own fault if any.

    `nth`: this record's ordinal on its line when the first is on the same line (a compact JSON document).
    """
    # The id is quoted as every invalid_input message quotes a record's text: with credentials masked.
    msg = f"duplicate case id {redact_quoted(repr(case_id))}: first at {first}, again at {file}:{line}"
    if nth:
        msg += f" (record {nth} of that line)"
    return ErrorInfo(kind="invalid_input", message=msg + (f"; this record is also invalid: {also}" if also else ""),
                     file=file, line=line, field="id")


@dataclass
class Admission:
    """Turns `Extracted` records into work; `skipped` counts pairs found already finished.

    `added` holds the keys of the made-up ids this segment put in `done` before their result was written.
    `torn` maps the place `(file, line)` of an unterminated last line (`note_torn`) to the id peeked in it;
    `torn_before` the place of each standing provisional result of such a line (`torn_standing`) to its case id.
    """

    done: KeySet
    is_done: Callable[[int], bool]
    seen: FirstSeen
    trials: int
    skipped: int = 0
    added: set[int] = field(default_factory=set)
    torn: dict[tuple[str, int], str | None] = field(default_factory=dict)
    torn_before: dict[tuple[str, int], str] = field(default_factory=dict)
    # The place of the last record claimed, and the ids of the records claimed there: `seen` knows a place by its line,
    # and a compact JSON document holds several records a line, so a repeat there looks like the first (`_again`).
    _line: tuple[str, int] | None = None
    _line_first: int = 0
    _line_ids: set[int] | None = None
    _line_n: int = 0

    def note_torn(self, raw: Any, peek: Callable[[Any], str | None] | None) -> None:
        """Note `raw` (a `RawRecord` whose JSONL line has no newline: the file's last) as possibly still being written.

        If it cannot be read, its `invalid_input` is provisional (`UNTERMINATED_LINE`) and filed under
        the id peeked in it when there is one, so the result of the finished line, read by a resume,
        supersedes it (see `works`).
        """
        self.torn[(raw.file, raw.line)] = peek(raw.payload) if peek is not None and raw.error is None else None

    def works(self, item: Extracted, started: float, nth: int | None = None) -> Iterable[Work]:
        """The work `item` gives (possibly none: every trial already finished).

        The record's id is claimed now; its trials are made lazily, as the caller takes them. `nth`: what `_again`
        said of it when that was asked already.
        """
        if item.rendered is not None:
            return self._rendered(item, item.rendered, started)
        if item.case is not None and not encodable(item.case.id):
            item.error = (item.case.id, ErrorInfo(kind="invalid_input", message=ID_UNENCODABLE,
                                                  file=item.file, line=item.line, field="id"))
        if item.error is not None:  # the record could not be read
            cid, err = item.error
            place = (item.file, item.line)
            if self.torn and place in self.torn:
                cid, err = _torn(cid, err, self.torn.pop(place))
            elif self.torn_before and place in self.torn_before:
                cid = self.torn_before.pop(place)  # finished, yet unreadable: its result supersedes the provisional one
            where = f"{item.file}:{item.line}"
            cid = filed_id(cid, where)
            first = self.seen.claim(cid, item.file, item.line)
            if first != where:
                # Its id is taken (by a valid or an invalid record): one result under its own
                # key names both places, never a second `cid/0`.
                kind, err = err.kind, duplicate_error(cid, first, item.file, item.line, err.message)
                if kind == UNTERMINATED_LINE:
                    err.kind = kind  # still provisional: the finished line decides
                cid = f"{cid}@{where}"
            return self._once(cid, lambda: Work(bare_case().model_copy(update={"id": cid}), 0, CaseResult(case_id=cid, status=Status.invalid_input, error=err), started,
                                                ended=time.perf_counter()))
        case = item.case
        assert case is not None
        where = f"{item.file}:{item.line}"
        first = self.seen.claim(case.id, item.file, item.line)
        if first == where and nth is None:
            nth = self._again(key_hash(case.id), item.file, item.line)
        if first != where or nth:
            cid = f"{case.id}@{where}" + (f"#{nth}" if nth else "")
            err = duplicate_error(case.id, first, item.file, item.line, nth=nth or 0)
            return self._once(cid, lambda: Work(case, 0, CaseResult(case_id=cid, status=Status.invalid_input, tags=case.tags, metadata=case.metadata,
                                                                    error=err), started, ended=time.perf_counter()))
        return self._trials(case, item, started)

    def _trials(self, case: Case, item: Extracted, started: float) -> Iterator[Work]:
        # Made as they are taken: `run.trials` results of a case never sit in memory at once.
        for trial in range(self.trials):
            if self.is_done(result_key(case.id, trial)):
                self.skipped += 1
                continue
            result = CaseResult(case_id=case.id, trial=trial, tags=case.tags, metadata=case.metadata)
            if item.failure is not None:  # found after extraction, so it does not know the record's place: add it
                result.status, result.error = Status.invalid_input, item.failure.model_copy(update={"file": item.file, "line": item.line})
                yield Work(case, trial, result, started, ended=time.perf_counter())
                continue
            if item.scores is not None:
                result.scores.update(item.scores)
            yield Work(case, trial, result, started)

    def works_all(self, items: list[Extracted], started: float) -> list[Work]:
        """The works of all of `items`, in order: what `works` gives each of them, made at once. Only for `trials` 1,
        where that is one work a record at most (the works of a chunk of records, not `trials` times as many).

        The common item (rendered where it was scored, its id new, not finished) is decided here with local names.
        """
        assert self.trials == 1, "works_all makes a chunk's works at once: trials × a chunk would sit in memory"
        out: list[Work] = []
        claim_first, is_done, add = self.seen.claim_first, self.is_done, out.append
        for item in items:
            done = item.rendered
            if done is None:
                out.extend(self.works(item, started))
            elif not claim_first(done.id_hash, item.file, item.line):
                out.extend(self._duplicate(item, done, started))
            elif nth := self._again(done.id_hash, item.file, item.line):
                out.extend(self._duplicate(item, done, started, nth))
            elif is_done(done.id_hash):  # (trial 0's key is the id's hash, `trial_key`)
                self.skipped += 1
            else:
                add(Work(None, 0, Finished(done, 0), started))  # type: ignore[arg-type]
        return out

    def _rendered(self, item: Extracted, done: Rendered, started: float) -> Iterable[Work]:
        # A case rendered where it was scored: one `Finished` per trial not yet finished, no model built.
        if not self.seen.claim_first(done.id_hash, item.file, item.line):
            return self._duplicate(item, done, started)
        if nth := self._again(done.id_hash, item.file, item.line):
            return self._duplicate(item, done, started, nth)
        return self._finished_trials(done, started)

    def _duplicate(self, item: Extracted, done: Rendered, started: float, nth: int = 0) -> Iterable[Work]:
        # A rendered case whose id was seen before: the general path's duplicate result
        # (claiming again is harmless: the id keeps its first place).
        item.case, item.rendered = bare_case().model_copy(update={"id": done.id, "tags": done.tags, "metadata": done.metadata}), None
        return self.works(item, started, nth)

    def _again(self, id_hash: int, file: str, line: int) -> int:
        """0, or this record's ordinal on its line when a record claimed before it on the same line has its id.

        Asked once a record whose id `seen` places at its own line. Records come in file order, so those of one line
        come together: only the current line's ids are kept (a set once the line has a second record).
        """
        if self._line != (file, line):
            self._line, self._line_first, self._line_ids, self._line_n = (file, line), id_hash, None, 1
            return 0
        ids = self._line_ids
        if ids is None:
            ids = self._line_ids = {self._line_first}
        self._line_n += 1
        if id_hash in ids:
            return self._line_n
        ids.add(id_hash)
        return 0

    def _finished_trials(self, done: Rendered, started: float) -> Iterator[Work]:
        for trial in range(self.trials):
            if self.is_done(trial_key(done.id_hash, trial)):
                self.skipped += 1
                continue
            yield Work(None, trial, Finished(done, trial), started)  # type: ignore[arg-type]

    def _once(self, cid: str, make: Callable[[], Work]) -> list[Work]:
        # A result under a made-up id (an unreadable record, a duplicate): written once across resumes.
        key = result_key(cid, 0)
        if self.is_done(key):
            self.skipped += 1
            return []
        self.done.add_hash(key)
        self.added.add(key)
        return [make()]


def _torn(cid: str, err: ErrorInfo, peeked: str | None) -> tuple[str, ErrorInfo]:
    """The case id and error of an unreadable unterminated last line: provisional, under its peeked id if any.

    Filed under the place (`cid` as extraction gave it) when no id could be peeked: the finished line's
    result then does not supersede it (a writer that puts the id first avoids that).
    """
    why = (f"{err.message}; the file's last line has no newline (it may still be being written): "
           "this result is provisional and a resume reads the line again")
    return peeked or cid, err.model_copy(update={"kind": UNTERMINATED_LINE, "message": why})


def torn_standing(provisional: dict[int, str]) -> dict[tuple[str, int], str]:
    """`(file, line)` → case id of the standing provisional results of torn last lines.

    `provisional` is `RunJournal.provisional` (key → result line); only lines whose error
    kind is `UNTERMINATED_LINE` are parsed.
    """
    out: dict[tuple[str, int], str] = {}
    for line in provisional.values():
        if f'"kind":"{UNTERMINATED_LINE}"' not in line:
            continue
        result = json.loads(line)
        err = result.get("error") or {}
        if isinstance(err.get("file"), str) and isinstance(err.get("line"), int):
            out[(err["file"], err["line"])] = result["case_id"]
    return out
