"""A key spelled with `\\u` escapes keeps its spelling when its value is masked.

`"\\u0070assword": "…"` is read as JSON reads it (`password`) so that its value is masked; the masked text spelled the
key plainly, a change to the trace's text beyond its credential (a reason quoting it, a viewer's page, a judge's
prompt showed a key the agent never wrote). Now only the value changes. The canaries are fake.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from tracejudge.llm.redact import MASK, redact, redact_quoted
from tracejudge.llm.reply_secrets import quoted_values

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
try:
    import _floor_rules as floor
finally:
    sys.path.pop(0)

TAIL = "hunter2" + "Tail77"


def _escaped(name: str, every: int = 2) -> str:
    return "".join(f"\\u{ord(c):04x}" if i % every == 0 else c for i, c in enumerate(name))


@pytest.mark.parametrize("name", ["password", "api_key", "Cookie", "db_password", "client_secret"])
@pytest.mark.parametrize("depth", [0, 1, 2])
def test_the_masked_text_keeps_the_keys_spelling(name: str, depth: int) -> None:
    text = '{"%s": "%s", "user": "alice"}' % (_escaped(name), TAIL)
    for _ in range(depth):
        text = json.dumps({"body": text})
    want = text.replace(TAIL, MASK)
    assert redact_quoted(text) == want == redact(text)
    assert floor.redact(text) == want
    assert TAIL in quoted_values(text)  # (a judge quoting it back has it masked too)


def test_a_pin_a_number_and_a_repr_keep_theirs() -> None:
    for text, value in (('{"\\u0070in": "4821", "n": 1}', "4821"), ('{"pass\\u0077ord": 12345678}', "12345678"),
                        ("{'\\u0070assword': '%s'}" % TAIL, TAIL), ('{"\\u0070in": 4821}', "4821")):
        want = text.replace(value, MASK)
        assert redact_quoted(text) == want == redact(text) == floor.redact(text), text


def test_other_keys_and_shapes_in_the_same_text_keep_theirs_too() -> None:
    token = "Zx81qWe" + "rtyUiop4455"
    text = ('{"\\u0070assword": "%s", "n\\u0061me": "\\u0041nn", "Authorization": "Bearer %s", "url": "https://u:%s@h/x",'
            ' "\\u0070assword_hint": "dog"}' % (TAIL, token, TAIL))
    want = ('{"\\u0070assword": "%s", "n\\u0061me": "\\u0041nn", "Authorization": "Bearer %s", "url": "https://u:%s@h/x",'
            ' "\\u0070assword_hint": "dog"}' % (MASK, MASK, MASK))
    assert redact_quoted(text) == want == redact(text) == floor.redact(text)
    for shown in (10, 40):  # cut after the mask, as any text is
        assert redact_quoted(text, shown) == floor.redact(text, shown) and redact_quoted(text, shown).startswith(want[:shown])


def test_a_key_whose_value_is_not_masked_leaves_the_text_as_it_is() -> None:
    for text in ('{"\\u0070assword": ""}', '{"\\u0070assword": null, "x": 1}', '{"p\\u0069n": "blue"}'):
        assert redact_quoted(text) is text and floor.redact(text) == text, text
    assert redact('{"\\u0070assword": ""}') == '{"\\u0070assword": ""}'  # (`redact`, a reply's rules, masks `null` there too)
