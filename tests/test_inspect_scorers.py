"""inspect-ai's text scorers (`includes`, `match`, `exact`, `f1`, `pattern`, `answer`) give inspect's own verdicts.

1. The hand cases are inspect-ai's own unit tests (UKGovernmentBEIS/inspect_ai `tests/scorer/test_match.py`,
   `test_pattern.py`, `test_answer.py`, `test_classification.py`, the `no_response` tests of #5376 and
   `tests/util/test_str_to_float.py`), with inspect's expected values, scored by the tracejudge metrics. Where a
   newer inspect changed a verdict, the table holds what inspect-ai 0.3.285 gives (noted on the row).
2. When inspect-ai is installed (the `peers` extra), its real scorer functions score a few hundred random outputs
   and targets beside ours: value, C/I, `Score.answer` and `Score.reason` must agree on every one.
3. A `tracejudge run` end to end, and the config errors.
"""

from __future__ import annotations

import json
import random
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from test_promptfoo_trajectory import run_cli
from tracejudge.core.records import Case
from tracejudge.core.registry import SpecError, build_metric, metric_types
from tracejudge.stages.score import inspect_text

SAME = object()  # (no expectation on the answer)


def score(spec: dict[str, Any], output: str | None, expected: Any) -> Any:
    case = Case.model_validate({"id": "c", "expected_output": expected, "trace": {"output": output}})
    return build_metric(spec).evaluate(case)


# --- 1. inspect-ai's own test cases --------------------------------------------------------------------------------

NUMERIC = {"type": "match", "numeric": True}
MATCH_TESTS = [  # tests/scorer/test_match.py, every one `match(numeric=True, location=...)`
    ("test_number_eol", "end", "28 + 32 = 60\nThis solves the problem.", ["60"], "C"),
    ("test_non_number_eol_markdown", "end", "**ANSWER: 28 + 32 = 60**\nThis solves the problem.", ["60"], "C"),
    ("test_non_numeric_match", "any", "28 + 32 = 60%\nThis solves the problem.", ["60", "60%"], "C"),
    ("test_non_numeric_match_end", "end", "28 + 32 = 60%", ["60%"], "C"),
    ("test_non_numeric_match_plain", "end", "28 + 32 = 60%", ["32"], "C"),
    ("test_numeric_end_no_digit_suffix_match", "end", "The answer is 25", ["5"], "I"),
    ("test_numeric_end_no_digit_suffix_match_multidigit", "end", "the value is 110", ["10"], "I"),
    ("test_numeric_begin_no_digit_prefix_match", "begin", "50 is the answer", ["5"], "I"),
    ("test_numeric_any_no_digit_substring_match", "any", "got 25 here", ["5"], "I"),
    ("test_numeric_any_finds_number_in_middle", "any", "first 7 then 25 then done", ["25"], "C"),
    ("test_numeric_negative_target_wrong_sign", "end", "5", ["-5"], "I"),
    ("test_numeric_negative_target_correct", "end", "the result is -5", ["-5"], "C"),
    ("test_numeric_negative_target_correct_with_trailing_text", "end", "the result is -5 exactly", ["-5"], "C"),
    ("test_numeric_decimal_target", "end", "pi is approximately 3.14", ["3.14"], "C"),
    ("test_numeric_decimal_target_wrong", "end", "pi is approximately 33.14", ["3.14"], "I"),
    ("test_numeric_scientific_target", "end", "the value is 1000", ["1e3"], "C"),
    ("test_numeric_normalization_preserved", "end", "2.0", ["2"], "C"),
    ("test_numeric_negative_normalization", "end", "result: -5.0", ["-5"], "C"),
    ("test_numeric_exact_rejects_trailing_text", "exact", "5 some text", ["5"], "I"),
    ("test_numeric_exact_rejects_trailing_alpha", "exact", "5abc", ["5"], "I"),
    ("test_numeric_exact_clean_match", "exact", "5", ["5"], "C"),
    ("test_numeric_unicode_minus_in_output", "end", "answer: −5", ["-5"], "C"),
    ("test_numeric_vulgar_fraction_in_output", "end", "the result is ½", ["0.5"], "C"),
    ("test_numeric_negative_vulgar_fraction_in_output", "any", "got -½ as the result", ["-0.5"], "C"),
    ("test_numeric_mixed_fraction_in_output", "end", "answer 2½", ["2.5"], "C"),
    ("test_numeric_chinese_numeral_in_output", "end", "result: 三", ["3"], "C"),
    ("test_numeric_fullwidth_digits_in_output", "end", "the answer is １２３", ["123"], "C"),
    ("test_numeric_unicode_minus_with_trailing_text", "end", "the answer is -½ extra", ["-0.5"], "C"),
    ("test_numeric_unicode_minus_with_leading_text", "begin", "leading text then -½", ["-0.5"], "C"),
    ("test_numeric_any_answer_when_no_match", "any", "got 7 and 11", ["25"], "I"),
    # A number with sentence or enclosing punctuation attached is still the number; digits with letters are not.
    *[("test_numeric_match_with_trailing_punctuation", "end", f"The answer is 42{p}", ["42"], "C") for p in "!?:"],
    *[("test_numeric_match_with_enclosing_punctuation", "end", f"The answer is {n}", ["42"], "C") for n in ["(42).", "(42)", "[42]"]],
    ("test_numeric_any_with_punctuation", "any", "first (7) then 25! then done", ["25"], "C"),
    ("test_numeric_exact_still_rejects_punct_inside_digits", "end", "The answer is 42abc", ["42"], "I"),
]
# The answers inspect's tests assert (`Score.answer`): the number matched, or the output when none matched.
MATCH_ANSWERS = {"test_numeric_any_finds_number_in_middle": "25", "test_numeric_any_with_punctuation": "25",
                 "test_numeric_any_answer_when_no_match": "got 7 and 11"}

