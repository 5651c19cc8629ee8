"""A credential under a key named `token` alone, its value unquoted, as YAML, logs and query strings write it.

`token: tok_9f8e7d6c` and `token=tok_9f8e7d6c&page=2` were shown in clear (only the quoted forms, `token: "tok_…"`,
were masked), and so was the key after GitHub's `Authorization: token …` scheme, where a reply's text had the word
`token` masked instead. Under `token` a count (`token: 512`) and a word (`token: the`) are evidence a judge needs:
the unquoted value counts by the quoted form's shape (8+ token characters with a letter and a digit), read to its
end. The rule is read once per value: a megabyte of repeated `token=` costs about what a megabyte of plain text does
(it cost hours: each `token=` read the rest of the text). The canaries are assembled at run time and are fake.
"""

from __future__ import annotations

import json
import sys
import time
from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tracejudge.llm.redact import MASK, redact, redact_quoted

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
try:
    import _floor_rules as floor
finally:
    sys.path.pop(0)

SHORT = "tok_" + "9f8e7d6c"  # 12 characters, letters and digits: a credential
HEX40 = "0123456789" + "abcdef" * 5  # a GitHub OAuth token's shape (40 hex digits)
# What stays under `token`: a count, a word, a word of a tokenizer's, digits alone, a run too short.
KEPT = ["512", "the", "hello-world", "12345678", "a1b2c3d", "##ing"]


@pytest.mark.parametrize("template", [
    "token: {}", "token={}", "Token = {}", "TOKEN: {}", "?token={}&page=2", "GET /v1/items?user=ann&token={}#top",
    "Authorization token={}", "{{token: {}}}", "token: {}, user: ann", "(token={})", "[token: {}]", "token: {};",
    "<token={}>", "log line token={} user=ann", "a\\ntoken: {}\\nb", 'msg="token={}"', "'token: {}'",
])
def test_an_unquoted_credential_under_token_is_masked_and_a_count_or_a_word_kept(template: str) -> None:
    text = template.format(SHORT)
    for masked in (redact_quoted(text), redact(text), floor.redact(text)):
        assert SHORT not in masked and MASK in masked, (text, masked)
        assert masked == text.replace(SHORT, MASK), (text, masked)  # to the value's end, and no further
    for value in KEPT:
        kept = template.format(value)
        assert redact_quoted(kept) is kept and redact(kept) == kept and floor.redact(kept) == kept, kept


@pytest.mark.parametrize("text", [
    "token: " + SHORT + "==",  # base64 padding is the value's
    "token=" + "sk-" + "abc123def456" + "&x=1",  # too short for trace text's `sk-` rule (20+)
    "Token: Bearer " + "ab12cd34ef",
    json.dumps({"log": "started\ntoken: " + SHORT + "\nready"}),  # a line of a JSON-encoded text
])
def test_more_unquoted_forms(text: str) -> None:
    for masked in (redact_quoted(text), redact(text)):
        assert "9f8e7d6c" not in masked and "abc123def456" not in masked and "ab12cd34ef" not in masked, masked
    assert floor.redact(text) == redact_quoted(text)


@pytest.mark.parametrize("text", ["max_tokens: 512", "token_count=12", "tokens: 40", "next_token=" + SHORT,
                                  "page_token=" + SHORT, "nextPageToken: " + SHORT, "tokens=" + SHORT])
def test_another_name_than_token_keeps_its_value(text: str) -> None:
    # (a count's name, a pagination cursor's: only `token` alone reads a short value as a credential)
    assert redact_quoted(text) is text and redact(text) == text and floor.redact(text) == text
    # and the same key with `token` alone masks it (the rule above, here beside the names that keep)
    sep = ":" if ":" in text else "="
    assert SHORT not in redact_quoted(f"token{sep}{SHORT}") and SHORT not in redact(f"token{sep} {SHORT}")


def test_githubs_token_scheme_keeps_the_scheme_and_masks_the_key() -> None:
    for text in (f"Authorization: token {HEX40}", f'{{"headers": "authorization=token {HEX40}"}}'):
        for masked in (redact(text), redact_quoted(text)):
            assert HEX40 not in masked and "token [REDACTED]" in masked, masked
        assert floor.redact(text) == redact_quoted(text)


# ---- any credential-shaped value, in any context: never left in the masked text ----

_V = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._~+/-"
_credential = st.tuples(st.text(_V, min_size=6, max_size=40), st.sampled_from("abcXYZ"), st.sampled_from("0123456789"),
                        st.sampled_from(["", "=", "=="])).map(lambda t: t[0][:3] + t[1] + t[0][3:] + t[2] + t[3])
_before = st.sampled_from(["", " ", "\n", "x ", "{", "(", "[", "?", "&", "a=1&", "log: ", "\\n", '"', "msg='"])
_key = st.sampled_from(["token", "Token", "TOKEN"])
_sep = st.sampled_from([": ", ":", "=", " = ", ":\t", ": Bearer ", "= Basic "])
_after = st.sampled_from(["", " ", "\n", ",", ", user: ann", ";", "&page=2", "#frag", ")", "]", "}", ">", '"', "'", "\\n",
                          '\\"', " and more"])


@settings(max_examples=300, deadline=None)
@given(_before, _key, _sep, _credential, st.one_of(st.integers(0, 10**9).map(str), st.text("abcdefghij-#", min_size=1, max_size=20)),
       _after)
def test_the_masked_text_never_holds_the_credential_and_keeps_a_count_or_a_word(before: str, key: str, sep: str, secret: str,
                                                                                 plain: str, after: str) -> None:
    text = before + key + sep + secret + after
    for masked in (redact_quoted(text), redact(text)):
        assert secret not in masked, (text, masked)
    if "Bearer" in sep or "Basic" in sep:
        return  # (a scheme's short word: `redact` masks 4+ characters after it, whatever they are)
    text = before + key + sep + plain + after
    assert redact_quoted(text) == text and redact(text) == text, text


# ---- linear time: a megabyte of the rule's worst case costs about what a megabyte of plain text does ----

_MB = 1 << 20
_PLAIN = ("lorem ipsum dolor sit amet, " * (_MB // 28 + 1))[:_MB]
ADVERSARIAL = {
    "token= repeated": ("token=" * (_MB // 6)) + "x",  # each `token=` a value start inside one run of token characters
    "token: a run without a digit": "token: " + "ab-cd." * (_MB // 6) + "!",
    "token= letter blocks": ("token=" + "ab" * 29) * (_MB // 64) + "!",  # a value's lookahead reads its own block only
    "password= repeated": ("password=" * (_MB // 9)) + "x",  # (a name's 16+ rule, which the one under `token` tries first)
}


def _cost(text: str) -> float:
    started = time.process_time()  # (CPU time: other processes on the machine do not count)
    redact_quoted(text)
    redact(text)
    return time.process_time() - started


@cache
def _plain_cost() -> float:
    return _cost(_PLAIN)


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_the_rule_stays_linear_on_a_megabyte(name: str) -> None:
    # Linear, it costs a small multiple of the plain megabyte (measured: about 0.2x to 1x); quadratic, hours.
    assert _cost(ADVERSARIAL[name]) < 10 * _plain_cost() + 1.0, name
