"""inspect-ai's built-in text scorers, under inspect's registry names: `includes`, `match`, `exact`, `f1`, `pattern`, `answer`.

Source: inspect-ai 0.3.285, `inspect_ai/scorer/_match.py` (`includes`, `match`), `_pattern.py` (`pattern`),
`_answer.py` (`answer`), `_classification.py` (`exact`, `f1`), `_common.py` (`str_match_scorer`, `match_str`) and
`_metric.py` (`value_to_float`); the text rules are ported in `tracejudge.stages.score.inspect_text`. A config
names them as inspect does, with inspect's parameters and defaults:

    metrics:
      - {type: match, numeric: true}
      - {type: includes, ignore_case: false}
      - {type: answer, pattern: letter}
      - {type: f1, threshold: 0.5}

What is compared. inspect's `state.output.completion` is the trace's final output (`trace.output`); inspect's
`target` is the case's `expected_output`, read as inspect's datasets read a target (`read_target`): a text, or a
list of texts of which any one will do (inspect's `Target` holds a list), a number or a bool as its `str()`
(`42` → `"42"`, `1.0` → `"1.0"`, `True` → `"True"`).

What counts. Each scorer gives inspect's verdict, C (correct) or I (incorrect), and the value is inspect's
`value_to_float` of it: C → 1.0, I → 0.0 (none of these scorers gives P or N in 0.3.285). `f1` gives its float,
rounded to 2 places as inspect rounds it. `passed` is `value >= threshold`; the default threshold 1.0 makes it C
for the five C/I scorers. inspect has no pass/fail for `f1` (its metric is `mean()`): here it passes at a perfect
1.0 unless `threshold` says otherwise. Over the cases scored, the summary's `mean` is inspect's `accuracy()` of the
C/I scorers and inspect's `mean()` of `f1`.

Reasons give the verdict letter, inspect's extracted answer (`Score.answer`), the target(s) compared and the
rule, so a user can recompute it; `details` holds `inspect_value` (`C`/`I`, or the f1 float), `answer` (its first
500 characters), and `inspect_reason` when inspect tags one (`no_response`: the output is empty or only
whitespace, whatever the verdict; `invalid_response_format`: the pattern did not match). Quoted texts are cut
and have credentials masked.

Differences from inspect, where tracejudge's records ask for one:

- a case without a trace, without a final output (`trace.output` null) or without an `expected_output` scores
  `value: null` with the reason, as `ExactMatch` does for a missing expectation; inspect scores an empty
  completion (an output recorded as `""` is scored here too) and a sample without target against `""`;
- an `expected_output` that is a mapping, or a list holding anything but texts, numbers and bools, scores null
  (inspect would compare against Python's `repr` of it);
- `f1`'s `answer_fn` (a Python callable) and `match_str`'s other switches cannot be written in a config and are
  not parameters; `f1` scores the whole output, as inspect does without `answer_fn`;
- `pattern` runs on Python's `re`, as inspect does (not on the `regex` library of `Regex`): it has no time limit
  of its own, and a pattern that backtracks for ever is cut by the run's `run.metric_timeout_s`;
- `choice` is not provided: it scores the choices that inspect's `multiple_choice` solver marked on the task state
  (`state.choices`, shuffling undone), which a trace does not hold; `{type: answer, pattern: letter}` scores a
  single-letter `ANSWER: B` against a letter target, as `choice` does for one correct choice.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any, ClassVar, Literal

from pydantic import PrivateAttr, field_validator
from pydantic_core import PydanticCustomError
from tracejudge.core.records import Case, Score
from tracejudge.core.registry import register_metric
from tracejudge.llm.redact import redact_quoted
from tracejudge.stages.score import inspect_text as text
from tracejudge.stages.score.base import Metric, no_expectation, no_trace

__all__ = ["InspectAnswer", "InspectExact", "InspectF1", "InspectIncludes", "InspectMatch", "InspectPattern", "InspectScorer",
           "targets_of"]

_SHOWN = 120  # characters of an output or a target a reason quotes


def _inspect_name(kind: str) -> Callable[[type[Metric]], type[Metric]]:
    """Register a metric class under inspect's scorer name: `__name__` becomes `kind` (the config `type` and the score's
    default key); `__qualname__` stays the Python name the registry's table gives (`module:InspectMatch`)."""

    def apply(cls: type[Metric]) -> type[Metric]:
        cls.__name__ = kind
        register_metric(cls)
        return cls

    return apply


