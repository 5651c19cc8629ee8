"""The patterns `redact` masks credentials with, as text (compiled on first use by `redact._compiled`).

Kept apart from the functions that apply them: the shapes of keys, the names of credential fields and the quoted
values after them (a PIN's field's digits too), a credential's field in a query string or form body, keys spelled with
`\\u` escapes, the password of a URL, a Cookie header, and the cheap hint that tells a text needs none of them.
"""

from __future__ import annotations

import re


def _ci(words: str) -> str:
    """`words`, a pattern of lower-case letters, matching them in any letter case, each as a class (`pin` → `[Pp][Ii][Nn]`):
    `re` tries a branch that starts with a class or a plain character fast (a check), one in `(?i:…)` slowly."""
    return re.sub(r"[a-z]", lambda m: f"[{m.group().upper()}{m.group()}]", words)


# The password of a URL or DSN (`scheme://user:password@host`): group `url` keeps what precedes it. It ends
# at the authority's last `@` (a password may hold one), never past a `/`. A scheme is at most 40 characters: an
# unbounded one made a long run of scheme characters ("a-a-a-…", each `a` a start) cost its length squared.
_URL_PASSWORD = r"""\b(?P<url>[A-Za-z][A-Za-z0-9+.-]{0,40}://[^\s:/@"']*:)[^\s/?#"']+(?=@)"""

_PATTERN_TEXTS = (
    # A header or JSON field that names a credential, then its value ("x-api-key: v", '"x-api-key": "v"', and the
    # field inside a JSON-encoded string, '\\"x-api-key\\": \\"v\\"', at any depth); a `Bearer`/`Basic` scheme is kept, and
    # GitHub's `token` one (`Authorization: token <key>`: the word was masked and the key after it shown).
    r"""(?i)((?:x-api-key|api[-_]?key|authorization|proxy-authorization|secret[-_]access[-_]key|private[-_]key(?:[-_]id)?|pass(?:word|wd|phrase)"""
    r"""|client[-_]secret|(?:access|refresh|auth|id|bearer|session)[-_]token)(?:\\*["'])?\s*[:=]\s*(?:\\*["'])?(?:bearer\s+|basic\s+|token\s+)?+)"""
    r"""(?!-----BEGIN|\[REDACTED\])[^\s"'\\,;}]+""",  # (a PEM block is a shape, masked whole below; a form's value is masked)
    r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{4,}",
    r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{6,}|(?<![A-Za-z0-9])sk_[A-Za-z0-9_]{6,}",  # (after `_` too: `extra_sk-…`)
    _URL_PASSWORD,
)

