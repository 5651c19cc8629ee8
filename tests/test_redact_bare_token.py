"""A value under a key named `token` alone: masked when it is a credential, kept when it is a word or a count.

`"token": "tok_9f8e7d6c"` (a session's or an API's token, 12 characters) was shown in clear in trace text and in a
call's text: after `token` only a run of 16 or more counted. Under `token` a tokenizer's trace keeps a word (`"the"`)
and a usage record a count (`512`), which a judge needs; so a string of 8 or more of a token's characters with a
letter and a digit is masked, and any string when another key of its mapping shows an authentication (`username`,
`client_id`, `token_type`, `expires_in`, …) wherever a mapping is at hand (a call's arguments, their differences);
a number never. The canaries are fake.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tracejudge.llm.redact import MASK, masked_under, redact_quoted
from tracejudge.stages.score.call_text import render_call
from tracejudge.stages.score.value_match import first_difference, short_pair

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
try:
    import _floor_rules as floor
finally:
    sys.path.pop(0)

SHORT = "tok_" + "9f8e7d6c"  # 12 characters, letters and digits: a credential


@pytest.mark.parametrize("text", [
    json.dumps({"token": SHORT, "user": "ann"}),
    json.dumps({"Token": SHORT}),
    "{'TOKEN': '%s'}" % SHORT,
    json.dumps({"body": json.dumps({"token": SHORT})}),
    json.dumps({"token": "Bearer " + "ab12cd34"}),
    json.dumps({"token": "a1b2c3d4"}),  # 8: the least
])
def test_a_credential_under_token_is_masked_in_text(text: str) -> None:
    got = redact_quoted(text)
    assert SHORT not in got and "ab12cd34" not in got and "a1b2c3d4" not in got and MASK in got, got
    assert floor.redact(text) == got


@pytest.mark.parametrize("text", [
    '{"token": "the", "logprob": -0.1}', '{"token": "##ing"}', '{"token": "hello-world"}', '{"token": "12345678"}',
    '{"token": 51234567}', '{"token": "a1b2c3d"}', '{"token": "ab12 cd34xyz"}', '{"next_token": "%s"}' % SHORT,
    '{"tokens": "%s"}' % SHORT, '{"token_count": 4096}',
])
def test_a_word_or_a_count_under_token_is_kept(text: str) -> None:
    assert redact_quoted(text) is text and floor.redact(text) == text


def test_a_calls_text_and_an_arguments_difference_mask_it() -> None:
    assert render_call("call", {"token": SHORT}) == f'call({{"token":"{MASK}"}})' == floor.render_call("call", {"token": SHORT})
    assert short_pair(SHORT, SHORT + "x", key="token") == (MASK, MASK)
    assert first_difference({"token": SHORT}, {"token": "tok_" + "11112222"}) == f"token: expected {MASK}, got {MASK}"
    assert floor.difference({"token": SHORT}, {"token": "tok_" + "11112222"}) == f"token: expected {MASK}, got {MASK}"
    # A count or a word stays.
    assert render_call("count", {"token": 512}) == 'count({"token":512})'
    assert first_difference({"token": "the"}, {"token": "a"}) == 'token: expected "the", got "a"'


AUTH = [{"username": "ann", "token": "abc"}, {"token": "abc", "token_type": "bearer", "expires_in": 3600},
        {"client_id": "app1", "Token": "abc"}, {"token": "abc", "password": "x"}]


@pytest.mark.parametrize("args", AUTH)
def test_beside_an_authentications_keys_any_string_under_token_is_masked(args: dict) -> None:
    key = next(k for k in args if k.lower() == "token")
    assert masked_under(key, "abc", args) and not masked_under(key, "abc")  # (alone, "abc" is a word)
    call = render_call("login", args)
    assert '"abc"' not in call and f'"{key}":"{MASK}"' in call, call
    assert floor.render_call("login", args) == call
    got = {**args, key: "abd"}
    diff = first_difference(args, got)
    assert diff == f"{key}: expected {MASK}, got {MASK}" == floor.difference(args, got), diff
    assert not masked_under(key, 3600, args)  # a number stays a count


def test_without_them_a_word_stays() -> None:
    args = {"token": "abc", "logprob": -0.2, "id": 464}
    assert render_call("decode", args) == 'decode({"id":464,"logprob":-0.2,"token":"abc"})' == floor.render_call("decode", args)
    assert first_difference(args, {**args, "token": "abd"}) == 'token: expected "abc", got "abd"'
