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


def _ci(words: str) -> str:  # lower-case letters in any case, as classes (`re` tries those fast, `(?i:…)` slowly)
    return re.sub(r"[a-z]", lambda m: f"[{m.group().upper()}{m.group()}]", words)


_Q, _CHAR = r"""\\*["']""", r"[A-Za-z0-9._~+/=-]"
_URL = r"""\b(?P<url>[A-Za-z][A-Za-z0-9+.-]{0,40}://[^\s:/@"']*:)[^\s/?#"']+(?=@)"""
_SHAPE = "|".join((  # key shapes, masked whole
    r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b", r"\bxox[abprse]-[A-Za-z0-9-]{10,}|\bxapp-[0-9]-[A-Za-z0-9-]{10,}",
    r"\bhooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{20,}",
    r"gl(?<!\wgl)(?:pat|ptt|dt|rtr?|cbt|ft|imt|agent|oas|soat|ffct|wt)-[A-Za-z0-9_-]{20,}(?:\.[0-9a-z]{2,}){0,2}|GR(?<!\wGR)1348941[A-Za-z0-9_-]{20,}",
    r"do(?<!\wdo)[opr]_v1_[a-f0-9]{64}(?![A-Za-z0-9])", r"ya(?<!\wya)29\.(?=[A-Za-z0-9_.-]{20})[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*",
    r"\bnpm_[A-Za-z0-9]{36}(?![A-Za-z0-9])", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}", r"(?<![A-Za-z0-9])[rs]k_(?:live|test|prod)_[A-Za-z0-9]{10,}",
    r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![A-Za-z0-9])",
    r"(?P<kv>\b(?:AccountKey|SharedAccessKey)=|(?<![A-Za-z0-9])_gitlab_session=)[A-Za-z0-9+/]{20,}={0,2}",
    r"\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}", r"\bAIza[0-9A-Za-z_-]{35,}", r"\bhf_[A-Za-z0-9]{30,}",
    r"(?<![A-Za-z0-9])sk-(?:proj|svcacct|admin|ant|or)-[A-Za-z0-9_-]{20,}", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*)?",
    r"-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----[\s\S]*?(?:-----END[A-Z ]{0,40}PRIVATE KEY-----|\Z)"))
_V = r"[A-Za-z0-9._~+/-]"  # a token's characters but `=`, which only pads its end: a value never reads over the next `name=`
_TOKEN = rf"(?={_CHAR}{{16}})(?:(?=[A-Za-z._~+/-]*+[0-9])(?=[0-9._~+/-]*+[A-Za-z]){_V}++=*+|{_V}++=++)(?!{_CHAR})"  # after a name
_PAGE = "".join(rf"(?<!{_ci(w)}{sep}[Tt][Oo][Kk][Ee][Nn])"  # a pagination cursor's name (`page_token`, `NextToken`): no credential
                for w in ("(?:page|next|prev)", "(?:previous|starting)", "continuation") for sep in ("", "[-_]"))
_NAMES = (_ci("api[-_]?key|authorization|secret(?:[-_]?access[-_]?key)?|private[-_]?key|pass(?:word|wd|phrase)|token")
          + _PAGE + r"""(?:(?:(?<![A-Za-z0-9_.-][Tt][Oo][Kk][Ee][Nn])|(?<=\\[nrt][Tt][Oo][Kk][Ee][Nn]))(?P<bare>))?""")  # (`token` alone: `bare`)
_SHORT = rf"""(?={_CHAR}*?[0-9])(?={_CHAR}*?[A-Za-z]){_CHAR}{{8,}}+(?=\\*["'])"""  # under `token` alone: 8+, letters and digits
_UNQUOTED = (rf"""(?<![\\"'])(?={_CHAR}{{8}})(?=[A-Za-z._~+/-]*+[0-9])(?=[0-9._~+/-]*+[A-Za-z]){_V}++=*+"""  # the same, unquoted,
             r"""(?=\\*["']|\\+[nrt]|[\s,;&#)\]}>]|\Z)""")  # to the value's end
_CRED = "[A-Za-z0-9_.-]*(?:" + _ci("pass(?:word|wd|phrase)(?:s|[-_]?confirm(?:ation)?)?|secrets?|authorization|api[-_]?key|private[-_]?key(?:[-_]?id)?"
                                    "|(?:access|refresh|auth|id|bearer|session|api)[-_]?token") + ")"
