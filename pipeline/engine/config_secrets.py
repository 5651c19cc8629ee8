"""The hash of a config whose recorded copy has credentials masked, and which of them changed.

`manifest.json` and `configs.jsonl` record a run's config with its credentials masked (`redact.redact_config`: a
password in a metric's `expected_arguments`, a target's `Authorization` header). Its hash must still change when a
masked value does (an expected password decides the results), and say which one did; but a plain sha256 of the config
as given, written beside the masked copy, let anyone holding the manifest test candidate passwords offline, by
hashing candidate configs at billions a second. So a config that has masked values is hashed as sha256 over the
masked config and `config_secrets`, a record of

    {"kdf": "scrypt", "n": 16384, "r": 8, "p": 1, "salt": "<32 hex>", "digests": {"<dotted key>": "<64 hex>", …}}

where each masked value (the whole value at its dotted key, as `manifest.diff` names keys) is digested with its key
by scrypt under the salt: a guess costs that scrypt (about 0.08 s and 16 MiB), not a sha256. The salt is drawn at
random for a run directory's first config and reused on every resume (read from its manifest, or its configs.jsonl
when the manifest is lost): the same config hashes the same in one run directory on any machine and in any process.
A shard's salt is derived from its masked config instead (`shard_salt`), so that the shards of one sweep, each in its
own directory, share `config_hash_unsharded` (`merge_runs` reads it). A config without masked values is hashed as before
(sha256 of the config), and has no record.

A value a later version masks that an earlier one recorded in clear (the redaction rules grow) is compared by digesting
that clear copy (`changed`): the same value is no change.

A manifest written before this (a config with masked values hashed plainly, no record) is read as the config it is:
`manifest.upgraded` compares its hash with this config's plain hash, computed in memory and never written, and when
they are the same rewrites the entry in the new form, which the resume then writes.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from tracejudge.llm.redact import MASK

__all__ = ["KDF", "changed", "digests_record", "masked_values", "new_salt", "salt_of", "shard_salt", "upgraded"]

# scrypt's cost: N 2**14, r 8, p 1 (16 MiB, about 0.08 s a value on one core). Recorded with each digest, so a later
# version may raise it: a record of other parameters is not compared value by value (`changed`: None).
KDF: dict[str, Any] = {"kdf": "scrypt", "n": 2**14, "r": 8, "p": 1}
_MAXMEM = 64 * 1024 * 1024


def new_salt() -> str:
    """16 random bytes, as hex: a run directory's salt."""
    return secrets.token_hex(16)


