"""Credentials a judge request's prompt holds, to mask in its reply when the judge quotes them back alone.

A judge that quotes a trace's credential in its reason mostly quotes the value without the name it stood after ("the
key wJalr… was exposed"), where no pattern can tell it from other text (`redact`'s patterns need the name or a
credential's shape). The judge stage (and `tracejudge bench`) therefore masks, in a request's reply and in a refusal's
text, the exact values its prompt held as credentials: `prompt_secrets(request)`, passed to `redact(text, secrets)`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tracejudge.llm.redact import _HINT, _compiled, _kept, _unescaped_keys

__all__ = ["prompt_secrets", "quoted_values"]

_SCHEME = re.compile(r"^(?:[Bb]earer|[Bb]asic)\s+")
# A field named for a password or secret in the judge prompt's compact rendering (`{db_password:hunter2,…}`, no quotes).
# A value there runs to the next `,` `;` `}` `]` or line end (spaces included: "correct horse battery staple"), or is
# a JSON string (`"Tr0ub4dor\"&3"`), taken as written and as the judge would quote it, unescaped. A match starts only
# where a run of name characters starts: started inside one too, the search tried every position of a long token (a
# base64 blob, a hex dump) against the rest of it, quadratic in its length (a 100,000-character output hung the judge).
_BARE_FIELD = re.compile(r"""(?i)(?<![A-Za-z0-9_.-])[A-Za-z0-9_.-]*(?:password|passwd|secret)\s*[:=]\s*(?:"((?:[^"\\\n]|\\.)*)"|([^,;{}\[\]\n"']+))""")


def quoted_values(text: str) -> tuple[str, ...]:
    """The credentials `redact_quoted` would mask in `text`, each value alone (without the name or field before it), once.

    A judge that quotes a trace's credential back in its reason quotes the value, mostly without the name it stood
    after ("the key wJalr… was exposed"), where no pattern can tell it from other text: the judge stage masks these
    exact values in the reply of a request whose prompt holds them (`redact(reply, secrets)`). A value of letters
    of one case alone, or under 8 characters, is left out (`"password": "required"` in a tool's schema is no
    secret, and masking the word everywhere would spoil the reason). Never raises.
    """
    if _HINT.search(text) is None:
        return ()
    found: dict[str, None] = {}
    text = _unescaped_keys(text)  # (a key spelled with `\u` escapes written as it reads: only keys change)
    for m in _compiled()[2].finditer(text):
        value = m.group(0)[len(_kept(m)):]
        value = _SCHEME.sub("", value)  # (`Authorization: Bearer <token>`: the token)
        found[value] = None
        while m.group("field") and "\\" in value:  # a field's value as written, escaped at its depth, and decoded
            try:
                value = json.loads(f'"{value}"')
            except ValueError:
                break
            found[value] = None
    for m in _BARE_FIELD.finditer(text):
        if m.group(1) is not None:  # a JSON string: its text as written, and decoded
            found[m.group(1)] = None
            try:
                found[json.loads(f'"{m.group(1)}"')] = None
            except ValueError:
                pass
        else:
            found[m.group(2).strip()] = None
    return tuple(v for v in found if len(v) >= 8 and not (v.isalpha() and (v.islower() or v.isupper())))


def prompt_secrets(request: Any) -> tuple[str, ...]:
    """`quoted_values` of a judge request's messages (a `JudgeRequest`: the trace is in them), longest first, so that
    `redact` masks a credential whole before any shorter one inside it."""
    texts = [m.get("content") for m in getattr(request, "messages", ()) or () if isinstance(m, dict)]
    found = quoted_values("\n".join(t for t in texts if isinstance(t, str)))
    return tuple(sorted(found, key=len, reverse=True))
