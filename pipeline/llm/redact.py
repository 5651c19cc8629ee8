"""Redaction of credentials in text copied from a provider's reply.

A provider (or a proxy in front of it) may echo request headers in an
error body or even in a 200 reply; whatever of that text is kept — a score's
reason, `details.raw`, an error message, a log line — first goes through
`redact`. It removes the configured key's value wherever it appears and
anything shaped like a credential: `Bearer <token>`, `sk-…` / `sk_…` keys,
(`sk-proj-…`, `sk-svcacct-…`, `sk-admin-…`, `sk-ant-…`, `sk-or-…` whatever their characters),
the value after an `x-api-key` / `api-key` / `authorization` /
`secret_access_key` / `private_key` / `password` / `passwd` / `passphrase` / `client_secret` / `access_token` (and
`refresh_`, `auth_`, `id_`, `bearer_`, `session_token`) name — its quotes escaped or not, at any depth, as in a
JSON-encoded request body; a quoted value whole, as `redact_quoted` masks a quoted field's —, a `Cookie:` /
`Set-Cookie:` header's value, AWS access key ids (`AKIA…`, `ASIA…`, `ABIA…`, `ACCA…`), Slack tokens (`xoxb-…`,
`xapp-…`) and webhook URLs, GitHub tokens (`ghp_…`, `github_pat_…`), GitLab (`glpat-…`, `glptt-…`), npm (`npm_…`),
PyPI (`pypi-…`), Stripe (`sk_live_…`, `rk_live_…`), SendGrid (`SG.….…`) and Shopify (`shpat_…`) tokens, an Azure
connection string's `AccountKey=` / `SharedAccessKey=`, JWTs (`eyJ….eyJ….…`) and private-key PEM blocks. A
`Bearer`/`Basic` scheme is kept wherever its token is masked (`Authorization: Bearer [REDACTED]`).

Text quoted from a trace into a score's reason or an `invalid_input` message
(a tool call's arguments, an output) goes through `redact_quoted`: the same
shapes, but a value after a credential's name (those above, and any name ending in `password`, `passwd`,
`secret`, `token` or `private_key`, such as `db_password` or `github_token`), a `Bearer`/`Basic` token and
an `sk-` key count only when they look like a credential (a run of token
characters, 16+ long — `sk-` keys 20+ — with letters and digits, or base64
ending in `=`), because a trace is full of ordinary phrases ("basic
economy", "api_key: not configured", "SKU sk-100200300"). It searches only
what the reason shows, once, with one pattern, and returns text without a
credential unchanged: reasons are built for every case. A quoted field named for a password, secret, API key,
authorization, private key (or its id) or access/refresh/session token has its quoted value masked whatever its
shape, its quotes escaped or not (`\\"password\\": \\"…\\"`), as a mapping's value under such a key is; so has a
passphrase's and a `Cookie` / `Set-Cookie` header's.

Both also mask AWS secret access keys after their name, Google API keys
(`AIza…`), Hugging Face tokens (`hf_…`) and the password of a URL or DSN
(`postgres://user:[REDACTED]@host/db`, any scheme).

A case's tags and metadata are copied into its result line and the reports as the
dataset wrote them; `redact_labels` passes them through `redact_quoted` first, a
string alone and, for a mapping's string value, with its key before it (so
`{"api_key": "<token>"}` is masked as `api_key: <token>` is in a trace).

A live target's secrets are the values of the environment variables its
config names as `${NAME}` (`env_secrets`); what the target stage copies from
the target's replies goes through `redact` / `redact_data` with them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from functools import cache, lru_cache
from typing import Any

from tracejudge.core.memo import SeenSet

__all__ = ["ENV_VAR", "MASK", "env_secrets", "quoted_clean", "redact", "redact_data", "redact_details", "redact_labels",
           "redact_quoted", "redact_url_passwords"]

# `${NAME}` in a config value: the environment variable NAME, expanded at run time.
ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

MASK = "[REDACTED]"

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


@cache
def _compiled() -> tuple[tuple[re.Pattern[str], ...], re.Pattern[str], re.Pattern[str]]:
    """`(_PATTERN_TEXTS` and `_SECRET_FIELD` or `_COOKIE_HEADER`, `_SHAPE, _QUOTED)` compiled, on first use: a run whose
    texts hold no credential's hint (`_HINT`) never needs them, and compiling them cost every start-up about 2 ms."""
    patterns = (*_PATTERN_TEXTS, f"{_SECRET_FIELD}|{_COOKIE_HEADER}")
    return tuple(re.compile(p) for p in patterns), re.compile(_SHAPE), re.compile(_QUOTED)