def shard_salt(masked_unsharded: Any) -> str:
    """The salt of a shard's run directory: derived from its config as recorded (masked, without `run.shard`), so that every
    shard of a sweep has the same one. Guessing still costs a scrypt a guess; only a table made for that config serves all of its shards."""
    text = json.dumps(masked_unsharded, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(b"tracejudge shard salt\x00" + text.encode()).hexdigest()[:32]


def salt_of(recorded: Any) -> str | None:
    """The salt a manifest or configs.jsonl entry records (`config_secrets.salt`, 32 hex digits), or None."""
    record = recorded.get("config_secrets") if isinstance(recorded, dict) else None
    salt = record.get("salt") if isinstance(record, dict) else None
    if isinstance(salt, str) and len(salt) == 32 and all(c in "0123456789abcdef" for c in salt):
        return salt
    if isinstance(recorded, dict) and isinstance(recorded.get("history"), list):
        # (a manifest whose last config has no masked value: an earlier one of its history may have had one)
        for entry in recorded["history"]:
            if (got := salt_of(entry)) is not None:
                return got
    return None


def masked_values(given: Any, masked: Any, prefix: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Dotted key → the value as given, for every value `masked` (the same config with credentials masked) shows otherwise.

    Keys are spelled as `manifest.diff` spells them (`metrics.0.expected_arguments.password`), a key masked itself as
    masked (`judge.extra_body.[REDACTED]`, its value `[key, value]` as given, so a changed key counts); a mapping or
    list masked whole (a mapping under `password`) is one value."""
    out = {} if out is None else out
    if given == masked and type(given) is type(masked):
        return out
    if isinstance(given, dict) and isinstance(masked, dict) and len(given) == len(masked) and given:
        # (`redact_config` keeps a mapping's order and size, a key masked or not: the items pair in order)
        for (k, v), (shown, m) in zip(given.items(), masked.items()):
            path = f"{prefix}.{shown}" if prefix else str(shown)
            if k != shown:
                out[path] = [k, v]
            else:
                masked_values(v, m, path, out)
    elif isinstance(given, list) and isinstance(masked, list) and len(given) == len(masked) and given:
        for i, v in enumerate(given):
            masked_values(v, masked[i], f"{prefix}.{i}", out)
    else:
        out[prefix] = given
    return out


@lru_cache(maxsize=256)
def _digest(key: str, value: str, salt: str, n: int, r: int, p: int) -> str:
    # (memoised: one process may hash the same config more than once; the values are the config's, held anyway)
    password = json.dumps([key, value], separators=(",", ":")).encode()
    return hashlib.scrypt(password, salt=bytes.fromhex(salt), n=n, r=r, p=p, maxmem=_MAXMEM, dklen=32).hex()


def digests_record(values: dict[str, Any], salt: str) -> dict[str, Any]:
    """The `config_secrets` record of `values` (`masked_values`) under `salt`: each value digested with its key by scrypt."""
    n, r, p = KDF["n"], KDF["r"], KDF["p"]
    digests = {key: _digest(key, json.dumps(value, sort_keys=True, separators=(",", ":")), salt, n, r, p)
               for key, value in sorted(values.items())}
    return {**KDF, "salt": salt, "digests": digests}


def changed(old: Any, new: Any, old_clear: Callable[[], dict[str, Any]] | None = None) -> set[str] | None:
    """The dotted keys whose masked value differs between two `config_secrets` records (a key in one only counts);
    None when they cannot be compared: either is missing (a manifest written before records were), or they differ in
    salt or parameters. `old_clear`: the old config as recorded, flattened (dotted key → value): a key only `new` masks
    (a later version masks more) that the old config shows in clear counts only when its value's digest differs."""
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return None
    if any(old.get(k) != new.get(k) for k in (*KDF, "salt")):
        return None
    a, b = old.get("digests"), new.get("digests")
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return None
    got = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
    if old_clear is not None and (only_new := {k for k in got if k not in a}):
        clear = old_clear()
        for k in only_new:
            v = clear.get(k, MASK)
            if not (isinstance(v, str) and MASK in v) and _digest(k, json.dumps(v, sort_keys=True, separators=(",", ":")), new["salt"],
                                                                   new["n"], new["r"], new["p"]) == b[k]:
                got.discard(k)
    return got


def upgraded(recorded: Any, new: dict[str, Any], plain: Callable[[], str]) -> Any:
    """`recorded` (a manifest, a configs.jsonl entry or a checkpoint's config hash) with each config of it hashed plainly
    by an earlier version (no `config_secrets`) whose hash is `plain()` (the new config's plain hash, computed once, when
    needed) rewritten as `new` (the new config's manifest) hashes it: its `config_hash` and `config_secrets` replaced by
    `new`'s. The same object when there is none, or when `new` has no masked value (both versions then hash alike)."""
    if not isinstance(new.get("config_secrets"), dict) or recorded is None:
        return recorded
    known: list[str] = []

    def same(entry: Any) -> bool:
        if not isinstance(entry, dict) or "config_secrets" in entry or not isinstance(entry.get("config_hash"), str):
            return False
        known[:] = known or [plain()]
        return entry["config_hash"] == known[0]

    def now(entry: dict[str, Any]) -> dict[str, Any]:
        return {**entry, "config_hash": new["config_hash"], "config_secrets": new["config_secrets"]}

    if isinstance(recorded, str):
        return new["config_hash"] if same({"config_hash": recorded}) else recorded
    if not isinstance(recorded, dict):
        return recorded
    history: list[Any] = recorded["history"] if isinstance(recorded.get("history"), list) else []
    entries = [now(h) if same(h) else h for h in history]
    top = same(recorded)
    if not top and all(a is b for a, b in zip(entries, history, strict=True)):
        return recorded
    out = now(recorded) if top else dict(recorded)
    if top and "config_hash_unsharded" in new:
        out["config_hash_unsharded"] = new["config_hash_unsharded"]
    if history:
        out["history"] = entries
    return out
