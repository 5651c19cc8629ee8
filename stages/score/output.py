"""`ExactMatch`, `Contains`, `Regex`, `JsonSchema`: checks on the trace's final output.

Sources: cogitator evals `exactMatch()` / `contains()` / `regex()` /
`jsonSchema()` (packages/evals/src/metrics/deterministic.ts), with the
equivalents of pydantic-evals (`EqualsExpected`, `Contains`) and
multivon-eval reachable through the options.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any, Literal

from pydantic import Field, PrivateAttr, field_validator, model_serializer, model_validator
from tracejudge.core.records import Case, Score
from tracejudge.core.registry import register_metric
from tracejudge.llm.redact import redact_quoted
from tracejudge.stages.score.base import Metric, make_score, no_expectation, no_trace
from tracejudge.stages.score.quoted import quoted_output
from tracejudge.stages.score.value_match import REGEX_TIMEOUT_S, compile_pattern, first_difference, match_value, short_json, short_pair, \
    shown_expected

__all__ = ["Contains", "ExactMatch", "JsonSchema", "Regex"]


def _output(case: Case) -> str:
    assert case.trace is not None
    return case.trace.output or ""


def _pass(ok: bool, reason: str, details: dict[str, Any] | None = None) -> Score:
    return make_score(1.0 if ok else 0.0, ok, reason, details)


# What JavaScript's `String.prototype.trim` removes (ECMAScript WhiteSpace and LineTerminator: the Zs characters, tab,
# vertical tab, form feed, no-break space, the byte-order mark U+FEFF, line feed, carriage return, U+2028, U+2029), as
# cogitator's `exactMatch` trims. Python's `str.strip()` keeps U+FEFF and also drops U+001C–U+001F and U+0085.
JS_WHITESPACE = "\t\n\x0b\x0c\r \xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000\ufeff"


# `defer_build`: a metric's validator is built when a config names it, not when a config naming `Contains`
# imports this module (each cost start-up about 0.5 ms).
@register_metric
class ExactMatch(Metric, defer_build=True):
    """1.0 when the final output equals the expected one, else 0.0.

    The expected value is `expected` when given, else the case's
    `expected_output` (neither → `value: null`; cogitator scores 0 there).
    `expected: null` written out is given (`expected_null: true` says the
    same): the output must be the JSON value `null`, as promptfoo's `equals`
    with value null; a case's `expected_output: null` is not
    (pydantic-evals' `EqualsExpected` skips it, deepeval refuses it).
    A text expectation compares after trimming both sides (the characters
    JavaScript's `trim()` removes, as cogitator trims: a leading byte-order
    mark goes, a trailing U+0085 stays) and, unless
    `case_sensitive: true`, ignoring case (cogitator's defaults; set
    `case_sensitive: true, strip: false` for pydantic-evals' `EqualsExpected`).
    A structured expectation (a mapping, list, number, bool) compares with
    the output decoded as JSON under the argument rules
    (`tracejudge.stages.score.value_match`: `1 == 1.0`, `true != 1`, matchers allowed). A
    missing final output counts as the empty text.
    """

    expected: Any = None
    expected_null: bool = False
    case_sensitive: bool = False
    strip: bool = True

    @model_validator(mode="before")
    @classmethod
    def _null_given(cls, data: Any) -> Any:
        # An `expected: null` written out is the JSON value null the output must be (promptfoo's `equals` with value
        # null, pydantic-evals' `Equals(value=None)`), not "not given"; a case's null `expected_output` is none
        # (pydantic-evals' `EqualsExpected` skips it, deepeval refuses it). Said by a field of its own, so that the
        # run's config hash, its manifest and a spec rebuilt from the metric (`metric_spec`) tell it from no `expected`.
        if isinstance(data, dict) and "expected" in data and data["expected"] is None:
            if data.get("expected_null") is False:
                raise ValueError("expected: null with expected_null: false says two things; leave one out")
            data = {**data, "expected_null": True}
        elif isinstance(data, dict) and data.get("expected_null") is True and data.get("expected") is not None:
            raise ValueError("expected_null: true is expected: null; it cannot go with another expected value")
        return data

    @model_serializer(mode="wrap")
    def _dumped(self, handler: Any) -> dict[str, Any]:
        # Left out unless set: a config without it hashes as before the option existed, so its runs still resume.
        out = handler(self)
        if not self.expected_null:
            out.pop("expected_null", None)
        return out

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        given = self.expected is not None or self.expected_null
        target = self.expected if given else case.expected_output
        if target is None and not given:
            return no_expectation("expected_output", case)
        out = _output(case)
        if not isinstance(target, str):
            try:
                value = json.loads(out)
            except ValueError:
                return _pass(False, f"expected the JSON value {short_json(shown_expected(target))}, but the output is not JSON: {redact_quoted(out, 80)[:80]!r}")
            if match_value(target, value, "exact"):
                return _pass(True, "output equals the expected JSON value")
            if isinstance(target, dict) and isinstance(value, dict):
                return _pass(False, f"output JSON differs: {first_difference(target, value, 'exact')}")
            return _pass(False, "expected {}, got {}".format(*short_pair(shown_expected(target), value)))
        a, b = (out.strip(JS_WHITESPACE), target.strip(JS_WHITESPACE)) if self.strip else (out, target)
        ok = a == b if self.case_sensitive else a.lower() == b.lower()
        return _pass(ok, "output equals the expected text" if ok else f"expected {redact_quoted(b, 120)[:120]!r}, got {redact_quoted(a, 120)[:120]!r}")


@register_metric
class Contains(Metric):
    """1.0 when the final output contains the expected text, else 0.0.

    The text is `value` when given, else the case's `expected_output`: a
    text, or a list of texts of which any one will do (BFCL's accepted
    answers); neither → `value: null`. Case is ignored unless
    `case_sensitive: true` (cogitator's default; pydantic-evals' `Contains`
    is case-sensitive). Expected `""` is contained in every output. A
    failure's reason quotes the output as pydantic-evals' does
    (`quoted.quoted_output`: up to 100 characters whole, else both ends and
    its length, credentials masked).

    `value` may be a list of texts too. `require: all` (multivon-eval's
    `Contains`, whose default this is) looks for every expected text and
    gives partial credit: value = texts found / texts expected, `passed` at
    `threshold` (1.0 unless set); an empty list → 1.0, as multivon-eval
    finds nothing to check. `require: any` (the default) passes when one is
    found. The reason quotes the output as above when a text is missing
    (with `require: all`) or none is found (either `require`, `match: bfcl`).

    `match: bfcl` is BFCL's agentic checker (memory and web_search
    questions): both texts lose `,./-_*^()`, are lower-cased and have `'`
    turned into `"`, then an expected text must appear between word
    boundaries (`\\b`, Python `re`), so `35` is not found in `135`. Spaces
    are kept (`April 1,2024` does not match `April 1, 2024`), and an expected
    text that starts or ends with a non-word character (`$222 million`)
    needs a word character beside it, as upstream. It cannot be combined
    with `case_sensitive: true` or `require: all`.
    """

    value: str | list[str] | None = None
    case_sensitive: bool = False
    match: Literal["substring", "bfcl"] = "substring"
    require: Literal["any", "all"] = "any"
    # `value`, lowered, and the two reasons quoting it masked (`_contains_text`): built once, when the metric is.
    _texts: tuple[str, str, str, str] | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _compatible_options(self) -> "Contains":
        if self.match == "bfcl" and self.case_sensitive:
            raise ValueError("match: bfcl ignores case, as BFCL's checker does: it cannot be combined with case_sensitive: true")
        if self.match == "bfcl" and self.require == "all":
            raise ValueError("match: bfcl accepts any one of BFCL's answers: it cannot be combined with require: all")
        return self

    def model_post_init(self, context: Any) -> None:
        if isinstance(self.value, str):
            self._texts = (self.value, *_contains_text(self.value))

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        p = self.__dict__  # (one attribute read for the options: each read on a pydantic model goes through its `__getattr__` hook)
        value, case_sensitive, match = p["value"], p["case_sensitive"], p["match"]
        target = value if value is not None else case.expected_output
        if target is None:
            return no_expectation("expected_output", case)
        if p["require"] == "all":
            texts = [target] if isinstance(target, str) else target
            if isinstance(texts, list) and all(isinstance(t, str) for t in texts):
                return self._contains_all(texts, _output(case), case_sensitive)
            return _not_text(target)
        if match == "bfcl" and isinstance(target, str):
            target = [target]
        if isinstance(target, list) and target and all(isinstance(t, str) for t in target):
            if match == "bfcl":
                return _bfcl_mentions_any(target, _output(case))
            return _contains_any(target, _output(case), case_sensitive)
        if not isinstance(target, str):
            return _not_text(target)
        out = _output(case)
        if target is value:  # the user's own configured text, the same for every case: its texts were built with the metric
            texts = self.__pydantic_private__["_texts"]
            _, lowered, yes, no = texts if texts is not None and texts[0] is target else (target, *_contains_text(target))
        else:  # the case's own expectation is data and may quote a credential
            shown = redact_quoted(target, 80)[:80]
            lowered, yes, no = target.lower(), f"output contains {shown!r}", f"output does not contain {shown!r}"
        ok = target in out if case_sensitive else lowered in out.lower()
        return _pass(ok, yes if ok else f"output {quoted_output(out)}{no[6:]}")

    def _contains_all(self, targets: list[str], out: str, case_sensitive: bool) -> Score:
        """`require: all`: the share of `targets` found in `out` (each repeated text counts each time, as multivon-eval counts
        it), `passed` at the threshold; `details.missing`: the indices of the texts not found."""
        if not targets:
            return self.verdict(1.0, "no text to look for (the expected list is empty)", {"missing": []})
        seen = out if case_sensitive else out.lower()
        missing = [i for i, t in enumerate(targets) if (t if case_sensitive else t.lower()) not in seen]
        # A text missing is a shortfall: the output is quoted as a plain `Contains` failure quotes it.
        shown = f"output {quoted_output(out)}" if missing else "output"
        reason = f"{shown} contains {len(targets) - len(missing)} of the {len(targets)} expected texts"
        if missing:
            reason += f"; missing: {_listed([targets[i] for i in missing])}"
        return self.verdict((len(targets) - len(missing)) / len(targets), reason, {"missing": missing})


def _not_text(target: Any) -> Score:
    return Score(value=None, reason=f"not computed: Contains needs a text expectation (or a list of texts), got {type(target).__name__}")


def _contains_any(targets: list[str], out: str, case_sensitive: bool) -> Score:
    """`Contains` of a case expecting any one of several texts."""
    seen = out if case_sensitive else out.lower()
    hit = next((t for t in targets if (t if case_sensitive else t.lower()) in seen), None)
    if hit is not None:
        return _pass(True, f"output contains {redact_quoted(hit, 80)[:80]!r}")
    return _pass(False, f"output {quoted_output(out)} contains none of {_listed(targets)}")


def _listed(targets: list[str]) -> str:
    """Up to five expected texts, quoted and redacted, for a reason."""
    return ", ".join(repr(redact_quoted(t, 80)[:80]) for t in targets[:5]) + (", …" if len(targets) > 5 else "")


# BFCL's `standardize_string`: these characters go, in this order with lower-casing and `'` → `"`.
_BFCL_DROPPED = re.compile(r"[,./\-_*^()]")


def _bfcl_standardize(text: str) -> str:
    """`text` as BFCL's agentic checker compares it: `,./-_*^()` dropped, lower-cased, `'` turned into `"`."""
    return _BFCL_DROPPED.sub("", text).lower().replace("'", '"')


def _bfcl_mentions_any(targets: list[str], out: str) -> Score:
    """`Contains(match="bfcl")`: BFCL's `agentic_checker` verdict on the final output."""
    seen = _bfcl_standardize(out)
    for t in targets:
        # upstream's pattern: the standardized answer, escaped, between `\b` word boundaries
        if re.search(rf"\b{re.escape(_bfcl_standardize(t))}\b", seen):
            return _pass(True, f"output mentions {redact_quoted(t, 80)[:80]!r} (BFCL's answer check)")
    return _pass(False, f"output {quoted_output(out)} mentions none of {_listed(targets)} (BFCL's answer check: "
                        "`,./-_*^()` dropped, case ignored, whole words)")


@lru_cache(maxsize=256)
def _contains_text(target: str) -> tuple[str, str, str]:
    """`target` lowered, and the two reasons `Contains` gives for it, quoting it as a case's text is quoted: a credential
    in it masked (`redact_quoted`; a configured value is no less a secret than one a case holds)."""
    shown = redact_quoted(target, 80)[:80]
    return target.lower(), f"output contains {shown!r}", f"output does not contain {shown!r}"


@register_metric
class Regex(Metric, defer_build=True):
    """1.0 when `pattern` is found in the final output, else 0.0.

    `re.search` semantics (as JavaScript's `RegExp.test` in cogitator);
    `full_match: true` requires the whole output to match. Patterns run on the
    `regex` library (Python `re` syntax) with a time limit of
    `REGEX_TIMEOUT_S` seconds per output: a pattern that backtracks longer
    (`^(a+)+$` on a long output of `a`s) gives `value: null` with the reason,
    instead of holding the run. An invalid pattern is refused when the metric is built.

    Python's semantics, not JavaScript's (cogitator's and promptfoo's `RegExp`): `$` also matches
    before a final newline (`^\\d+$` finds `"42\\n"`; `\\Z` does not), and `\\d`, `\\w`, `\\b` are
    Unicode-aware (`٤٢` are digits; `(?a)` makes them ASCII, as in JavaScript).
    """

    pattern: str
    full_match: bool = False
    # `pattern` and the reasons quoting it masked (`redact_quoted`, as a case's text is quoted): built once, when the metric is.
    _texts: tuple[str, bool, str, str] = PrivateAttr(default=("", False, "", ""))

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        import regex  # here, not at the top: only a Regex metric needs the library, and its import costs ~10 ms a run

        try:
            compile_pattern(value)
        except regex.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from None
        return value

    def model_post_init(self, context: Any) -> None:
        self._texts = _regex_texts(self.pattern, self.full_match)

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        out = _output(case)
        pattern, full_match = self.pattern, self.full_match
        rx = compile_pattern(pattern)
        try:
            found = rx.fullmatch(out, timeout=REGEX_TIMEOUT_S) if full_match else rx.search(out, timeout=REGEX_TIMEOUT_S)
        except TimeoutError:
            return Score(value=None, passed=None, reason=f"regex_timeout: /{redact_quoted(pattern, 60)[:60]}/ took over "
                                                        f"{REGEX_TIMEOUT_S:g} s on a {len(out)}-character output")
        texts = self.__pydantic_private__["_texts"]
        if texts[0] is not pattern or texts[1] != full_match:  # (a copy given other options)
            texts = _regex_texts(pattern, full_match)
        return _pass(found is not None, texts[2] if found is not None else texts[3])


def _regex_texts(pattern: str, full_match: bool) -> tuple[str, bool, str, str]:
    """`pattern`, `full_match` and the two reasons `Regex` gives for them, the pattern quoted with a credential masked."""
    shown = redact_quoted(pattern)
    verb = "matches" if full_match else "contains a match for"
    return pattern, full_match, f"output {verb} /{shown}/", f"output does not match /{shown}/"


@register_metric
class JsonSchema(Metric):
    """1.0 when the final output is JSON that validates against `schema` (JSON Schema), else 0.0.

    Validation uses the `jsonschema` library with the draft the schema's
    `$schema` names (latest supported otherwise); an invalid schema is refused
    when the metric is built. Output that is not JSON → 0.0 with the parse
    error; a validation failure → 0.0 naming the path and message of the
    most relevant error (`details.errors` lists up to 10).
    """

    schema_: dict[str, Any] = Field(alias="schema")

    model_config = {"populate_by_name": True, "defer_build": True}

    @field_validator("schema_")
    @classmethod
    def _valid_schema(cls, value: dict[str, Any]) -> dict[str, Any]:
        import jsonschema  # here, not at the top: ~50 ms of start-up that runs without a JsonSchema metric do not need

        try:
            jsonschema.validators.validator_for(value).check_schema(value)
        except jsonschema.SchemaError as exc:
            raise ValueError(f"invalid JSON Schema: {exc.message}") from None
        return value

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        out = _output(case)
        try:
            value = json.loads(out)
        except ValueError as exc:
            return _pass(False, f"output is not valid JSON: {exc}")
        import jsonschema

        validator = jsonschema.validators.validator_for(self.schema_)(self.schema_)
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        if not errors:
            return _pass(True, "output validates against the schema")
        best = jsonschema.exceptions.best_match(errors)
        path = "/".join(str(p) for p in best.absolute_path) or "(root)"
        # jsonschema's messages quote the output's values.
        listed = [{"path": "/".join(str(p) for p in e.absolute_path), "message": redact_quoted(e.message)} for e in errors[:10]]
        return _pass(False, f"schema validation failed at {path}: {redact_quoted(best.message)}", {"errors": listed})
