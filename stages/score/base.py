"""What every deterministic metric shares: parameters, naming, threshold, call selection."""

from __future__ import annotations

import re
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from tracejudge.core.errors import ParameterError
from tracejudge.core.inert_text import INVISIBLE
from tracejudge.core.memo import Memo
from tracejudge.core.spec_messages import param_problems
from tracejudge.core.records import Case, Score, ToolCall
from tracejudge.engine.rendered import NOT_APPLICABLE
from tracejudge.stages.score.faults import FAILED, SCORE_TASK, bounded, details_fault, metric_fault  # noqa: F401  (re-exported)
from tracejudge.stages.score.views import CaseViews, case_views
from tracejudge.core.strict_numbers import NoBoolNumbers

__all__ = [
    "NOT_APPLICABLE_KEY",
    "InvalidSpec",
    "Metric",
    "ToolMetric",
    "call_steps",
    "expected_calls",
    "expected_names",
    "make_score",
    "no_expectation",
    "no_trace",
]

_new = object.__new__
_GIVEN = frozenset({"value", "passed", "reason", "details"})
_ALL = _GIVEN | {"judge"}
# The setters of the four slots every pydantic instance holds, called directly: `object.__setattr__` looks the name up
# on the type at every call, which cost about a third of a score. (Another pydantic's slots: `object.__setattr__` then.)
_SLOTS = ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
if set(BaseModel.__slots__) == set(_SLOTS):
    _dict, _fields_set, _extra, _private = (BaseModel.__dict__[slot].__set__ for slot in _SLOTS)
else:  # pragma: no cover - a pydantic whose instances hold other slots
    _dict, _fields_set, _extra, _private = (lambda o, v, n=n: object.__setattr__(o, n, v) for n in _SLOTS)  # type: ignore[misc]


def make_score(value: float | None, passed: bool | None, reason: str, details: dict[str, Any] | None = None,
               fields_set: frozenset[str] = _GIVEN) -> Score:
    """A `Score` from fields a metric built and knows valid, without pydantic's validation or `model_construct`.

    The instance is what `Score(value=…, passed=…, reason=…, details=…)` builds for such fields (a float
    or None `value`, a bool or None `passed`, a str `reason`, a dict or None `details`), with the same
    fields set (`fields_set`), at a tenth of the cost: with six metrics a case, building scores cost
    more than the cheaper metrics themselves. Nothing is checked: callers pass valid fields.
    """
    score = _new(Score)
    _dict(score, {"value": value, "passed": passed, "reason": reason, "details": details, "judge": None})
    _fields_set(score, set(fields_set))
    _extra(score, None)
    _private(score, None)
    return score


# What a metric's name may not hold (`Metric._usable_name`): what breaks a line or a table's column (line and paragraph
# separators, tabs). Other controls are shown inert wherever a name is printed (`inert_text`) and keep names apart
# (`m\x01`, `m\x02`), as they are in case ids: YAML takes them only escaped, so the config shows them too.
_UNPRINTED = re.compile("[\t\n\v\f\r\x1c-\x1e\x85\u2028\u2029]")


