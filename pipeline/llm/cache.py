"""The content-addressed judge cache (diskcache).

The key is the sha256 of the canonical JSON (sorted keys, no whitespace) of
exactly these components — everything that determines the answer and
nothing else:

    provider, base_url, model, messages, sampling (temperature, max_tokens),
    response_format (the verdict schema and its name), prompt_version,
    rubric, trial

and, for a self-hosted judge server (`OPTIONAL`), `served_model`: what the
server says about the weights it serves, learnt once per run before the
first cache read (`tracejudge.llm.served_model`): `{server, name, sha256}`,
the server's kind, the weights' name (a basename) and the sha256 of every
fact it gave (model path, size, parameter count, digest, chat template…).
A model name alone does not say which weights answer: llama.cpp serves its
one GGUF under any name, and Ollama, LM Studio, vLLM or TGI can serve other
weights under the same one. A hosted API's key, and the key of a server
that says nothing of its weights, holds no `served_model`: it is the key
such a request always had (the run then warns once that swapped weights
would be answered from the cache). `explain` names it when it is what
changed (`served model changed: llama.cpp a.gguf (weights …) → …`).

`extra_body` (the request fields of `judge.extra_body`) is held only by the key of a request that sends some: a
verdict given with the model thinking does not answer a request that turns thinking off, and `explain` says
`changed: extra_body`. The index keeps it with a value under a credential's key, or shaped like one, or longer than
`RECORDED_MAX` characters of JSON, as a digest (`indexed`).

Never ids, timestamps, run ids, retry/timeout/concurrency settings or
provenance markers: the judge prompt renders a trace without call ids and
with arguments in sorted-key JSON, so those cannot leak in through
`messages` either. API keys are not part of anything stored.

Only good answers are stored (`put` is called by the judge after a verdict
parsed and validated): errors, truncated output and unparseable verdicts
never become hits. Beside each entry the cache keeps, under a separate
index key per (case, metric, trial, request), the components of the latest
entry written for it, so a miss can be explained (`explain`) by the
components that differ.

The cache holds no trace text in clear: the index keeps the prompt
`messages` as their sha256 only (enough to say they changed), and a stored
answer's strings (the reply, its reasons) pass through `redact` first, as
every copy of a reply into results does. CI jobs often keep the cache
folder as an artifact. The last `served_model` learnt for each judge
(provider, base URL, model) is kept too (`last_served`): a run whose server
cannot be reached, and `tracejudge estimate`, key with it.

diskcache stores in SQLite with its own locking, so several processes may
share one cache directory.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import diskcache
from tracejudge.core.extra_body import RECORDED_MAX
from tracejudge.core.memo import Memo
from tracejudge.llm.redact import redact_config, redact_data, redact_url_passwords
from tracejudge.llm.served_model import describe

__all__ = ["COMPONENTS", "OPTIONAL", "DiskJudgeCache", "JudgeCache", "cache_key", "canonical", "diff_components"]

_MANY = 500  # keys per query: under SQLite's oldest limit of 999 bound parameters

COMPONENTS = ("provider", "base_url", "model", "messages", "sampling", "response_format", "prompt_version", "rubric", "trial")
# Components a key holds only when known, so every key written without one stays what it was.
OPTIONAL = ("served_model", "extra_body")


_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)  # what `json.dumps` makes per call


def canonical(value: Any) -> str:
    """Canonical JSON: sorted keys, no whitespace, UTF-8 kept (`json.dumps(value, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False)`, by one encoder made once). Raises `TypeError` for a value JSON cannot hold, `ValueError` for a
    circular one."""
    return _CANONICAL.encode(value)


def cache_key(components: dict[str, Any]) -> str:
    """sha256 hex of the canonical JSON of `components` (exactly the keys of `COMPONENTS`, and any of `OPTIONAL`).

    Raises `ValueError` when a component is missing or an extra one is given,
    so nothing else can slip into the key.
    """
    if not _REQUIRED <= components.keys() <= _ALLOWED:
        raise ValueError(f"cache key components must be exactly {COMPONENTS} (and any of {OPTIONAL}), got {sorted(components)}")
    return hashlib.sha256(_key_text(components).encode()).hexdigest()


_REQUIRED = frozenset(COMPONENTS)
_ALLOWED = _REQUIRED | frozenset(OPTIONAL)
# The components sorted before and after `messages`, the one that holds the prompts (an optional one where present).
_BEFORE = tuple(c for c in sorted(_ALLOWED) if c < "messages")
_AFTER = tuple(c for c in sorted(_ALLOWED) if c > "messages")
# A system prompt → its message's canonical JSON (a metric's prompt repeats in every key; `core.memo`: bounded, per process).
_SYSTEM_TEXT: Memo[str, str] = Memo(256)


def _key_text(components: dict[str, Any]) -> str:
    """`canonical(components)`, the same text, built in three parts: JSON is compositional (a sorted-key mapping is
    `{` + `"key":value` pairs in key order + `}`), so the components before `messages`, the messages and those after
    are written apart and joined. The prompts, most of the key's text, are escaped by msgspec where it is loaded (the same
    escapes as `json.dumps(ensure_ascii=False)` for every code point, `_escape`), and a system prompt's message once per process; the
    small components take one `json.dumps` per side, not one per component.
    `tests/test_judge_cache_keys_pinned.py` and `tests/test_cache_key_text.py` hold it to `canonical`."""
    messages = _messages_text(components["messages"])
    if messages is None or not _BEFORE or not _AFTER:
        return canonical(components)
    before = canonical({c: components[c] for c in _BEFORE if c in components})
    after = canonical({c: components[c] for c in _AFTER if c in components})
    return f'{before[:-1]},"messages":{messages},{after[1:]}'


def _messages_text(messages: Any) -> str | None:
    """The canonical JSON of a list of plain `{role, content}` text messages, or `None` for anything else (the caller
    then uses `canonical`)."""
    if type(messages) is not list:
        return None
    out = []
    for m in messages:
        if type(m) is not dict or len(m) != 2 or type(m.get("role")) is not str or type(m.get("content")) is not str:
            return None
        role, content = m["role"], m["content"]
        if role == "system" and (known := _SYSTEM_TEXT.get(content)) is not None:
            out.append(known)
            continue
        try:
            text = f'{{"content":{_escape(content)},"role":{_escape(role)}}}'
        except UnicodeEncodeError:  # a lone surrogate: `canonical` gives what it always gave (and `encode` then raises)
            return None
        if role == "system":
            _SYSTEM_TEXT.put(content, text)
        out.append(text)
    return "[" + ",".join(out) + "]"


def _escape(text: str) -> str:
    """`json.dumps(text, ensure_ascii=False)`: by msgspec (several times faster on long prompts) when the process has
    imported it already (a native dataset's decoder has), else by `json` (importing msgspec for the keys alone costs more
    than it saves on a small run). Raises `UnicodeEncodeError` for a lone surrogate."""
    msgspec_json = sys.modules.get("msgspec.json")
    if msgspec_json is None:
        text.encode()  # the lone-surrogate check msgspec makes, so both ways fail alike
        return json.dumps(text, ensure_ascii=False)
    return msgspec_json.encode(text).decode()


def diff_components(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Names of the components that differ between two key component sets, in `COMPONENTS` order, then `OPTIONAL`'s
    (one held by a single set differs; either set may hold its `messages` as `indexed` leaves them, a digest)."""
    old, new = indexed(old), indexed(new)
    return [c for c in COMPONENTS + OPTIONAL if canonical(old.get(c)) != canonical(new.get(c))]