PATTERN_TESTS = [  # tests/scorer/test_pattern.py ("N" there before inspect scored a non-matching pattern I: value 0 both ways)
    ("test_single_match_success", {"pattern": "(foo)"}, "foo", ["foo"], "C", SAME),
    ("test_single_match_failure_with_target", {"pattern": "(foo)"}, "foo", ["target doesn't match"], "I", SAME),
    ("test_single_match_failure_from_model", {"pattern": "(foo)"}, "model doesn't match", ["foo"], "I", None),
    ("test_single_match_case_sensitive", {"pattern": "(FOO)", "ignore_case": True}, "foo", ["foo"], "C", SAME),
    ("test_multi_match_success_on_first_match", {"pattern": "(foo) (bar)"}, "foo bar", ["foo"], "C", "foo"),
    ("test_multi_match_success_on_subsequent_match", {"pattern": "(foo) (bar)"}, "foo bar", ["bar"], "C", "bar"),
    ("test_multi_match_success_all_match", {"pattern": "(foo) (foo)", "match_all": True}, "foo foo", ["foo"], "C", "foo"),
    ("test_multi_match_failure_when_matching_all", {"pattern": "(foo|bar) (foo|bar)", "match_all": True}, "foo bar", ["bar"], "I", None),
    ("test_multi_match_failure_with_target", {"pattern": "(foo) (bar)"}, "foo bar", ["target doesn't match"], "I", SAME),
    ("test_multi_match_failure_from_model", {"pattern": "(foo) (bar)"}, "model doesn't match", ["bar"], "I", None),
    ("test_only_returns_exact_target_matches", {"pattern": "(f[oz]o) (b[az]r)"}, "foo bzr", ["bar"], "I", SAME),
    ("test_one_match_group_returns_incorrect_match", {"pattern": "ANSWER: (A|B)", "ignore_case": False}, "ANSWER: A", ["B"], "I", "A"),
    ("test_multiple_match_group_returns_none", {"pattern": "ANSWER: (A|B) ALTERNATE_ANSWER: (A|B)", "ignore_case": False},
     "ANSWER: A ALTERNATE_ANSWER: A", ["B"], "I", None),
    ("test_match_all_unmatched_optional_group_is_not_correct", {"pattern": r"ANSWER:\s*(\d+)?", "match_all": True}, "ANSWER: ", ["42"], "I", None),
]