# Shapes only a credential has: masked whole wherever they appear.
_SHAPES = (
    r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",  # an AWS access key id
    r"\bxox[abprse]-[A-Za-z0-9-]{10,}|\bxapp-[0-9]-[A-Za-z0-9-]{10,}",  # a Slack token, a Slack app token
    r"\bhooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{20,}",  # a Slack webhook's secret path
    # A GitLab token, by the prefixes GitLab documents (personal/project/group access, trigger, deploy, runner, CI/CD
    # job, feed, incoming mail, agent, OAuth application secret, SCIM, feature flags client, workspace), its routable
    # form's `.`-parts too; a runner registration token (`GR1348941…`).
    # (These start with a plain character, their word boundary looked behind: `re` tries such a branch fast.)
    r"gl(?<!\wgl)(?:pat|ptt|dt|rtr?|cbt|ft|imt|agent|oas|soat|ffct|wt)-[A-Za-z0-9_-]{20,}(?:\.[0-9a-z]{2,}){0,2}"
    r"|GR(?<!\wGR)1348941[A-Za-z0-9_-]{20,}",
    r"do(?<!\wdo)[opr]_v1_[a-f0-9]{64}(?![A-Za-z0-9])",  # a DigitalOcean personal access, OAuth or refresh token
    r"ya(?<!\wya)29\.(?=[A-Za-z0-9_.-]{20})[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*",  # a Google OAuth access token
    r"\bnpm_[A-Za-z0-9]{36}(?![A-Za-z0-9])",  # an npm access token
    r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",  # a PyPI upload token
    r"(?<![A-Za-z0-9])[rs]k_(?:live|test|prod)_[A-Za-z0-9]{10,}",  # a Stripe secret or restricted key
    r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])",  # a SendGrid API key
    r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}(?![A-Za-z0-9])",  # a Shopify access token or shared secret
    # An Azure storage / Service Bus key in a connection string (`AccountKey=…;`), a GitLab session cookie: group `kv`
    # keeps its name.
    r"(?P<kv>\b(?:AccountKey|SharedAccessKey)=|(?<![A-Za-z0-9])_gitlab_session=)[A-Za-z0-9+/]{20,}={0,2}",
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
# "basic plan-2024", "SKU sk-100200300"): after a credential's name (in any letter case; not before an
# object or list), after `Bearer`/`Basic` and after `sk-`, only a token counts — a whole run of token
# characters, 16+ long, with a letter and a digit, or base64 padded with `=` (a Basic token without a digit).
# Group `name` keeps a header's name, group `scheme` a `Bearer`/`Basic` prefix.
_CHAR = r"[A-Za-z0-9._~+/=-]"
# A token's characters but `=`, which only pads its end (base64): a value is read to its run's end once, and never over
# an inner `=`, so it never runs over the next `name=` (read over it, `token=` repeated cost each name the rest of the
# text: quadratic, a megabyte took hours). A 16+ run of letters, digits and `._~+/-`, then any `=`, to the run's end.
_V = r"[A-Za-z0-9._~+/-]"
_TOKEN = rf"(?={_CHAR}{{16}})(?:(?=[A-Za-z._~+/-]*+[0-9])(?=[0-9._~+/-]*+[A-Za-z]){_V}++=*+|{_V}++=++)(?!{_CHAR})"
# A pagination cursor under a name ending in `token` (`page_token`, `next_page_token`, `pageToken`, `nextPageToken`,
# AWS's `NextToken`, S3's `ContinuationToken`, boto's `StartingToken`, `next_token`, `prev_token`) is a listing's position
# the agent passes back, no credential: its value is kept wherever a name ending in `token` masks one (here, and
# `redact_keyed`'s keys). Looked behind once `token` is read (a word of 4, 8 or 12 letters before it, a `-`/`_` between
# or not), so other text pays nothing; `page_access_token` (a credential) ends in `access_token`, not `page_token`.
_PAGE_TOKEN = "".join(rf"(?<!{_ci(words)}{sep}[Tt][Oo][Kk][Ee][Nn])"
                      for words in ("(?:page|next|prev)", "(?:previous|starting)", "continuation") for sep in ("", "[-_]"))
_NAMES = (_ci("api[-_]?key|authorization|secret(?:[-_]?access[-_]?key)?|private[-_]?key|pass(?:word|wd|phrase)|token")  # any case
          + _PAGE_TOKEN + r"""(?:(?:(?<![A-Za-z0-9_.-][Tt][Oo][Kk][Ee][Nn])|(?<=\\[nrt][Tt][Oo][Kk][Ee][Nn]))(?P<bare>))?""")