_FIELD_NAME, _PIN = _CRED + "|" + _ci("(?:set-)?cookie"), r"(?:[A-Za-z0-9]+[-_.])*[Pp][Ii][Nn]|[A-Za-z0-9_]*[a-z0-9]Pin"
# A field's quoted value to its string's end at any depth (a quote is inside it unless escaped as its closing one and
# followed by what may follow a string, at the opening's level when after more backslashes than the opening's), a bare
# number's 4 or more digits there, or a PIN's field's 4 to 12 digits.
_AFTER = r"""(?=[ \t\r,:;(){}\[\]]*+(?:\Z|\n|(?!(?P=bs)\\)\\*+(?P=q)|(?!(?P=bs)\\)\\++[nrt]))"""  # at the opening's level
_UNIT = r"""(?P=bs)(?P=bs)(?(even)\\\\\\\\|\\\\)"""  # a backslash of the value: 2n+2 backslashes, 2n+4 for n even
_VALUE = (r"""(?:[^"'\\\n]|(?!(?P=q))["']|\\++(?!(?P=q))|(?:""" + _UNIT + r""")++(?=(?P=bs)(?P=q)""" + _AFTER + r""")|(?=(?P=bs)\\)\\++(?P=q)"""
          r"""|\\*+(?P=q)(?!(?:[\s,:;)}\]`]|\Z|(?!(?P=q))["']|(?!(?P=bs)\\)\\+[nrt]|(?!(?P=bs))\\*["'])))++(?=\\*(?P=q)|\n|\Z)""")
_FIELD = (rf"""(?P<field>[\\"'](?<!\\[\\"'])(?:(?<=["'])|(?<=\\)\\*["'])(?:(?:{_FIELD_NAME}){_Q}\s*:\s*(?:(?P<bs>(?:\\\\)++(?!\\)(?P<even>)|\\*+)(?P<q>["'])(?:[Bb]earer\s+|[Bb]asic\s+)?"""
          rf"""|(?P<num>)(?=[0-9]{{4,}}+(?![0-9A-Za-z_.])))|(?P<pin>{_PIN}){_Q}\s*:\s*(?:{_Q})?(?=[0-9]{{4,12}}(?:\\*["']|[\s,}}\]]|\Z))))"""
          rf"""(?(pin)[0-9]{{4,12}}|(?(num)[0-9]++|{_VALUE}))""")
_P = r"%(?:25)*+"  # a query string's or form body's field (after `?`/`&`, before `&`, or its `=` percent-encoded)
_FORM = (rf"""(?P<form>(?:(?<=[?&;])|{_P}(?:26|3[Ff])|(?<![A-Za-z0-9_.%-])(?=[A-Za-z0-9_.-]*+(?:=[^&\s"'\\=#]*+=*+&|{_P}3[Dd])))"""
         rf"""{_CRED}(?:=(?P<raw>)|{_P}3[Dd]))(?(raw)[^&\s"'\\#]++|(?:[^&\s"'\\#%]|%(?!(?:25)*+26))++)""")
_COOKIE = (r"""(?P<cookie>[CcSs](?:(?<![A-Za-z0-9_-].)|(?<=\\[nr].))(?i:(?<=s)et-cookie|(?<=c)ookie)[ \t]*:[ \t]*)(?=[^\s=;,"'\\]+=)[^\r\n"'\\]+""")
_QUOTED = (_FIELD + "|" + _FORM + "|" + rf"""(?P<name>(?:{_NAMES})(?:{_Q})?\s*[:=]\s*(?:{_Q})?(?![\[{{])(?:[Bb]earer\s+|[Bb]asic\s+|[Tt]oken\s+)?)"""
    rf"""(?(bare)(?:{_TOKEN}|(?:(?<=["'])|(?<=[Bb]earer\s)|(?<=[Bb]asic\s)){_SHORT}|{_UNQUOTED})|{_TOKEN})"""
           rf"|\b(?P<scheme>(?:[Bb]earer|[Bb]asic)\s+){_TOKEN}|{_COOKIE}"
           rf"|(?<![A-Za-z0-9])sk[-_](?=[A-Za-z0-9_-]*?[0-9])(?=[A-Za-z0-9_-]*?[A-Za-z])[A-Za-z0-9_-]{{20,}}|{_URL}|{_SHAPE}")