ANSWER_TESTS = [  # tests/scorer/test_answer.py (its "N" rows: I in 0.3.285, value 0 both ways)
    ("test_letter_success", "letter", "ANSWER: B", ["B"], "C", SAME),
    ("test_letter_failure", "letter", "ANSWER: B", ["C"], "I", SAME),
    ("test_word_success", "word", "ANSWER: Yes", ["Yes"], "C", SAME),
    ("test_word_failure", "letter", "ANSWER: Yes", ["No"], "I", SAME),
    *[("test_word_matching", "word", out, [t], "C", SAME) for out, t in [
        ("ANSWER: ☆", "☆"), ("ANSWER: ○", "○"), ("ANSWER: ◎", "◎"), ("ANSWER: Yes.", "Yes"), ("ANSWER: 42,\n", "42"),
        ("ANSWER: correct!", "correct"), ("ANSWER: 3.14", "3.14")]],
    ("test_word_trailing_prose_noanswer", "word", "ANSWER: Yes then more text", ["Yes"], "I", SAME),
    ("test_word_trailing_prose_noanswer", "word", "ANSWER: No, because reasons", ["No"], "I", SAME),
    ("test_line_success", "line", "ANSWER:\nThis is a whole new line", ["This is a whole new line"], "C", SAME),
    ("test_line_failure", "line", "ANSWER:\nThis is a whole new line", ["This doesn't match does it?"], "I", SAME),
    ("test_letter_last_occurrence_wins", "letter", "Let me think. ANSWER: A\nWait, that is wrong.\nANSWER: B", ["B"], "C", "B"),
    ("test_word_last_occurrence_wins", "word", "ANSWER: No\nActually, on reflection...\nANSWER: Yes", ["Yes"], "C", "Yes"),
    ("test_line_multiple_matches", "line", textwrap.dedent("""\
        What if I submitted this as the answer: some stuff we don't want to be the answer

        No, that seems wrong.

        ANSWER: 0.1
    """), ["0.1"], "C", SAME),
]

CLASSIFICATION_TESTS = [  # tests/scorer/test_classification.py
    ("test_exact_match", {"type": "exact"}, "foo", ["foo"], "C"),
    ("test_exact_match_max", {"type": "exact"}, "foo", ["foobar", "boofar", "foo"], "C"),
    ("test_exact_nonmatch", {"type": "exact"}, "foo1", ["foo"], "I"),
    ("test_f1_basic_match", {"type": "f1"}, "foo", ["foo"], 1.0),
    ("test_f1_basic_nonmatch", {"type": "f1"}, "foo1", ["foo"], 0.0),
    ("test_f1_good_match", {"type": "f1"}, "Paris", ["Paris, Texas", "Paris"], 1.0),
    ("test_f1_partial_match", {"type": "f1"}, "Paris", ["Paris, Texas"], 0.67),
    ("test_stop_words", {"type": "f1", "stop_words": ["Paris"]}, "Paris", ["Paris, Texas"], 0.0),
    ("test_stop_words2", {"type": "f1", "stop_words": ["Texas"]}, "Paris", ["Paris, Texas"], 1.0),
    ("test_max_score_target_leading_whitespace", {"type": "f1"}, "hello", [" hello"], 1.0),
    ("test_max_score_target_leading_whitespace", {"type": "exact"}, "hello", [" hello"], "C"),
    ("test_max_score_empty_target_no_index_error", {"type": "f1"}, "hello", [""], 0.0),
    ("test_max_score_empty_target_no_index_error", {"type": "exact"}, "hello", [""], "I"),
    ("test_max_score_empty_target_no_index_error", {"type": "f1"}, "hello", ["", "hello"], 1.0),
    ("test_f1_decimal_number_with_punctuation", {"type": "f1"}, "(3.14)", ["3.14"], 1.0),
    ("test_f1_decimal_number_with_punctuation", {"type": "f1"}, "The answer is 3.14.", ["3.14"], 0.5),
    ("test_exact_decimal_number_with_punctuation", {"type": "exact"}, "(3.14)", ["3.14"], "C"),
    *[("test_remove_punc_preserves_existing_normalization", {"type": "exact"}, out, [t], "C")
      for out, t in [("3,000", "3000"), ("$1,000.", "1000"), ("don't", "dont"), ("U.S.", "US")]],
    ("test_max_exact_score_word_order_and_duplicates", {"type": "exact"}, "world hello", ["hello world"], "I"),
    ("test_max_exact_score_word_order_and_duplicates", {"type": "exact"}, "hello hello", ["hello"], "I"),
]

