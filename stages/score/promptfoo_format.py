"""promptfoo's `regex` and `is-json` assertions on the final output, and their `not-` inverses, under promptfoo's names.

Source: promptfoo `src/assertions/regex.ts` (`handleRegex`) and `src/assertions/json.ts` (`handleIsJson`),
with the shared rules of `tracejudge.stages.score.promptfoo_text` (the output, the 1/0 score, promptfoo's reasons,
`threshold` refused, values as written):

    metrics:
      - {type: regex, value: "^Order \\\\d+ (shipped|delivered)"}
      - {type: is-json, value: {type: object, required: [status]}}

`regex` runs the pattern as JavaScript's `new RegExp(value).test(output)` does: the pattern is rewritten for the
`regex` library (`promptfoo_js.js_regex`) and matched against the output's UTF-16 code units, so `.`, `$`, `\\d`,
`\\w`, `\\b`, `\\s`, `{` and characters above U+FFFF mean what they mean in JavaScript. A pattern with no faithful
Python form (a back reference, Python-only syntax JavaScript rejects) is refused when the config loads, naming why,
as is one JavaScript cannot compile (promptfoo fails every case with "Invalid regex pattern"). A pattern that
backtracks past `REGEX_TIMEOUT_S` on an output scores null with the reason, instead of holding the run.

`is-json` passes when the output is JSON as `JSON.parse` reads it (Python's `NaN`/`Infinity` are not JSON there).
Its optional `value` is a JSON Schema (a mapping, or YAML/JSON text of one) that the parsed output must satisfy,
checked with the `jsonschema` library as draft-07 unless the schema's `$schema` names another (promptfoo uses ajv,
whose default is draft-07); a schema that is not one is refused when the config loads. promptfoo's failure reason
lists ajv's messages (`data/status must be string`); here it lists jsonschema's (`data/status: 1 is not of type
'string'`), after the same `JSON does not conform to the provided schema. Errors: `.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import PrivateAttr
from tracejudge.core.records import Case, Score
from tracejudge.llm.redact import redact_quoted
from tracejudge.stages.score.base import make_score, no_trace
from tracejudge.stages.score.promptfoo_js import JsRegexError, js_regex, utf16_units
from tracejudge.stages.score.promptfoo_text import ABSENT, PromptfooOutputAssertion, _inverse, _json_parse, _refuse
from tracejudge.stages.score.promptfoo_trajectory import _promptfoo_type
from tracejudge.stages.score.value_match import REGEX_TIMEOUT_S

__all__ = ["IsJson", "NotIsJson", "NotRegex", "Regex", "compile_js_regex", "json_schema"]


def compile_js_regex(value: Any) -> Any:
    """A `regex` pattern matching as JavaScript's `new RegExp(value)` (no flags); raises `PydanticCustomError` with
    promptfoo's message for a value that is no non-empty string, and names why a pattern cannot be carried over."""
    import regex  # here: only a regex assertion needs the library, and its import costs tens of milliseconds

    if not isinstance(value, str) or not value:
        raise _refuse('"regex" assertion type must have a string value')
    try:
        return regex.compile(js_regex(value), regex.ASCII)
    except JsRegexError as exc:
        raise _refuse(f"{exc}; JavaScript and Python would not match it alike") from None
    except regex.error as exc:
        raise _refuse(f"invalid regular expression: {exc.msg}") from None


@_promptfoo_type("regex")
class Regex(PromptfooOutputAssertion):
    """promptfoo's `regex` (`handleRegex`): JavaScript's `new RegExp(value).test(output)`, no flags.

    Example: `value: "^Order \\\\d+"` passes on "Order 42 shipped"; it fails on "order 42" with
    `Expected output to match regex "^Order \\d+"`. `not-regex` passes when the pattern is not found. `$` is the end
    of the output only and `.` stops at line breaks, as in JavaScript; `(?i)` and other Python-only syntax, and back
    references, are refused when the config loads.
    """

    assertion: ClassVar[str] = "regex"
    parse: ClassVar[Callable[[Any], Any]] = staticmethod(compile_js_regex)
    _rx: Any = PrivateAttr(default=None)

    def model_post_init(self, context: Any) -> None:
        self._rx = compile_js_regex(self.value)

    def evaluate(self, case: Case) -> Score:
        if case.trace is None:
            return no_trace()
        output = case.trace.output or ""
        try:
            found = self._rx.search(utf16_units(output), timeout=REGEX_TIMEOUT_S) is not None
        except TimeoutError:
            return Score(value=None, passed=None, reason=f"regex_timeout: /{redact_quoted(self.value, 60)[:60]}/ took over "
                                                        f"{REGEX_TIMEOUT_S:g} s on a {len(output)}-character output")
        passed = found != self.inverse
        reason = "Assertion passed" if passed else f'Expected output to {self._not()}match regex "{redact_quoted(self.value)}"'
        return make_score(1.0 if passed else 0.0, passed, reason, {"inverse": self.inverse})


def json_schema(value: Any) -> Any:
    """The JSON Schema of an `is-json` value: None when none is given (absent, null or ""), a YAML/JSON text read as
    promptfoo reads it (`yaml.load`), a mapping or a boolean as given. Raises `PydanticCustomError` for any other value
    or a schema `jsonschema` rejects."""
    if value is ABSENT or value is None or value == "":
        return None
    schema = value
    if isinstance(value, str):
        if value.startswith("file://"):
            raise _refuse("file:// schemas are not read; give the schema itself")
        import yaml

        try:
            schema = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise _refuse(f"the schema is no YAML or JSON: {exc}") from None
    if not isinstance(schema, (dict, bool)):
        raise _refuse("is-json assertion must have a string, boolean, or object value")
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator) if isinstance(schema, dict) \
        else jsonschema.Draft7Validator
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise _refuse(f"Invalid JSON schema: {exc.message}") from None
    return cls(schema)


@_promptfoo_type("is-json")
class IsJson(PromptfooOutputAssertion):
    """promptfoo's `is-json` (`handleIsJson`): the output is JSON, and satisfies the JSON Schema `value` when one is given.

    Example: `{type: is-json, value: {required: [status]}}` passes on `{"status": "shipped"}` and fails on `{}`
    with `JSON does not conform to the provided schema. Errors: data must have required property 'status'`
    (ajv's words in promptfoo; jsonschema's here). `not-is-json` passes when the output is no JSON or does not
    satisfy the schema.
    """

    assertion: ClassVar[str] = "is-json"
    parse: ClassVar[Callable[[Any], Any]] = staticmethod(json_schema)
    _validator: Any = PrivateAttr(default=None)

    def model_post_init(self, context: Any) -> None:
        self._validator = json_schema(self.value)

    def check(self, output: str) -> tuple[bool, str]:
        try:
            parsed = _json_parse(output)
        except ValueError:
            passed = self.inverse
            return passed, "Assertion passed" if passed else "Expected output to be valid JSON"
        if self._validator is not None:
            errors = list(self._validator.iter_errors(parsed))
            passed = bool(errors) == self.inverse
            if not passed:
                if self.inverse:
                    return False, "Output is JSON that conforms to the provided schema"
                text = ", ".join(f"data{''.join(f'/{p}' for p in e.absolute_path)}: {e.message}" for e in errors)
                return False, f"JSON does not conform to the provided schema. Errors: {redact_quoted(text)}"
            return True, "Assertion passed"
        passed = not self.inverse
        return passed, "Assertion passed" if passed else "Expected output to be valid JSON"


NotRegex = _inverse(Regex, "not-regex")
NotIsJson = _inverse(IsJson, "not-is-json")
