"""A credential's field under the names applications give it beside the plain one: `password_confirmation` (the
sign-up form's second password, Rails' and Laravel's name), `PASSWORD_CONFIRM`, plurals (`passwords`, `secrets`,
`passphrases`) — masked in trace text, in reasons' argument differences and calls, and in details and metadata, as
`password` is; `password_hint`, `tokens` (counts) and prose stay as written. The floor benchmark's copy of the rules
masks them alike."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from tracejudge.llm.redact import MASK, masked_under, redact_details, redact_labels, redact_quoted

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
try:
    import _floor_rules as floor
finally:
    sys.path.pop(0)

MASKED = ['{"password_confirmation": "CONFexp-b"}', '{"PASSWORD_CONFIRM": "x1-secret"}', '{"passwords": "PLIST1"}',
          '{"secrets": "SMAPval"}', '{"passphrases": "a b c"}', "user=a&password_confirmation=Hunter22&ok=1"]
KEPT = ['{"password_hint": "my dog"}', '{"tokens": 1234}', "the passwords do not match", "secrets: none stored",
        '{"input_tokens": 12345}']


@pytest.mark.parametrize("text", MASKED)
def test_the_names_variants_are_masked_in_text(text: str) -> None:
    got = redact_quoted(text)
    assert MASK in got and got == floor.redact(text), (got, floor.redact(text))


@pytest.mark.parametrize("text", KEPT)
def test_other_names_and_prose_stay_as_written(text: str) -> None:
    assert redact_quoted(text) == text == floor.redact(text)


def test_values_under_those_names_are_masked_whole_in_data_and_argument_differences() -> None:
    assert all(masked_under(k, v) for k, v in [("password_confirmation", "x"), ("passwords", ["a"]), ("secrets", {"db": "x"})])
    assert not masked_under("tokens", 5) and not masked_under("password_hint", "dog")
    details = redact_details({"password_confirmation": "C1", "secrets": "S1", "tokens": 12345, "usage": {"input_tokens": 12345}})
    assert details == {"password_confirmation": MASK, "secrets": MASK, "tokens": 12345, "usage": {"input_tokens": 12345}}
    assert redact_labels([], {"passwords": ["P1"], "password_hint": "dog"}) == ([], {"passwords": MASK, "password_hint": "dog"})