class Metric(NoBoolNumbers):
    """Base of all metrics: a parameter model plus `evaluate(case) -> Score`.

    `name` is the key the score is stored under (defaults to the type name);
    `threshold` turns a value into `passed` (`value >= threshold`).
    Subclasses implement `evaluate`; they never raise for a case they cannot
    score, they return `Score(value=None, reason=...)`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    default_threshold: ClassVar[float] = 1.0
    name: str | None = None
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)

    if not TYPE_CHECKING:  # (type checkers keep the parameters' own signature that pydantic gives each metric class)

        def __init__(self, /, **params: Any) -> None:
            """Validate `params`; a mistake raises `ParameterError` saying it in a config's words, never pydantic's raw
            `ValidationError` (`ToolCalls: argument: unknown parameter; did you mean arguments?`)."""
            try:
                super().__init__(**params)
            except ValidationError as exc:
                raise _parameter_error(type(self), exc) from None

        # It validates as pydantic's own does, so `model_validate` (a config's specs) need not call it: pydantic then
        # keeps its `ValidationError` there, which the config's own messages read, and no Python call is added.
        __init__.__pydantic_base_init__ = True

    @field_validator("name")
    @classmethod
    def _usable_name(cls, name: str | None) -> str | None:
        # The name is the score's key in results, summaries, reports and `assertions.metrics`: `*` there is the
        # wildcard for every metric, and a line break or tab would split a report's row or column.
        if name == "*":
            raise ValueError("'*' is the assertions' wildcard (assertions.metrics: {'*': …} applies to every metric): "
                             "give this metric another name")
        if name is not None and (bad := _UNPRINTED.search(name)) is not None:
            raise ValueError(f"a metric name is a key of results and report rows: it cannot hold a line break or tab "
                             f"({bad.group()!r} at character {bad.start() + 1} of {name!r})")
        # An invisible format character (a zero-width space, a BOM, a soft hyphen: `inert_text.INVISIBLE`) is written
        # as it is in a YAML file, unseen there, in results.jsonl and in a browser: `calls` and `ca\u200blls` are two
        # metrics that read alike, and a gate naming `calls` holds for the one it was not meant for.
        if name is not None and (bad := INVISIBLE.search(name)) is not None:
            seen = INVISIBLE.sub("", name).strip()
            raise ValueError(f"a metric name is a key of results and report rows: it cannot hold an invisible character "
                             f"(U+{ord(bad.group()):04X} at character {bad.start() + 1} of {name!r}"
                             f"{f'; did you mean {seen!r}?' if seen else ''})")
        # An empty name fell back to the type's unsaid; a blank one, or one with a space at an end, printed as no name
        # or as another metric's (`ToolCalls ` beside `ToolCalls`) in every table, and a gate had to repeat the space.
        if name == "":
            raise ValueError(f"an empty name is no name: drop the `name` key to name the metric after its type ({cls.__name__!r})")
        if name is not None and not name.strip():
            raise ValueError(f"a metric name is a key of results and report rows: it cannot be blank ({name!r})")
        if name is not None and name != name.strip():
            raise ValueError(f"a metric name is a key of results and report rows: it cannot start or end with whitespace "
                             f"({name!r}; did you mean {name.strip()!r}?)")
        return name

    @property
    def key(self) -> str:
        """The name results and summaries use for this metric."""
        return self.name or type(self).__name__

    @property
    def cutoff(self) -> float:
        """The threshold in force (`threshold` or the metric's default)."""
        return self.default_threshold if self.threshold is None else self.threshold

    def verdict(self, value: float, reason: str, details: dict[str, Any] | None = None) -> Score:
        """A `Score` with `value` as computed and `passed` = `value >= threshold`, as the peers decide it.

        The value is kept to the last bit (a peer's 0.2857142857142857 is that here, not 0.285714), and the threshold is
        compared with it exactly: deepeval's `score >= threshold` fails 0.49999999999999994 at 0.5, and so does this.
        """
        # The fields are built here and known valid; validation would cost more than most metrics' whole
        # computation. All five fields count as set, as `model_construct(…, judge=None)` set them.
        cutoff = self.default_threshold if self.threshold is None else self.threshold
        return make_score(value, value >= cutoff, reason, details, _ALL)

    def evaluate(self, case: Case) -> Score:  # pragma: no cover - abstract
        raise NotImplementedError


def _parameter_error(cls: type, exc: ValidationError) -> ParameterError:
    """The `ParameterError` of `cls`'s parameters that `exc` refused: one line a mistake, `Type: key: message`."""
    kind = cls.__name__
    lines = [f"{kind}: {'.'.join(map(str, loc)) or '(parameters)'}: {message}"
             for loc, message in param_problems(exc.errors(), "", cls)]
    return ParameterError("\n".join(lines))


class InvalidSpec(Metric, defer_build=True):  # (built when a case's spec first fails: not by every run's start-up)
    """Stands in for a case-level metric spec that did not validate.

    It scores `value: null` with `problem` (the spec's field and error) as
    the reason, so one bad spec costs that one metric of that case — its
    other metrics still score. Its key is the spec's `name`, else its
    `type`, else `metrics[i]`.
    """

    problem: str

    def evaluate(self, case: Case) -> Score:
        return Score(value=None, passed=None, reason=f"not computed: {self.problem}")


class ToolMetric(Metric):
    """A metric over tool calls, with the call filters every such metric takes.

    `include_tools` / `exclude_tools` are lists of name globs (`fnmatch`,
    case-sensitive) applied to both the expected and the actual calls: a
    call counts when it matches some include glob (or none is given) and no
    exclude glob. `include_failed` says whether failed calls (non-null
    `error`) count; each metric sets its own default.
    """

    include_tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] = ()
    include_failed: bool = False

    def wanted(self, name: str) -> bool:
        """Does a call of tool `name` pass the include/exclude filters?"""
        verdicts = _verdicts(self.include_tools, self.exclude_tools)
        ok = verdicts.get(name)
        return _decide(verdicts, self.include_tools, self.exclude_tools, name) if ok is None else ok

    def actual_calls(self, case: Case) -> list[tuple[int, ToolCall]]:
        """`(index in the trace's calls, call)` for every call that counts (a new list, the caller's to keep)."""
        return list(self.counted_calls(case))

    def counted_calls(self, case: Case, views: CaseViews | None = None) -> list[tuple[int, ToolCall]]:
        """`actual_calls`, shared with the case's other metrics that filter the same way: read it, never modify it.

        `views`: the case's `case_views(case)` when the caller has them already.
        """
        assert case.trace is not None
        p = self.__dict__  # (one attribute read, not three: each read on a pydantic model goes through its `__getattr__` hook)
        return (views or case_views(case)).selected((p["include_tools"], p["exclude_tools"], p["include_failed"]), self._keep)

    def counted_names(self, views: CaseViews) -> list[str]:
        """The tool names of `counted_calls`, in order, shared as it is: read it, never modify it."""
        p = self.__dict__  # (as in `counted_calls`)
        key = (p["include_tools"], p["exclude_tools"], p["include_failed"])
        got = views.names.get(key)
        if got is None:
            if key[0] is None and not key[1]:  # no name filter: the names straight from the calls, no pairs built
                got = [c.name for c in views.calls] if key[2] else [c.name for c in views.calls if c.error is None]
            else:
                got = [c.name for _, c in views.selected(key, self._keep)]
            views.names[key] = got
        return got

    def _keep(self, calls: list[ToolCall]) -> list[tuple[int, ToolCall]]:
        p = self.__dict__  # (as in `counted_calls`)
        include, exclude, failed_too = p["include_tools"], p["exclude_tools"], p["include_failed"]
        if include is None and not exclude:
            return list(enumerate(calls)) if failed_too else [(i, c) for i, c in enumerate(calls) if c.error is None]
        if failed_too:
            return _by_name(enumerate(calls), include, exclude)
        # `_by_name` of the calls that did not fail, in one pass.
        verdicts = _verdicts(include, exclude)
        get = verdicts.get
        out = []
        for i, c in enumerate(calls):
            if c.error is None:
                ok = get(c.name)
                if ok is None:
                    ok = _decide(verdicts, include, exclude, c.name)
                if ok:
                    out.append((i, c))
        return out


