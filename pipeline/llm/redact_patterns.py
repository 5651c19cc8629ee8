"""The patterns `redact` masks credentials with, as text (compiled on first use by `redact._compiled`).

Kept apart from the functions that apply them: the shapes of keys, the names of credential fields and the quoted
values after them, the password of a URL, a Cookie header, and the cheap hint that tells a text needs none of them.
"""

from __future__ import annotations

import re

# The password of a URL or DSN (`scheme://user:password@host`): group `url` keeps what precedes it. It ends
# at the authority's last `@` (a password may hold one), never past a `/`. A scheme is at most 40 characters: an
# unbounded one made a long run of scheme characters ("a-a-a-…", each `a` a start) cost its length squared.
_URL_PASSWORD = r"""\b(?P<url>[A-Za-z][A-Za-z0-9+.-]{0,40}://[^\s:/@"']*:)[^\s/?#"']+(?=@)"""

_PATTERN_TEXTS = (
    # A header or JSON field that names a credential, then its value ("x-api-key: v", '"x-api-key": "v"', and the
    # field inside a JSON-encoded string, '\\"x-api-key\\": \\"v\\"', at any depth); a `Bearer`/`Basic` scheme is kept.
    r"""(?i)((?:x-api-key|api[-_]key|authorization|proxy-authorization|secret[-_]access[-_]key|private[-_]key(?:[-_]id)?|pass(?:word|wd|phrase)"""
    r"""|client[-_]secret|(?:access|refresh|auth|id|bearer|session)[-_]token)(?:\\*["'])?\s*[:=]\s*(?:\\*["'])?(?:bearer\s+|basic\s+)?)"""
    r"""(?!-----BEGIN)[^\s"'\\,;}]+""",  # (a private key's PEM block is a shape, masked whole below)
    r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{4,}",
    r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{6,}|(?<![A-Za-z0-9])sk_[A-Za-z0-9_]{6,}",  # (after `_` too: `extra_sk-…`)
    _URL_PASSWORD,
)

# Shapes only a credential has: masked whole wherever they appear.
_SHAPES = (
    r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",  # an AWS access key id
    r"\bxox[abprse]-[A-Za-z0-9-]{10,}|\bxapp-[0-9]-[A-Za-z0-9-]{10,}",  # a Slack token, a Slack app token
    r"\bhooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{20,}",  # a Slack webhook's secret path
    r"\bgl(?:pat|ptt)-[A-Za-z0-9_-]{20,}",  # a GitLab personal / project / group access token, a trigger token
    r"\bnpm_[A-Za-z0-9]{36}(?![A-Za-z0-9])",  # an npm access token
    r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",  # a PyPI upload token
    r"(?<![A-Za-z0-9])[rs]k_(?:live|test|prod)_[A-Za-z0-9]{10,}",  # a Stripe secret or restricted key
    r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])",  # a SendGrid API key
    r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![A-Za-z0-9])",  # a Shopify access token or shared secret
    # An Azure storage / Service Bus key in a connection string (`AccountKey=…;`): group `kv` keeps its name.
    r"(?P<kv>\b(?:AccountKey|SharedAccessKey)=)[A-Za-z0-9+/]{20,}={0,2}",
    r"\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}",  # a GitHub token
    r"\bAIza[0-9A-Za-z_-]{35,}",  # a Google API key
    r"\bhf_[A-Za-z0-9]{30,}",  # a Hugging Face token
    # An OpenAI project, service-account or admin key, an Anthropic or OpenRouter key: the prefix alone says what it
    # is, so one of letters only counts too (a bare `sk-` token needs a digit: "sk-learn-…" is a phrase).
    r"(?<![A-Za-z0-9])sk-(?:proj|svcacct|admin|ant|or)-[A-Za-z0-9_-]{20,}",
    # A JWT: two base64url segments of JSON objects (`{"` is `eyJ`), then the signature, when present.
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*)?",
    # A private key, to its END line or, in a text cut before it, to the end.
    r"-----BEGIN[A-Z ]{0,40}PRIVATE KEY-----[\s\S]*?(?:-----END[A-Z ]{0,40}PRIVATE KEY-----|\Z)",
)
_SHAPE = "|".join(_SHAPES)