def _q(s: str | None) -> str:
    return "None" if s is None else repr(redact_quoted(s, _SHOWN)[:_SHOWN])


def _listed(targets: list[str]) -> str:
    """Up to five targets, quoted, for a reason."""
    return ", ".join(_q(t) for t in targets[:5]) + (f", … ({len(targets)} in all)" if len(targets) > 5 else "") if targets else "(no target)"


def targets_of(expected: Any) -> list[str] | None:
    """inspect's `Target` of an `expected_output`, as `inspect_ai/dataset/_util.py` `read_target` reads a sample's target.

    A text is one target; a list gives one target an item (an empty list: no target, every scorer's I); a number or
    a bool is its `str()` (`42` → `"42"`, a NaN → `""`). None for what inspect would compare as Python's `repr`: a
    mapping, or a list holding a mapping, a list or None. (A missing `expected_output` never reaches here.)
    """
    if isinstance(expected, list):
        if not all(isinstance(t, (str, int, float)) for t in expected):  # (bool is an int)
            return None
        return [t if isinstance(t, str) else str(t) for t in expected]
    if isinstance(expected, str):
        return [expected]
    if isinstance(expected, float) and math.isnan(expected):
        return [""]
    return [str(expected)] if isinstance(expected, (int, float)) else None


# `defer_build` (inherited by each scorer): a scorer's validator is built when a config names it, not when another is.
class InspectScorer(Metric, defer_build=True):
    """What the inspect scorers share: the output and targets they read, the C/I value, `details`.

    Subclasses implement `decide(completion, targets) -> Score` (through `graded`); `evaluate` scores null a case
    without a trace, a final output or an `expected_output`, as the module docstring says.
    """

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        if case.expected_output is None:
            return no_expectation("expected_output")
        completion = case.trace.output
        if completion is None:
            return Score(value=None, passed=None, reason="not computed: the trace has no final output (trace.output)")
        targets = targets_of(case.expected_output)
        if targets is None:
            return Score(value=None, passed=None, reason=f"not computed: {type(self).__name__} needs expected_output as a text "
                                                         f"or a list of texts (inspect's target), got {type(case.expected_output).__name__}")
        return self.decide(completion, targets)

    def decide(self, completion: str, targets: list[str]) -> Score:  # pragma: no cover - abstract
        raise NotImplementedError

    def graded(self, correct: bool, reason: str, completion: str, answer: str | None, code: str | None = None) -> Score:
        """The score of inspect's verdict: C → 1.0, I → 0.0 (`value_to_float`), `passed` by the threshold.

        `reason` follows the verdict letter; `code` is inspect's `Score.reason` when the output is not empty
        (an empty or whitespace-only output is inspect's `no_response`, whatever the verdict).
        """
        letter = "C" if correct else "I"
        return self.verdict(1.0 if correct else 0.0, f"{letter}: {reason}", _details(letter, completion, answer, code))


def _details(value: str | float, completion: str, answer: str | None, code: str | None = None) -> dict[str, Any]:
    details: dict[str, Any] = {"inspect_value": value, "answer": None if answer is None else redact_quoted(answer, 500)[:500]}
    if not completion.strip():  # inspect's `no_response` (`_common.no_response`): the raw output, not the answer
        code = "no_response"
    if code is not None:
        details["inspect_reason"] = code
    return details


def _case(ignore_case: bool) -> str:
    return ", case ignored" if ignore_case else ", case kept"