# (`token` alone: group `bare`; also on a line of a JSON-encoded text, after its escaped line break `\n`)
# A field named `token` alone (`"token": "…"`, `'Token': '…'`, its quotes escaped or not, or a key without quotes as
# YAML and logs write it, `token: "…"`, `token='…'`; group `bare`: no name character before `token`): its quoted value
# counts from 8 characters, when it is a token's characters to the string's end with a letter and a digit
# (`"tok_9f8e7d6c"`: a session's or an API's token). Not any shorter or other value: under `token` a tokenizer's trace
# keeps a word (`"the"`, `"##ing"`) and a usage record a count (`"token": 512`, unquoted: never masked), and those are
# evidence a judge needs. A mapping whose other keys show an authentication (`redact.masked_under`'s `beside`) has any
# string under `token` masked, where a mapping is at hand (a call's arguments, their differences, a config).
_SHORT = rf"""(?={_CHAR}*?[0-9])(?={_CHAR}*?[A-Za-z]){_CHAR}{{8,}}+(?=\\*["'])"""
# Unquoted (`token: tok_9f8e7d6c`, `token=tok_9f8e7d6c&page=2`, as YAML, logs and query strings write it): the same shape,
# 8+ with a letter and a digit, read to the value's end, which is white space, `,` `;` `&` `#`, a closing bracket, a
# quote (escaped or not), an escaped line break or the text's end; a value with another character before that (`:`,
# `@`, `%`, `!`) is no token's, as a quoted one is not. Read as `_TOKEN` is (no inner `=`): linear.
_UNQUOTED = (rf"""(?<![\\"'])(?={_CHAR}{{8}})(?=[A-Za-z._~+/-]*+[0-9])(?=[0-9._~+/-]*+[A-Za-z]){_V}++=*+"""
             r"""(?=\\*["']|\\+[nrt]|[\s,;&#)\]}>]|\Z)""")
# The same rule for `redact` (a reply's or an error's text, which has no `token` rule of its own): a value under `token`
# alone, its key quoted or not, its value quoted (`_SHORT`) or not (`_UNQUOTED`); group `tok` keeps the name, a
# `Bearer`/`Basic` scheme and the quote (group `tq`).
_BARE_TOKEN = (r"""(?P<tok>[Tt](?:(?<![A-Za-z0-9_.-][Tt])|(?<=\\[nrt][Tt]))[Oo][Kk][Ee][Nn](?:\\*["'])?\s*[:=]\s*(?P<tq>\\*["'])?(?:[Bb]earer\s+|[Bb]asic\s+)?)"""
               + rf"(?(tq){_SHORT}|{_UNQUOTED})")
# A JSON (or Python repr) field named for a password, a secret, an API key, an authorization header, a private key
# (and its id), a session's token or a cookie (`Cookie` / `Set-Cookie` alone: not `accept_cookie`): its quoted value is
# the secret whatever its shape ("hunter2" is not token-shaped), as under a metadata key (`_CREDENTIAL_KEY`); a
# `Bearer`/`Basic` scheme is kept. Not any `token`: `next_token` pages. Its quotes may be escaped, to any depth
# (`\"password\": \"…\"` in a JSON-encoded request body). The value ends where its string does. Its opening quote
# (`"` or `'`) has n backslashes before it (`bs`: none at depth 0, one at depth 1, three at depth 2, …; in Python's repr
# of such a text, which doubles each backslash and escapes no `"`, twice as many). Every quote of its kind inside the value
# has more than n (it is escaped at the value's own level, then as the opening one is at every level around it); the
# closing one has n, after those of the backslashes the value ends with. So a quote of its kind after more than n
# backslashes is inside the value, unless they are n plus a whole number of `_UNIT`s *and* what follows the quote is what
# follows a string at the opening's level (`_AFTER`). A `_UNIT` is 2n+2 backslashes when n is odd or 0 (a backslash the
# value ends with at depth 0 is `\\`, at depth 1 `\\\\`; in a repr of JSON at depth 0 `\\\\`, two units) and 2n+4 when
# n is even (a repr of a text at depth 1: `\\\\\\\\`). Inside a repr of JSON, `\\", \\"x\\": \\"` is the value's own
# `", "x": "` (the next quote has as many backslashes, not n): before, the value ended at the first `\\"` and its tail
# was left in clear. A quote after n backslashes or fewer ends the value when what follows may follow a string
# (`_CLOSED`; a quote of the other kind is inside): the mask leaves valid JSON at every depth. A value not closed (a cut
# text) runs to the line's or the text's end. The value is read possessively and always ends (at a quote, a line's end or
# the text's end; what follows a quote is looked at once, to the next quote or backslash), so each character is read by
# one match at most, and a match starts only at a quote with no backslash before its own: the search stays linear. (It
# starts at a quote or backslash, no backslash before it, looked behind once it is read: `re` skips the other positions
# fast.)
_Q = r"""\\*["']"""
_CREDENTIAL_NAME = "[A-Za-z0-9_.-]*(?:" + _ci("pass(?:word|wd|phrase)(?:s|[-_]?confirm(?:ation)?)?|secrets?|authorization|api[-_]?key|private[-_]?key(?:[-_]?id)?"
                                               "|(?:access|refresh|auth|id|bearer|session|api)[-_]?token") + ")"
