"""`Contains`' failure reason quotes the output, as pydantic-evals' `Contains` does: whole up to 100 characters, else
its first and last 50 around `…` with its length, credentials masked in both ends (a key across a cut too).

The canaries are assembled at run time (no credential-shaped literal in the source) and are fake.
"""

from __future__ import annotations

import pytest
from helpers import make_case
from tracejudge.core.registry import build_metric

KEY = "sk-" + "proj-" + "CCCCxxxxYYYYwwwwVVVVuuuu9876"
TAILS = ("CCCCxxxx", "YYYYwwww", "VVVVuuuu", "9876")


def _reason(output: str, **spec: object) -> str:
    got = build_metric({"type": "Contains", "value": "refund", **spec}).evaluate(make_case(None, [], trace={"output": output}))
    assert got.value == 0.0
    return got.reason


def test_a_short_output_is_quoted_whole() -> None:
    assert _reason("no match") == "output 'no match' does not contain 'refund'"
    # the peer: "Output string 'no match' does not contain expected string 'refund'"
    assert _reason("x" * 100) == f"output {'x' * 100!r} does not contain 'refund'"


def test_a_long_output_shows_its_two_ends_and_its_length() -> None:
    out = "Dear customer, " + "we looked into it. " * 20 + "Thanks for waiting."
    assert _reason(out) == f"output {out[:50] + '…' + out[-50:]!r} ({len(out)} characters, the middle left out) does not contain 'refund'"


def test_the_cut_is_made_in_the_text_not_in_its_repr() -> None:
    # pydantic-evals cuts the `repr`, which can split `\x00` into `\x0`; here each end is whole characters, quoted after.
    out = "\x00" * 60 + "y" * 60
    assert _reason(out).startswith("output " + repr("\x00" * 50 + "…" + "y" * 50))


@pytest.mark.parametrize("where", ["start", "across the first cut", "across the last cut", "end"])
def test_a_credential_in_the_output_is_masked_wherever_the_cut_falls(where: str) -> None:
    filler = "word " * 40
    out = {"start": f"{KEY} {filler}", "across the first cut": f"{'a' * 40} {KEY} {filler}",
           "across the last cut": f"{filler} {KEY} {'b' * 30}", "end": f"{filler} key {KEY}"}[where]
    reason = _reason(out)
    assert not any(t in reason for t in TAILS) and "proj-C" not in reason, reason
    assert "[REDAC" in reason


def test_any_of_several_texts_quotes_the_output_too() -> None:
    got = build_metric({"type": "Contains"}).evaluate(make_case(None, [], trace={"output": "no match"}, expected_output=["x", "y"]))
    assert got.reason == "output 'no match' contains none of 'x', 'y'"


def test_require_all_and_bfcl_quote_the_output_as_a_plain_failure_does() -> None:
    # Their reasons named what was missing, never the output it was missing from.
    out = "Dear customer, " + "we looked into it. " * 20 + "Thanks for waiting."
    shown = f"{out[:50] + '…' + out[-50:]!r} ({len(out)} characters, the middle left out)"
    case = make_case(None, [], trace={"output": out})
    every = build_metric({"type": "Contains", "value": ["customer", "refund"], "require": "all"}).evaluate(case)
    assert every.reason == f"output {shown} contains 1 of the 2 expected texts; missing: 'refund'"
    bfcl = build_metric({"type": "Contains", "value": ["refund", "$222 million"], "match": "bfcl"}).evaluate(case)
    assert bfcl.value == 0.0
    assert bfcl.reason == (f"output {shown} mentions none of 'refund', '$222 million' (BFCL's answer check: `,./-_*^()` dropped, "
                           "case ignored, whole words)")
    leaked = build_metric({"type": "Contains", "value": ["refund"], "match": "bfcl"}).evaluate(make_case(None, [], trace={"output": f"key {KEY}"}))
    assert not any(t in leaked.reason for t in TAILS) and "[REDAC" in leaked.reason, leaked.reason


def test_the_reason_does_not_change_a_pass() -> None:
    got = build_metric({"type": "Contains", "value": "refund"}).evaluate(make_case(None, [], trace={"output": "a refund"}))
    assert (got.value, got.reason) == (1.0, "output contains 'refund'")
    every = build_metric({"type": "Contains", "value": ["a", "refund"], "require": "all"}).evaluate(make_case(None, [], trace={"output": "a refund"}))
    assert (every.value, every.reason) == (1.0, "output contains 2 of the 2 expected texts")
