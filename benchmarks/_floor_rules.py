"""Tracejudge's rules that `_floor_reasons.py` re-implements minimally, without importing tracejudge: redaction of text
quoted from a trace (`llm.redact`: `redact_quoted`, `redact_labels`), the texts of JSON values and calls as the reasons show
them (`score.call_text`, `value_match.short_json` / `short_pair`), and the argument rules of `exact` mode (`value_match`).
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

# ---- redaction: `llm.redact`'s rule for text quoted from a trace (`redact_quoted`) and for labels ----
MASK = "[REDACTED]"
_URL = r"""\b(?P<url>[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@"']*:)[^\s/?#"']+(?=@)"""
_SHAPE = "|".join((
    r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", r"\bxox[abprs]-[A-Za-z0-9-]{10,}", r"\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}",
    r"\bAIza[0-9A-Za-z_-]{35,}", r"\bhf_[A-Za-z0-9]{30,}", r"(?<![A-Za-z0-9])sk-(?:proj|svcacct|admin|ant|or)-[A-Za-z0-9_-]{20,}", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*)?",
    r"-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----[\s\S]*?(?:-----END[A-Z ]{0,40}PRIVATE KEY-----|\Z)"))
_CHAR = r"[A-Za-z0-9._~+/=-]"
_TOKEN = rf"(?:(?={_CHAR}*?[0-9])(?={_CHAR}*?[A-Za-z]){_CHAR}{{16,}}|{_CHAR}{{15,}}=)(?!{_CHAR})"
_NAMES = (r"api[-_]?key|API[-_]?KEY|Api[-_]?Key|authorization|Authorization|AUTHORIZATION"
          r"|secret[-_]?access[-_]?key|SECRET[-_]?ACCESS[-_]?KEY|SecretAccessKey|private[-_]?key|PRIVATE[-_]?KEY|PrivateKey"
          r"|password|PASSWORD|Password|passwd|PASSWD|secret|SECRET|Secret|token|TOKEN|Token")
_FIELD = (r"""(?P<field>["'][A-Za-z0-9_.-]*(?:password|PASSWORD|Password|passwd|PASSWD|secret|SECRET|Secret)["']\s*:\s*["'])"""
          r"""[^"'\\\n]+(?=["'])""")  # a password or secret field's quoted value, whatever its shape
_QUOTED = (_FIELD + "|" + rf"""((?:{_NAMES})["']?\s*[:=]\s*["']?)(?![\[{{])(?:[Bb]earer\s+|[Bb]asic\s+)?{_TOKEN}|\b((?:[Bb]earer|[Bb]asic)\s+){_TOKEN}"""
           rf"|(?<![A-Za-z0-9])sk[-_](?=[A-Za-z0-9_-]*?[0-9])(?=[A-Za-z0-9_-]*?[A-Za-z])[A-Za-z0-9_-]{{20,}}|{_URL}|{_SHAPE}")
_W, _S = r"[A-Za-z0-9._~+/=-]{15}", r"""["']?\s*[:=]"""
_HINT = re.compile(  # a part of every match of `_QUOTED`: text without one holds no credential
    rf"k(?:ey{_S}|(?<=ok)en{_S}|[-_](?<=(?<![A-Za-z0-9])sk[-_]))|K(?:EY{_S}|ey{_S}|IA)|z(?:ation|a(?<=AIza))|ZATION"
    rf"|w(?:or)?d{_S}|W(?:OR)?D{_S}|cret{_S}|CRET{_S}|OKEN{_S}|B(?:earer\s+{_W}|asic\s+{_W}|EGIN)"
    rf"|b(?:earer\s+{_W}|asic\s+{_W}|_pat_(?<=github_pat_))|SIA|xox|h(?:f_|(?<=gh)[pousr]_)|J(?<=eyJ)|/(?<=://)").search
_KEY = re.compile(r"(?i)(?:api[-_]?key|authorization|password|passwd|secret|token|private[-_]?key)$").search  # a label naming one
_compiled: list[Any] = []  # `_QUOTED`, compiled on first need: text without a hint never needs it


def _mask(m: re.Match[str]) -> str:
    return (m.group("field") or m.group(2) or m.group(3) or m.group("url") or "") + MASK


