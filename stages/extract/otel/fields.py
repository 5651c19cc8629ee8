"""A span's ids, kind and times as OTLP/JSON writers spell them, read as one value each (what agentevals' loader accepts).

- Ids are hex in OTLP/JSON: 32 digits for a trace, 16 for a span. Hex in capitals is the same id in small letters, and
  an id in base64 (protobuf's JSON mapping, `MessageToDict`, writes them so) is its bytes in hex, so that the spans
  of one trace are one trace however each export spelled its ids. An id of zeros only is no id: a root whose
  `parentSpanId` is `0000000000000000` has no parent (it was hung from a stand-in for a lost parent, with a warning).
- A 64-bit trace id (Jaeger's and Zipkin's, 8 bytes) is its 16 hex digits in small letters, also when protobuf's JSON
  mapping wrote it in base64 (12 characters, `=`-padded): the Jaeger download of a trace names it by those 16 digits,
  and agentevals' OTLP receiver turns base64 ids to hex the same way. The Collector's Jaeger and Zipkin receivers pad
  such an id to 32 digits with zeros (`0000000000000000` + the 16; in base64 too): that spelling is the same id, read
  as its 16 digits, so that the spans and log records of one trace exported through both paths are one trace. (Zipkin
  and Jaeger themselves take a 128-bit id whose upper half is zeros for the 64-bit id of its lower half.) Any other id
  (`t1`) is kept as it is.
- `kind` may be the enum's name (`SPAN_KIND_CLIENT`), as the status code may (`STATUS_CODE_ERROR`, `spans._status`).
- A time may be a JSON number, or text of a decimal number (`"1.7e18"`), besides the integer text OTLP/JSON writes.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import string
from typing import Any

__all__ = ["SPAN_ID", "TRACE_ID", "id_not_text", "nanos", "otlp_id", "span_kind"]

TRACE_ID, SPAN_ID = 16, 8  # bytes
_SHORT_TRACE = 8  # bytes of a 64-bit trace id (Jaeger, Zipkin)
_HEX = frozenset(string.hexdigits)
_JSON_TYPES = {bool: "boolean", int: "number", float: "number", dict: "object", list: "array"}
_KINDS = {"SPAN_KIND_UNSPECIFIED": 0, "SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2, "SPAN_KIND_CLIENT": 3, "SPAN_KIND_PRODUCER": 4,
          "SPAN_KIND_CONSUMER": 5}


def otlp_id(raw: Any, size: int) -> str:
    """The id `raw` of `size` bytes as text (module docstring); `""` when there is none (absent, blank, zeros only)."""
    if raw is None or raw == "" or isinstance(raw, bool):
        return ""
    if not isinstance(raw, str):
        return str(raw)
    text = raw.strip()
    for length in (size, _SHORT_TRACE) if size == TRACE_ID else (size,):
        if len(text) == 2 * length and set(text) <= _HEX:
            return "" if set(text) == {"0"} else _short(text.lower(), size)
        if len(text) == 4 * math.ceil(length / 3):  # base64 of `length` bytes: 24 characters for a trace id, 12 for a span id
            try:
                decoded = base64.b64decode(text, validate=True)
            except (binascii.Error, ValueError):
                decoded = b""
            if len(decoded) == length:
                return _short(decoded.hex(), size) if any(decoded) else ""
    return raw


def id_not_text(field: str, raw: Any) -> str | None:
    """What is wrong with id field `field` holding `raw`: None for text or nothing (`None`), else
    `spanId must be text (OTLP/JSON writes ids as hex), got number 99`, the value as JSON spells it (a reader of the
    export sees `true` and `{"x": 1}`, not Python's `True` and `{'x': 1}`), cut at 60 characters."""
    if raw is None or isinstance(raw, str):
        return None
    kind = _JSON_TYPES.get(type(raw), type(raw).__name__)
    return f"{field} must be text (OTLP/JSON writes ids as hex), got {kind} {json.dumps(raw, default=str, ensure_ascii=False):.60}"


def _short(hex_id: str, size: int) -> str:
    """A trace id of 32 digits whose upper 16 are zeros as the 64-bit id of its lower 16 (module docstring)."""
    half = 2 * _SHORT_TRACE
    return hex_id[half:] if size == TRACE_ID and len(hex_id) == 2 * TRACE_ID and hex_id[:half] == "0" * half else hex_id


def span_kind(raw: Any) -> int:
    """The span kind's number: `raw` itself, its text, or the enum's name; 0 (unspecified) for anything else."""
    if isinstance(raw, str) and raw in _KINDS:
        return _KINDS[raw]
    try:
        return int(raw or 0)
    except (TypeError, ValueError):
        return 0


def nanos(value: Any) -> int:
    """A time in Unix nanoseconds; 0 when absent. Raises `ValueError` for a value that is no number (`true`, `"soon"`)."""
    if value is None or value == "":
        return 0
    if isinstance(value, bool):
        raise ValueError(f"not a timestamp: {value!r}")
    try:
        try:
            return int(value)
        except ValueError:
            if isinstance(value, str):
                return int(float(value))  # "1.7e18"
            raise
    except OverflowError as exc:  # inf
        raise ValueError(f"not a timestamp: {value!r}") from exc