NO_RESPONSE_VALUES = [  # the no_response tests of #5376: `test_no_value_changed`
    ({"type": "match"}, "4", "C"), ({"type": "includes"}, "4", "C"), ({"type": "exact"}, "4", "C"), ({"type": "match"}, "5", "I"),
    ({"type": "pattern", "pattern": r"(\d+)"}, "4", "C"), ({"type": "answer", "pattern": "line"}, "ANSWER: 4", "C"),
]
STRING_SCORERS = [{"type": "match"}, {"type": "includes"}, {"type": "exact"}, {"type": "f1"}]
PATTERN_SCORERS = [{"type": "pattern", "pattern": r"(\d+)"}, {"type": "answer", "pattern": "line"}]


def _check(spec: dict[str, Any], output: str, targets: list[str], value: str | float, answer: Any = SAME) -> None:
    got = score(spec, output, targets)
    expected = {"C": 1.0, "I": 0.0}.get(value, value) if isinstance(value, str) else value
    assert (got.value, got.details["inspect_value"]) == (expected, value), got.reason
    assert got.passed is (expected >= 1.0), got.reason  # the default threshold: C passes, I fails, f1 only at 1.0
    if answer is not SAME:
        assert got.details["answer"] == answer, got.details


@pytest.mark.parametrize("test, location, output, targets, value", MATCH_TESTS, ids=[r[0] for r in MATCH_TESTS])
def test_inspects_match_tests(test: str, location: str, output: str, targets: list[str], value: str) -> None:
    _check({**NUMERIC, "location": location}, output, targets, value, MATCH_ANSWERS.get(test, SAME))


@pytest.mark.parametrize("test, params, output, targets, value, answer", PATTERN_TESTS, ids=[r[0] for r in PATTERN_TESTS])
def test_inspects_pattern_tests(test: str, params: dict[str, Any], output: str, targets: list[str], value: str, answer: Any) -> None:
    _check({"type": "pattern", **params}, output, targets, value, answer)


@pytest.mark.parametrize("test, kind, output, targets, value, answer", ANSWER_TESTS, ids=[r[0] for r in ANSWER_TESTS])
def test_inspects_answer_tests(test: str, kind: str, output: str, targets: list[str], value: str, answer: Any) -> None:
    _check({"type": "answer", "pattern": kind}, output, targets, value, answer)


@pytest.mark.parametrize("test, spec, output, targets, value", CLASSIFICATION_TESTS, ids=[r[0] for r in CLASSIFICATION_TESTS])
def test_inspects_exact_and_f1_tests(test: str, spec: dict[str, Any], output: str, targets: list[str], value: str | float) -> None:
    _check(spec, output, targets, value)


def test_inspects_no_response_tests() -> None:
    for spec, output, value in NO_RESPONSE_VALUES:
        _check(spec, output, ["4"], value)
    for spec in STRING_SCORERS + PATTERN_SCORERS:
        for empty in ["", "   ", "\n\t "]:
            assert score(spec, empty, "4").details["inspect_reason"] == "no_response", spec
    for spec in STRING_SCORERS:
        assert "inspect_reason" not in score(spec, "5", "4").details
        assert "inspect_reason" not in score(spec, "I cannot answer this question.", "4").details
    for spec in PATTERN_SCORERS:
        assert score(spec, "I have no idea", "4").details["inspect_reason"] == "invalid_response_format"
    # An empty extracted answer is not an empty output.
    for spec, output in [({"type": "match", "numeric": True}, "I do not know"), ({"type": "pattern", "pattern": r"(\d*)"}, "abc"),
                         ({"type": "answer", "pattern": "line"}, "ANSWER:  ")]:
        assert score(spec, output, "4").details.get("inspect_reason") != "no_response"
    # A nullable pattern on an empty output, and an empty output scoring C, are still no_response (value kept).
    for regex, output in [(r"(.*)", ""), (r"(\d*)", "   "), (r"(\w*)", "\n\t "), (r"^(.*)$", ""), (r"([A-Z]?)", "")]:
        assert score({"type": "pattern", "pattern": regex}, output, "4").details["inspect_reason"] == "no_response"
    for spec, target in [({"type": "match"}, "."), ({"type": "includes"}, "")]:
        for empty in ["", "   ", "\n\t "]:
            got = score(spec, empty, target)
            assert (got.value, got.details["inspect_reason"]) == (1.0, "no_response")