# For trace text. Unlike a reply's text, a trace is full of ordinary phrases ("api_key: not configured",
# "basic plan-2024", "SKU sk-100200300"): after a credential's name (in its usual spellings; not before an
# object or list), after `Bearer`/`Basic` and after `sk-`, only a token counts — a whole run of token
# characters, 16+ long, with a letter and a digit, or base64 padded with `=` (a Basic token without a digit).
# Group `name` keeps a header's name, group `scheme` a `Bearer`/`Basic` prefix.
_CHAR = r"[A-Za-z0-9._~+/=-]"
_TOKEN = rf"(?:(?={_CHAR}*?[0-9])(?={_CHAR}*?[A-Za-z]){_CHAR}{{16,}}|{_CHAR}{{15,}}=)(?!{_CHAR})"
_NAMES = (r"api[-_]?key|API[-_]?KEY|Api[-_]?Key|authorization|Authorization|AUTHORIZATION"
          r"|secret[-_]?access[-_]?key|SECRET[-_]?ACCESS[-_]?KEY|SecretAccessKey|private[-_]?key|PRIVATE[-_]?KEY|PrivateKey"
          r"|pass(?:word|wd|phrase)|PASS(?:WORD|WD|PHRASE)|Pass(?:word|phrase)|secret|SECRET|Secret|token|TOKEN|Token")
# A JSON (or Python repr) field named for a password, a secret, an API key, an authorization header, a private key
# (and its id), a session's token or a cookie (`Cookie` / `Set-Cookie` alone: not `accept_cookie`): its quoted value is
# the secret whatever its shape ("hunter2" is not token-shaped), as under a metadata key (`_CREDENTIAL_KEY`); a
# `Bearer`/`Basic` scheme is kept. Not any `token`: `next_token` pages. Its quotes may be escaped, to any depth
# (`\"password\": \"…\"` in a JSON-encoded request body). The value ends where its string does. Its opening quote
# (`"` or `'`) has n backslashes before it (`bs`: none at depth 0, one at depth 1, three at depth 2, …); a quote of
# the same kind inside the value has 2n+1 (`\"` at depth 0, `\\\"` at depth 1), after 2n+2 for each backslash before
# it in the value, and the closing one n, after 2n+2 for each backslash the value ends with (`"a\\"` at depth 0).
# So a quote of its kind whose backslashes number 2n+1 modulo 2n+2 is inside the value, and any other ends it (a quote
# of the other kind is inside): the mask leaves valid JSON at every depth. A value not closed (a cut text) runs to
# the line's or the text's end. The value is read possessively and always ends (at a quote, a line's end or the
# text's end), so each character is read by one match at most, and a match starts only at a quote with no backslash
# before its own: the search stays linear. (It starts at a quote or backslash, no backslash before it, looked
# behind once it is read: `re` skips the other positions fast.)
_Q = r"""\\*["']"""
_FIELD_NAME = (r"""[A-Za-z0-9_.-]*(?i:password|passwd|passphrase|secret|authorization|api[-_]?key|private[-_]?key(?:[-_]?id)?"""
               r"""|(?:access|refresh|auth|id|bearer|session|api)[-_]?token)|(?i:(?:set-)?cookie)""")
_FIELD_VALUE = (r"""(?:[^"'\\\n]|(?!(?P=q))["']|\\++(?!(?P=q))|(?:(?P=bs)(?P=bs)\\\\)*+(?P=bs)(?P=bs)\\(?P=q)"""
                r"""|(?:(?P=bs)(?P=bs)\\\\)++(?=(?P=bs)(?P=q)))++"""
                r"""(?=\\*(?P=q)|\n|\Z)""")
