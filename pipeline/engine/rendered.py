"""A scored case rendered where it was scored: its result line's body, its JUnit test cases, its figures.

When nothing runs after the executor (no live target, no judge), a case's
result is settled the moment its checks are: status `ok`, its tags, metadata
and scores. The executor then renders it once (`render`), in the worker that
scored it, into what the main process writes and folds:

- the middle of its `results.jsonl` line (`"tags":…,"metadata":…,"scores":…`,
  exactly as `CaseResult.model_dump_json` writes it: it is cut out of that);
- for each of the run's metrics, the end of its `<testcase>` in `junit.xml`
  (everything after the `time` attribute, as `stages.reports.junit` writes it);
- each score's value and verdict (`Cell`), which the aggregate folds;
- its id's `keyset.key_hash`.

The main process then only adds what it alone knows (the trial, the
duration) and writes: no pydantic model is pickled, validated or serialized
there per result (`Finished.line`). The text goes as UTF-8 bytes, the form the files take: sent as
`str`, each line and test case was decoded when the main process unpickled it and encoded again when it
wrote it (about 30 MB a 10,000 τ-bench cases, much of it not ASCII). A case whose result is anything else (an
unreadable record, a duplicate id, a failed check set-up, a metric that raised,
text JSON cannot carry) is not rendered and takes the general path, with the same outcome.
"""

from __future__ import annotations

import math
import re
from math import copysign as _copysign
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import pydantic_core
from pydantic import BaseModel
from tracejudge.core.inert_text import visible
from tracejudge.core.memo import Memo
from tracejudge.core.shown_calls import STEP_CALLS, capped_calls
from tracejudge.core.records import CaseResult, Score, Status
from tracejudge.engine.keyset import key_hash
from tracejudge.llm.redact import redact_labels

__all__ = ["METRIC_ERRORS", "NOT_APPLICABLE", "Cell", "Finished", "Rendered", "attr", "render", "testcase_end", "text"]

# XML 1.0 cannot carry most control characters, nor U+FFFE and U+FFFF, even escaped (its `Char` production);
# a parser refuses the whole file for one of them. (Lone surrogates cannot be written as UTF-8 at all.)
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# Characters that need escaping (or that XML cannot carry): most values (ids, keys, reasons) have none.
_SPECIAL = re.compile("[\x00-\x1f&<>\ufffe\uffff]")
# Each byte `_SPECIAL` can match (all but U+FFFE and U+FFFF are one byte in UTF-8) mapped to 0, every other to 1.
_SPECIAL_BYTES = bytes(0 if b < 0x20 or b in b"&<>" else 1 for b in range(256))
_NOT_COMPUTED = "metric not computed for this case"
# How the reason of a score whose metric raised (`stages.score`, a custom metric, a judge metric's plan) or was cut at
# `run.metric_timeout_s` (`stages.score.time_limit`) starts: not computed because of the metric, not of the case.
_RAISED = "metric raised "
# ... or returned what no score can be (`stages.score.base.FAILED`: a value of the wrong type, outside [0, 1], details
# JSON cannot carry): a bug in the metric too, counted with those that raised. (Returning None is not one.)
_FAILED = "metric failed: "
METRIC_ERRORS = (_RAISED, "metric_timeout:", _FAILED)
# How the reason of a score starts whose metric does not apply to the case (`stages.score.base.NOT_APPLICABLE`): counted
# with the results that do not carry a case-level metric, not as not computed. (A `Cell` has no reason to say it.)
NOT_APPLICABLE = "not applicable: "
_REFUSED = (_RAISED, _FAILED, NOT_APPLICABLE)
_OK = Status.ok


def _plain(s: str) -> bool:
    """True when `s` has no character `_SPECIAL` matches.

    The same answer as `_SPECIAL.search(s) is None`, at a fraction of its cost on long text (a reason
    runs to a thousand characters): every such character but U+FFFE and U+FFFF is one byte in UTF-8 and
    no other character's encoding holds one of those bytes, so one is there exactly when the bytes, each
    mapped to 0 if it is one of those and to 1 otherwise, hold a 0 (mapping them and looking for a 0
    costs about half of deleting them and comparing lengths).
    """
    if s.isascii():  # (a flag, read at once) its bytes are its characters, none of them U+FFFE or U+FFFF
        return 0 not in s.encode().translate(_SPECIAL_BYTES)
    b = s.encode("utf-8", "surrogatepass")  # (a lone surrogate encodes to bytes of 0x80 and above)
    # U+FFFE and U+FFFF are three bytes each: looked for as characters (a substring search costs little).
    return 0 not in b.translate(_SPECIAL_BYTES) and "\ufffe" not in s and "\uffff" not in s