# A key spelled with `\u` escapes (`"pass\u0077ord"`) that names a credential or a PIN is written as it reads first, and
# spelled back as it was once masked.
_ESCAPED = (r"""(?<=["'])(?=[A-Za-z0-9_.-]*+\\++u00[2-7])(?:[A-Za-z0-9_.-]++|\\++u00[2-7][0-9A-Fa-f])++(?=\\*["']\s*:)""",
            r"\\++u00([2-7][0-9A-Fa-f])", rf"(?:{_FIELD_NAME}|{_PIN})")
_W, _S, _SP = r"[A-Za-z0-9._~+/=-]{15}", r"""(?:(?:\\*["'])?\s*[:=]|%(?:25)*3[Dd])""", r"""\\*["']\s*:"""
_HINT = re.compile(  # a part of every match of `_QUOTED`: text without one holds no credential
    rf"k(?:[Ee][Yy](?:[-_]?[Ii][Dd])?{_S}|[Ii][Ee]{_S}|(?<=[Oo]k)[Ee][Nn]{_S}|[-_](?<=(?<![A-Za-z0-9])sk[-_])|_(?<=(?<![A-Za-z0-9])rk_))"
    rf"|K(?:[Ee][Yy](?:[-_]?[Ii][Dd])?{_S}|[Ii][Ee]{_S}|(?<=[Oo]K)[Ee][Nn]{_S}|IA)"
    rf"|z(?:[Aa][Tt][Ii][Oo][Nn]|a(?<=AIza))|Z[Aa][Tt][Ii][Oo][Nn]|w(?:[Oo][Rr])?[Dd](?:[Ss]|[-_]?[Cc][Oo][Nn][Ff][Ii][Rr][Mm](?:[Aa][Tt][Ii][Oo][Nn])?)?{_S}|W(?:[Oo][Rr])?[Dd](?:[Ss]|[-_]?[Cc][Oo][Nn][Ff][Ii][Rr][Mm](?:[Aa][Tt][Ii][Oo][Nn])?)?{_S}"
    rf"|c(?:[Rr][Ee][Tt][Ss]?{_S}|Hlw(?<=AgEIcHlw))|C(?:[Rr][Ee][Tt][Ss]?{_S}|CA)|p(?:[Hh][Rr][Aa][Ss][Ee][Ss]?{_S}|[Ii][Nn]{_SP}"
    rf"|(?<=np)m_|(?<=glp)(?:at|tt)-)|P(?:[Hh][Rr][Aa][Ss][Ee][Ss]?{_S}|[Ii][Nn]{_SP})"
    rf"|B(?:earer\s+{_W}|asic\s+{_W}|EGIN|IA)|b(?:earer\s+{_W}|asic\s+{_W}|_pat_(?<=github_pat_)|_session=(?<=_gitlab_session=))"
    rf"|S(?:IA|G\.)|x(?:ox|app-)|h(?:f_|(?<=gh)[pousr]_|(?<=sh)p(?:at|ca|pa|ss)_)|J(?<=eyJ)|/(?<=://)"
    r"|gl(?:dt|rtr?|cbt|ft|imt|agent|oas|soat|ffct|wt)-|GR1348941|v1_(?<=do[opr]_v1_)|ya29\.|\\u00[2-7]").search
_KEY = re.compile(r"(?i)(?:api[-_]?key|authorization|pass(?:word|wd|phrase)(?:s|[-_]?confirm(?:ation)?)?|secrets?|token" + _PAGE
                  + r"|private[-_]?key(?:[-_]?id)?|(?<![A-Za-z0-9_-])(?:set-)?cookie)$").search  # a label naming one
_SCHEME = re.compile(r"(?:[Bb]earer|[Bb]asic)\s+(?=\S)").match  # kept before a label's value masked whole
_FIELD_KEY, _PIN_KEY = re.compile(_FIELD_NAME).fullmatch, re.compile(_PIN).fullmatch  # a key naming a field, a PIN's
_AUTH_KEY = re.compile(r"(?i)user(?:[-_]?(?:name|id))?|login|e-?mail|[a-z0-9_.-]*(?:pass(?:word|wd|phrase)s?|secrets?)"  # beside `token`
                       r"|client[-_]?id|(?:grant|token)[-_]?type|expires(?:[-_]?(?:in|at))?|expiry|scopes?|auth(?:[-_][a-z0-9_-]+|entication"
                       r"|ori[sz]ation|type|method|code)?"
                       r"|(?:access|refresh|id|session)[-_]?token|api[-_]?key|session(?:[-_]?id)?|otp|totp|mfa[a-z0-9_-]*").fullmatch