_SECRET_FIELD = (rf"""(?P<field>[\\"'](?<!\\[\\"'])(?:(?<=["'])|(?<=\\)\\*["'])(?:{_FIELD_NAME}){_Q}\s*:\s*(?P<bs>\\*)(?P<q>["'])(?:[Bb]earer\s+|[Bb]asic\s+)?)"""
                 + _FIELD_VALUE)
# A `Cookie:` / `Set-Cookie:` header in text (`Cookie: sid=…; theme=dark`): its whole value, names and attributes too
# (one masked form, as the field's and a mapping's), to the line's end or a quote or backslash (a JSON-encoded
# text's `\r\n`, its string's end), also after an escaped line break (`…\r\nCookie: …`). Only before a `name=`
# pair: "cookie: chocolate chip" is prose. (It starts at a `C` or `S`, its boundary looked behind: `re` skips the
# other positions fast.)
_COOKIE_HEADER = (r"""(?P<cookie>[CcSs](?:(?<![A-Za-z0-9_-].)|(?<=\\[nr].))(?i:(?<=s)et-cookie|(?<=c)ookie)[ \t]*:[ \t]*)"""
                  r"""(?=[^\s=;,"'\\]+=)[^\r\n"'\\]+""")
_QUOTED = (
    _SECRET_FIELD + "|"
    rf"""(?P<name>(?:{_NAMES})(?:{_Q})?\s*[:=]\s*(?:{_Q})?(?![\[{{])(?:[Bb]earer\s+|[Bb]asic\s+)?){_TOKEN}"""
    rf"|\b(?P<scheme>(?:[Bb]earer|[Bb]asic)\s+){_TOKEN}|{_COOKIE_HEADER}"
    r"|(?<![A-Za-z0-9])sk[-_](?=[A-Za-z0-9_-]*?[0-9])(?=[A-Za-z0-9_-]*?[A-Za-z])[A-Za-z0-9_-]{20,}"
    rf"|{_URL_PASSWORD}|" + _SHAPE
)
# The pre-check: a part of every match of `_QUOTED` (its name's `key`/`zation`, `KIA` of `AKIA`, `J` of
# `eyJ`, `//` of a URL, …), so text it finds nothing in has no credential. Only whether it finds something is
# read, so an alternative may start anywhere in its part. `re` skips the positions holding none of the
# alternatives' first characters and tries the alternatives one after another at the others, so they are
# grouped by first character, and the parts that start with a letter common in trace text start later
# behind a lookbehind (`oken` at its `k`, `ghp_` at its `h`, `github_pat_` at its `b`): a `search` over
# a call's 150 characters cost 1.7 µs with one alternative per part, about 1 µs grouped.
_WORD = r"[A-Za-z0-9._~+/=-]{15}"
_SET = r"""(?:\\*["'])?\s*[:=]"""  # what follows a credential's name before its value (its quote escaped or not)
_HINT = re.compile(
    rf"k(?:ey(?:[-_]?[Ii][Dd])?{_SET}|ie{_SET}|(?<=ok)en{_SET}|[-_](?<=(?<![A-Za-z0-9])sk[-_])|_(?<=(?<![A-Za-z0-9])rk_))"
    rf"|K(?:EY{_SET}|ey(?:[-_]?[Ii][Dd])?{_SET}|IA|IE{_SET})"
    rf"|z(?:ation|a(?<=AIza))|ZATION|w(?:or)?d{_SET}|W(?:OR)?D{_SET}|c(?:ret{_SET}|Hlw(?<=AgEIcHlw))|CRET{_SET}|OKEN{_SET}"
    rf"|B(?:earer\s+{_WORD}|asic\s+{_WORD}|EGIN|IA)|b(?:earer\s+{_WORD}|asic\s+{_WORD}|_pat_(?<=github_pat_))"
    rf"|S(?:IA|G\.|PHRASE{_SET})|CCA|x(?:ox|app-)|h(?:f_|(?<=gh)[pousr]_|(?<=sh)p(?:at|ca|pa|ss)_)|J(?<=eyJ)|/(?<=://)"
    rf"|p(?:hrase{_SET}|(?<=np)m_|(?<=glp)(?:at|tt)-)"
)