def attr(s: Any) -> str:
    """`s` as a quoted XML attribute value, as `xml.sax.saxutils.quoteattr` writes it (illegal characters dropped)."""
    s = str(s)
    if _plain(s):  # the common case, as `quoteattr` would write it without its chain of replaces
        if '"' not in s:
            return f'"{s}"'
        if "'" not in s:
            return f"'{s}'"
        return '"' + s.replace('"', "&quot;") + '"'  # both quotes (most reasons): what quoteattr writes then
    from xml.sax.saxutils import quoteattr  # here: it imports urllib.request, http.client and ssl, which a run needs not

    return quoteattr(_ILLEGAL.sub("", s))


def text(s: str) -> str:
    """`s` escaped as XML character data (as `attr`, without the quotes)."""
    return attr(s)[1:-1]


_FLOAT_TEXTS: Memo[float, str] = Memo()  # a float's `str` by value (`core.memo`: bounded, per process)


def _float_text(v: float) -> str:
    """`str(v)` of a float, kept for the next equal one: not for 0.0 or -0.0, equal with different texts, nor NaN."""
    shown = str(v)
    return _FLOAT_TEXTS.put(v, shown) if v and v == v else shown


def _inert(reason: Any) -> Any:
    """A reason as `report.md` shows it (`inert_text.visible`: control and invisible characters as `\\xNN` /
    `\\u{NNNN}`); the same object when `visible` would change nothing (most reasons: told by one scan)."""
    if type(reason) is not str:
        return reason
    # (a fanned-out step's list of 5,000 names is cut as report.md cuts it: a CI page of one case was 85 KB)
    return visible(capped_calls(reason) if len(reason) > _CAP_FROM else reason)


# No list of more than `STEP_CALLS` names fits in as few characters (`'', ` each at least): shorter reasons are not scanned.
_CAP_FROM = 4 * STEP_CALLS


def testcase_end(value: Any, passed: Any, reason: Any, computed: bool = True) -> str:
    """The end of one metric's `<testcase>` (after its `time` attribute) for a result that counts the score.

    `computed` False: the result has no score for the metric at all. A `value`
    of None is a score that could not be computed (`<skipped>`, of `type="metric_error"` when its metric raised or
    timed out: `METRIC_ERRORS`; the gate's `max_metric_error_share` decides whether that fails the run); anything else
    passes, its value and reason in `<system-out>`, which starts with `below
    threshold:` when `passed` is False. A case below its metric's threshold does
    not fail the run (the gate decides, from the figures over all cases), so it
    is no `<failure>`: CI would show a passing run red (`stages.reports.junit`). The reason is shown as `report.md` shows
    it (`_inert`): a bidirectional override, a zero-width space or a tag character quoted from a trace is written as
    `\\u{NNNN}`, never acted on or hidden on a CI page.
    """
    reason = _inert(reason)
    if not computed or value is None:
        if computed and type(reason) is str and reason.startswith(METRIC_ERRORS):
            return f'>\n      <skipped type="metric_error" message={attr(reason)}/>\n    </testcase>\n'
        return f'>\n      <skipped message={attr(reason if computed else _NOT_COMPUTED)}/>\n    </testcase>\n'
    if type(value) is float and type(reason) is str and _plain(reason):
        # A float's text is digits, a point, a sign, `e`, `inf` or `nan`: nothing to escape and no quote, so the reason
        # alone decides the escaping and the line is built at once (not `value …: …` first, then copied into it).
        if '"' in reason and "'" in reason:
            reason = reason.replace('"', "&quot;")
        # (A value recurs from case to case, and a float's text cost more than the rest of the line: kept, `_float_text`.)
        shown = _FLOAT_TEXTS.get(value) or _float_text(value)
        if passed is False:
            return f">\n      <system-out>below threshold: value {shown}: {reason}</system-out>\n    </testcase>\n"
        return f">\n      <system-out>value {shown}: {reason}</system-out>\n    </testcase>\n"
    s = f"value {value}: {reason}"
    # Escaped as `text` escapes it (the attribute without its quotes); the common cases without
    # building the quoted attribute and slicing it again.
    if not _plain(s):
        s = attr(s)[1:-1]
    elif '"' in s and "'" in s:
        s = s.replace('"', "&quot;")
    if passed is False:
        return f">\n      <system-out>below threshold: {s}</system-out>\n    </testcase>\n"
    return f">\n      <system-out>{s}</system-out>\n    </testcase>\n"