STR_TO_FLOAT = [  # tests/util/test_str_to_float.py, for the ported `unicode_number_to_float` and `normalize_number`
    ("1²", 1.0), ("2³", 8.0), ("5⁴", 625.0), ("2.5²", 6.25), ("-2²", 4.0), ("-2³", -8.0), ("2⁴⁵", 2.0**45), ("½", 0.5),
    ("⅛", 0.125), ("2½", 2.5), ("-1¼", -1.25), ("+½", 0.5), ("-½²", 0.25), ("½²³", 0.5**23), ("-2½²", 6.25),
    ("４５．６", 45.6), ("1 234,56", 1234.56), ("1,234.56", 1234.56), ("1.234,56", 1234.56), ("12\u00a0345,67", 12345.67),
    ("3’141’592,65", 3141592.65), ("١٢٬٣٤٥٫٦٧", 12345.67), ("−-+3", 3.0), ("－3", -3.0), ("+＋3", 3.0), ("Ⅻ", 12.0),
    ("12⅓", 12 + 1 / 3), ("1.5⁻³", 1.5**-3), ("1e3²", 1_000.0**2), ("1.2E3³", 1_200.0**3), ("一百二十三", 123.0),
    ("两千零三", 2003.0), ("壹仟贰佰叁拾肆", 1234.0), ("二〇二五", 2025.0), ("十", 10.0), ("廿三", 23.0), ("卌六", 46.0),
    ("一百二十三点四五", 123.45), ("十二⅓", 12 + 1 / 3), ("一兆二千三百四十五亿六千七百八十九万零一", 1_234_567_890_001.0),
]


def test_the_number_reader_reads_what_inspects_tests_read() -> None:
    for written, value in STR_TO_FLOAT:
        assert inspect_text.unicode_number_to_float(written) == pytest.approx(value), written
    for bad in ["abc", "1x2", "1½⅓", "", "a½", "½¾", "⁺²"]:
        with pytest.raises(ValueError):
            inspect_text.unicode_number_to_float(bad)
    written = ["5 some text", "5abc", "3.14foo", "−5", "-½", "2½", "一百二十三", "１２３", "inf", "nan"]
    assert [inspect_text.normalize_number(s) for s in written] == ["5 some text", "5abc", "3.14foo", "-5", "-0.5", "2.5", "123", "123", "inf", "nan"]
    assert inspect_text.strip_numeric_punctuation("\\$20") == "20" and inspect_text.strip_numeric_punctuation("60%") == "60%"


# --- what tracejudge adds: targets, missing data, reasons ----------------------------------------------------------


def test_targets_are_read_as_inspects_datasets_read_them() -> None:
    assert score({"type": "match", "numeric": True}, "It is 42.", 42).value == 1.0  # 42 → "42"
    assert score({"type": "exact"}, "1.0", 1.0).value == 1.0  # 1.0 → "1.0"
    assert score({"type": "includes"}, "True story", True).value == 1.0  # True → "True"
    assert score({"type": "includes"}, "b", ["a", "b"]).value == 1.0 and score({"type": "includes"}, "c", ["a", "b"]).value == 0.0
    empty = score({"type": "includes"}, "x", [])
    assert (empty.value, empty.passed, empty.details["answer"]) == (0.0, False, None)  # inspect's empty Target: I
    for bad in [{"a": 1}, [["a"]], [None]]:
        got = score({"type": "includes"}, "a", bad)
        assert got.value is None and "needs expected_output as a text or a list of texts" in got.reason


def test_a_missing_output_or_expectation_scores_null() -> None:
    for spec in STRING_SCORERS + PATTERN_SCORERS:
        assert score(spec, "x", None).reason == "not computed: the case has no expected_output"
        assert score(spec, None, "x").reason == "not computed: the trace has no final output (trace.output)"
        no_trace = build_metric(spec).evaluate(Case.model_validate({"id": "c", "expected_output": "x"}))
        assert (no_trace.value, no_trace.reason) == (None, "not computed: the case has no trace")


def test_reasons_give_the_answer_the_targets_and_the_rule() -> None:
    assert score(NUMERIC, "28 + 32 = 61", ["60", "sixty"]).reason == (
        "I: the output ends with none of '60', 'sixty' (inspect match, location=end, numeric: numbers to 5 significant digits, "
        "case ignored, edge punctuation and whitespace stripped)")
    assert score(NUMERIC, "28 + 32 = 61", "60").reason.startswith("I: the last number of the output is '61', none of '60' (")
    assert score({"type": "f1"}, "Paris", ["London", "Paris, Texas"]).reason.startswith(
        "F1 0.67: against target 'Paris, Texas', 1 shared of the output's 1 tokens and the target's 2 (inspect f1:")
    assert score({"type": "answer", "pattern": "letter"}, "ANSWER: B", ["A", "C"]).reason == (
        "I: the ANSWER: letter pattern captured 'B', none of the targets 'A', 'C' (inspect answer, pattern=letter, case ignored)")
    assert score({"type": "exact"}, "The Paris!", "paris").reason.startswith("C: the output normalises to 'paris', as target 'paris' does")


