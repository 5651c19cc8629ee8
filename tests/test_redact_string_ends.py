"""A credential's quoted value is masked to where its string really ends, in JSON, Python's repr and their nestings.

A repr doubles every backslash of a JSON text and escapes no `"`: inside `repr(json.dumps(args))` the value's own
`", "x": "` reads `\\", \\"x\\": \\"`, each quote after two backslashes, as a JSON string that ends in a backslash would
close. The value ended at the first of them and the rest (`x": "…`, the password's tail) was left in clear, in a
custom metric's reason (`f"{args!r}"`), a tool's output holding a repr, a log line quoted from a trace. The canaries
are assembled at run time and are fake.
"""

from __future__ import annotations

import ast
import itertools
import json
import sys
from pathlib import Path

import pytest
from _redact_timing import redaction_seconds
from tracejudge.llm.redact import MASK, redact, redact_quoted

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
try:
    import _floor_rules as floor
finally:
    sys.path.pop(0)

TAIL = "tail" + "Secret42"  # what must never be shown
# Values that hold what follows a string: a quote then `, ` or `: ` or `}`, a quote of the other kind, backslashes.
VALUES = {
    "comma": 'ab", "x": "' + TAIL,
    "single quotes": "ab', 'x': '" + TAIL,
    "brace": 'ab"} ' + TAIL,
    "number after": 'ab": 1, "' + TAIL,
    "mapping after": 'ab", {"' + TAIL,
    "escaped quote, comma": 'ab\\", \\"x\\": \\"' + TAIL,
    "both quotes": "ab', \"" + TAIL,
    "backslash then quote, comma": 'ab\\", "' + TAIL,
}
# Values that end in backslashes or a quote: masked whole, the structure around them kept.
ENDINGS = {"backslash last": TAIL + "\\", "two backslashes last": TAIL + "\\\\", "quote last": TAIL + '"', "quoted": '"' + TAIL + '"'}

LAYERS = {"json": lambda text: json.dumps({"body": text, "n": 1}), "repr": lambda text: repr({"body": text, "n": 1})}
UNLAYER = {"json": json.loads, "repr": ast.literal_eval}


def _rendered(inner: str, stack: tuple[str, ...], value: str) -> tuple[dict, str]:
    doc = {"user": "alice", "password": value, "next": ["x", {"y": "z"}]}
    text = json.dumps(doc) if inner == "json" else repr(doc)
    for layer in stack:
        text = LAYERS[layer](text)
    return doc, text


STACKS = [s for k in range(4) for s in itertools.product(("json", "repr"), repeat=k)]


@pytest.mark.parametrize("inner", ["json", "repr"])
@pytest.mark.parametrize("stack", STACKS, ids=lambda s: "+".join(s) or "plain")
def test_a_value_holding_what_follows_a_string_is_masked_whole_in_any_nesting(inner: str, stack: tuple[str, ...]) -> None:
    for name, value in {**VALUES, **ENDINGS}.items():
        doc, text = _rendered(inner, stack, value)
        for masked in (redact_quoted(text), redact(text), floor.redact(text)):
            assert TAIL not in masked and "Secret42" not in masked, (name, masked)
            assert "alice" in masked, (name, masked)
        assert floor.redact(text) == redact_quoted(text), name


# The nestings a trace holds: JSON in JSON, a repr of (JSON in) JSON, JSON of a repr. The mask leaves each level as
# its parser reads it, the value `[REDACTED]`, the keys after it where they were.
KEPT = [("json", ()), ("json", ("json",)), ("json", ("json", "json")), ("json", ("repr",)), ("json", ("json", "repr")),
        ("repr", ()), ("repr", ("json",)), ("json", ("repr", "json")), ("repr", ("repr",))]


@pytest.mark.parametrize(("inner", "stack"), KEPT, ids=lambda x: x if isinstance(x, str) else "+".join(x) or "plain")
def test_the_mask_keeps_every_level_readable(inner: str, stack: tuple[str, ...]) -> None:
    for name, value in {**VALUES, **ENDINGS}.items():
        doc, text = _rendered(inner, stack, value)
        for masked in (redact_quoted(text), redact(text)):
            got = masked
            for layer in reversed(stack):
                got = UNLAYER[layer](got)["body"]
            assert UNLAYER[inner](got) == {**doc, "password": MASK}, (name, masked)


def test_the_briefs_examples() -> None:
    args = {"password": 'ab", "x": "' + TAIL}
    for text in (repr(args), repr({"body": json.dumps(args)}), repr(json.dumps(args)), json.dumps({"b": repr(args)}),
                 f"calls: {[{'body': json.dumps(args)}]}", repr({"b": json.dumps({"c": json.dumps(args)})})):
        for masked in (redact_quoted(text), redact(text)):
            assert TAIL not in masked, masked
    assert redact_quoted(repr({"body": json.dumps(args)})) == repr({"body": json.dumps({"password": MASK})})


# Linear: the value's end is looked for once per quote, and what follows a quote once, to the next quote.
_N = 256 * 1024
ADVERSARIAL = {
    "repr escaped commas": '"password": "' + '\\\\", ' * (_N // 5),
    "repr escaped keys": '"password": "' + '\\\\", \\\\"x' * (_N // 9) + '"}',
    "delimiters after a quote": '"password": "ab\\\\"' + " ," * (_N // 2),
    "fields ending in a backslash": '{"password": "ab\\\\", ' * (_N // 20),
    "deep opening, deeper quotes": '"password": ' + "\\" * 500 + '"' + ("\\" * 501 + '"') * (_N // 502),
    "deep even opening": '"password": ' + "\\" * 1000 + '"' + ("\\" * 1002 + '"x') * (_N // 1004),
    "spaces after quotes": '"password": "' + ('\\\\"' + " " * 50 + "x") * (_N // 53),
}


@pytest.mark.parametrize("name", list(ADVERSARIAL))
def test_the_value_rule_stays_linear(name: str) -> None:
    assert redaction_seconds(ADVERSARIAL[name]) < 1.5, name