_FIELD_NAME = _CREDENTIAL_NAME + "|" + _ci("(?:set-)?cookie")
# What may follow a string's closing quote: a delimiter (`,` `:` `;` `)` `}` `]` a backtick, white space, the text's end,
# a quote of the other kind, a quote escaped less deep than the value's (a string's end a level up), an escaped line
# break or tab at its depth or an outer one). A quote of the same kind right after one at depth 0 is not: a repr of a
# value that ends in a quote (`"ab\\""`), CSV's doubled quote.
# A quote of the value's kind not followed by one is inside the value, whatever its backslashes: Python's repr of a
# JSON text doubles each backslash (`{'body': '{"password": "ab\\"cd"}'}`), so the value's escaped quote reads as a
# closing one after an escaped backslash, and `cd` was left in clear.
_CLOSED = r"""(?:[\s,:;)}\]`]|\Z|(?!(?P=q))["']|(?!(?P=bs)\\)\\+[nrt]|(?!(?P=bs))\\*["'])"""
# What follows a string's closing quote at the opening's level: delimiters, then a quote of the value's kind after n
# backslashes or fewer (the next key, an outer string's end), an escaped line break there, a line's end or the text's
# end; not a letter, a digit or a quote escaped deeper (the value's own text). At worst a value's own delimiters are shown.
_AFTER = r"""(?=[ \t\r,:;(){}\[\]]*+(?:\Z|\n|(?!(?P=bs)\\)\\*+(?P=q)|(?!(?P=bs)\\)\\++[nrt]))"""
_UNIT = r"""(?P=bs)(?P=bs)(?(even)\\\\\\\\|\\\\)"""  # a backslash of the value: 2n+2 backslashes, 2n+4 for n even (`even`)
_FIELD_VALUE = (r"""(?:[^"'\\\n]|(?!(?P=q))["']|\\++(?!(?P=q))|(?:""" + _UNIT + r""")++(?=(?P=bs)(?P=q)""" + _AFTER + r""")"""
                r"""|(?=(?P=bs)\\)\\++(?P=q)|\\*+(?P=q)(?!""" + _CLOSED + r"""))++(?=\\*(?P=q)|\n|\Z)""")
# A bare number of 4 or more digits under such a field (`"password": 12345678`, group `num`) is masked too: a numeric
# password is written unquoted; fewer digits are a count (`"reset_password": 3`, details keyed by tool name), no secret.
# A field named for a PIN (`"pin"`, `"card_pin"`, `"cardPin"`, `"ATM_PIN"`, its quotes escaped or not) holding 4 to 12
# digits, quoted or bare, is masked too (group `pin` holds its name). Only there: "pin" is also a map's pin, a pinned
# message or prose ("pin the tab"), and a PIN code (`"pincode": "560001"`) an Indian postal code, so other names,
# other values and any text are left as written. (One branch with the other fields': `re` enters each branch that
# starts with a group at every position, so a branch more cost every search a tenth.)
_PIN_NAME = r"(?:[A-Za-z0-9]+[-_.])*[Pp][Ii][Nn]|[A-Za-z0-9_]*[a-z0-9]Pin"
_SECRET_FIELD = (rf"""(?P<field>[\\"'](?<!\\[\\"'])(?:(?<=["'])|(?<=\\)\\*["'])(?:(?:{_FIELD_NAME}){_Q}\s*:\s*(?:(?P<bs>(?:\\\\)++(?!\\)(?P<even>)|\\*+)(?P<q>["'])"""
                 rf"""(?:[Bb]earer\s+|[Bb]asic\s+)?|(?P<num>)(?=[0-9]{{4,}}+(?![0-9A-Za-z_.])))|(?P<pin>{_PIN_NAME}){_Q}\s*:\s*(?:{_Q})?"""
                 rf"""(?=[0-9]{{4,12}}(?:\\*["']|[\s,}}\]]|\Z))))(?(pin)[0-9]{{4,12}}|(?(num)[0-9]++|{_FIELD_VALUE}))""")