@_inspect_name("includes")
class InspectIncludes(InspectScorer):
    """inspect's `includes()`: C when the output contains a target (any one of them), else I.

    With `ignore_case` (default true) both are case-folded (`str.casefold`: `ß` finds `SS`). Nothing else is
    normalised: whitespace and punctuation count. An empty target is in every output (C). `answer` is the output.
    """

    ignore_case: bool = True

    def decide(self, completion: str, targets: list[str]) -> Score:
        seen = completion.casefold() if self.ignore_case else completion
        hit = next((t for t in targets if (t.casefold() if self.ignore_case else t) in seen), None)
        rule = f"(inspect includes{_case(self.ignore_case)})"
        if hit is not None:
            return self.graded(True, f"the output contains {_q(hit)} {rule}", completion, seen)
        return self.graded(False, f"the output contains none of {_listed(targets)} {rule}", completion, seen if targets else None)


_WHERE = {"begin": "starts with", "end": "ends with", "any": "contains", "exact": "equals"}
_NUMBER_AT = {"begin": "the first number of the output", "end": "the last number of the output",
              "any": "a number of the output", "exact": "the output read as one number"}


@_inspect_name("match")
class InspectMatch(InspectScorer):
    """inspect's `match()`: C when the output starts with, ends with, contains or equals a target (`location`), else I.

    `location`: `begin`, `end` (default), `any` or `exact`. Both texts are stripped of whitespace, then of leading
    and trailing ASCII punctuation, and case-folded unless `ignore_case: false`; a target that is only punctuation
    becomes `""`, which every output starts with, ends with and contains. With `numeric: true`, a target that reads
    as a number once `$ £ € , * _` are removed (Unicode forms count: `−5`, `½`, `１２３`, `三`) is compared as a number:
    the output's first (`begin`), last (`end`), any (`any`) word that reads as a number, or the whole output
    (`exact`), must equal it to 5 significant digits, so `25` does not end with `5` and `2.0` is `2`; `60%` is no
    number (give `["60", "60%"]` to accept it). A target that reads as no number is compared as text, still less
    `$ £ € , * _` and any `.` not before a digit (inspect strips them first: `U.S.` is then `US`). `answer` is the
    stripped output (case kept), or the number compared as written to 5 digits (`""` when the output has none).
    """

    location: text.Location = "end"
    ignore_case: bool = True
    numeric: bool = False

    def decide(self, completion: str, targets: list[str]) -> Score:
        answer: str | None = None
        for target in targets:  # inspect's `str_match_scorer`: the first target matched wins
            answer, matched = text.match_str(completion, target, self.location, self.ignore_case, self.numeric)
            if matched:
                if self._as_number(target):
                    return self.graded(True, f"{_NUMBER_AT[self.location]}, {answer}, equals {_q(target)} {self._rule()}", completion, answer)
                return self.graded(True, f"the output {_WHERE[self.location]} {_q(target)} {self._rule()}", completion, answer)
        if not targets:
            return self.graded(False, f"expected_output lists no target {self._rule()}", completion, None)
        if not self._as_number(targets[-1]):  # (the answer inspect reports is that of the last target tried)
            why = f"the output {_WHERE[self.location]} none of {_listed(targets)}"
        elif self.location == "any" or not answer:
            why = f"no number of the output equals any of {_listed(targets)}" if self.location == "any" else \
                f"the output holds no number; targets {_listed(targets)}"
        else:
            why = f"{_NUMBER_AT[self.location]} is {_q(answer)}, none of {_listed(targets)}"
        return self.graded(False, f"{why} {self._rule()}", completion, answer)

    def _as_number(self, target: str) -> bool:
        return self.numeric and text.is_numeric_target(target, self.ignore_case)

    def _rule(self) -> str:
        numeric = ", numeric: numbers to 5 significant digits" if self.numeric else ""
        return f"(inspect match, location={self.location}{numeric}{_case(self.ignore_case)}, edge punctuation and whitespace stripped)"