_compiled: list[Any] = []  # `_QUOTED` and the `\u` keys' patterns, compiled on first need: text without a hint never needs them


def _kept(m: re.Match[str]) -> str:  # what a mask keeps before it: a field's or header's name, a scheme, a URL's user, …
    return (m.group("field") or m.group("form") or m.group("name") or m.group("scheme") or m.group("cookie") or m.group("url")
            or m.group("kv") or "")


def _mask(m: re.Match[str]) -> str:
    return _kept(m) + MASK


def redact(text: str, shown: int | None = None) -> str:
    """`redact_quoted`: credentials masked, searched in the first `shown` characters (and 256 more); else `text` itself."""
    if _HINT(text if shown is None else text[: shown + 32]) is None:
        return text
    head = text if shown is None else text[: shown + 256]
    if not _compiled:
        _compiled.extend((re.compile(_QUOTED), *(re.compile(p) for p in _ESCAPED)))
    quoted, key, esc, name = _compiled
    spans, parts, pos, size = [], [], 0, 0  # keys spelled with `\u` escapes naming a credential or PIN: read as JSON reads them
    for m in key.finditer(head) if "u00" in head else ():
        if name.fullmatch(s := esc.sub(lambda e: chr(int(e[1], 16)), m[0])):
            size += m.start() - pos
            parts += (head[pos:m.start()], s)
            spans.append((size, size + len(s), m[0]))
            size, pos = size + len(s), m.end()
    keyed = "".join(parts) + head[pos:] if spans else head
    masked = quoted.sub(_mask, keyed) if not spans else _spelled(quoted, keyed, spans)
    return text if masked == head else masked if len(head) == len(text) else masked + "…"


def _spelled(quoted: re.Pattern[str], keyed: str, spans: list[tuple[int, int, str]]) -> str:
    """`quoted.sub(_mask, keyed)`, each key of `spans` that no mask overlaps spelled back as it was (`redact._sub_spelled`)."""
    out, pos, i = [], 0, 0

    def copy(a: int, b: int) -> None:
        nonlocal i
        while i < len(spans) and spans[i][0] < a:
            i += 1
        while i < len(spans) and spans[i][1] <= b:
            out.extend((keyed[a:spans[i][0]], spans[i][2]))
            a, i = spans[i][1], i + 1
        out.append(keyed[a:b])

    for m in quoted.finditer(keyed):
        copy(pos, m.start() + len(_kept(m)))
        out.append(MASK)
        pos = m.end()
    copy(pos, len(keyed))
    return "".join(out)


# Pure answers kept (texts seen clean: calls', labels', tool names'), bounded: a set is emptied when full.
_CLEAN_CALLS: set[str] = set()
_CLEAN_LABELS: set[str] = set()
_CLEAN_NAMES: set[str] = set()
_FLAT = frozenset({int, float, bool, type(None)})


def _pin_value(v: Any) -> bool:  # 4 to 12 digits, a string or an integer
    return (4 <= len(v) <= 12 and v.isascii() and v.isdigit()) if type(v) is str else type(v) is int and 1000 <= v < 10**12


def _digits(k: Any, v: Any, whole: bool) -> bool:
    """`_keyed_digits`: a PIN under its key; in details, an integer of 4+ digits under a credential's key."""
    if type(k) is not str or type(v) not in (str, int):
        return False
    return _pin_value(v) and _PIN_KEY(k) is not None or not whole and type(v) is int and v >= 1000 and _KEY(k) is not None