# A credential's field in a query string or a form body (`?api_key=…&`, `user=a&password=…`, a body that starts
# `password=…&`), or with its `=` percent-encoded in an encoded one (`%3Fpassword%3D…%26`, `%253D` encoded twice): its
# value whatever its shape, to the field's end (`&`, in an encoded one `%26`; `#`, a quote, a backslash, white space).
# A `name=value` with no `?` / `&` before it and no `&` after it is no form ("password=None" in code): there only a
# token counts (the name rule below). Group `form` keeps the name and what precedes the value (group `raw` is set after a
# plain `=`).
_PCT = r"%(?:25)*+"
_FORM_FIELD = (rf"""(?P<form>(?:(?<=[?&;])|{_PCT}(?:26|3[Ff])|(?<![A-Za-z0-9_.%-])(?=[A-Za-z0-9_.-]*+(?:=[^&\s"'\\=#]*+=*+&|{_PCT}3[Dd])))"""
               rf"""{_CREDENTIAL_NAME}(?:=(?P<raw>)|{_PCT}3[Dd]))(?(raw)[^&\s"'\\#]++|(?:[^&\s"'\\#%]|%(?!(?:25)*+26))++)""")
# A key spelled with `\uXXXX` escapes of ASCII characters (`"pass\u0077ord": …`; `\\u0077` a level deeper), which JSON
# reads as the name it spells: `redact._unescaped_keys` writes one that names a credential or a PIN unescaped, so the
# rules above see it. (It starts after a quote and reads the key possessively: linear.)
_ESCAPED_KEY = r"""(?<=["'])(?=[A-Za-z0-9_.-]*+\\++u00[2-7])(?:[A-Za-z0-9_.-]++|\\++u00[2-7][0-9A-Fa-f])++(?=\\*["']\s*:)"""
_ESCAPE = r"\\++u00([2-7][0-9A-Fa-f])"
_KEY_NAME = rf"(?:{_FIELD_NAME}|{_PIN_NAME})"
# A `Cookie:` / `Set-Cookie:` header in text (`Cookie: sid=…; theme=dark`): its whole value, names and attributes too
# (one masked form, as the field's and a mapping's), to the line's end or a quote or backslash (a JSON-encoded
# text's `\r\n`, its string's end), also after an escaped line break (`…\r\nCookie: …`). Only before a `name=`
# pair: "cookie: chocolate chip" is prose. (It starts at a `C` or `S`, its boundary looked behind: `re` skips the
# other positions fast.)
_COOKIE_HEADER = (r"""(?P<cookie>[CcSs](?:(?<![A-Za-z0-9_-].)|(?<=\\[nr].))(?i:(?<=s)et-cookie|(?<=c)ookie)[ \t]*:[ \t]*)"""
                  r"""(?=[^\s=;,"'\\]+=)[^\r\n"'\\]+""")
