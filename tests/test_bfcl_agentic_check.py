"""`Contains(match="bfcl")` gives BFCL's own verdict on memory and web_search answers.

BFCL's agentic checker (bfcl_eval/eval_checker/agentic_eval/agentic_checker.py) drops `,./-_*^()` from both
texts, lower-cases them, turns `'` into `"`, then searches each accepted answer between `\\b` word boundaries.
Each expected verdict below is what that checker returns for the pair (bfcl-eval 2026.3.23); the accepted
answers are BFCL_v4_memory / BFCL_v4_web_search possible answers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tracejudge.core.records import Case
from tracejudge.core.registry import format_for
from tracejudge.stages.extract import extract_record
from tracejudge.stages.score import Contains

# (final reply, accepted answers, BFCL's verdict)
_VERDICTS = [
    # the checker's own docstring: "April 1, 2024 vs April 1,2024, vs April 1 2024" (whitespace is kept, so the
    # second is not found although the docstring says whitespace is ignored)
    ("The date is April 1 2024.", ["April 1, 2024"], True),
    ("The date is April 1, 2024.", ["April 1, 2024"], True),
    ("The date is April 1,2024.", ["April 1, 2024"], False),
    ("You told me you are Thirty Five.", ["35", "thirty five"], True),
    ("Your order total is 135 dollars.", ["35"], False),  # a substring, not a word
    ("Thirtyfive", ["thirty"], False),
    ("Your plan costs $49.99 a month.", ["49.99", "$49.99"], True),
    ("Your plan costs 4999 cents.", ["49.99", "$49.99"], True),  # the dot is dropped on both sides
    ("Your plan costs $149.99.", ["49.99", "$49.99"], False),
    ("Office hours: 10 AM - 12 PM.", ["10 AM - 12 PM"], True),
    ("Office hours: 10 AM-12 PM.", ["10 AM - 12 PM"], False),
    ("His brother is Finneas O'Connell.", ["Finneas O'Connell", "Finneas Baird O'Connell"], True),
    ('His brother is Finneas O"Connell.', ["Finneas O'Connell"], True),  # ' reads as "
    ("It was released on 2024/10/25.", ["2024-10-25"], True),
    ("It was released on 2024 10 25.", ["2024-10-25"], False),
    ("She lives in EngiHouse.", ["Engi-House"], True),
    ("She lives in Engi House.", ["Engi-House"], False),
    ("Ask Dr. Smith (the surgeon)", ["dr smith"], True),
    # an answer that starts with a non-word character needs a word character before it: never found after a space
    ("It grossed $222 million", ["$222 million"], False),
    ("He said 'yes'", ['"yes"'], False),
    ("café", ["CAFÉ"], True),
    ("cafés", ["café"], False),
    ("anything", [""], True),
    ("!!!", [""], False),
]


def _case(output: str, answers: list[str]) -> Case:
    return Case.model_validate({"id": "memory_1-customer-1", "expected_output": answers,
                                "trace": {"steps": [], "output": output}})


@pytest.mark.parametrize(("output", "answers", "verdict"), _VERDICTS)
def test_bfcl_matching_gives_the_bfcl_checker_s_verdict(output: str, answers: list[str], verdict: bool):
    score = Contains(match="bfcl").evaluate(_case(output, answers))
    assert (score.value, score.passed) == ((1.0, True) if verdict else (0.0, False)), score.reason


def test_bfcl_matching_applies_to_a_configured_text_and_says_which_rules_it_used():
    metric = Contains(value="April 1, 2024", match="bfcl")
    hit = metric.evaluate(_case("The date is april 1 2024!", []))
    assert hit.value == 1.0 and "BFCL" in hit.reason
    assert metric.evaluate(_case("The date is April 1,2024.", [])).value == 0.0
    miss = Contains(match="bfcl").evaluate(_case("You are 53.", ["35", "thirty five"]))
    assert miss.value == 0.0 and "'35', 'thirty five'" in miss.reason and "BFCL" in miss.reason


def test_bfcl_matching_refuses_case_sensitive():
    with pytest.raises(ValueError, match="case_sensitive"):
        Contains(match="bfcl", case_sensitive=True)


def test_a_bfcl_memory_question_scored_by_bfcl_rules(tmp_path: Path):
    # the shapes of BFCL_v4_memory.json and its possible answer, read by `format: bfcl`
    (tmp_path / "possible_answer").mkdir()
    (tmp_path / "possible_answer" / "BFCL_v4_memory.json").write_text(json.dumps(
        {"id": "memory_22-customer-22", "ground_truth": ["49.99", "$49.99"]}) + "\n")
    (tmp_path / "BFCL_v4_memory.json").write_text(json.dumps(
        {"id": "memory_22-customer-22", "question": [[{"role": "user", "content": "What does my plan cost?"}]],
         "involved_classes": ["MemoryAPI"], "scenario": "customer"}) + "\n")

    class _Dataset:
        path, tasks, limit, options = tmp_path / "BFCL_v4_memory.json", None, None, {}

    fmt = format_for("bfcl")
    [case] = [extract_record(raw, fmt, fmt.prepare(_Dataset)) for raw in fmt.read(_Dataset)]
    said = Case.model_validate({**case.model_dump(), "trace": {"steps": [], "output": "It is $149.99 a month."}})
    assert Contains().evaluate(said).value == 1.0  # a plain substring test finds "49.99" inside "149.99"
    assert Contains(match="bfcl").evaluate(said).value == 0.0  # BFCL does not


@pytest.mark.parametrize(("spec", "warned"), [
    ({"type": "Contains"}, True),
    ({"type": "Contains", "case_sensitive": True}, True),
    ({"type": "Contains", "match": "bfcl"}, False),
    ({"type": "Contains", "value": "Paris"}, False),  # a text of the user's own, not BFCL's answers
    ({"type": "ExactMatch"}, False),
])
def test_a_bfcl_run_scoring_answers_with_a_plain_substring_test_is_told_of_match_bfcl(tmp_path: Path, data_dir: Path, spec: dict,
                                                                                     warned: bool):
    from tracejudge.core.config import run_warnings, validate_config

    data = data_dir / "bfcl" / "BFCL_v4_simple_python.json"
    config = validate_config({"dataset": {"path": str(data), "format": "bfcl"}, "metrics": [{"type": "ToolCalls"}, spec],
                              "run": {"dir": str(tmp_path / "run")}}, scoring=False)  # (a run would add its `target:`)
    notes = [n for n in run_warnings(config) if "match: bfcl" in n]
    assert bool(notes) is warned
    if warned:
        assert notes[0].startswith("metrics.1: Contains reads BFCL's accepted answers")
    native = validate_config({"dataset": {"path": str(data), "format": "native"}, "metrics": [spec], "run": {"dir": str(tmp_path / "n")}},
                             check_files=False)
    assert not [n for n in run_warnings(native) if "match: bfcl" in n]  # (another format: Contains is the user's to mean)