def redact(text: str, shown: int | None = None) -> str:
    """`redact_quoted`: credentials masked, searched in the first `shown` characters (and 256 more); else `text` itself."""
    if _HINT(text if shown is None else text[: shown + 32]) is None:
        return text
    head = text if shown is None else text[: shown + 256]
    if not _compiled:
        _compiled.append(re.compile(_QUOTED).sub)
    masked = _compiled[0](_mask, head)
    return text if masked == head else masked if len(head) == len(text) else masked + "…"


# Pure answers kept (texts seen clean: calls', labels', tool names'), bounded: a set is emptied when full.
_CLEAN_CALLS: set[str] = set()
_CLEAN_LABELS: set[str] = set()
_CLEAN_NAMES: set[str] = set()
_FLAT = frozenset({int, float, bool, type(None)})


def _masked(value: Any, whole: bool = True) -> Any:
    """`_masked_label`: strings and keys redacted, a non-empty value under a credential's name masked whole (only a
    string when not `whole`: `redact_details`)."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_masked(v, whole) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for k, v in value.items():
        key = redact(k) if isinstance(k, str) else k
        if whole and not isinstance(v, str) and isinstance(k, str) and v not in (None, [], {}) and _KEY(k):
            out[key] = MASK
        elif isinstance(v, str):
            got = redact(v)
            out[key] = MASK if got == v and isinstance(k, str) and (v and _KEY(k) or redact(f"{k}: {v}") != f"{key}: {v}") else got
        else:
            out[key] = _masked(v, whole)
    return out


def labels(tags: list[str], metadata: dict[str, Any]) -> tuple[Any, Any]:
    """`redact_labels`: the same objects when masking (`_masked`) changes nothing, else the masked copies. Texts seen
    unchanged and without a credential's hint are kept (tracejudge's memo): flat labels made of them need no search."""
    seen = _CLEAN_LABELS
    if seen.issuperset(tags):
        for k, x in metadata.items():
            if not (f"{k}: {x}" in seen if type(x) is str else type(x) in _FLAT and k in seen and (x is None or not _KEY(k))):
                break
        else:
            return tags, metadata
    mt, mm = _masked(tags), _masked(metadata)
    if mt != tags or mm != metadata:
        return mt, mm
    if len(seen) + len(tags) + len(metadata) > 4096:
        seen.clear()
    seen.update(t for t in [*tags, *(f"{k}: {x}" if type(x) is str else k for k, x in metadata.items())] if _HINT(t) is None)
    return tags, metadata


def _clean_names(case: Any, calls: list[Any]) -> bool:
    """No tool name holds a credential (`masking.mask_scores`: names seen clean, a set lookup each)."""
    names = [c.name for c in calls] + [e.name for e in case.expected_tool_calls or ()]
    if not _CLEAN_NAMES.issuperset(names):
        for n in names:
            if redact(n) != n:
                return False
            if len(_CLEAN_NAMES) >= 4096:
                _CLEAN_NAMES.clear()
            _CLEAN_NAMES.add(n)
    return True


# ---- texts of JSON values, as `json.dumps(v, ensure_ascii=False, separators=(",", ":"), sort_keys=…)` writes them ----
_sorted_enc, _enc = msgspec.json.Encoder(order="sorted").encode, msgspec.json.Encoder().encode
_DIGITS = bytes.maketrans(b"123456789", b"000000000")


def dumps(value: Any, sort: bool) -> str:
    b = (_sorted_enc if sort else _enc)(value)
    t = b.translate(_DIGITS)
    if b"0e" in t or b"0.0000" in t:  # perhaps a float msgspec writes otherwise (1e-05, 1e+16): the stdlib's text
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort)
    return b.decode()


def render_call(name: str, args: Any) -> str:
    """`render_call`: `name({"k":"v"})` cut at 120 characters, credentials masked before the cut. (tracejudge encodes a
    call of more than 4 arguments up to the key past the cut, and searches that: the same answer, as a credential lies
    within one `"key":value`, but for a PEM block, masked to the end either way.)"""
    if args is None:
        return f"{name}(…)"
    text = dumps(args, True)
    if text not in _CLEAN_CALLS:
        masked = redact(text, 120)
        if masked is not text:
            text = masked
        elif len(text) <= 240:
            if len(_CLEAN_CALLS) >= 4096:
                _CLEAN_CALLS.clear()
            _CLEAN_CALLS.add(text)
    return f"{name}({text[:119]}…)" if len(text) > 120 else f"{name}({text})"


def short_json(value: Any, limit: int = 60) -> str:
    text = "<absent>" if value is ABSENT else redact(dumps(value, False), limit)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short_pair(exp: Any, got: Any, limit: int = 60) -> tuple[str, str]:
    """Both values' texts, cut around their first differing character when long."""
    a, b = redact(dumps(exp, False)), redact(dumps(got, False))
    if len(a) <= limit and len(b) <= limit:
        return a, b
    lo, hi = 0, min(len(a), len(b))  # the common prefix's length: a binary search of slice comparisons (memcmp)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if a[lo:mid] == b[lo:mid] else (lo, mid - 1)
    start = max(0, lo - limit // 3)
    head = "…" if start else ""
    cuts = [t[start : start + limit - len(head)] for t in (a, b)]
    return tuple(head + (p if start + len(p) >= len(t) else p[:-1] + "…") for p, t in zip(cuts, (a, b)))  # type: ignore[return-value]


# ---- tracejudge's argument rules (`value_match`, exact mode) ----
ABSENT = object()  # a key the actual arguments lack
_MATCHERS = frozenset({"$any_of", "$regex", "$approx", "$absent", "$loose"})
_LOOSE = str.maketrans("", "", " ,./-_*^")


def _matcher(v: dict[str, Any]) -> str | None:
    """The `$` key of a matcher mapping (one matcher key, and `tol` beside `$approx`), or None for a plain mapping."""
    if len(v) > 2 or _MATCHERS.isdisjoint(v):
        return None
    found = [k for k in v if k in _MATCHERS]
    return found[0] if len(found) == 1 and all(k == found[0] or (k == "tol" and found[0] == "$approx") for k in v) else None


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _same(a: Any, b: Any) -> bool:  # equal as JSON values (`_same_json`)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    return (_num(b) and a == b) if _num(a) else (type(a) is type(b) and a == b)


def match(e: Any, a: Any) -> bool:
    """`match_value(e, a, "exact")`; `a` may be `ABSENT`."""
    te = type(e)
    if te is str:
        return type(a) is str and e == a
    if te is dict:
        key = _matcher(e)
        if key is None:
            return type(a) is dict and match_args(e, a)
        if type(a) is dict and _same(e, a):
            return True  # the very mapping
        m = e[key]
        if key == "$any_of":
            return isinstance(m, list) and any(match(o, a) for o in m)
        if key == "$absent":
            return (a is ABSENT) == bool(m)
        if a is ABSENT:
            return False
        if key == "$loose":
            return type(a) is str and type(m) is str and a.translate(_LOOSE).lower().replace("'", '"') == m.translate(_LOOSE).lower().replace("'", '"')
        if key == "$regex":
            return type(a) is str and re.search(str(m), a) is not None
        return _num(a) and _num(m) and abs(a - m) <= e.get("tol", 1e-9)
    if a is ABSENT:
        return False
    if te is bool or type(a) is bool:
        return te is bool and type(a) is bool and e == a
    if te is int or te is float:
        return _num(a) and e == a
    if te is list:
        return type(a) is list and len(e) == len(a) and all(map(match, e, a))
    return a is None if e is None else type(e) is type(a) and e == a


def match_args(e: dict[str, Any], a: dict[str, Any]) -> bool:
    get = a.get
    for k, v in e.items():
        if type(v) is str:  # (the commonest value: compared here)
            if v != get(k):
                return False
        elif not match(v, get(k, ABSENT)):
            return False
    return a.keys() <= e.keys()


def difference(e: dict[str, Any] | None, a: dict[str, Any], prefix: str = "") -> str | None:
    """`first_difference(e, a, "exact")`: the first argument that does not match, said shortly."""
    if e is None:
        return None
    for key, exp in e.items():
        got = a.get(key, ABSENT)
        if match(exp, got):
            continue
        if type(exp) is dict and _matcher(exp) is None and type(got) is dict and (inner := difference(exp, got, f"{prefix}{key}.")):
            return inner
        if got is ABSENT:
            return f"{prefix}{key}: expected {short_json(exp)}, missing"
        return "{}{}: expected {}, got {}".format(prefix, key, *short_pair(exp, got))
    extra = next((k for k in a if k not in e), None)
    return None if extra is None else f"{prefix}{extra}: unexpected argument {short_json(a[extra])}"