class Cell(NamedTuple):
    """One score as the aggregate folds it: `value` (None: not computed) and `passed`."""

    value: float | None
    passed: bool | None


@dataclass(slots=True)
class Rendered:
    """One scored case, rendered (see the module docstring). Small and made of builtins: cheap to pickle."""

    id: str
    id_json: bytes  # (the text fields as UTF-8, as the files take them: see the module docstring)
    id_hash: int
    tags: list[str]
    metadata: dict[str, Any]
    middle: bytes
    cells: dict[str, Cell]
    junit: tuple[bytes, ...]
    timed_out: tuple[str, ...]


# `Cell(value, passed)` without the Python-level `__new__` a NamedTuple has: six a case cost more than the rest of the loop.
_cell = partial(tuple.__new__, Cell)
_HEAD = b'{"case_id":"","trial":0,"status":"ok",'
_TAIL = b',"error":null,"duration_s":0.0}'


_STR = frozenset({str})
_SCORE = frozenset({Score})
_NOT_COMPUTED_END = testcase_end(None, None, "", computed=False).encode()  # a metric the result has no score for
_new = object.__new__


def _slot_setter(slot: str) -> Any:
    """The setter of one of the slots a pydantic instance holds, called directly (as `stages.score.base.make_score`
    sets a score's): `object.__setattr__` checks the type's whole hierarchy at every call. (`object.__setattr__` for a
    pydantic whose instances hold other slots.)"""
    got = BaseModel.__dict__.get(slot) if slot in getattr(BaseModel, "__slots__", ()) else None
    return got.__set__ if hasattr(got, "__set__") else partial(_setattr_of, slot)


def _setattr_of(slot: str, obj: Any, value: Any) -> None:
    object.__setattr__(obj, slot, value)


_dict, _fields_set, _extra, _private = map(_slot_setter, ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__",
                                                          "__pydantic_private__"))
_to_json = CaseResult.__pydantic_serializer__.to_json

_SHORT = 80  # reasons up to this long have their JUnit end kept (`_ENDS`), by (reason, passed, value)
_ENDS: Memo[tuple[str, Any, float], bytes] = Memo()  # (`core.memo`: bounded, per process)


def _ends(key: tuple[str, Any, float], v: float, passed: Any, reason: str) -> bytes:
    return _ENDS.put(key, testcase_end(v, passed, reason).encode())


def _body(tags: Any, metadata: Any, scores: dict[str, Any]) -> bytes:
    """`CaseResult(case_id="", tags=…, metadata=…, scores=…).model_dump_json()`, encoded; raises `ValueError` as that does.

    Fields that validation would pass unchanged (a list of str, a dict with str keys, `Score`
    instances) are set without it, as `make_score` builds scores: validating them again cost as
    much as serializing them. Anything else (a custom adapter's unvalidated case, a custom metric's
    look-alike score) is validated, with validation's outcome.
    """
    # (The types gathered in C: a comprehension a test cost a function call of its own.)
    if (type(tags) is list and type(metadata) is dict and {*map(type, tags)} <= _STR
            and {*map(type, metadata)} <= _STR and {*map(type, scores.values())} <= _SCORE):
        result = _new(CaseResult)
        _dict(result, {"case_id": "", "trial": 0, "status": _OK, "tags": tags, "metadata": metadata, "scores": scores,
                       "error": None, "duration_s": 0.0})
        _fields_set(result, {"case_id", "tags", "metadata", "scores"})
        _extra(result, None)
        _private(result, None)
        return _to_json(result)
    return CaseResult(case_id="", tags=tags, metadata=metadata, scores=scores).model_dump_json().encode()


