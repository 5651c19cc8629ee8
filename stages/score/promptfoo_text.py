"""promptfoo's deterministic assertions on the final output, under promptfoo's own names: `contains`, `icontains`,
`contains-any`, `icontains-any`, `contains-all`, `icontains-all`, `equals`, `starts-with`, `levenshtein`, and each
one's `not-` inverse (`regex` and `is-json` are in `tracejudge.stages.score.promptfoo_format`).

Source: promptfoo `src/assertions/contains.ts`, `equals.ts`, `startsWith.ts`, `levenshtein.ts`, the `not-`
prefix of `src/assertions/index.ts` (`isAssertionInverse`) and `src/util/parseCommaSeparatedValues.ts`. A config
names them as promptfoo does:

    metrics:
      - {type: icontains, value: "order shipped"}
      - {type: not-contains-any, value: ["I cannot", "As an AI"]}
      - {type: levenshtein, value: "Your order ships today.", threshold: 3}

The output is the trace's final output (`Trace.output`, a missing one the empty text), the text promptfoo's
`outputString` is for a text output. Each scores 1.0 or 0.0 and passes exactly when promptfoo passes it, with
promptfoo's reason word for word ("Assertion passed", `Expected output to contain "x"`); the score key is the type
unless `name` is given (promptfoo's `metric`). Case folding is JavaScript's `toLowerCase`, which Python's `lower`
agrees with character for character, final sigma included, except for the 55 letters Unicode added after Python
3.11's Unicode 14. A value promptfoo throws on when it grades (an empty value, a value of the wrong type, a
malformed comma-separated list) is a config error naming the field, in promptfoo's words; so is `threshold`, which
these ignore (except `levenshtein`, whose `threshold` is the largest distance that passes). Values are taken as
written: promptfoo renders a string value with the test's variables (Nunjucks) and reads `file://` values.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import Field, field_serializer, field_validator
from pydantic_core import PydanticCustomError
from tracejudge.core.records import Case, Score
from tracejudge.core.strict_numbers import refuse_non_finite
from tracejudge.llm.redact import redact_quoted
from tracejudge.stages.score.base import Metric, make_score, no_trace
from tracejudge.stages.score.promptfoo_js import levenshtein, parse_comma_separated
from tracejudge.stages.score.promptfoo_steps import _js_json, _js_string, js_equal, js_number
from tracejudge.stages.score.promptfoo_trajectory import _promptfoo_type
from tracejudge.stages.score.promptfoo_values import PromptfooSpec

__all__ = [
    "Contains", "ContainsAll", "ContainsAny", "Equals", "IContains", "IContainsAll", "IContainsAny", "Levenshtein",
    "NotContains", "NotContainsAll", "NotContainsAny", "NotEquals", "NotIContains", "NotIContainsAll", "NotIContainsAny",
    "NotLevenshtein", "NotStartsWith", "PromptfooOutputAssertion", "StartsWith",
]


class _Absent:
    """`value` not given (promptfoo's `undefined`), which promptfoo refuses where `null` may mean something else."""

    def __repr__(self) -> str:
        return "(none)"


ABSENT: Any = _Absent()


def _refuse(message: str) -> PydanticCustomError:
    return PydanticCustomError("promptfoo_value", "{message}", {"message": message})


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class PromptfooOutputAssertion(PromptfooSpec, Metric):
    """Base of promptfoo's output assertions: `value` as written, read when the config loads by the class's `parse`.

    Subclasses set `assertion` (promptfoo's base type), `inverse` (the `not-` form) and `parse`, and implement
    `check(output) -> (passed, reason)` with promptfoo's pass (the inverse applied) and reason. `evaluate` scores
    1.0/0.0, or `value: null` for a case without a trace.
    """

    assertion: ClassVar[str] = ""
    inverse: ClassVar[bool] = False
    refused_options: ClassVar[tuple[str, ...]] = ("threshold",)
    value: Any = Field(default=ABSENT, validate_default=True)

    @field_validator("threshold", mode="before", check_fields=False)
    @classmethod
    def _no_threshold(cls, value: Any) -> Any:
        if value is not None:
            raise PydanticCustomError("promptfoo_threshold", "promptfoo's {kind} passes or fails on its own rule and "
                                      "ignores threshold (the score is 1 when it passes, else 0)", {"kind": cls.assertion})
        return value

    @field_serializer("value")
    def _dumped_value(self, value: Any) -> Any:
        # A value left out (allowed where promptfoo takes none: `is-json` without a schema) is written as null, which
        # means the same there: a run's manifest and its config hash dump every metric's parameters.
        return None if value is ABSENT else value

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        passed, reason = self.check(case.trace.output or "")
        return make_score(1.0 if passed else 0.0, passed, reason, {"inverse": self.inverse})

    def check(self, output: str) -> tuple[bool, str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _not(self) -> str:
        return "not " if self.inverse else ""

    def _text(self, item: Any) -> str:
        """An expected item as promptfoo compares it: `String(item)`, `toLowerCase`d by the `i…` forms."""
        text = _js_string(item)
        return text.lower() if getattr(self, "folded", False) else text


def _shown(text: str) -> str:
    """A text a reason quotes, a credential in it masked (a configured value is no less a secret than an output)."""
    return redact_quoted(text)


def _folded(base: type[PromptfooOutputAssertion], kind: str, handler: str,
            parser: Callable[[str], Callable[[Any], Any]]) -> type[PromptfooOutputAssertion]:
    """The case-ignoring `i…` form of `base` (both sides `toLowerCase`d), registered as `kind`."""
    cls = type(f"I{base.__qualname__}", (base,), {
        "__doc__": f"promptfoo's `{kind}` (`{handler}`): `{base.assertion}` ignoring case (both sides `toLowerCase`d).",
        "__module__": __name__, "__qualname__": f"I{base.__qualname__}", "assertion": kind,
        "parse": staticmethod(parser(kind)), "folded": True})
    return _promptfoo_type(kind)(cls)  # type: ignore[return-value]


# --- contains, icontains ---------------------------------------------------------------------------------------------


def _one_text(kind: str) -> Callable[[Any], str]:
    def parse(value: Any) -> str:
        # promptfoo's `isContainsValue`: a non-empty string or a number that is not NaN, read with `String`.
        if isinstance(value, str) and value != "" or _is_number(value) and not (isinstance(value, float) and math.isnan(value)):
            return _js_string(value)
        raise _refuse(f'"{kind}" assertion type must have a string or number value')

    return parse


@_promptfoo_type("contains")
class Contains(PromptfooOutputAssertion):
    """promptfoo's `contains` (`handleContains`): the output contains `value` (a text or a number), case counting.

    Example: `value: shipped` on "Your order shipped." passes; on "SHIPPED" it fails with `Expected output to contain
    "shipped"`. `not-contains` passes when the text is absent.
    """

    assertion: ClassVar[str] = "contains"
    parse: ClassVar[Callable[[Any], Any]] = staticmethod(_one_text("contains"))
    folded: ClassVar[bool] = False

    def check(self, output: str) -> tuple[bool, str]:
        text = type(self).parse(self.value)
        found = text.lower() in output.lower() if self.folded else text in output
        passed = found != self.inverse
        return passed, "Assertion passed" if passed else f'Expected output to {self._not()}contain "{_shown(text)}"'


IContains = _folded(Contains, "icontains", "handleIContains", _one_text)


# --- contains-any, contains-all and their icontains forms ------------------------------------------------------------


def _many_texts(kind: str) -> Callable[[Any], list[Any]]:
    def parse(value: Any) -> list[Any]:
        # promptfoo: `invariant(value)` (any falsy value is refused), a string is split as comma-separated values,
        # then the value must be an array; each item is compared as `String(item)`.
        if value is ABSENT or value is None or value is False or value == "" or (_is_number(value) and (value == 0 or value != value)):
            raise _refuse(f'"{kind}" assertion type must have a value')
        if isinstance(value, str):
            try:
                return list(parse_comma_separated(value))
            except ValueError as exc:
                raise _refuse(str(exc)) from None
        if not isinstance(value, list):
            raise _refuse(f'"{kind}" assertion type must have an array value')
        if any(isinstance(v, (dict, list)) for v in value):  # (`String` makes "[object Object]" or "a,b" of it)
            raise _refuse("each item is a text or a number, not an object or a list")
        return value

    return parse


def _join(items: list[Any]) -> str:
    # JavaScript's `Array.prototype.join(', ')`: null is written as nothing, not as "null".
    return ", ".join("" if v is None else _js_string(v) for v in items)


@_promptfoo_type("contains-any")
class ContainsAny(PromptfooOutputAssertion):
    """promptfoo's `contains-any` (`handleContainsAny`): the output contains at least one of the texts.

    `value`: a list, or one comma-separated string (`"a, b"`; a field in double quotes keeps its commas:
    `'"hello, world", bye'`). Example: `[shipped, delivered]` on "It shipped" passes. `not-contains-any` passes when
    none is found.
    """

    assertion: ClassVar[str] = "contains-any"
    parse: ClassVar[Callable[[Any], Any]] = staticmethod(_many_texts("contains-any"))
    folded: ClassVar[bool] = False

    def check(self, output: str) -> tuple[bool, str]:
        items = type(self).parse(self.value)
        seen = output.lower() if self.folded else output
        found = any(self._text(v) in seen for v in items)
        passed = found != self.inverse
        return passed, "Assertion passed" if passed else f'Expected output to {self._not()}contain one of "{_shown(_join(items))}"'


IContainsAny = _folded(ContainsAny, "icontains-any", "handleIContainsAny", _many_texts)


@_promptfoo_type("contains-all")
class ContainsAll(PromptfooOutputAssertion):
    """promptfoo's `contains-all` (`handleContainsAll`): the output contains every one of the texts.

    `value` as `contains-any`'s. The reason lists the texts missing: `Expected output to contain all of [a, b].
    Missing: [b]`. `not-contains-all` passes when at least one is missing.
    """

    assertion: ClassVar[str] = "contains-all"
    parse: ClassVar[Callable[[Any], Any]] = staticmethod(_many_texts("contains-all"))
    folded: ClassVar[bool] = False

    def check(self, output: str) -> tuple[bool, str]:
        items = type(self).parse(self.value)
        seen = output.lower() if self.folded else output
        missing = [v for v in items if self._text(v) not in seen]
        passed = (not missing) != self.inverse
        if passed:
            return True, "Assertion passed"
        return False, f"Expected output to {self._not()}contain all of [{_shown(_join(items))}]. Missing: [{_shown(_join(missing))}]"


IContainsAll = _folded(ContainsAll, "icontains-all", "handleIContainsAll", _many_texts)


# --- equals, starts-with, levenshtein --------------------------------------------------------------------------------


def _equals_value(value: Any) -> Any:
    # promptfoo compares a missing value as the text "undefined": refused here, as no output means that.
    if value is ABSENT:
        raise _refuse('"equals" assertion needs a value: the text, or the JSON value (a mapping, a list, null), the output must equal')
    return value


@_promptfoo_type("equals")
class Equals(PromptfooOutputAssertion):
    """promptfoo's `equals` (`handleEquals`): the output is exactly `value`.

    A text or a number compares with the output as `String(value)`, case and spaces counting. A mapping, a list or
    null compares with the output parsed as JSON (`JSON.parse`) by Node's `util.isDeepStrictEqual`: key order does
    not count, `1` equals `1.0`, `true` is not `1`; output that is no JSON fails (passes the `not-` form).
    Example: `value: {status: shipped}` on `{"status": "shipped"}` passes.
    """

    assertion: ClassVar[str] = "equals"
    parse: ClassVar[Callable[[Any], Any]] = staticmethod(_equals_value)

    def check(self, output: str) -> tuple[bool, str]:
        value = self.value
        if value is None or isinstance(value, (dict, list)):  # (JavaScript's `typeof null` is "object" too)
            try:
                passed = js_equal(value, _json_parse(output)) != self.inverse
            except ValueError:
                passed = self.inverse
            shown = _js_json(value)
        else:
            shown = _js_string(value)
            passed = (shown == output) != self.inverse
        if passed:
            return True, "Assertion passed"
        return False, f'Expected output "{_shown(output)}" to {self._not()}equal "{_shown(shown)}"'


def _json_parse(text: str) -> Any:
    """JavaScript's `JSON.parse(text)`: Python's `json.loads` without the `NaN`/`Infinity` it alone accepts."""
    import json

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def _prefix(value: Any) -> str:
    if isinstance(value, str) and value:
        return value
    raise _refuse('"starts-with" assertion type must have a string value')


@_promptfoo_type("starts-with")
class StartsWith(PromptfooOutputAssertion):
    """promptfoo's `starts-with` (`handleStartsWith`): the output begins with `value` (a non-empty text), case counting."""

    assertion: ClassVar[str] = "starts-with"
    parse: ClassVar[Callable[[Any], Any]] = staticmethod(_prefix)

    def check(self, output: str) -> tuple[bool, str]:
        passed = output.startswith(self.value) != self.inverse
        return passed, "Assertion passed" if passed else f'Expected output to {self._not()}start with "{_shown(self.value)}"'


def _target(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise _refuse('"levenshtein" assertion type must have a string value')


@_promptfoo_type("levenshtein")
class Levenshtein(PromptfooOutputAssertion):
    """promptfoo's `levenshtein` (`handleLevenshtein`): the edit distance from the output to `value` is at most
    `threshold` (default 5), counted in UTF-16 code units as `fastest-levenshtein` counts (an emoji is 2).

    Example: `value: "Your order ships today."`, output "Your order ship today" (distance 2) passes; at distance 7
    the reason is `Levenshtein distance 7 is greater than threshold 5`. `threshold: 0` is refused: promptfoo's
    releases read it either as 5 (`threshold || 5`) or as 0 (`threshold ?? 5`); so is a negative one (nothing is
    within it). `not-levenshtein` is refused too: promptfoo's handler ignores the `not-` prefix and grades it as
    `levenshtein`, the opposite of what the name says.
    """

    assertion: ClassVar[str] = "levenshtein"
    refused_options: ClassVar[tuple[str, ...]] = ()
    parse: ClassVar[Callable[[Any], Any]] = staticmethod(_target)
    threshold: float | None = None  # (a distance, not a score in [0, 1])

    @field_validator("threshold", mode="before")
    @classmethod
    def _no_threshold(cls, value: Any) -> Any:
        if value is None:
            return value
        refuse_non_finite(float, value)  # (this validator runs before the base's, which says it so of every other float)
        if isinstance(value, bool) or not _is_number(value):
            raise PydanticCustomError("promptfoo_threshold", "threshold is the largest edit distance that passes, a number")
        if value <= 0:
            raise PydanticCustomError("promptfoo_threshold", "threshold {value} {why}; give the largest edit "
                                      "distance that passes, 1 or more (5 when left out)",
                                      {"value": js_number(value), "why": "is read as 5 by some promptfoo releases "
                                       "(threshold || 5) and as 0 by others" if value == 0 else "is a distance nothing is within"})
        return value

    def check(self, output: str) -> tuple[bool, str]:
        return self._verdict(levenshtein(output, self.value))

    def _verdict(self, distance: int) -> tuple[bool, str]:
        limit = self.threshold or 5
        passed = distance <= limit
        return passed, "Assertion passed" if passed else f"Levenshtein distance {distance} is greater than threshold {js_number(limit)}"

    def evaluate(self, case: Case) -> Score:
        # The distance is quadratic in the texts' length: computed once, for the verdict and the details alike.
        if case.trace is None:
            return no_trace()
        distance = levenshtein(case.trace.output or "", self.value)
        passed, reason = self._verdict(distance)
        return make_score(1.0 if passed else 0.0, passed, reason, {"inverse": self.inverse, "distance": distance})


def _inverse(base: type[PromptfooOutputAssertion], kind: str) -> type[PromptfooOutputAssertion]:
    """The `not-` form of `base`, registered as `kind`."""
    cls = type(f"Not{base.__qualname__}", (base,), {
        "__doc__": f"promptfoo's `{kind}`: `{base.assertion}` inverted (see there).", "__module__": base.__module__,
        "__qualname__": f"Not{base.__qualname__}", "inverse": True})
    return _promptfoo_type(kind)(cls)  # type: ignore[return-value]


NotContains = _inverse(Contains, "not-contains")
NotIContains = _inverse(IContains, "not-icontains")
NotContainsAny = _inverse(ContainsAny, "not-contains-any")
NotIContainsAny = _inverse(IContainsAny, "not-icontains-any")
NotContainsAll = _inverse(ContainsAll, "not-contains-all")
NotIContainsAll = _inverse(IContainsAll, "not-icontains-all")
NotEquals = _inverse(Equals, "not-equals")
NotStartsWith = _inverse(StartsWith, "not-starts-with")


def _no_inverse(value: Any) -> Any:
    raise _refuse("promptfoo's levenshtein ignores the not- prefix (it grades not-levenshtein exactly as levenshtein); "
                  "write levenshtein, or not-equals for an output that must differ")


@_promptfoo_type("not-levenshtein")
class NotLevenshtein(Levenshtein):
    """promptfoo's `not-levenshtein`: refused when the config loads, since promptfoo grades it as `levenshtein`."""

    inverse: ClassVar[bool] = True
    parse: ClassVar[Callable[[Any], Any]] = staticmethod(_no_inverse)