@_inspect_name("exact")
class InspectExact(InspectScorer):
    """inspect's `exact()`: C when the output, normalised, equals a target normalised, else I.

    Normalised (inspect's `_normalize`): split at spaces and hyphens, case-folded, ASCII punctuation removed (a
    number keeps its decimal point: `(3.14)` is `3.14`, `3,000` is `3000`), each number written as a float (`3` →
    `3.0`), the articles a/an/the dropped, single spaces. Word order and repeats count (`hello hello` is not
    `hello`). A target with nothing left once normalised (`"the"`, `"-"`, `""`) never matches. `answer` is the output.
    """

    def decide(self, completion: str, targets: list[str]) -> Score:
        norm, hit = text.exact_hit(completion, targets)
        rule = "(inspect exact: case, punctuation, articles a/an/the and spacing ignored, numbers as floats)"
        if hit is not None:
            return self.graded(True, f"the output normalises to {_q(norm)}, as target {_q(hit)} does {rule}", completion, completion)
        return self.graded(False, f"the output normalises to {_q(norm)}; no target normalises to it: {_listed(targets)} {rule}",
                           completion, completion)


@_inspect_name("f1")
class InspectF1(InspectScorer):
    """inspect's `f1()`: the SQuAD F1 of the output's tokens against the best target's, rounded to 2 places.

    Tokens are those of `exact`'s normalisation (and not in `stop_words`, normalised the same way); precision =
    shared tokens (with repeats) / the output's tokens, recall = shared / the target's, F1 = 2PR / (P + R), 0 when
    nothing is shared. The best target counts; a target with no token left is skipped, and with none left the
    value is 0.0; an output with no token against a target with some scores 0.0. `passed`: F1 ≥ `threshold`,
    default 1.0 (inspect has no threshold for f1; its metric is the mean); note the value compared is the rounded
    one (0.995 → 1.0). `answer_fn` is not supported: the whole output is the answer.
    """

    default_threshold: ClassVar[float] = 1.0  # (inspect has none for f1: tracejudge's usual 1.0, said here to be seen)
    stop_words: tuple[str, ...] | None = None

    def decide(self, completion: str, targets: list[str]) -> Score:
        value, best = text.max_f1_score(completion, targets, self.stop_words)
        mine = text.word_counts(completion, self.stop_words)
        stops = f", stop words {list(self.stop_words)}" if self.stop_words else ""
        rule = f"(inspect f1: SQuAD F1 over normalised tokens, best target, rounded to 2 places{stops})"
        if best is None:
            why = "no target has a token once normalised" if not any(text.word_counts(t, self.stop_words) for t in targets) \
                else f"no target shares a token with the output ({sum(mine.values())} tokens)"
            reason = f"F1 0.0: {why}; targets {_listed(targets)} {rule}"
        else:
            theirs = text.word_counts(targets[best], self.stop_words)
            shared = sum((mine & theirs).values())
            reason = (f"F1 {value}: against target {_q(targets[best])}, {shared} shared of the output's {sum(mine.values())} tokens "
                      f"and the target's {sum(theirs.values())} {rule}")
        return self.verdict(value, reason, _details(value, completion, completion))


@lru_cache(maxsize=256)
def _compiled(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE if ignore_case else 0)