def render(case: Any, scores: dict[str, Score], junit_keys: list[str], refuse: str | None = None) -> Rendered | None:
    """`case` (id, tags, metadata) with its `scores`, rendered; None when JSON cannot carry its text (a lone surrogate).

    `junit_keys` are the run's metric keys in report order: one `testcase_end` each. `refuse`: None too
    when a score not computed has a reason starting with it (read here, where each reason is read anyway). None
    too when a metric raised or failed (`metric raised …`, `metric failed: …`) or does not apply (`NOT_APPLICABLE`): the
    general path's result keeps the reason the aggregate counts (`MetricStats.raised`, `not_applicable`); a metric
    that timed out is named in `timed_out` instead.
    """
    tags, metadata = redact_labels(case.tags, case.metadata)  # (as `RunJournal.record` masks a result's)
    try:
        body = _body(tags, metadata, scores)
        id_json = pydantic_core.to_json(case.id)
    except (ValueError, UnicodeError):
        return None
    if not (body.startswith(_HEAD) and body.endswith(_TAIL)):  # (a model whose layout changed: take the general path)
        return None
    cells = {}
    timed_out = []
    ends = {}
    # One pass over the scores, each field read once (a read on a pydantic model costs more than the test after it: a
    # `Score`'s are read from its `__dict__`, one attribute read instead of three).
    for k, s in scores.items():
        if type(s) is Score:
            d = s.__dict__
            v, passed, reason = d["value"], d["passed"], d["reason"]
        else:
            v, passed, reason = s.value, s.passed, s.reason
        cells[k] = _cell((v, passed))
        if v is None:
            if (refuse is not None and reason.startswith(refuse)) or reason.startswith(_REFUSED):
                return None
            if reason.startswith("metric_timeout:"):
                timed_out.append(k)
            ends[k] = testcase_end(v, passed, reason).encode()
        elif type(v) is float and type(reason) is str and len(reason) <= _SHORT and (v or _copysign(1.0, v) > 0):
            # A short reason recurs from case to case (a budget's count, an output's verdict): its end is written once.
            # (A finite float's key: equal floats have one text, but for 0.0 and -0.0, and -0.0 is not kept.)
            key = (reason, passed, v)
            end = _ENDS.get(key)
            if end is None:
                end = _ends(key, v, passed, reason) if math.isfinite(v) else testcase_end(None, passed, reason).encode()
            ends[k] = end
        else:
            ends[k] = testcase_end(v if math.isfinite(v) else None, passed, reason).encode()
    junit = tuple([ends[k] if k in ends else _NOT_COMPUTED_END for k in junit_keys])
    return Rendered(case.id, id_json, key_hash(case.id), tags, metadata, body[len(_HEAD):-len(_TAIL)],
                    cells, junit, tuple(timed_out))


class Finished:
    """The result of one trial of a `Rendered` case: what the main process writes, folds and reports.

    Reads like a `CaseResult` where the aggregate, the reports and the
    progress display look (`case_id`, `trial`, `status`, `tags`, `metadata`,
    `scores` — `Cell`s —, `duration_s`, `error`).
    """

    __slots__ = ("case_id", "duration_s", "metadata", "rendered", "scores", "tags", "trial")
    status = _OK
    error = None

    def __init__(self, rendered: Rendered, trial: int) -> None:
        self.rendered = rendered
        self.case_id = rendered.id
        self.trial = trial
        self.tags = rendered.tags
        self.metadata = rendered.metadata
        self.scores = rendered.cells
        self.duration_s = 0.0

    def line(self) -> bytes:
        """The `results.jsonl` line (no newline), encoded: what `CaseResult.model_dump_json` writes for this result."""
        r = self.rendered
        return b'{"case_id":%b,"trial":%d,"status":"ok",%b,"error":null,"duration_s":%b}' % (
            r.id_json, self.trial, r.middle, pydantic_core.to_json(self.duration_s))

    def result(self) -> CaseResult:
        """The `CaseResult` this stands for (parsed from its line: for the rare reader that needs the model)."""
        return CaseResult.model_validate_json(self.line())