def test_threshold_and_name() -> None:
    assert score({"type": "f1", "threshold": 0.5}, "Paris", "Paris, Texas").passed is True
    assert score({"type": "f1"}, "Paris", "Paris, Texas").passed is False  # default 1.0
    assert build_metric({"type": "match", "name": "gsm8k"}).key == "gsm8k" and build_metric({"type": "match"}).key == "match"


def test_registered_under_inspects_names() -> None:
    for name in ["includes", "match", "exact", "f1", "pattern", "answer"]:
        cls = metric_types()[name]
        assert cls.__name__ == name and cls.__doc__ and cls.__doc__.startswith(f"inspect's `{name}()`")
    from tracejudge.stages.extract.struct_score import AUDITED

    assert not AUDITED & {"includes", "match", "exact", "f1", "pattern", "answer"}


# --- config errors ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, loc, words", [
    ({"type": "match", "locaton": "end"}, ("locaton",), "unknown parameter"),
    ({"type": "includes", "answer_fn": "x"}, ("answer_fn",), "unknown parameter"),
    ({"type": "f1", "answer_fn": "mod:fn"}, ("answer_fn",), "unknown parameter"),
    ({"type": "match", "location": "middle"}, ("location",), "'begin', 'end', 'any' or 'exact'"),
    ({"type": "pattern", "pattern": "(unclosed"}, ("pattern",), "invalid regular expression: missing ), unterminated subpattern"),
    ({"type": "pattern"}, ("pattern",), "required parameter is missing"),
    ({"type": "answer", "pattern": "sentence"}, ("pattern",), "'letter', 'word' or 'line'"),
    ({"type": "f1", "stop_words": "the"}, ("stop_words",), "Input should be a list"),
])
def test_config_errors_name_the_field(spec: dict[str, Any], loc: tuple[str, ...], words: str) -> None:
    with pytest.raises(SpecError) as err:
        build_metric(spec)
    assert err.value.loc == loc and words in err.value.msg and err.value.msg.startswith(f"{spec['type']}: "), err.value.msg


def test_a_config_error_stops_the_run_naming_the_field(tmp_path: Path) -> None:
    done = run_cli(tmp_path, [{"type": "pattern", "pattern": "ANSWER: (A|B"}], [{"id": "a", "expected_output": "A", "trace": {"output": "x"}}])
    assert done.returncode == 2 and "metrics.0.pattern: pattern: invalid regular expression" in done.stderr, done.stderr


# --- end to end ------------------------------------------------------------------------------------------------------