class _Extracting(InspectScorer):
    """inspect's `pattern` scorer, which `answer` is too: a regex extracts the answer from the output."""

    def extract(self, regex: str, what: str, label: str, completion: str, targets: list[str], ignore_case: bool, match_all: bool) -> Score:
        """inspect's `pattern(regex, ignore_case, match_all)` verdict on `completion`; `what` names the regex in reasons,
        `label` the scorer and its parameters."""
        rule = f"({label}{_case(ignore_case)})"
        found = _compiled(regex, ignore_case).search(completion)
        if not found:
            return self.graded(False, f"{what} does not match the output {rule}", completion, None, "invalid_response_format")
        groups = found.groups() or (found.group(0),)  # no group: the whole match is the answer
        shown = ", ".join(_q(g) for g in groups[:5]) + (", …" if len(groups) > 5 else "")
        if match_all:
            answer = text.match_all_groups(groups, targets, ignore_case)
            if answer:
                return self.graded(True, f"{what} captured {shown}, each one a target of {_listed(targets)} {rule}", completion, answer)
            why = "an empty target text is I" if answer == "" else "not each one a target"
            return self.graded(False, f"{what} captured {shown}: {why} of {_listed(targets)} {rule}", completion, answer)
        answer = text.match_first(groups, targets, ignore_case)
        if answer:
            return self.graded(True, f"{what} captured {_q(answer)}, which is a target of {_listed(targets)} {rule}", completion, answer)
        if answer == "":  # (inspect's `CORRECT if found_match else INCORRECT`: an empty capture equal to an empty target is I)
            return self.graded(False, f"{what} captured '', which an empty target equals, but an empty answer is I {rule}", completion, "")
        single = groups[0] if len(groups) == 1 else None  # (inspect reports a lone group's capture, else no answer)
        return self.graded(False, f"{what} captured {shown}, none of the targets {_listed(targets)} {rule}", completion, single)


@_inspect_name("pattern")
class InspectPattern(_Extracting):
    """inspect's `pattern()`: a regular expression extracts the answer from the output; C when it is a target.

    `pattern` is searched in the output (`re.search`, the first match; `re.IGNORECASE` with `ignore_case`, the
    default). Its groups are the answers (no group: the whole match). Without `match_all`: C when some captured
    group equals a target (`str.lower` on both with `ignore_case`); with `match_all: true`, every group that
    captured must equal a target, and one must have captured. No match: I (inspect's reason
    `invalid_response_format`). An empty capture equal to an empty target is I, as in inspect. A pattern
    `re` does not compile is refused when the config loads.
    """

    pattern: str
    ignore_case: bool = True
    match_all: bool = False
    # `pattern` and how reasons name it, a credential in it masked (`redact_quoted`): built once, when the metric is.
    _what: tuple[str, str] = PrivateAttr(default=("", ""))

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise PydanticCustomError("regex", "invalid regular expression: {error}", {"error": str(exc)}) from None
        return value

    def model_post_init(self, context: Any) -> None:
        self._what = _pattern_named(self.pattern)

    def decide(self, completion: str, targets: list[str]) -> Score:
        label = "inspect pattern, match_all" if self.match_all else "inspect pattern"
        pattern, what = self.pattern, self.__pydantic_private__["_what"]
        if what[0] is not pattern:  # (a copy given another pattern)
            what = _pattern_named(pattern)
        return self.extract(pattern, what[1], label, completion, targets, self.ignore_case, self.match_all)


def _pattern_named(pattern: str) -> tuple[str, str]:
    """`pattern` and how `pattern`'s reasons name it: its first 60 characters between slashes, a credential masked."""
    return pattern, f"/{redact_quoted(pattern, 60)[:60]}/"


@_inspect_name("answer")
class InspectAnswer(_Extracting):
    """inspect's `answer()`: the answer after the last `ANSWER:` of the output; C when it is a target (case ignored).

    `pattern` (required, as in inspect): `letter` takes one letter (`ANSWER: B`, then a non-word character or the
    end), `word` one word up to optional `.,;:!?` and the end of its line (`ANSWER: Yes then more` finds none),
    `line` the rest of the line after `ANSWER:` (or the next line), which must be the output's last but for blanks (spaces at
    its end are part of the answer: `Yes ` is not `Yes`). `letter` and `word` take the last `ANSWER:` of the
    output, `line` the first on the last line (`ANSWER: a ANSWER: b` gives `a ANSWER: b`). These are
    inspect's `AnswerPattern` regexes, scored as `pattern` scores them (`ignore_case`, not `match_all`). No
    `ANSWER:` of that form: I.
    """

    pattern: Literal["letter", "word", "line"]

    def decide(self, completion: str, targets: list[str]) -> Score:
        regex = text.ANSWER_PATTERNS[self.pattern]
        return self.extract(regex, f"the ANSWER: {self.pattern} pattern", f"inspect answer, pattern={self.pattern}", completion, targets,
                            True, False)