# Tool names repeat across thousands of traces: each filter's verdict on a name is computed once
# (a dict per filter, read without hashing the filter's globs again for every call).
# (`core.memo`: bounded, per process; a filter's table keeps up to 65,536 names.)
_VERDICTS: Memo[tuple[tuple[str, ...] | None, tuple[str, ...]], Memo[str, bool]] = Memo()


def _verdicts(include: tuple[str, ...] | None, exclude: tuple[str, ...]) -> Memo[str, bool]:
    got = _VERDICTS.get((include, exclude))
    if got is None:
        got = _VERDICTS.put((include, exclude), Memo(65536))
    return got


def _by_name(pairs: Iterable[tuple[int, Any]], include: tuple[str, ...] | None, exclude: tuple[str, ...]) -> list[tuple[int, Any]]:
    """The `(index, call)` pairs whose call's `name` passes the include/exclude filter."""
    verdicts = _verdicts(include, exclude)
    out = []
    for pair in pairs:
        name = pair[1].name
        ok = verdicts.get(name)
        if ok is None:
            ok = _decide(verdicts, include, exclude, name)
        if ok:
            out.append(pair)
    return out


def _decide(verdicts: Memo[str, bool], include: tuple[str, ...] | None, exclude: tuple[str, ...], name: str) -> bool:
    ok = (include is None or any(fnmatchcase(name, g) for g in include)) and not any(fnmatchcase(name, g) for g in exclude)
    return verdicts.put(name, ok)


