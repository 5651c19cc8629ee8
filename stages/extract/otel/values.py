"""Attribute values of format `otel`: OTLP/JSON's typed `AnyValue`s and key/value lists, and attributes written as a plain
JSON object.

OTLP/JSON writes a span's attributes as a list of `{"key": …, "value": {"stringValue": …}}`. Some producers write them
as a JSON object instead, which agentevals' loader reads too: flat (`{"gen_ai.operation.name": "chat"}`, values as plain
JSON) or nested, as a ClickHouse JSON column holds them (`{"gen_ai": {"operation": {"name": "chat"}}}`). Both read as
the same dotted keys (`flat_attributes`); an object inside the object is always a level of the key, never a value, as
agentevals reads it. Without this such a span read as a span with no attributes: a model request whose content
capture was off.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from typing import Any

from tracejudge.stages.extract.otel.view import whole_text

__all__ = ["any_value", "attributes", "flat_attributes"]

# How deep a nested attribute object is read as key levels; an object below that stays the value (agentevals' limit).
_DEPTH = 64


def any_value(value: Any) -> Any:
    """Decode an OTLP/JSON `AnyValue` (`{"stringValue": ...}`, `{"intValue": "42"}`, arrays, kvlists).

    `intValue` arrives as a string in OTLP/JSON and becomes an `int`;
    `doubleValue` may too. An empty value is `None`. Raises `ValueError`
    for an integer or double that does not parse, and for an array or
    kvlist that is no object or whose `values` is no list. A lone surrogate in a
    string becomes U+FFFD (`whole_text`).
    """
    if not isinstance(value, dict) or not value:
        return None
    if "stringValue" in value:
        return whole_text(value["stringValue"])
    if "intValue" in value:
        return int(value["intValue"])
    if "boolValue" in value:
        v = value["boolValue"]
        return v if isinstance(v, bool) else str(v).lower() == "true"
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "arrayValue" in value:
        return [any_value(v) for v in _listed(value, "arrayValue")]
    if "kvlistValue" in value:
        return attributes(_listed(value, "kvlistValue"))
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"]).hex() if isinstance(value["bytesValue"], str) else None
    return None


def _listed(value: dict[str, Any], kind: str) -> list[Any]:
    """The `values` of an `arrayValue` or `kvlistValue`. Raises `ValueError` when the kind holds no object or its `values`
    no list: read as they were, `{"arrayValue": "x"}` lost the whole export to Python's own error, and `{"values": "abc"}`
    read as three empty values, a message event's body as one with no content."""
    inner = value[kind]
    if inner is None:
        return []
    if not isinstance(inner, dict):
        raise ValueError(f"{kind} must be an object holding `values`, got {type(inner).__name__}")
    items = inner.get("values")
    if items is not None and not isinstance(items, list):
        raise ValueError(f"{kind}.values must be a list, got {type(items).__name__}")
    return items or []


def attributes(items: Any, mended: list[str] | None = None, bad: list[str] | None = None) -> dict[str, Any]:
    """Decode an OTLP key/value list into a dict (later keys win); a JSON object of attributes reads as `flat_attributes`.

    `mended` (when given) gets the key of each string attribute whose lone surrogates were replaced.
    `bad` (when given) gets, for each attribute whose value does not decode (`{"intValue": "notanint"}`), its key,
    the value and why, and the attribute is left out; without it such a value raises `ValueError` (`any_value`).
    """
    if isinstance(items, Mapping):
        return flat_attributes(items, mended)
    out: dict[str, Any] = {}
    for item in items or []:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            raw = item.get("value")
            try:
                value = any_value(raw)
            except (TypeError, ValueError) as exc:
                if bad is None:
                    raise
                shown = json.dumps(raw, ensure_ascii=False, default=str)
                bad.append(f"{item['key']} ({shown[:80]}{'…' if len(shown) > 80 else ''}: {exc})")
                continue
            out[item["key"]] = value
            if mended is not None and isinstance(raw, dict) and isinstance(raw.get("stringValue"), str) and value is not raw["stringValue"]:
                mended.append(item["key"])
    return out


def flat_attributes(items: Mapping[str, Any], mended: list[str] | None = None) -> dict[str, Any]:
    """The attributes of a JSON object, flat or nested (module docstring): each leaf under its dotted key, its value as
    JSON gave it (text, number, boolean, list or null). A lone surrogate in text becomes U+FFFD, its key added to `mended`."""
    out: dict[str, Any] = {}
    _flatten(items, "", 0, out, mended)
    return out


def _flatten(node: Mapping[str, Any], prefix: str, depth: int, out: dict[str, Any], mended: list[str] | None) -> None:
    for key, value in node.items():  # in the object's order: of two spellings of one key the later wins, as agentevals reads it
        full = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and depth < _DEPTH:  # (bounded: a hostile export's nesting costs no more stack)
            _flatten(value, full, depth + 1, out, mended)
            continue
        kept = _mend(value)
        if mended is not None and kept is not value:
            mended.append(full)
        out[full] = kept


def _mend(value: Any) -> Any:
    """`value` with lone surrogates in its text replaced (`whole_text`), in a list's items too; the same object when none."""
    if isinstance(value, str):
        return whole_text(value)
    if isinstance(value, list):
        items = [_mend(v) for v in value]
        return items if any(a is not b for a, b in zip(items, value)) else value
    return value
