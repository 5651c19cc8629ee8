"""`render_call`'s memo of texts seen to hold no credential (`call_text._CLEAN`) changes no rendered call: the
memo's path (a text seen clean before) gives what the general one (`redact_quoted` every time) gives, on varied
arguments with and without credentials, and a text that needed masking never enters the memo."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracejudge.stages.score import call_text
from tracejudge.stages.score.call_text import render_call

_SECRETS = ["sk-abcdefghij0123456789xyz", "Bearer abcdefghijklmnop1234", "ghp_" + "a1" * 12, "https://u:pw@example.com/x",
            "AKIAABCDEFGHIJKLMNOP", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.sig"]
_word = st.text(st.characters(codec="utf-8", blacklist_categories=("Cs",)), max_size=30)
_value = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _word | st.sampled_from(_SECRETS),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_word, inner, max_size=3), max_leaves=8)
_arguments = st.dictionaries(st.sampled_from(["password", "api_key", "q", "user_id", "note", "x"]) | _word, _value, max_size=7)


def _general(name, arguments, limit=call_text._LIMIT):
    # The general path: nothing remembered before, nothing kept after.
    kept = set(call_text._CLEAN)
    call_text._CLEAN.clear()
    try:
        return render_call(name, arguments, limit)
    finally:
        call_text._CLEAN.clear()
        call_text._CLEAN.update(kept)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(["book", "search_flights", "tool"]), arguments=_arguments | st.none(), limit=st.sampled_from([120, 40, 500]))
def test_the_memo_path_renders_as_the_general_path(name, arguments, limit):
    expected = _general(name, arguments, limit)
    assert render_call(name, arguments, limit) == expected  # (fills the memo where the text is clean)
    assert render_call(name, arguments, limit) == expected  # (reads it)


@pytest.mark.parametrize("secret", _SECRETS)
def test_a_text_that_needed_masking_is_never_remembered(secret):
    call_text._CLEAN.clear()
    shown = render_call("login", {"token": secret, "user": "ann"})
    assert secret not in shown
    assert not call_text._CLEAN
    assert render_call("login", {"token": secret, "user": "ann"}) == shown


def test_a_clean_text_is_remembered_and_read_back():
    call_text._CLEAN.clear()
    first = render_call("search", {"origin": "SFO", "destination": "JFK"})
    assert call_text._CLEAN
    assert render_call("search", {"origin": "SFO", "destination": "JFK"}) == first == 'search({"destination":"JFK","origin":"SFO"})'