def indexed(components: dict[str, Any]) -> dict[str, Any]:
    """`components` as the cache's index keeps them: `messages` (the prompts, trace text in them) replaced by
    `{"sha256": <hex of their canonical JSON>}`, a password in `base_url` masked, and an `extra_body` holding a
    credential (`redact_config` masks a value of it) or longer than `RECORDED_MAX` as `{"sha256": …}` too; already so, or without any of these,
    it is returned as it is."""
    base = components.get("base_url")
    if isinstance(base, str) and "@" in base:  # a password in the judge's URL (`http://user:pass@host`) is not kept either
        components = {**components, "base_url": redact_url_passwords(base)}
    extra = components.get("extra_body")
    if isinstance(extra, dict) and (redact_config(extra) != extra or len(canonical(extra)) > RECORDED_MAX):
        # (a digest, not the masked copy: two credentials must still read as a change to `explain`; nor a long value
        # copied whole into each entry of the index)
        components = {**components, "extra_body": {"sha256": hashlib.sha256(canonical(extra).encode()).hexdigest()}}
    messages = components.get("messages")
    if messages is None or (type(messages) is dict and set(messages) == {"sha256"}):
        return components
    text = _messages_text(messages)
    digest = hashlib.sha256((canonical(messages) if text is None else text).encode("utf-8", "surrogatepass")).hexdigest()
    return {**components, "messages": {"sha256": digest}}


def _judge_id(provider: str, base_url: str, model: str) -> str:
    # A digest: a password in the URL is not kept in the index either.
    return hashlib.sha256(canonical([provider, base_url, model]).encode("utf-8", "surrogatepass")).hexdigest()


