"""`peek_id` reads a line's leading id without decoding the line: the id `adapt` would give, for any text."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from tracejudge.core.utf8 import encodable
from tracejudge.stages.extract.native import peek_id


def _usable(cid: str) -> str | None:
    return cid if cid and not cid.isspace() and "\x00" not in cid and encodable(cid) else None


@settings(max_examples=400, deadline=None)
@given(cid=st.text(), ascii_only=st.booleans(), spaced=st.booleans())
def test_a_leading_string_id_peeks_as_the_decoded_line_gives_it(cid, ascii_only, spaced):
    # Escapes (quotes, backslashes, control characters, \uXXXX and surrogate pairs), non-ASCII text and whitespace between
    # the tokens: the peek gives what decoding the whole line gives, or None where `Case` refuses the id.
    sep = (", ", ": ") if spaced else (",", ":")
    line = json.dumps({"id": cid, "trace": {"steps": []}}, ensure_ascii=ascii_only, separators=sep)
    if spaced:
        line = " \t" + line.replace("{", "{ ", 1)
    assert peek_id(line.encode("utf-8", "surrogatepass")) == _usable(json.loads(line)["id"])


@given(number=st.integers(min_value=-(10**30), max_value=10**30))
def test_a_leading_integer_id_peeks_as_its_text(number):
    assert peek_id(f'{{"id": {number}, "trace": {{}}}}'.encode()) == str(number)


def test_an_id_that_is_not_the_first_key_or_not_closed_is_found_by_decoding_or_not_at_all():
    assert peek_id(b'{"trace": {}, "id": "late"}') == "late"
    assert peek_id(b'{"id": "unterminated') is None
    assert peek_id(b'{"id": "a\\"b", "x": 1}') == 'a"b'
    assert peek_id(b'{"id": "\\ud83d\\ude00", "x": 1}') == "\U0001F600"
    assert peek_id(b'{"id": "\\udc80", "x": 1}') is None  # a lone surrogate: UTF-8 cannot carry it
    assert peek_id(b'{"id": "  ", "x": 1}') is None