def expected_calls(metric: ToolMetric, case: Case) -> list[tuple[int, Any]] | None:
    """`(index in the case's expected list, expected call)` passing the filters; `None` if no expectation."""
    expected = case.expected_tool_calls
    if expected is None:
        return None
    p = metric.__dict__  # (as in `ToolMetric.counted_calls`)
    include, exclude = p["include_tools"], p["exclude_tools"]
    if include is None and not exclude:
        return list(enumerate(expected))
    return _by_name(enumerate(expected), include, exclude)


# A case's metadata key listing the expectations its format leaves unstated on purpose, because upstream scores no such
# check for that case (`["expected_tool_calls"]`: a BFCL live_relevance question, checked by its own metric instead).
NOT_APPLICABLE_KEY = "not_applicable"


def no_expectation(what: str = "expected_tool_calls", case: Case | None = None) -> Score:
    """The score of a case that states no expectation for this metric: not computed, or, when the case's
    `metadata.not_applicable` lists `what` (`NOT_APPLICABLE_KEY`), a metric that does not apply to it
    (`rendered.NOT_APPLICABLE`), which the figures and the gate count with the results not carrying it, not as
    not computed."""
    skipped = case.metadata.get(NOT_APPLICABLE_KEY) if case is not None else None
    if isinstance(skipped, list) and what in skipped:
        return Score(value=None, passed=None, reason=f"{NOT_APPLICABLE}the case has no {what}: its format's upstream scores "
                                                     "no such check for it")
    return Score(value=None, passed=None, reason=f"not computed: the case has no {what}")


def no_trace() -> Score:
    """The score of a case that has no trace to look at (`value: null`).

    The score stage makes such a case `invalid_input` before any metric runs;
    pydantic-evals instead scores its evaluators False / 0.0 ("No span tree
    available"). README's migration notes list this difference.
    """
    return Score(value=None, passed=None, reason="not computed: the case has no trace")


def expected_names(metric: ToolMetric, case: Case, override: list[str] | None) -> list[str] | None:
    """Expected tool names: `override` (a metric parameter) when given, else the case's expected calls.

    Both pass the include/exclude filters; `None` when the case states no expectation.
    """
    if override is not None:
        return [n for n in override if metric.wanted(n)]
    if case.expected_tool_calls is None:
        return None
    if metric.include_tools is None and not metric.exclude_tools:
        return [e.name for e in case.expected_tool_calls]
    return [e.name for e in case.expected_tool_calls if metric.wanted(e.name)]


def call_steps(case: Case) -> list[int]:
    """For each tool call of the trace in order, the index of the step it belongs to (shared: never modify it)."""
    assert case.trace is not None
    return case_views(case).steps