# How far past what a reason shows `redact_quoted` looks: a credential that starts in the shown part is
# seen whole (or long enough to match), so a cut cannot leave a part of it.
_REACH = 256


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every secret in `secrets` and every credential-shaped token replaced by `[REDACTED]`.

    `secrets` are exact values (the configured API key); values shorter than
    4 characters are ignored (they would mask ordinary text). Never raises.
    """
    if not text:
        return text
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, MASK)
    patterns, shape, _ = _compiled()
    # A quoted field's value whole (to its string's end, whatever it holds), a cookie header's; then the other rules.
    # (`_HINT` finds a part of each of their matches; most text has none, and the search costs a tenth of theirs.)
    if _HINT.search(text) is not None:
        text = patterns[4].sub(lambda m: (m.group("field") or m.group("cookie")) + MASK, text)
    text = patterns[0].sub(lambda m: m.group(1) + MASK, text)
    text = patterns[1].sub(lambda m: m.group(1) + " " + MASK, text)
    text = patterns[2].sub(MASK, text)
    text = patterns[3].sub(lambda m: m.group("url") + MASK, text)
    return shape.sub(_mask_shape, text)


def _mask_shape(m: re.Match[str]) -> str:
    return (m.group("kv") or "") + MASK


def _mask(m: re.Match[str]) -> str:
    return _kept(m) + MASK


def _kept(m: re.Match[str]) -> str:
    """What a match of `_QUOTED` keeps before its mask: a field's or header's name, a scheme, a URL's user, a key's name."""
    return m.group("field") or m.group("name") or m.group("scheme") or m.group("cookie") or m.group("url") or m.group("kv") or ""


def redact_quoted(text: str, shown: int | None = None) -> str:
    """`text`, quoted from a trace, with credential-shaped tokens replaced by `[REDACTED]`.

    `shown`: how many of its first characters the caller shows (it cuts the
    result there, as it cut the text before); only those and a few hundred
    more are searched, so a long output costs no more than a short one, and a
    cut cannot leave part of a key. When the result is that head, it ends in
    `…`. Text without a credential is returned as it is. Never raises.
    """
    # A credential shown starts in the first `shown` characters, its hint within the next few.
    if _HINT.search(text if shown is None else text[: shown + 32]) is None:
        return text
    head = text if shown is None else text[: shown + _REACH]
    masked = _compiled()[2].sub(_mask, head)
    if masked == head:
        return text
    return masked if len(head) == len(text) else masked + "…"


def quoted_clean(texts: list[str]) -> bool:
    """True when `redact_quoted` returns every string of `texts` as it is because none holds a credential's hint.

    One search over them all, joined by NUL: no part of `_HINT` matches a NUL and every `\\b` or
    lookbehind sees one as it sees a text's start, so each hint in a text is a hint in the joined
    text. False says only that some text may need masking (`redact_quoted` each to know).
    """
    return _HINT.search("\x00".join(texts)) is None


def env_secrets(texts: Iterable[str | None], environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """The values of the set environment variables named as `${NAME}` in `texts`, each once.

    Values shorter than 4 characters are left out (`redact` ignores them
    anyway). Never raises: an unset variable is simply skipped.
    """
    found: dict[str, None] = {}
    for text in texts:
        for name in ENV_VAR.findall(text or ""):
            value = environ.get(name)
            if value and len(value) >= 4:
                found[value] = None
    return tuple(found)


def redact_data(value: Any, secrets: Iterable[str | None] = (), only_with_secret: bool = False, quoted: bool = False,
                keys: bool = False) -> Any:
    """A copy of the JSON-like `value` (dicts, lists, strings, scalars) with its strings passed through `redact`.

    With `only_with_secret`, only strings that contain one of `secrets` are
    redacted (a trace's ordinary text stays as the agent wrote it); the
    others are returned as they are. With `quoted`, strings go through
    `redact_quoted` instead (trace values a score's details keep). Dict keys
    are kept, unless `keys` (details keyed by tool name): str keys are then
    redacted as the values are. Never raises.
    """
    secrets = tuple(s for s in secrets if s and len(s) >= 4)

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            if only_with_secret and not any(s in v for s in secrets):
                return v
            return redact_quoted(v) if quoted else redact(v, secrets)
        if isinstance(v, dict):
            return {(walk(k) if keys and isinstance(k, str) else k): walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [walk(x) for x in v]
        return v

    return walk(value)


_URL_PASSWORDS = re.compile(_URL_PASSWORD)


def redact_url_passwords(value: Any) -> Any:
    """A copy of the JSON-like `value` (a config as recorded) with the password of every URL or DSN in its strings masked
    (`scheme://user:[REDACTED]@host`), and nothing else changed: a config's own text is no trace text, so only the
    one credential a config may hold in a value is looked for. Never raises."""
    if isinstance(value, str):
        return _URL_PASSWORDS.sub(lambda m: m.group("url") + MASK, value) if "@" in value else value
    if isinstance(value, dict):
        return {k: redact_url_passwords(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_url_passwords(v) for v in value]
    return value


def redact_details(value: Any) -> Any:
    """A copy of a custom metric's JSON-like `details` with every string and str key passed through `redact_quoted`, and
    a non-empty *string* under a key that names a credential (`_CREDENTIAL_KEY`, any letter case: `password`,
    `api_key`, `client_secret`, …) masked whole, as labels are (`redact_labels`). Numbers, lists and mappings under
    such keys are looked into, not masked: details are often keyed by tool name, and a count of `reset_password`
    calls is not a secret. Never raises."""
    return _masked_label(value, whole=False)


def redact_labels(tags: Any, metadata: Any) -> tuple[Any, Any]:
    """`(tags, metadata)` of a case as its result may copy them: the same objects when no string of theirs holds a
    credential (the common case: one `_HINT` search over their text), else copies with each credential masked as
    `redact_quoted` masks trace text; a mapping's non-empty value (a string, number, bool, list or mapping) is also
    masked whole when its key names a credential in any letter case (`_CREDENTIAL_KEY`: `password`, `db_password`,
    `api_key`, `client_secret`, `github_token`, …): under such a key the value is the secret, not prose that mentions
    one. Keys are masked as strings. Never raises.
    """
    if _seen_clean(tags, metadata):
        return tags, metadata
    texts: list[str] = []
    _label_texts(tags, texts)
    _label_texts(metadata, texts)
    if (not texts or quoted_clean(texts)) and not _credential_keyed(metadata) and not _credential_keyed(tags):
        _CLEAN_LABELS.remember(texts)
        return tags, metadata
    masked_tags, masked_metadata = _masked_label(tags), _masked_label(metadata)
    if masked_tags == tags and masked_metadata == metadata:
        return tags, metadata
    return masked_tags, masked_metadata


# The texts of labels (`_label_texts`) seen to hold no credential's hint. A text is clean alone exactly when it is
# clean joined with others (`quoted_clean`), so labels whose every text is here are clean without a search; tags
# and metadata keys repeat from case to case. Bounded: texts that never repeat must not grow memory without bound.
_CLEAN_LABELS: SeenSet[str] = SeenSet()  # (`core.memo`: bounded, per process)
_SCALARS = frozenset({int, float, bool, type(None)})


def _seen_clean(tags: Any, metadata: Any) -> bool:
    """True when `tags` (a list) and `metadata` (a mapping of str keys to scalars and str) have every text of theirs
    (`_label_texts`) in `_CLEAN_LABELS`; False for other shapes, or a text not seen clean yet."""
    if type(tags) is not list or type(metadata) is not dict:
        return False
    seen = _CLEAN_LABELS
    try:
        if not seen.issuperset(tags):  # (in C; only str texts are in the set, so a tag of another type is not)
            return False
    except TypeError:  # an unhashable tag (a custom adapter's list or mapping)
        return False
    for k, x in metadata.items():
        if type(k) is not str:
            return False
        t = type(x)
        if t is str:
            # (a text seen clean as a tag, "PassWord: hunter2", is still a secret as the value of a credential's key)
            if f"{k}: {x}" not in seen or (x and _credential_key(k)):
                return False
        elif t not in _SCALARS or k not in seen or (x is not None and _credential_key(k)):
            return False
    return True


@lru_cache(maxsize=4096)
def _credential_key(key: str) -> bool:
    """Whether `key` names a credential (`_CREDENTIAL_KEY`); memoised, as metadata keys repeat from case to case."""
    return _CREDENTIAL_KEY.search(key) is not None


def _label_texts(value: Any, out: list[str]) -> None:
    # Every string of a JSON-like value, a mapping's string value preceded by its key as `key: value`. (A loop over a
    # stack, not a call per value: most values are scalars, and a call each cost more than the search after it.)
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for k, x in v.items():
                if isinstance(x, str):
                    out.append(f"{k}: {x}" if isinstance(k, str) else x)
                    continue
                if isinstance(k, str):
                    out.append(k)
                if isinstance(x, (dict, list, tuple)):
                    stack.append(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                if isinstance(x, str):
                    out.append(x)
                elif isinstance(x, (dict, list, tuple)):
                    stack.append(x)


# A label key that names a credential: one of these names, or a name ending in one (`db_password`, `githubToken`), or
# a cookie header's (`Cookie`, `Set-Cookie`; not `accept_cookie`).
_CREDENTIAL_KEY = re.compile(r"(?i)(?:api[-_]?key|authorization|pass(?:word|wd|phrase)|secret|token|private[-_]?key(?:[-_]?id)?"
                             r"|(?<![A-Za-z0-9_-])(?:set-)?cookie)$")
# A value's authentication scheme, kept when the value is masked whole (`Bearer [REDACTED]`, as in a text).
_SCHEME = re.compile(r"(?:[Bb]earer|[Bb]asic)\s+(?=\S)")


def _whole(value: str) -> str:
    """`value`, under a credential's name, masked whole but for its scheme."""
    scheme = _SCHEME.match(value)
    return scheme.group() + MASK if scheme else MASK


def _credential_keyed(value: Any) -> bool:
    """True when a mapping inside `value` holds a non-empty value under a key that names a credential."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            for k, x in v.items():
                if isinstance(k, str) and x not in (None, "", [], {}) and _credential_key(k):
                    return True
                if isinstance(x, (dict, list, tuple)):
                    stack.append(x)
        elif isinstance(v, (list, tuple)):
            stack.extend(x for x in v if isinstance(x, (dict, list, tuple)))
    return False


def _masked_label(value: Any, whole: bool = True) -> Any:
    """`value` with its strings and str keys through `redact_quoted`; a non-empty value under a credential's name
    masked whole (only a string there when not `whole`: `redact_details`)."""
    if isinstance(value, str):
        return redact_quoted(value)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            key = redact_quoted(k) if isinstance(k, str) else k
            if whole and not isinstance(v, str) and isinstance(k, str) and v not in (None, [], {}) and _credential_key(k):
                out[key] = MASK  # a number, list or mapping under a credential's name: the secret whatever its type
                continue
            if isinstance(v, str):
                got = redact_quoted(v)
                if got == v and isinstance(k, str) and (v and _credential_key(k) or redact_quoted(f"{k}: {v}") != f"{key}: {v}"):
                    got = _whole(v)  # a value whose key names it a credential (not a key that is one itself)
                out[key] = got
            else:
                out[key] = _masked_label(v, whole)
        return out
    if isinstance(value, (list, tuple)):
        return [_masked_label(v, whole) for v in value]
    return value
