"""Admission: which (case, trial) pairs an extracted record becomes, given what is already done.

The main process's half of extraction (the executor does the CPU half): an
unreadable record becomes one `invalid_input` result; a repeated case id
becomes an `invalid_input` result naming the first occurrence; otherwise one
`Work` per trial not yet finished, carrying the scores the executor computed.
State: the run's done set (`RunJournal.done`) and the ids seen so far.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from tracejudge.core.records import Case, CaseResult, ErrorInfo, Status
from tracejudge.core.work import Work
from tracejudge.engine.executors.base import Extracted
from tracejudge.engine.keyset import FirstSeen, KeySet, result_key, trial_key
from tracejudge.engine.rendered import Finished, Rendered

_BARE = Case(id="")

__all__ = ["Admission", "duplicate_error", "encodable", "safe_text"]


def encodable(text: str) -> bool:
    """True when `text` can be written as UTF-8 (no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def safe_text(text: str) -> str:
    """`text`, with lone surrogates escaped when it cannot be written as UTF-8."""
    return text if encodable(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


def duplicate_error(case_id: str, first: str, file: str, line: int, also: str | None = None) -> ErrorInfo:
    """The one `invalid_input` a repeated case id gets: both places named, plus its own fault if any."""
    msg = f"duplicate case id {case_id!r}: first at {first}, again at {file}:{line}"
    return ErrorInfo(kind="invalid_input", message=msg + (f"; this record is also invalid: {also}" if also else ""),
                     file=file, line=line, field="id")


@dataclass
class Admission:
    """Turns `Extracted` records into work; `skipped` counts pairs found already finished.

    `added` holds the keys of the made-up ids this segment put in `done` before their result was written.
    """

    done: KeySet
    is_done: Callable[[int], bool]
    seen: FirstSeen
    trials: int
    skipped: int = 0
    added: set[int] = field(default_factory=set)

    def works(self, item: Extracted, started: float) -> list[Work]:
        """The work `item` gives (possibly none: every trial already finished)."""
        if item.rendered is not None:
            return self._rendered(item, item.rendered, started)
        if item.case is not None and not encodable(item.case.id):
            item.error = (item.case.id, ErrorInfo(kind="invalid_input", message="the case id holds text that UTF-8 cannot encode (a lone surrogate)",
                                                  file=item.file, line=item.line, field="id"))
        if item.error is not None:  # the record could not be read
            cid, err = item.error
            cid = safe_text(cid)
            where = f"{item.file}:{item.line}"
            first = self.seen.claim(cid, item.file, item.line)
            if first != where:
                # Its id is taken (by a valid or an invalid record): one result under its own
                # key names both places, never a second `cid/0`.
                err = duplicate_error(cid, first, item.file, item.line, err.message)
                cid = f"{cid}@{where}"
            return self._once(cid, lambda: Work(Case(id=cid), 0, CaseResult(case_id=cid, status=Status.invalid_input, error=err), started))
        case = item.case
        assert case is not None
        where = f"{item.file}:{item.line}"
        first = self.seen.claim(case.id, item.file, item.line)
        if first != where:
            cid = f"{case.id}@{where}"
            err = duplicate_error(case.id, first, item.file, item.line)
            return self._once(cid, lambda: Work(case, 0, CaseResult(case_id=cid, status=Status.invalid_input, tags=case.tags, metadata=case.metadata,
                                                                    error=err), started))
        out: list[Work] = []
        for trial in range(self.trials):
            if self.is_done(result_key(case.id, trial)):
                self.skipped += 1
                continue
            result = CaseResult(case_id=case.id, trial=trial, tags=case.tags, metadata=case.metadata)
            if item.failure is not None:  # found after extraction, so it does not know the record's place: add it
                result.status, result.error = Status.invalid_input, item.failure.model_copy(update={"file": item.file, "line": item.line})
            elif item.scores is not None:
                result.scores.update(item.scores)
            out.append(Work(case, trial, result, started))
        return out

    def _rendered(self, item: Extracted, done: Rendered, started: float) -> list[Work]:
        # A case rendered where it was scored: one `Finished` per trial not yet finished, no model built.
        first = self.seen.claim_hash(done.id_hash, item.file, item.line)
        if first != f"{item.file}:{item.line}":  # a repeated id: the general path's duplicate result
            # (claiming again is harmless: the id keeps its first place)
            item.case, item.rendered = _BARE.model_copy(update={"id": done.id, "tags": done.tags, "metadata": done.metadata}), None
            return self.works(item, started)
        out: list[Work] = []
        for trial in range(self.trials):
            if self.is_done(trial_key(done.id_hash, trial)):
                self.skipped += 1
                continue
            out.append(Work(None, trial, Finished(done, trial), started))  # type: ignore[arg-type]
        return out

    def _once(self, cid: str, make: Callable[[], Work]) -> list[Work]:
        # A result under a made-up id (an unreadable record, a duplicate): written once across resumes.
        key = result_key(cid, 0)
        if self.is_done(key):
            self.skipped += 1
            return []
        self.done.add_hash(key)
        self.added.add(key)
        return [make()]