def test_end_to_end_through_the_command_line(tmp_path: Path) -> None:
    cases = [
        {"id": "right", "expected_output": ["60", "sixty"], "trace": {"output": "28 + 32 = 60\nANSWER: 60"}},
        {"id": "wrong", "expected_output": "60", "trace": {"output": "The answer is 61\nANSWER: 61"}},
        {"id": "words", "expected_output": "Paris, Texas", "trace": {"output": "ANSWER: Paris"}},
        {"id": "no-expectation", "trace": {"output": "60"}},
    ]
    metrics = [{"type": "match", "numeric": True}, {"type": "includes"}, {"type": "exact"}, {"type": "f1", "threshold": 0.5},
               {"type": "pattern", "pattern": r"ANSWER: (\w+)", "name": "after_answer"}, {"type": "answer", "pattern": "word"}]
    done = run_cli(tmp_path, metrics, cases)
    assert done.returncode in (0, 1), done.stderr
    rows = {r["case_id"]: r["scores"] for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    values = {cid: {k: s["value"] for k, s in scores.items()} for cid, scores in rows.items()}
    # f1 of "right": the output's tokens 28.0, 32.0, 60, answer, 60.0 ("=" and "+" leave none) against 60.0: 2·(1/5)·1 / (6/5)
    assert values["right"] == {"match": 1.0, "includes": 1.0, "exact": 0.0, "f1": 0.33, "after_answer": 1.0, "answer": 1.0}
    assert values["wrong"] == {"match": 0.0, "includes": 0.0, "exact": 0.0, "f1": 0.0, "after_answer": 0.0, "answer": 0.0}
    assert values["words"] == {"match": 0.0, "includes": 0.0, "exact": 0.0, "f1": 0.5, "after_answer": 0.0, "answer": 0.0}
    assert set(values["no-expectation"].values()) == {None}
    assert rows["right"]["includes"]["passed"] is True and rows["words"]["f1"]["passed"] is True and rows["right"]["f1"]["passed"] is False
    assert rows["right"]["answer"]["reason"].startswith("C: the ANSWER: word pattern captured '60', which is a target of '60', 'sixty'")
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["metrics"]["includes"]["mean"] == pytest.approx(1 / 3) and summary["metrics"]["includes"]["scored"] == 3


# --- 2. inspect-ai's own scorers on random inputs ------------------------------------------------------------------

WORDS = ["Paris", "paris", "PARIS", "Texas", "the", "a", "An", "yes", "No", "foo", "bar", "Straße", "STRASSE", "İstanbul", "café",
         "naïve", "don't", "U.S.", "well-known", "x", "e", "answer", "ANSWER", "Ⅻ", "σ", "Σ", "ﬁne"]
NUMBERS = ["60", "60%", "-5", "−5", "+5", "5.0", "3.14", "3.14.", "(42)", "42!", "$1,234.50", "1,234", "1.234,56", "1e3", "½", "-½",
           "2½", "三", "一百二十三", "１２３", "٤٥", "0.1", ".5", "5.", "1_000", "inf", "nan", "3²", "\\$20", "*20*", "<42", "~42",
           "00", "1/2", "25", "5", "110", "10", "1000", "-0.5", "2.5", "0", "-0", "123", "12345678", "1.23456789", "€5", "£5"]
MARKS = [".", ",", "!", "?", ":", ";", "(", ")", '"', "'", "**", "...", "-", "—", "_"]
SEPARATORS = [" ", " ", " ", "  ", "\n", "\t", ", ", " - ", "\u00a0"]


def _phrase(rng: random.Random, n: int) -> str:
    parts = []
    for _ in range(n):
        pick = rng.random()
        piece = rng.choice(NUMBERS) if pick < 0.35 else rng.choice(WORDS) if pick < 0.85 else rng.choice(MARKS)
        parts.append(piece + rng.choice(SEPARATORS))
    text = "".join(parts)
    return text if rng.random() < 0.5 else text.strip()


def _completion(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.06:
        return rng.choice(["", " ", "\n\t "])
    body = _phrase(rng, rng.randint(1, 8))
    if kind < 0.55:  # an `ANSWER:` line, sometimes two, in inspect's and in other spellings
        ans = rng.choice([rng.choice("ABCDabcd"), rng.choice(WORDS), rng.choice(NUMBERS), _phrase(rng, 3)])
        marker = rng.choice(["ANSWER: ", "ANSWER:", "answer : ", "ANSWER:\n", "**ANSWER: ", "Answer:  "])
        tail = rng.choice(["", "", ".", "\n", " then more", "**", ",\n", "\nDone."])
        body = rng.choice([f"{body}\n{marker}{ans}{tail}", f"{marker}{ans}{tail}", f"ANSWER: {rng.choice('ABCD')}\n{body}\n{marker}{ans}{tail}"])
    return body if rng.random() < 0.85 else rng.choice([" ", "\n", "  "]) + body + rng.choice([" ", "\n", "."])


def _captured(completion: str, specs: list[dict[str, Any]]) -> list[str]:
    """What the `pattern` and `answer` specs' regexes capture in the output (to draw targets that can match)."""
    out = []
    for spec in specs:
        if spec["type"] in ("pattern", "answer"):
            regex = inspect_text.ANSWER_PATTERNS.get(spec["pattern"], spec["pattern"])
            found = re.search(regex, completion, re.IGNORECASE if spec.get("ignore_case", True) else 0)
            out += [g for g in (found.groups() or (found.group(0),)) if g] if found else []
    return out


def _targets(rng: random.Random, completion: str, captured: list[str]) -> list[str]:
    out = []
    words = completion.split()
    likely = captured * 3 + [*re.findall(r"\d+", completion)[:1], *words[:1], *words[-1:]]
    if captured and rng.random() < 0.6:  # the first target often what an extracting scorer finds
        out.append(rng.choice([rng.choice(captured), rng.choice(captured).upper()]))
    for _ in range(rng.choice([0, 1, 1, 1, 2, 3]) if out else rng.choice([1, 1, 1, 2, 3])):
        pick = rng.random()
        if pick < 0.3 and likely:  # what a pattern or an `ANSWER:` is likely to extract
            t = rng.choice(likely).strip("*")
        elif pick < 0.45 and words:  # a piece of the output: at its start, end or middle
            i = rng.randrange(len(words))
            t = " ".join(rng.choice([words[:i + 1], words[i:], words[i:i + 2]]))
        elif pick < 0.55 and words:  # one word of it
            t = rng.choice(words)
            t = rng.choice([t, t.strip(".,!?:;()*\"'")])
        elif pick < 0.75:
            t = rng.choice(NUMBERS)
        elif pick < 0.9:
            t = rng.choice(WORDS + list("ABCD"))
        else:
            t = rng.choice(["", " ", ".", "the", "-", "a b", "Paris, Texas"])
        out.append(rng.choice([t, t, t, t.upper(), t.lower(), f" {t} ", t + "."]))
    return out


PATTERNS = [r"(\d+)", r"ANSWER:\s*(\w+)", r"(foo|bar)", r"(\w+) (\w+)", r"(\w+)?\s*(\d+)?", r"[A-D]", r"(?:x)?(\d*)", r"^(.*)$",
            r"(Paris|paris)", r"(\S+)$", r"(a)|(b)|(c)", r"ANSWER: ([A-D])"]


def _specs(rng: random.Random) -> list[dict[str, Any]]:
    return [
        {"type": "includes", "ignore_case": rng.random() < 0.7},
        {"type": "match", "location": rng.choice(["begin", "end", "any", "exact"]), "ignore_case": rng.random() < 0.7,
         "numeric": rng.random() < 0.6},
        {"type": "exact"},
        {"type": "f1"} if rng.random() < 0.7 else {"type": "f1", "stop_words": rng.sample(WORDS + ["the", "Texas"], 2)},
        {"type": "pattern", "pattern": rng.choice(PATTERNS), "ignore_case": rng.random() < 0.7, "match_all": rng.random() < 0.3},
        {"type": "answer", "pattern": rng.choice(["letter", "word", "line"])},
    ]


def _inspect_scorer(spec: dict[str, Any]) -> Any:
    import inspect_ai.scorer as scorers

    params = {k: v for k, v in spec.items() if k != "type"}
    return getattr(scorers, spec["type"])(**params)


def test_inspects_own_scorers_agree_on_random_outputs_and_targets() -> None:
    pytest.importorskip("inspect_ai", reason="inspect-ai (the peers extra) is not installed")
    import asyncio

    from inspect_ai.model import ModelName, ModelOutput
    from inspect_ai.scorer import Target, value_to_float
    from inspect_ai.solver import TaskState

    rng = random.Random(20260822)
    inputs = []
    for _ in range(400):
        completion, specs = _completion(rng), _specs(rng)
        inputs.append((completion, _targets(rng, completion, _captured(completion, specs)), specs))
    to_float = value_to_float()

    async def theirs() -> list[list[Any]]:
        out = []
        for completion, targets, specs in inputs:
            state = TaskState(model=ModelName(model="fake/model"), sample_id=0, epoch=0, input=[], messages=[],
                              output=ModelOutput.from_content(model="model", content=completion))
            out.append([await _inspect_scorer(spec)(state, Target(targets)) for spec in specs])
        return out

    compared, kinds = 0, {"C": 0, "I": 0}
    for (completion, targets, specs), results in zip(inputs, asyncio.run(theirs())):
        for spec, want in zip(specs, results):
            expected = targets if len(targets) > 1 or rng.random() < 0.5 else targets[0]  # a one-item list or the text itself
            got = score(spec, completion, expected)
            where = f"{spec} on {completion!r} against {targets!r}: inspect {want.value!r} answer {want.answer!r}, ours {got.reason}"
            assert got.value == to_float(want.value) and got.details["inspect_value"] == want.value, where
            assert got.details["answer"] == want.answer and got.details.get("inspect_reason") == want.reason, where
            if isinstance(want.value, str):
                assert got.passed is (want.value == "C"), where
                kinds[want.value] += 1
            compared += 1
    assert compared == 2400 and min(kinds.values()) > 300, kinds  # both verdicts well represented