class JudgeCache(Protocol):
    """What the judge needs from a cache."""

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored answer for `key`, or `None`."""
        ...

    def put(self, key: str, value: dict[str, Any], components: dict[str, Any], slot: str) -> None:
        """Store a good answer; remember `components` as the latest for `slot` (case, metric, trial, request)."""
        ...

    def explain(self, components: dict[str, Any], slot: str) -> str:
        """Why `components` missed: the components that differ from the latest entry for `slot`."""
        ...


class DiskJudgeCache:
    """`JudgeCache` on a diskcache directory (safe across processes).

    The directory is opened on first use, so a directory that cannot be
    created or a corrupt database raises (`OSError`, `sqlite3.Error`) from
    `get`/`put`/`explain`, where the judge treats it as a cache fault, not
    from the constructor.
    """

    def __init__(self, directory: Path) -> None:
        self._directory = Path(directory)
        self._opened: diskcache.Cache | None = None

    @property
    def _cache(self) -> diskcache.Cache:
        if self._opened is None:
            self._directory.mkdir(parents=True, exist_ok=True)
            self._opened = diskcache.Cache(str(self._directory), size_limit=2**40, eviction_policy="none")
        return self._opened

    def get(self, key: str) -> dict[str, Any] | None:
        value = self._cache.get("v:" + key)
        return value if isinstance(value, dict) else None

    def get_many(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored answers of those `keys` that are in the cache, by key: what `get` gives each, in one SQLite query
        per `_MANY` keys instead of one per key (diskcache's own fast path of `get`, over many keys at once).

        A cache that counts hits or orders evictions by access (diskcache settings this class never sets) updates its
        statistics on each read: it is read key by key, through `get`.
        """
        cache = self._cache
        if cache.statistics or cache.eviction_policy != "none":
            return {k: v for k in keys if (v := self.get(k)) is not None}
        disk = cache._disk  # noqa: SLF001 - the key encoding and the value decoding diskcache's `get` uses
        wanted: dict[Any, str] = {}
        for key in dict.fromkeys(keys):
            db_key, raw = disk.put("v:" + key)
            if raw:  # a text key is always stored raw; anything else goes through `get`
                wanted[db_key] = key
        out: dict[str, dict[str, Any]] = {}
        todo = list(wanted)
        for start in range(0, len(todo), _MANY):
            part = todo[start:start + _MANY]
            rows = cache._sql(  # noqa: SLF001
                "SELECT key, mode, filename, value FROM Cache WHERE raw = 1 AND key IN (" + ",".join("?" * len(part)) + ")"
                " AND (expire_time IS NULL OR expire_time > ?)", (*part, time.time())).fetchall()
            for db_key, mode, filename, db_value in rows:
                try:
                    value = disk.fetch(mode, filename, db_value, False)
                except OSError:  # removed since the query (as diskcache's `get`: a miss)
                    continue
                if isinstance(value, dict):
                    out[wanted[db_key]] = value
        return out

    def put(self, key: str, value: dict[str, Any], components: dict[str, Any], slot: str) -> None:
        # Masked as results mask a reply (idempotent, so a hit gives what a fresh answer gives); the prompts by digest.
        self._cache.set("v:" + key, redact_data(value))
        self._cache.set("i:" + slot, indexed(components))

    def explain(self, components: dict[str, Any], slot: str) -> str:
        old = self._cache.get("i:" + slot)
        if not isinstance(old, dict):
            return "no earlier entry for this case and metric"
        changed = diff_components(old, components)
        if "served_model" in changed:
            # The one change a config edit does not explain: the server's weights (or what it says of them) changed.
            rest = [c for c in changed if c != "served_model"]
            why = f"served model changed: {describe(old.get('served_model'))} → {describe(components.get('served_model'))}"
            return why + (f"; changed: {', '.join(rest)}" if rest else "")
        return ("changed: " + ", ".join(changed)) if changed else "an entry with these components was written and then removed"

    def last_served(self, provider: str, base_url: str, model: str) -> dict[str, Any] | None:
        """The `served_model` component last stored for this judge (`remember_served`), or `None`: what a run whose
        server cannot be asked, and `tracejudge estimate` (which asks nothing), key its requests with."""
        value = self._cache.get("s:" + _judge_id(provider, base_url, model))
        return value if isinstance(value, dict) else None

    def remember_served(self, provider: str, base_url: str, model: str, component: dict[str, Any]) -> None:
        """Store `component`, what the server at `base_url` said it serves as `model`, for `last_served`."""
        self._cache.set("s:" + _judge_id(provider, base_url, model), component)

    def __len__(self) -> int:
        return sum(1 for k in self._cache.iterkeys() if str(k).startswith("v:"))

    def close(self) -> None:
        """Close the SQLite connection of this process (if it was opened)."""
        if self._opened is not None:
            self._opened.close()