_QUOTED = (
    _SECRET_FIELD + "|" + _FORM_FIELD + "|"
    rf"""(?P<name>(?:{_NAMES})(?:{_Q})?\s*[:=]\s*(?:{_Q})?(?![\[{{])(?:[Bb]earer\s+|[Bb]asic\s+|[Tt]oken\s+)?)"""
    rf"""(?(bare)(?:{_TOKEN}|(?:(?<=["'])|(?<=[Bb]earer\s)|(?<=[Bb]asic\s)){_SHORT}|{_UNQUOTED})|{_TOKEN})"""
    rf"|\b(?P<scheme>(?:[Bb]earer|[Bb]asic)\s+){_TOKEN}|{_COOKIE_HEADER}"
    # (A digit and a letter within the key's first 256 characters: looked for to its end, every `sk-` of a long run of
    # them, "sk-sk-sk-…", scanned the rest of the run, quadratic in its length.)
    r"|(?<![A-Za-z0-9])sk[-_](?=[A-Za-z0-9_-]{0,256}?[0-9])(?=[A-Za-z0-9_-]{0,256}?[A-Za-z])[A-Za-z0-9_-]{20,}"
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
# What follows a credential's name before its value: its quote (escaped or not) and `:` or `=`, or a `=` percent-encoded.
_SET = r"""(?:(?:\\*["'])?\s*[:=]|%(?:25)*3[Dd])"""
_PIN_SET = r"""\\*["']\s*:"""
_HINT = re.compile(
    # A credential's name in any letter case (`key`, `cookie`, `token`, `password` / `passwd`, `secret`, `authorization`,
    # `passphrase`, a PIN's field), then the shapes. Every alternative starts with a plain character, so that `re` can
    # skip the positions holding none: `(?i:…)` or a class first made every position a start (a search cost 7x).
    rf"k(?:[Ee][Yy](?:[-_]?[Ii][Dd])?{_SET}|[Ii][Ee]{_SET}|(?<=[Oo]k)[Ee][Nn]{_SET}|[-_](?<=(?<![A-Za-z0-9])sk[-_])|_(?<=(?<![A-Za-z0-9])rk_))"
    rf"|K(?:[Ee][Yy](?:[-_]?[Ii][Dd])?{_SET}|[Ii][Ee]{_SET}|(?<=[Oo]K)[Ee][Nn]{_SET}|IA)"
    rf"|z(?:[Aa][Tt][Ii][Oo][Nn]|a(?<=AIza))|Z[Aa][Tt][Ii][Oo][Nn]|w(?:[Oo][Rr])?[Dd](?:[Ss]|[-_]?[Cc][Oo][Nn][Ff][Ii][Rr][Mm](?:[Aa][Tt][Ii][Oo][Nn])?)?{_SET}|W(?:[Oo][Rr])?[Dd](?:[Ss]|[-_]?[Cc][Oo][Nn][Ff][Ii][Rr][Mm](?:[Aa][Tt][Ii][Oo][Nn])?)?{_SET}"
    rf"|c(?:[Rr][Ee][Tt][Ss]?{_SET}|Hlw(?<=AgEIcHlw))|C(?:[Rr][Ee][Tt][Ss]?{_SET}|CA)|p(?:[Hh][Rr][Aa][Ss][Ee][Ss]?{_SET}|[Ii][Nn]{_PIN_SET}"
    rf"|(?<=np)m_|(?<=glp)(?:at|tt)-)|P(?:[Hh][Rr][Aa][Ss][Ee][Ss]?{_SET}|[Ii][Nn]{_PIN_SET})"
    rf"|B(?:earer\s+{_WORD}|asic\s+{_WORD}|EGIN(?<=-----BEGIN)|IA)|b(?:earer\s+{_WORD}|asic\s+{_WORD}|_pat_(?<=github_pat_)|_session=(?<=_gitlab_session=))"
    rf"|S(?:IA|G\.)|x(?:ox|app-)|h(?:f_|(?<=gh)[pousr]_|(?<=sh)p(?:at|ca|pa|ss)_)|J(?<=eyJ)|/(?<=://)"
    rf"|gl(?:dt|rtr?|cbt|ft|imt|agent|oas|soat|ffct|wt)-|GR1348941|v1_(?<=do[opr]_v1_)|ya29\."
    r"|\\u00[2-7]"  # (a key spelled with `\u` escapes: `redact._unescaped_keys`)
)
