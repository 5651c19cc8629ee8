"""A pagination cursor under a name ending in `token` is kept; a token under `token` alone is masked, its key quoted or not.

Keys ending in `token` name credentials (`access_token`, `github_token`), so `page_token` was masked whole under its key
(a live target's `traces.jsonl`, the viewer's panels, labels, a recorded config) while a reason showed it: a short
cursor (`"pg2"`) is not token-shaped. A long one (Google's `nextPageToken`, AWS's `NextToken`) was masked in text too.
A cursor is a listing's position the agent passes back, no credential: kept by every rule that masks by name.
`token: "tok_9f8e7d6c"` (a key without quotes, as YAML and logs write it) and `token='tok_…'` were kept where
`"token": "tok_…"` was masked; now they follow the same rule (a quoted value of 8+ token characters with a letter and a
digit), and a count (`token: 512`) stays. The canaries are fake.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tracejudge.llm.redact import MASK, masked_under, redact, redact_config, redact_details, redact_labels, redact_quoted
from tracejudge.stages.score.call_text import render_call
from tracejudge.stages.score.value_match import first_difference

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
try:
    import _floor_rules as floor
finally:
    sys.path.pop(0)

CURSOR = "CiAKGjBpNDd2Nmp2" + "Zml2cXBtcjRiN2Y1"  # token-shaped, as Google's and AWS's cursors are
PAGE_KEYS = ["page_token", "next_page_token", "pageToken", "nextPageToken", "NextToken", "nextToken", "next_token",
             "prev_token", "previous_page_token", "ContinuationToken", "NextContinuationToken", "continuation_token",
             "StartingToken", "PAGE-TOKEN"]
CREDENTIAL_KEYS = ["token", "access_token", "refresh_token", "id_token", "auth_token", "github_token", "page_access_token",
                   "nextAccessToken", "session_token", "pagesToken"]


@pytest.mark.parametrize("key", PAGE_KEYS)
def test_a_pagination_cursor_is_kept_by_every_rule(key: str) -> None:
    for value in ("pg2", CURSOR):
        args = {key: value, "query": "files"}
        assert redact_details(args) == args and redact_labels([], args) == ([], args) and redact_config(args) == args
        assert not masked_under(key, value, args)
        for text in (json.dumps(args), json.dumps({"body": json.dumps(args)}), f"{key}: {value}", f"{key}={value}",
                     f'{key}: "{value}"', repr(args)):
            assert redact_quoted(text) is text and redact(text) == text and floor.redact(text) == text, text
        assert render_call("list", args) == floor.render_call("list", args) == f'list({json.dumps(args, sort_keys=True, separators=(",", ":"))})'
        assert first_difference(args, {**args, key: "pg3"}) == f'{key}: expected "{value}", got "pg3"'
        assert floor.labels([], args) == ([], args) and floor._masked(args, False) == args


@pytest.mark.parametrize("key", CREDENTIAL_KEYS)
def test_a_credential_under_a_name_ending_in_token_is_still_masked(key: str) -> None:
    assert redact_details({key: "abc"}) == {key: MASK} == floor._masked({key: "abc"}, False)
    assert redact_labels([], {key: "abc"}) == ([], {key: MASK})
    text = json.dumps({key: CURSOR})
    assert CURSOR not in redact_quoted(text) and floor.redact(text) == redact_quoted(text)
    assert masked_under(key, CURSOR)


def test_a_shape_under_a_cursors_name_is_masked_all_the_same() -> None:
    jwt = "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0In0" + ".c2lnbmF0dXJl"
    text = json.dumps({"page_token": jwt})
    assert redact_quoted(text) == json.dumps({"page_token": MASK}) == floor.redact(text)


SHORT = "tok_" + "9f8e7d6c"


@pytest.mark.parametrize("text", [
    f'token: "{SHORT}"', f"token='{SHORT}'", f'Token = "{SHORT}"', f'TOKEN: "{SHORT}" query: x', f'{{token: "{SHORT}"}}',
    f'log line token="{SHORT}" user=ann', f'token: "Bearer {SHORT}"', json.dumps({"token": SHORT}), f"token: {SHORT}",
])
def test_a_token_under_token_alone_is_masked_whether_its_key_is_quoted_or_not(text: str) -> None:
    for masked in (redact_quoted(text), redact(text), floor.redact(text)):
        assert SHORT not in masked and MASK in masked, (text, masked)
    assert floor.redact(text) == redact_quoted(text)


@pytest.mark.parametrize("text", [
    "token: 512", 'token: "the"', "token='##ing'", 'token: "12345678"', 'token: "a1b2c3d"', "token: a1b2c3d",
    f'x-token: "{SHORT}"', f'my.token: "{SHORT}"', f'next_token: "{SHORT}"', "tokens: 'ab12cd34ef'",
])
def test_a_count_a_word_or_another_name_is_kept(text: str) -> None:
    assert redact_quoted(text) is text and redact(text) == text and floor.redact(text) == text