def masked_under(key: str, v: Any, beside: Any = None) -> bool:
    """`masked_under`: a value shown apart from its key is masked whole when the key would mask it in text; under `token`
    alone, any string when a key of `beside` (the mapping, or a tuple of them) shows an authentication."""
    if v is None or v == "" or type(v) is bool:
        return False
    if _FIELD_KEY(key) or _PIN_KEY(key) and _pin_value(v):
        return True
    if type(v) is not str:
        return False
    if beside is not None and key.lower() == "token" and any(
            type(k) is str and k != key and _AUTH_KEY(k) for m in (beside if type(beside) is tuple else (beside,)) for k in m):
        return True
    text = f"{json.dumps(key, ensure_ascii=False)}: {json.dumps(redact(v), ensure_ascii=False)}"
    return redact(text) != text


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
        if _digits(k, v, whole):
            out[key] = MASK
        elif whole and not isinstance(v, str) and isinstance(k, str) and v not in (None, [], {}) and _KEY(k):
            out[key] = MASK
        elif isinstance(v, str):
            got = redact(v)
            if got == v and isinstance(k, str) and (v and _KEY(k) or redact(f"{k}: {v}") != f"{key}: {v}"):
                got = (s.group() if (s := _SCHEME(v)) else "") + MASK  # masked whole but for its scheme
            out[key] = got
        else:
            out[key] = _masked(v, whole)
    return out


def labels(tags: list[str], metadata: dict[str, Any]) -> tuple[Any, Any]:
    """`redact_labels`: the same objects when masking (`_masked`) changes nothing, else the masked copies. Texts seen
    unchanged and without a credential's hint are kept (tracejudge's memo): flat labels made of them need no search."""
    seen = _CLEAN_LABELS
    if seen.issuperset(tags):
        for k, x in metadata.items():
            if _digits(k, x, True) or not (f"{k}: {x}" in seen and not (x and _KEY(k)) if type(x) is str else type(x) in _FLAT and k in seen and (x is None or not _KEY(k))):
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
        if _HINT(text[:152]) is not None and (shown := _masked_args(args)) is not args:  # a value under a credential's key
            text = dumps(shown, True)
            text = redact(text.replace(_MASK_TEXT, MASK), 120)
            return f"{name}({text[:119]}…)" if len(text) > 120 else f"{name}({text})"
        masked = redact(text, 120)
        if masked is not text:
            text = masked
        elif len(text) <= 240:
            if len(_CLEAN_CALLS) >= 4096:
                _CLEAN_CALLS.clear()
            _CLEAN_CALLS.add(text)
    return f"{name}({text[:119]}…)" if len(text) > 120 else f"{name}({text})"


_MASK_VALUE = "\x00" + MASK + "\x00"  # a non-string value masked under its key: written as a bare `[REDACTED]`
_MASK_TEXT = json.dumps(_MASK_VALUE)


def _masked_args(v: Any) -> Any:
    """`call_text._masked_arguments`: each value `masked_under` its key replaced, at any depth; `v` itself when none is."""
    if isinstance(v, dict):
        out = {k: (MASK if isinstance(x, str) else _MASK_VALUE) if masked_under(k, x, v) else _masked_args(x) for k, x in v.items()}
        return out if any(out[k] is not x for k, x in v.items()) else v
    if isinstance(v, list):
        items = [_masked_args(x) for x in v]
        return items if any(a is not b for a, b in zip(items, v)) else v
    return v


def short_json(value: Any, limit: int = 60, key: str | None = None, beside: Any = None) -> str:
    if key is not None and value is not ABSENT and masked_under(key, value, beside):
        return MASK
    text = "<absent>" if value is ABSENT else redact(dumps(value, False), limit)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def short_pair(exp: Any, got: Any, limit: int = 60, key: str | None = None, beside: Any = None) -> tuple[str, str]:
    """Both values' texts, cut around their first differing character when long (`[REDACTED]` when `masked_under` `key`)."""
    if key is not None and (masked_under(key, exp, beside) or masked_under(key, got, beside)):
        return short_json(exp, limit, key, beside), short_json(got, limit, key, beside)
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
        if (type(exp) is dict and _matcher(exp) is None and type(got) is dict and not masked_under(key, exp)
                and (inner := difference(exp, got, f"{prefix}{key}."))):
            return inner
        if got is ABSENT:
            return f"{prefix}{key}: expected {short_json(exp, key=key, beside=(e, a))}, missing"
        return "{}{}: expected {}, got {}".format(prefix, key, *short_pair(exp, got, key=key, beside=(e, a)))
    extra = next((k for k in a if k not in e), None)
    return None if extra is None else f"{prefix}{extra}: unexpected argument {short_json(a[extra], key=extra, beside=a)}"
