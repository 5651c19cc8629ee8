"""Admission: which (case, trial) pairs an extracted record becomes, given what is already done.

The main process's half of extraction (the executor does the CPU half): an
unreadable record becomes one `invalid_input` result; a repeated case id
becomes an `invalid_input` result naming the first occurrence; otherwise one
`Work` per trial not yet finished, carrying the scores the executor computed.
State: the run's done set (`RunJournal.done`) and the ids seen so far.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tracejudge.core.records import Case, CaseResult, ErrorInfo, Status
from tracejudge.core.work import Work
from tracejudge.engine.executors.base import Extracted
from tracejudge.engine.keyset import FirstSeen, KeySet, result_key

__all__ = ["Admission", "encodable", "safe_text"]


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


@dataclass
class Admission:
    """Turns `Extracted` records into work; `skipped` counts pairs found already finished."""

    done: KeySet
    is_done: Callable[[int], bool]
    seen: FirstSeen
    trials: int
    skipped: int = 0

    def works(self, item: Extracted, started: float) -> list[Work]:
        """The work `item` gives (possibly none: every trial already finished)."""
        if item.case is not None and not encodable(item.case.id):
            item.error = (item.case.id, ErrorInfo(kind="invalid_input", message="the case id holds text that UTF-8 cannot encode (a lone surrogate)",
                                                  file=item.file, line=item.line, field="id"))
        if item.error is not None:  # the record could not be read
            cid, err = item.error
            cid = safe_text(cid)
            self.seen.claim(cid, item.file, item.line)
            return self._once(cid, lambda: Work(Case(id=cid), 0, CaseResult(case_id=cid, status=Status.invalid_input, error=err), started))
        case = item.case
        assert case is not None
        where = f"{item.file}:{item.line}"
        first = self.seen.claim(case.id, item.file, item.line)
        if first != where:
            cid = f"{case.id}@{where}"
            err = ErrorInfo(kind="invalid_input", message=f"duplicate case id {case.id!r} (first at {first})", file=item.file, line=item.line, field="id")
            return self._once(cid, lambda: Work(case, 0, CaseResult(case_id=cid, status=Status.invalid_input, tags=case.tags, metadata=case.metadata,
                                                                    error=err), started))
        out: list[Work] = []
        for trial in range(self.trials):
            if self.is_done(result_key(case.id, trial)):
                self.skipped += 1
                continue
            result = CaseResult(case_id=case.id, trial=trial, tags=case.tags, metadata=case.metadata)
            if item.failure is not None:
                result.status, result.error = Status.invalid_input, item.failure
            elif item.scores is not None:
                result.scores.update(item.scores)
            out.append(Work(case, trial, result, started))
        return out

    def _once(self, cid: str, make: Callable[[], Work]) -> list[Work]:
        # A result under a made-up id (an unreadable record, a duplicate): written once across resumes.
        key = result_key(cid, 0)
        if self.is_done(key):
            self.skipped += 1
            return []
        self.done.add_hash(key)
        return [make()]
