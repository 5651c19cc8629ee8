"""A tool call as reasons show it (`render_call`: `name({"k":"v"})`, cut to a limit), and the compact JSON of values.

Reasons name calls (a missing expected call, an unexpected one, where two lists part): about two calls
a case with τ-bench's checks, most with a few arguments, some with a dozen running to a kilobyte. The
text is the arguments' JSON with sorted keys, credentials masked before the cut (`redact_quoted`), and a value
under a key that `masked_under` masks shown as `[REDACTED]` whatever its shape (a matcher, a mapping, a list, a short
or decimal number), as an argument's difference in the same reason shows it.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring
from typing import Any

from tracejudge.core.memo import SeenSet
from tracejudge.llm.redact import MASK, masked_under, redact_quoted
from tracejudge.llm.redact_patterns import _HINT

try:
    from json.encoder import c_make_encoder as _c_make_encoder
except ImportError:  # pragma: no cover - a Python built without the _json accelerator
    _c_make_encoder = None

__all__ = ["dumps", "raw_value", "render_call"]


def _encoder(sort_keys: bool, markers: dict[int, Any] | None) -> Any:
    return _c_make_encoder(markers, str, encode_basestring, None, ":", ",", sort_keys, False, True)


# One C encoder per key order, kept: making one cost a sixth of encoding a call's arguments. They keep no
# `markers` (the dict `json.dumps` uses to refuse a value that contains itself), which would be shared
# state between threads; JSON never holds such a value, and a value that does recurses until
# `RecursionError`, where `dumps` encodes it again as `json.dumps` does, with its own markers.
_ENCODERS = {False: _encoder(False, None), True: _encoder(True, None)} if _c_make_encoder is not None else {}


def dumps(value: Any, sort_keys: bool = False) -> str:
    """`json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)`.

    The same C encoder `json.dumps` ends in, called directly: `json.dumps` with these arguments
    builds a `JSONEncoder` and then the C encoder for every value, which cost more than the
    encoding of the small argument mappings reasons show. Raises what `json.dumps` raises.
    """
    try:
        return "".join(_ENCODERS[sort_keys](value, 0))
    except RecursionError:  # a value that contains itself (`ValueError` below), or one nested too deep to encode
        return "".join(_encoder(sort_keys, {})(value, 0))


def _dumps_py(value: Any, sort_keys: bool = False) -> str:
    return json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)


_SAMPLE = {"b": [1, 2.5, -0.0, True, None, "é\n\"", 1e300, float("nan")], "a": {"z": object}, "": "\u2028"}
if _c_make_encoder is None or any(dumps(v, k) != _dumps_py(v, k) for v in (_SAMPLE, "é", 3) for k in (False, True)):
    dumps = _dumps_py  # noqa: F811  (another Python's C encoder: take the documented path)


# Arguments up to this many are encoded whole (`render_call`): per key in Python, `_sorted_head` cost more than the
# C encoder over all of them (τ-bench's calls: 0.75 against 0.52 µs with one argument, 1.83 against 1.37 with four),
# and saves only where more keys are left unencoded (2.5 against 5.0 µs with eleven).
_FEW = 4


_LIMIT = 120  # `render_call`'s default cut, the one reasons use
# The texts (of arguments, cut at `_LIMIT`) `redact_quoted` returned as they are: the same expected calls, and many
# actual ones, recur from trial to trial of a task, and the search for a credential's hint cost as much as encoding
# the arguments. A pure answer of the text alone (`core.memo`: bounded, per process); texts longer than
# `_CLEAN_LONGEST` are searched every time, so the set stays about a MiB at most.
_CLEAN: SeenSet[str] = SeenSet()
_CLEAN_LONGEST = 240


def raw_value(arguments: Any) -> Any:
    """The JSON value that arguments kept as text hold (`ToolCall.arguments_invalid`: a list, a number, a string), so
    reasons show `["x",1]` as an object's arguments show `{"q":"x"}`, not the text quoted; `arguments` itself when
    they are no text or the text is no JSON (`{"city": "Par`, shown quoted)."""
    if type(arguments) is not str:
        return arguments
    try:
        return json.loads(arguments)
    except (ValueError, RecursionError):
        return arguments


def render_call(name: str, arguments: Any, limit: int = _LIMIT) -> str:
    """`name({"k":"v"})`, shortened to `limit` characters, for reasons (credentials masked before the cut). Arguments
    kept as text that holds JSON of another kind print as that value (`name(["x",1])`, `raw_value`)."""
    if arguments is None:
        return f"{name}(…)"
    arguments = raw_value(arguments)
    # Up to `_FEW` arguments, the C encoder writes them all for less than `_sorted_head` writes the first of them.
    text = _sorted_head(arguments, limit) if type(arguments) is dict and len(arguments) > _FEW and limit > 0 and _ENCODERS else None
    if text is None:
        text = dumps(arguments, sort_keys=True)
    if limit == _LIMIT and text in _CLEAN:
        masked = text
    elif _HINT.search(text[: limit + 32]) is None:  # `redact_quoted`'s own first test: no credential's name or shape shown
        masked = text
        if limit == _LIMIT and len(text) <= _CLEAN_LONGEST:
            _CLEAN.remember_one(text)
    elif (shown := _masked_arguments(arguments)) is not arguments:  # a value under a credential's key: masked whole
        masked = redact_quoted(_bare_masks(dumps(shown, sort_keys=True)), limit)
    else:
        masked = redact_quoted(text, limit)
        if masked is text and limit == _LIMIT and len(text) <= _CLEAN_LONGEST:
            _CLEAN.remember_one(text)
        elif masked is not text and len(text) > limit:  # perhaps a start of the arguments only (`_sorted_head`): mask them whole
            masked = redact_quoted(dumps(arguments, sort_keys=True), limit)
    text = masked
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"{name}({text})"


# What `_masked_arguments` puts for a value that is not a string: encoded, its JSON string is written as a bare
# `[REDACTED]` (`_bare_masks`), as `redact_quoted` shows a credential's number (`"password":[REDACTED]`).
_MASK_VALUE = "\x00" + MASK + "\x00"
_MASK_TEXT = dumps(_MASK_VALUE)


def _masked_arguments(value: Any) -> Any:
    """`value` (arguments) with each value under a key that `masked_under` masks replaced, at any depth: a string by
    `[REDACTED]`, anything else (a mapping, a matcher, a list, a number) by `_MASK_VALUE`; `value` itself when none is.

    Called only for arguments whose text holds a credential's hint (`_HINT`), so ordinary calls are never walked.
    """
    try:
        return _masked_value(value)
    except RecursionError:  # nested deeper than a copy can be made: shown masked whole
        return _MASK_VALUE


def _masked_value(value: Any) -> Any:
    if isinstance(value, dict):
        out, changed = {}, False
        for key, v in value.items():
            if masked_under(key, v, value):  # (`value`: its other keys may show an authentication, for a `token`)
                out[key] = MASK if isinstance(v, str) else _MASK_VALUE
                changed = True
            else:
                out[key] = got = _masked_value(v)
                changed = changed or got is not v
        return out if changed else value
    if isinstance(value, (list, tuple)):
        items = [_masked_value(v) for v in value]
        return items if any(a is not b for a, b in zip(items, value)) else value
    return value


def _bare_masks(text: str) -> str:
    return text.replace(_MASK_TEXT, MASK) if _MASK_TEXT in text else text


def _sorted_head(arguments: dict[str, Any], limit: int) -> str | None:
    """`dumps(arguments, sort_keys=True)`, or once it runs past `limit` characters, a start of it past `limit`.

    Half the calls reasons show have arguments past the 120 characters they are cut to, some
    ten times as long: encoded key by key, in the encoder's order (keys sorted), the rest is not
    encoded once the text is past the cut. None (encode it whole) when a key is not a str (the
    encoder writes such keys its own way) or a value raises (encoded whole, it raises as `json.dumps` does).
    """
    encode = _ENCODERS[True]
    parts = []
    size = 1  # "{"
    try:
        for key in sorted(arguments):
            if type(key) is not str:
                return None
            part = f"{encode_basestring(key)}:{''.join(encode(arguments[key], 0))}"
            parts.append(part)
            size += len(part) + 1  # "," or "}"
            if size > limit:
                break
    except (TypeError, ValueError, RecursionError):  # keys that do not sort, a value that does not encode
        return None
    return "{" + ",".join(parts) + "}"
