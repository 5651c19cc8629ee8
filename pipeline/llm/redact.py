"""Redaction of credentials in text copied from a provider's reply.

A provider (or a proxy in front of it) may echo request headers in an
error body or even in a 200 reply; whatever of that text is kept — a score's
reason, `details.raw`, an error message, a log line — first goes through
`redact`. It removes the configured key's value wherever it appears and
anything shaped like a credential: `Bearer <token>`, `sk-…` / `sk_…` keys,
(`sk-proj-…`, `sk-svcacct-…`, `sk-admin-…`, `sk-ant-…`, `sk-or-…` whatever their characters),
the value after an `x-api-key` / `api-key` / `apikey` / `authorization` /
`secret_access_key` / `private_key` / `password` / `passwd` / `passphrase` / `client_secret` / `access_token` (and
`refresh_`, `auth_`, `id_`, `bearer_`, `session_token`) name, in any letter case (`PassWord`, `API_Key`, `apiKey`) —
its quotes escaped or not, at any depth, as in a JSON-encoded request body, or in Python's repr of one (its
backslashes doubled: a quote not followed by what may follow a string is inside the value, and so is one after more
backslashes than the value's opening quote unless what follows it is what follows a string at that quote's level: the
value ends only where its string does, `repr(json.dumps({"password": 'ab", "x": "…'}))` whole); a key spelled with
`\\u` escapes (`"pass\\u0077ord"`) as the name it spells, the masked text keeping the key as it was spelled
(`redact_spelling`: `_unescaped_keys`, re-exported here); a quoted value whole, as `redact_quoted` masks a quoted field's —,
a PIN's field's 4 to 12 digits (`"pin"`, `"card_pin"`), a credential's field in a query string or form body (`?api_key=…&`,
`user=a&password=…`, `%3Fpassword%3D…%26`), a `Cookie:` / `Set-Cookie:` header's value, AWS access key ids (`AKIA…`,
`ASIA…`, `ABIA…`, `ACCA…`), Slack tokens (`xoxb-…`, `xapp-…`) and webhook URLs, GitHub tokens (`ghp_…`,
`github_pat_…`), GitLab tokens by every prefix GitLab documents (`glpat-`, `glptt-`, `gldt-`, `glrt-`, `glrtr-`,
`glcbt-`, `glft-`, `glimt-`, `glagent-`, `gloas-`, `glsoat-`, `glffct-`, `glwt-`, `GR1348941…`, `_gitlab_session=`),
DigitalOcean (`dop_v1_…`, `doo_v1_…`, `dor_v1_…`), Google OAuth access tokens (`ya29.…`), npm (`npm_…`),
PyPI (`pypi-…`), Stripe (`sk_live_…`, `rk_live_…`), SendGrid (`SG.….…`) and Shopify (`shpat_…`) tokens, an Azure
connection string's `AccountKey=` / `SharedAccessKey=`, JWTs (`eyJ….eyJ….…`) and private-key PEM blocks, and a value
of 8+ token characters with a letter and a digit under `token` alone, its key and value quoted or not (`token: "tok_…"`,
`token: tok_…`, `?token=tok_…&`, as `redact_quoted` masks it). A `Bearer`/`Basic` scheme is kept wherever its token is
masked (`Authorization: Bearer [REDACTED]`), and GitHub's `token` one (`Authorization: token [REDACTED]`).

Text quoted from a trace into a score's reason or an `invalid_input` message
(a tool call's arguments, an output) goes through `redact_quoted`: the same
shapes, but a value after a credential's name (those above, and any name ending in `password`, `passwd`,
`secret`, `token` or `private_key`, such as `db_password` or `github_token`; not a pagination cursor's, `page_token`,
`nextPageToken`, `NextToken`, whose value no rule masks by its name), a `Bearer`/`Basic` token and
an `sk-` key count only when they look like a credential (a run of token
characters, 16+ long — `sk-` keys 20+ — with letters and digits, or base64
ending in `=`; under a key named `token` alone, quoted or not, a quoted value of 8 or more of them with letters and
digits, whole: `"token": "tok_9f8e7d6c"`, `token: "tok_9f8e7d6c"`, and unquoted, to the value's end, `token: tok_9f8e7d6c`,
where `"the"` is a tokenizer's word and `512` a count), because a trace is full of ordinary phrases ("basic
economy", "api_key: not configured", "SKU sk-100200300"). It searches only
what the reason shows, once, with one pattern, and returns text without a
credential unchanged: reasons are built for every case. A quoted field named for a password, secret, API key,
authorization, private key (or its id) or access/refresh/session token has its quoted value masked whatever its
shape, its quotes escaped or not (`\\"password\\": \\"…\\"`), as a mapping's value under such a key is; so has a
passphrase's and a `Cookie` / `Set-Cookie` header's, and a query string's or form body's field of those names (only
there, behind `?` or `&` or before `&`, or with its `=` percent-encoded: `password=None` in code is no form); so has
such a field's bare number of 4 or more digits (`"password": 12345678`). A value shown apart from its key (an argument's
difference in a reason) is masked whole when `masked_under` that key says the key would mask it. A PIN is
masked only as a PIN's field's digits: "pin" is also prose and a map's pin, a PIN code an Indian postal code. A
credential told in prose ("my password is hunter2") is left: its value cannot be told from the words around it, and
masking the word after every "password is" would spoil the evidence a judge needs ("the password is incorrect").

Both also mask AWS secret access keys after their name, Google API keys
(`AIza…`), Hugging Face tokens (`hf_…`) and the password of a URL or DSN
(`postgres://user:[REDACTED]@host/db`, any scheme).

A run's config is recorded in `manifest.json` and `configs.jsonl` through `redact_config`: a value under a
credential's key (a metric's `expected_arguments`, a target's headers) masked whole, as `masked_under` says, and every
other string through `redact_quoted`.

A case's tags and metadata are copied into its result line and the reports as the
dataset wrote them; `redact_labels` passes them through `redact_quoted` first, a
string alone and, for a mapping's string value, with its key before it (so
`{"api_key": "<token>"}` is masked as `api_key: <token>` is in a trace).

A live target's secrets are the values of the environment variables its
config names as `${NAME}` (`env_secrets`); what the target stage copies from
the target's replies goes through `redact` / `redact_data` with them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from functools import cache
from typing import Any

from tracejudge.llm.redact_patterns import (  # noqa: F401  (`reply_secrets` takes _HINT from here)
    _BARE_TOKEN, _COOKIE_HEADER, _FIELD_NAME, _FORM_FIELD, _HINT, _PATTERN_TEXTS, _PIN_NAME, _QUOTED, _SECRET_FIELD, _SHAPE,
    _URL_PASSWORD)
# Keys spelled with `\u` escapes, read as JSON reads them and spelled back after masking (`reply_secrets` takes
# `_unescaped_keys` from here).
from tracejudge.llm.redact_spelling import _keys_read, _spelled_back, _Spans, _sub_spelled, _unescaped_keys  # noqa: F401

__all__ = ["ENV_VAR", "MASK", "env_secrets", "masked_under", "quoted_clean", "redact", "redact_config", "redact_data",
           "redact_details", "redact_labels", "redact_quoted", "redact_url_passwords", "variable_name"]

# `${NAME}` in a config value: the environment variable NAME, expanded at run time.
ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

MASK = "[REDACTED]"



@cache
def _compiled() -> tuple[tuple[re.Pattern[str], ...], re.Pattern[str], re.Pattern[str]]:
    """`(_PATTERN_TEXTS`, the fields' rules (`_SECRET_FIELD`, `_FORM_FIELD`, `_COOKIE_HEADER`) and `_BARE_TOKEN`, `_SHAPE,
    _QUOTED)` compiled, on first use: a run whose texts hold no credential's hint (`_HINT`) never needs them, and
    compiling them cost every start-up about 2 ms."""
    patterns = (*_PATTERN_TEXTS, f"{_SECRET_FIELD}|{_FORM_FIELD}|{_COOKIE_HEADER}", _BARE_TOKEN)
    return tuple(re.compile(p) for p in patterns), re.compile(_SHAPE), re.compile(_QUOTED)


def _masked_spelled(text: str, spans: _Spans) -> str:
    """`redact`'s rules (but the secrets') over `text` whose keys `_keys_read` wrote as they read (`spans`), each key
    then spelled back as it was: the text keeps its own spelling, only credentials masked."""
    patterns, shape, _ = _compiled()
    masks: tuple[tuple[re.Pattern[str], Any, Any], ...] = (
        (patterns[4], _field_kept, _mask_tail),
        (patterns[5], lambda m: m.group("tok"), _mask_tail),
        (patterns[0], lambda m: m.group(1), _mask_tail),
        (patterns[1], lambda m: m.group(1), lambda m: " " + MASK),
        (patterns[2], lambda m: "", _mask_tail),
        (patterns[3], lambda m: m.group("url"), _mask_tail),
        (shape, lambda m: m.group("kv") or "", _mask_tail),
    )
    for pattern, kept, tail in masks:
        text, spans = _sub_spelled(pattern, kept, tail, text, spans)
    return _spelled_back(text, spans)


def _mask_tail(m: re.Match[str]) -> str:
    return MASK


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
    # A quoted field's value whole (to its string's end, whatever it holds; a key spelled with `\u` escapes read as
    # JSON reads it, then spelled back as it was), a PIN's field's digits, a form's field's value, a cookie header's;
    # then the other rules. (`_HINT` finds a part of each of their matches; most text has none, and the search costs a
    # tenth of theirs.)
    if _HINT.search(text) is not None:
        text, spans = _keys_read(text)
        if spans:
            return _masked_spelled(text, spans)
        text = patterns[4].sub(_mask_field, text)
        if "oken" in text or "OKEN" in text:  # (`token`, `Token`, `TOKEN`: a search of its own only then)
            text = patterns[5].sub(_mask_token, text)
    text = patterns[0].sub(lambda m: m.group(1) + MASK, text)
    text = patterns[1].sub(lambda m: m.group(1) + " " + MASK, text)
    text = patterns[2].sub(MASK, text)
    text = patterns[3].sub(lambda m: m.group("url") + MASK, text)
    return shape.sub(_mask_shape, text)


def _mask_field(m: re.Match[str]) -> str:
    return _field_kept(m) + MASK


def _field_kept(m: re.Match[str]) -> str:
    return m.group("field") or m.group("form") or m.group("cookie")


def _mask_token(m: re.Match[str]) -> str:
    return m.group("tok") + MASK


def _mask_shape(m: re.Match[str]) -> str:
    return (m.group("kv") or "") + MASK


def _mask(m: re.Match[str]) -> str:
    return _kept(m) + MASK


def _kept(m: re.Match[str]) -> str:
    """What a match of `_QUOTED` keeps before its mask: a field's or header's name, a scheme, a URL's user, a key's name."""
    return (m.group("field") or m.group("form") or m.group("name") or m.group("scheme") or m.group("cookie") or m.group("url")
            or m.group("kv") or "")


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
    read, spans = _keys_read(head)
    # (A key spelled with `\u` escapes is read as JSON reads it, then spelled back as it was.)
    if spans:
        masked = _spelled_back(*_sub_spelled(_compiled()[2], _kept, _mask_tail, read, spans))
    else:
        masked = _compiled()[2].sub(_mask, read)
    if masked == head:
        return text
    return masked if len(head) == len(text) else masked + "…"


@cache
def _name_rules() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """`(_FIELD_NAME, _PIN_NAME)` compiled, on first use: the names of the fields trace text masks the value of."""
    return re.compile(_FIELD_NAME), re.compile(_PIN_NAME)


def masked_under(key: Any, value: Any, beside: Any = None) -> bool:
    """Whether a JSON-like `value` is shown masked whole when it sits under the mapping key `key` in trace text.

    For text that shows a value apart from its key (an argument's difference, `password: expected …, got …`), where
    `redact_quoted` would not see the key: True when `key` names a credential's field as `redact_quoted` reads a quoted
    field's name (`password`, `db_password`, `passphrase`, `api_key`, `client_secret`, `access_token`, `Cookie`, …; not
    `token` or `next_token`) and `value` is neither null, `""` nor a bool; when `key` names a PIN's field (`pin`,
    `card_pin`, `cardPin`) and `value` is 4 to 12 digits, a string or an integer; and when `redact_quoted` masks the
    value only with its key before it (a token-shaped string after `token`; under `token` alone, 8 or more of a token's
    characters with a letter and a digit). `beside`: the mapping `key` sits in (or a tuple of mappings: an expected
    call's arguments and the actual one's), when the caller has it: under `token` alone any string is masked when
    another key there shows an authentication (`_AUTH_KEY`: `username`, `client_id`, `token_type`, `expires_in`,
    `password`, …), where `"abc"` is the token, not a word of a tokenizer's. A number under `token` is a count: never
    masked. Never raises.
    """
    if not isinstance(key, str) or value is None or value == "" or isinstance(value, bool):
        return False
    field, pin = _name_rules()
    if field.fullmatch(key) is not None:
        return True
    if pin.fullmatch(key) is not None and _pin_value(value):
        return True
    if not isinstance(value, str):
        return False
    if beside is not None and len(key) == 5 and key.lower() == "token" and _auth_beside(key, beside):
        return True
    text = f"{json.dumps(key, ensure_ascii=False)}: {json.dumps(redact_quoted(value), ensure_ascii=False)}"
    return redact_quoted(text) != text


# A key that shows its mapping holds an authentication (a login's, a session's, an OAuth token response's), beside a
# `token`: a user's name or id, a login, an e-mail, a password or secret, a client's id, a grant's or token's type, an
# expiry, a scope, `auth` (`auth_type`, `authentication`; not `author`), another token of a session, an API key, a
# session's id, a one-time code.
_AUTH_KEY = (r"(?i)user(?:[-_]?(?:name|id))?|login|e-?mail|[a-z0-9_.-]*(?:pass(?:word|wd|phrase)s?|secrets?)"
             r"|client[-_]?id|(?:grant|token)[-_]?type|expires(?:[-_]?(?:in|at))?|expiry|scopes?|auth(?:[-_][a-z0-9_-]+|entication"
             r"|ori[sz]ation|type|method|code)?"
             r"|(?:access|refresh|id|session)[-_]?token|api[-_]?key|session(?:[-_]?id)?|otp|totp|mfa[a-z0-9_-]*")


@cache
def _auth_key() -> re.Pattern[str]:
    """`_AUTH_KEY` compiled, on first use (a value under `token` alone, shown apart from its key)."""
    return re.compile(_AUTH_KEY)


def _auth_beside(key: str, beside: Any) -> bool:
    """True when a mapping of `beside` (one, or a tuple or list of them) has a key other than `key` that `_AUTH_KEY` names."""
    auth = _auth_key().fullmatch
    for mapping in beside if isinstance(beside, (tuple, list)) else (beside,):
        if isinstance(mapping, Mapping) and any(type(k) is str and k != key and auth(k) for k in mapping):
            return True
    return False


def _pin_value(value: Any) -> bool:
    """True for 4 to 12 digits, as a string or an integer (what a PIN's field holds)."""
    if type(value) is str:
        return 4 <= len(value) <= 12 and value.isascii() and value.isdigit()
    return type(value) is int and 1000 <= value < 10**12


def quoted_clean(texts: list[str]) -> bool:
    """True when `redact_quoted` returns every string of `texts` as it is because none holds a credential's hint.

    One search over them all, joined by NUL: no part of `_HINT` matches a NUL and every `\\b` or
    lookbehind sees one as it sees a text's start, so each hint in a text is a hint in the joined
    text. False says only that some text may need masking (`redact_quoted` each to know).
    """
    return _HINT.search("\x00".join(texts)) is None


# Words joined by `_`, each letters with at most 3 digits after them (`OPENAI_API_KEY`, `GPU_HOST2`, `llm_key_v2`), or a
# number of at most 3 digits: how variables are named. A key's random part (`gsk_a1B2c3…`, Mistral's 32 and Cohere's 40
# characters of letters and digits, `fw_…`) mixes digits into its letters, or runs longer than any word.
_VARIABLE = re.compile(r"_*(?:[A-Za-z]{1,24}[0-9]{0,3}|[0-9]{1,3})(?:_+(?:[A-Za-z]{1,24}[0-9]{0,3}|[0-9]{1,3}))*_*")


def variable_name(name: str) -> str:
    """An environment variable's name as an error shows it: itself when it reads as one (words of letters with at most
    3 digits after each, joined by `_`, 64 characters at most) and `redact` masks nothing in it, else `[REDACTED]`: a
    key pasted where its variable's name goes (`api_key_env: sk-…`, `gsk_…`, 32 or 40 random letters and digits) is
    not echoed on the console. A name of another shape (`KEY_2024A`) is hidden too, which costs only the name in the
    message. Never raises."""
    return name if len(name) <= 64 and _VARIABLE.fullmatch(name) is not None and redact(name) == name else MASK


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


# Values masked by the key they sit under (a case's tags and metadata, a metric's details): `redact_keyed`.
from tracejudge.llm.redact_keyed import redact_config, redact_details, redact_labels  # noqa: E402  (it reads this module's rules)
