"""Decoding a reply's JSON objects when one names a key twice (`{"q1": …, "q1": …}`): a JSON decoder keeps the last
value silently, so the judge's first answer would be lost and a second, contradicting one taken. `STRICT` decodes an
ordinary object as `json` does and raises `Repeated` for one that repeats a key; `VIEWS` then decodes it again as a
`Views`: the first value of each key, and in `others` the same object with a later value in its place (the
agreement checks of `tracejudge.stages.judge.parse` see every one). `PLAIN` is the decoder without hooks."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["PLAIN", "STRICT", "VIEWS", "Repeated", "Views"]


class Repeated(Exception):
    # A decoded object names a key twice: decode again, keeping both values (`Views`).
    pass


class Views(dict):  # type: ignore[type-arg]
    # An object naming a key twice with different values, or holding one that does (its values are the first given):
    # `others` are the same object with one later value in place of the first, each a verdict object of its own.
    others: list[dict[str, Any]]


_MAX_VIEWS = 64  # later values of one object that become views (`_view_pairs`)


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # The cheap hook for ordinary replies: a dict, or `Repeated` for the rare reply that repeats a key.
    out = dict(pairs)
    if len(out) != len(pairs):
        raise Repeated
    return out


def _alternatives(value: Any) -> list[Any]:
    # `value` as each later value repeated inside it would have it (`Views.others`), lists looked into.
    if isinstance(value, Views):
        return value.others
    if isinstance(value, list):
        return [[*value[:i], alt, *value[i + 1:]] for i, v in enumerate(value) for alt in _alternatives(v)]
    return []


def _view_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # The first value of every key, as the list form's first answer to an id counts; a later different value, or one
    # repeated deeper, becomes another view. The same value again adds nothing (the same answer given twice is kept).
    first: dict[str, Any] = {}
    later: list[tuple[str, Any]] = []
    for key, value in pairs:
        if key not in first:
            first[key] = value
            continue
        if value != first[key]:
            later.append((key, value))
        later += [(key, alt) for alt in _alternatives(value)]  # (a repeat equal at first sight may differ deeper)
    later += [(key, alt) for key, value in first.items() for alt in _alternatives(value)]
    if not later:
        return first
    out = Views(first)
    # (Each view copies the object: a hostile reply repeating thousands of keys gets a bounded number of them.)
    out.others = [{**first, key: value} for key, value in later[:_MAX_VIEWS]]
    return out


PLAIN = json.JSONDecoder()
STRICT = json.JSONDecoder(object_pairs_hook=_unique_pairs)
VIEWS = json.JSONDecoder(object_pairs_hook=_view_pairs)
