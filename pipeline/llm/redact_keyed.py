"""Values masked by the key they sit under, as a result copies them: a case's tags and metadata (`redact_labels`),
a custom metric's details (`redact_details`) and a run's config as its run directory records it (`redact_config`).
Their strings go through `redact.redact_quoted` as trace text does; a value under a key that names a credential
(`password`, `db_password`, `api_key`, `Cookie`, …, any letter case) is the secret itself, not prose that mentions one,
and is masked whole; so is a PIN (4 to 12 digits) under its field's name.
Re-exported by `tracejudge.llm.redact`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from tracejudge.core.memo import SeenSet
from tracejudge.llm.redact import MASK, _name_rules, _pin_value, masked_under, quoted_clean, redact_quoted, variable_name
from tracejudge.llm.redact_patterns import _PAGE_TOKEN

__all__ = ["redact_config", "redact_details", "redact_labels"]


def redact_details(value: Any) -> Any:
    """A copy of a custom metric's JSON-like `details` with every string and str key passed through `redact_quoted`, and
    a non-empty *string* under a key that names a credential (`_CREDENTIAL_KEY`, any letter case: `password`,
    `api_key`, `client_secret`, …) masked whole, as labels are (`redact_labels`); so is an integer of 4 or more digits
    there (`{"password": 12345678}`, as trace text masks it), and 4 to 12 digits, a string or an integer, under a key
    that names a PIN (`pin`, `card_pin`, `cardPin`: `_PIN_NAME`, as in text). Smaller numbers, lists and mappings
    under such keys are looked into, not masked: details are often keyed by tool name, and a count of
    `reset_password` calls is not a secret. A one-key value matcher under such a key (`{"$python_eq": 1234}`, as
    τ²-bench's expected calls carry values) is masked as the value it holds. Never raises."""
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
            if f"{k}: {x}" not in seen or (x and _credential_key(k)) or _pin_key(k) and _pin_value(x):
                return False
        elif t not in _SCALARS or k not in seen or (x is not None and _credential_key(k)) or _pin_key(k) and _pin_value(x):
            return False
    return True


@lru_cache(maxsize=4096)
def _credential_key(key: str) -> bool:
    """Whether `key` names a credential (`_CREDENTIAL_KEY`); memoised, as metadata keys repeat from case to case."""
    return _CREDENTIAL_KEY.search(key) is not None


@lru_cache(maxsize=4096)
def _pin_key(key: str) -> bool:
    """Whether `key` names a PIN's field (`_PIN_NAME`: `pin`, `card_pin`, `cardPin`; not `pincode`), as trace text reads one."""
    return _name_rules()[1].fullmatch(key) is not None


def _keyed_digits(key: Any, value: Any, whole: bool) -> bool:
    """True when `value` is masked whole for its digits under `key`: 4 to 12 under a PIN's key; when not `whole` (details,
    where only strings are masked under a credential's key), an integer of 4 or more digits under a credential's key."""
    if not isinstance(key, str) or type(value) not in (str, int):
        return False
    if _pin_value(value) and _pin_key(key):
        return True
    return not whole and type(value) is int and value >= 1000 and _credential_key(key)


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


# A label key that names a credential: one of these names, or a name ending in one (`db_password`, `githubToken`; not a
# pagination cursor's, `page_token`, `nextPageToken`, `NextToken`: `_PAGE_TOKEN`), or a cookie header's (`Cookie`,
# `Set-Cookie`; not `accept_cookie`).
_CREDENTIAL_KEY = re.compile(r"(?i)(?:api[-_]?key|authorization|pass(?:word|wd|phrase)(?:s|[-_]?confirm(?:ation)?)?|secrets?|token"
                             + _PAGE_TOKEN + r"|private[-_]?key(?:[-_]?id)?|(?<![A-Za-z0-9_-])(?:set-)?cookie)$")
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
                if isinstance(k, str) and (x not in (None, "", [], {}) and _credential_key(k) or _keyed_digits(k, x, True)):
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
            if isinstance(k, str) and isinstance(v, dict) and len(v) == 1 and isinstance(op := next(iter(v)), str) and op.startswith("$"):
                # A value matcher (`{"$python_eq": 1234}`, `{"$strict": …}`) holds the value its key names: masked as that value.
                out[key] = {op: _masked_label({k: v[op]}, whole)[key]}
                continue
            if _keyed_digits(k, v, whole):
                out[key] = MASK  # a PIN under its field's name, a numeric password
                continue
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


# A value that only names environment variables (`${AGENT_TOKEN}`, `Bearer ${TOKEN}`): the variable's name, expanded at
# run time, is no secret, and it says which one a config used.
_ENV_ONLY = re.compile(r"(?:[Bb]earer\s+|[Bb]asic\s+)?(?:\$\{[A-Za-z_][A-Za-z0-9_]*\})+")


def _shown_key(key: Any, taken: dict[Any, Any]) -> Any:
    # A key may be a credential itself (`judge.extra_body: {"sk-…": true}`, a header named by its token): masked as a
    # value is, and apart from a key masked before it, so neither value is lost. Its value's rules read the key as given.
    if not isinstance(key, str) or (shown := redact_quoted(key)) == key:
        return key
    n, base = 2, shown
    while shown in taken:
        shown, n = f"{base} ({n})", n + 1
    return shown


def _pasted_key(key: Any, value: Any) -> bool:
    # `judge.api_key_env` (and a panel member's) names the variable that holds the key; a value that reads as no
    # variable's name (`gsk_…`, 40 random letters and digits) is the key itself, pasted there.
    return isinstance(key, str) and key.endswith("api_key_env") and isinstance(value, str) and value != "" and variable_name(value) != value


def redact_config(value: Any) -> Any:
    """A copy of a run's dumped config as `manifest.json` and `configs.jsonl` record it, its credentials masked as a
    result masks them: a metric's `expected_arguments`, a target's `headers`, a case's values written in the config are
    the user's, and a password there was copied in clear. A value under a key that `masked_under` masks (`password`,
    `api_key`, `Authorization`, a PIN's digits under `pin`, a token under `token`; beside other keys of an
    authentication, any string under `token`) is masked whole (a string but for its `Bearer`/`Basic` scheme), unless it
    only names environment variables (`Bearer ${TOKEN}`); so is a key pasted where a variable's name goes (`api_key_env:
    gsk_…`: what `variable_name` hides in an error); every other string goes through `redact_quoted`, and so does a key,
    one that is a credential itself (`extra_body: {"sk-…": true}`) masked as a value is (a second one `[REDACTED] (2)`).
    Other keys, numbers and the rest are kept, so the copy still validates as a config (`report` reads it). Never raises."""
    if isinstance(value, str):
        return redact_quoted(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            shown = _shown_key(k, out)
            if masked_under(k, v, value) and not (isinstance(v, str) and _ENV_ONLY.fullmatch(v)) or _pasted_key(k, v):
                out[shown] = _whole(v) if isinstance(v, str) else MASK
            else:
                out[shown] = redact_config(v)
        return out
    if isinstance(value, (list, tuple)):
        return [redact_config(v) for v in value]
    return value
