"""`manifest.json`: what a run directory was started with, and what changed since.

The manifest records the config, the hash of the part of it that decides the
results, a fingerprint of each dataset file (`tracejudge.engine.dataset_fingerprint`)
and the tracejudge version. A
resume compares the new manifest with the recorded one and refuses, naming
every changed config key and dataset file, unless forced.

The config is recorded with its credentials masked (`redact.redact_config`: a password in a metric's
`expected_arguments`, a target's `Authorization` header). A config that has masked values is hashed over the masked
config and a scrypt digest of each masked value under the run directory's salt (`config_secrets`, recorded beside it),
not over the config as given, which a plain sha256 beside the masked copy let anyone guess offline: two configs that
read the same masked but hash differently differ in a masked value, a change too, named by its key (only the keys
whose digests differ), its value not shown. A config without masked values is hashed as before.

Not hashed (they change how fast a run goes, where it writes or what it may
spend, never its answers): `run.dir`, `run.workers`, `run.queue_size`,
`run.flush_every`, `run.executor`, `run.processes`, `limits`, `budget`, `cache`,
`judge.api_key_env` (which variable holds the key). Dataset *paths* are not
hashed either: the files are compared by content, so a dataset that moved
(a repository checked out elsewhere) still resumes.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from threading import Event
from typing import Any

from tracejudge.core.config import RunConfig
from tracejudge.core.extra_body import is_digest, recorded_config
from tracejudge.core.errors import TracejudgeError
from tracejudge.core.user_code import lazy_getattr
from tracejudge.core.version import __version__
from tracejudge.engine import config_secrets
from tracejudge.engine.config_keys import MISSING, flatten, moved_items, show, subtree, type_first, whole
from tracejudge.engine.dataset_fingerprint import files_of
from tracejudge.llm.redact import MASK, redact_config, redact_url_passwords

__all__ = ["CLI_OPTIONS", "ManifestMismatch", "check", "configs_by_segment", "diff", "known_config", "manifest_for", "refusal", "salt_of",
           "upgraded", "with_history"]

salt_of = config_secrets.salt_of
# The configs a run directory has run with (`manifest_history`), importable from here as before.
__getattr__ = lazy_getattr(globals(), {name: "tracejudge.engine.manifest_history" for name in ("configs_by_segment", "known_config", "with_history")})

# (section, key) pairs left out of the config hash; `None` drops the whole section.
_UNHASHED: dict[str, set[str] | None] = {
    "run": {"dir", "workers", "queue_size", "chunk_size", "flush_every", "max_resume_retries", "executor", "processes", "ray_address", "metric_timeout_s"},
    "limits": None,
    "budget": None,
    "cache": None,
    "dataset": {"path", "tasks"},
    "target": {"concurrency", "max_response_bytes"},
    "aggregate": None,
    "assertions": None,
    # Judge settings that change how requests are retried, timed out, priced or
    # gated, not what the judge answers.
    "judge": {"api_key_env", "timeout_s", "max_attempts", "max_retry_wait_s", "max_retry_after_s", "workers", "max_error_share",
              "prices", "expected_output_tokens", "simulator", "labels", "pairwise",
              # How the verdict schema travels and is counted, not what is asked: changed to fix a refused
              # request or an overflowing window, and the resume goes on.
              "structured_output", "max_response_bytes", "tokenizer"},
}
# Keys left out of the hash while they hold their default, so a run directory made before they existed still resumes.
_UNHASHED_DEFAULTS: dict[str, dict[str, object]] = {"judge": {"samples": 1, "models": None, "aggregate": "majority", "extra_body": {}}}
# Keys of a panel member (`judge.models.N`) left out while unset (null), for the same reason.
_MEMBER_UNSET = ("extra_body",)


class ManifestMismatch(TracejudgeError):
    """The run directory was started with another config or dataset.

    `changes` lists one human-readable line per changed key or file.
    """

    def __init__(self, message: str, changes: list[str]) -> None:
        super().__init__(message)
        self.changes = changes


def hashed_config(config: dict[str, Any]) -> dict[str, Any]:
    """The part of a dumped config (`model_dump(mode="json")`) that decides the results."""
    out: dict[str, Any] = {}
    for section, value in config.items():
        drop = _UNHASHED.get(section, set())
        if section in _UNHASHED and drop is None:
            continue
        if isinstance(value, dict) and drop:
            value = {k: v for k, v in value.items() if k not in drop}
        defaults = _UNHASHED_DEFAULTS.get(section)
        if isinstance(value, dict) and defaults:
            value = {k: v for k, v in value.items() if k not in defaults or v != defaults[k]}
        if section == "judge" and isinstance(value, dict) and isinstance(value.get("models"), list):
            value = {**value, "models": [{k: v for k, v in m.items() if k not in _MEMBER_UNSET or v is not None} if isinstance(m, dict) else m
                                         for m in value["models"]]}
        if section == "run" and isinstance(value, dict) and value.get("shard", 0) is None:
            # Unsharded: hashed as before `run.shard` existed, so older run directories still resume.
            value = {k: v for k, v in value.items() if k != "shard"}
        out[section] = value
    return out


def _digest(payload: Any) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def dataset_files(config: RunConfig, stop: Event | None = None) -> dict[str, Any]:
    """The manifest's `dataset`: role → `{path, **file_fingerprint}` for each of `config.dataset`'s `path` and `tasks` that is set,
    and `beside` for the folder its format reads beside a file `path` (`beside_folder`).

    Raises `OSError` when a file cannot be read, and `dataset_fingerprint.Stopped` once `stop` is set.
    """
    return files_of(config.dataset.path, config.dataset.tasks, stop, beside_folder(config))


def beside_folder(config: RunConfig) -> Path | None:
    """The folder beside the file `config.dataset.path` that its format reads too (`Format.beside`: τ²-bench's
    `simulations/` beside `results.json`), when there is one; None for a folder `path` (fingerprinted whole), a format
    that reads no such folder, or one that cannot be looked up (the run says why where it reads)."""
    from tracejudge.core import registry

    path = config.dataset.path
    try:
        name = registry.format_for(config.dataset.format).beside
    except (KeyError, registry.FormatError):
        return None
    if path is None or name is None or Path(path).is_dir():
        return None
    folder = Path(path).parent / name
    return folder if folder.is_dir() else None


def manifest_for(config: RunConfig, memory_fingerprint: str | None = None, files: dict[str, Any] | None = None,
                 salt: str | None = None) -> dict[str, Any]:
    """The manifest a run directory records for `config`.

    Keys: `tracejudge_version`, `config_hash` (sha256 of the hashed part; when it has masked values, of the masked part
    and `config_secrets`, their digests under `salt`, the run directory's, drawn at random when None: `config_secrets`),
    `dataset` (role → `{path, **file_fingerprint}` for `path` and `tasks`),
    `dataset_fingerprint` (sha256 over the files' hashes), `config` (all of it,
    each metric spec with its defaults filled in); a shard run also has `shard`
    (`{index, count}`) and `config_hash_unsharded` (the hash without `run.shard`). `memory_fingerprint`
    stands in for the files when the cases come from memory; `files` is `dataset_files(config)` when already
    computed (`engine.fingerprint_ahead`), else it is computed here.
    """
    dumped = config.model_dump(mode="json")
    dumped["metrics"] = [_resolved_metric(spec) for spec in dumped.get("metrics", [])]
    if memory_fingerprint is not None:
        # Cases streamed from memory (the Python API) cannot be hashed before they are read.
        files = {"memory": {"path": str(config.dataset.path), "size": None, "sha256": memory_fingerprint, "sampled": False}}
    elif files is None:
        files = dataset_files(config)
    elif "beside" not in files and (folder := beside_folder(config)) is not None:
        # Hashed ahead of the config's validation (`engine.fingerprint_ahead`), before its format was known.
        files = {**files, **files_of(None, None, None, folder)}
    # Hashed over the masked config, a masked value by its digest (`config_secrets`), kept with its credentials masked (a
    # judge's `base_url` `http://user:pass@host`, a password in a metric's `expected_arguments`, a target's
    # `Authorization` header: `redact_config`): the run directory is uploaded, shared and read by other commands
    # (configs.jsonl copies this).
    masked = redact_config(redact_url_passwords(dumped))
    hashed, shown = hashed_config(dumped), hashed_config(masked)
    values = config_secrets.masked_values(hashed, shown)
    unsharded = None
    if config.run.shard is not None:
        unsharded = hashed_config({**masked, "run": {**masked["run"], "shard": None}})
    record = None
    if values:
        # (a shard's salt is its sweep's: `config_secrets.shard_salt`)
        salt = salt or (config_secrets.new_salt() if unsharded is None else config_secrets.shard_salt(unsharded))
        record = config_secrets.digests_record(values, salt)
    shard: dict[str, Any] = {}
    if config.run.shard is not None:
        # The shard decides which cases a directory holds (so it is hashed), but the shards
        # of one sweep share everything else: the unsharded hash tells `merge_runs` they belong together.
        i, n = (int(x) for x in config.run.shard.split("/"))
        if record is None:
            unsharded = hashed_config({**dumped, "run": {**dumped["run"], "shard": None}})
        shard = {"shard": {"index": i, "count": n}, "config_hash_unsharded": _hash_of(unsharded, record)}
    return {
        "tracejudge_version": __version__,
        "config_hash": _hash_of(hashed if record is None else shown, record),
        **({"config_secrets": record} if record is not None else {}),
        **shard,
        "dataset_fingerprint": _digest({role: f["sha256"] for role, f in files.items()}),
        "dataset": files,
        "config": recorded_config(masked),  # (a long extra_body value by its digest: hashed above in full)
    }


def _hash_of(hashed: Any, record: dict[str, Any] | None) -> str:
    # A config without masked values: sha256 of it, as every version hashed it. With them: of the masked config and the
    # record of their digests (`config_secrets`), which holds no value.
    return _digest(hashed) if record is None else _digest({"config": hashed, "config_secrets": record})


def plain_hash(config: RunConfig) -> str:
    """`config`'s hash as versions before `config_secrets` computed it (sha256 of the config as given, credentials and
    all): compared in memory with a manifest they wrote (`upgraded`), never written."""
    dumped = config.model_dump(mode="json")
    dumped["metrics"] = [_resolved_metric(spec) for spec in dumped.get("metrics", [])]
    return _digest(hashed_config(dumped))


def upgraded(recorded: Any, new: dict[str, Any], config: RunConfig) -> Any:
    """`recorded` (a manifest, a configs.jsonl entry or a checkpoint's config hash) with each config of it that a version
    before `config_secrets` hashed plainly and that is `config` hashed as `new` (`config`'s manifest) hashes it: a resume
    goes on, and writes the manifest in the new form. The same object when there is none (`config_secrets.upgraded`)."""
    return config_secrets.upgraded(recorded, new, lambda: plain_hash(config))


def _resolved_metric(spec: dict[str, Any]) -> dict[str, Any]:
    # With every parameter's default filled in, writing a default out (`score: f1`)
    # does not count as a change.
    from tracejudge.core import registry

    try:
        metric = registry.build_metric(spec)
    except registry.SpecError:
        return spec
    return {"type": spec["type"], **metric.model_dump(mode="json")}


def _with_resolved_metrics(config: dict[str, Any]) -> dict[str, Any]:
    metrics = config.get("metrics")
    if not isinstance(metrics, list):
        return config
    return {**config, "metrics": [_resolved_metric(m) if isinstance(m, dict) and "type" in m else m for m in metrics]}


# A URL's password masked (`scheme://user:[REDACTED]@host`): a judge's proxy password, rotated without changing any answer.
_URL_MASK = re.compile(r"://[^\s:/@\"']*:" + re.escape(MASK) + "(?=@)")


def _hides(value: Any) -> bool:
    """True for a config value (flattened) that a masked credential stands in (but a URL's password)."""
    return isinstance(value, str) and MASK in value and MASK in _URL_MASK.sub("", value)


def diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Human-readable lines naming every difference that blocks a resume.

    `old` and `new` are manifests. Config keys are dotted paths
    (`metrics.0.arguments: "exact" → "subset"`); dataset files are named by
    role and path with their sizes. An old manifest without per-file records
    is compared by its overall `dataset_fingerprint`.
    """
    lines: list[str] = []
    # Both as a manifest keeps them, credentials masked and a long extra_body value by its digest (one written before
    # they were is so here, and never shown).
    tree_a = hashed_config(_with_resolved_metrics(recorded_config(redact_config(old.get("config") or {}))))
    tree_b = hashed_config(_with_resolved_metrics(recorded_config(redact_config(new.get("config") or {}))))
    a, b = flatten(tree_a, "", {}), flatten(tree_b, "", {})
    # A metric moved in the list is one line (moved and changed too), not one per parameter of the two metrics now at
    # each position.
    moves, told_a, told_b = moved_items(tree_a.get("metrics"), tree_b.get("metrics"), "metrics")
    for flat, told in ((a, told_a), (b, told_b)):
        items = {f"metrics.{i}" for i in told}
        for key in [k for k in flat if ".".join(k.split(".", 2)[:2]) in items]:
            del flat[key]
    shown: set[str] = set()
    for key in sorted(set(a) | set(b)):
        va, vb = a.get(key, MISSING), b.get(key, MISSING)
        if va == vb:
            continue
        # A metric (a section, a list item) on one side only is one line, not one per parameter it has.
        part = (whole(key, b, a) if va is MISSING else whole(key, a, b)) if MISSING in (va, vb) else None
        value = subtree(tree_b if va is MISSING else tree_a, part) if part is not None else MISSING
        if value is MISSING:
            lines.append(f"config {key}: {show(va)} → {show(vb)}")
        elif part not in shown:
            shown.add(part)
            value = show(type_first(value))
            lines.append(f"config {part}: (absent) → {value}" if va is MISSING else f"config {part}: {value} → (absent)")
    if moves:
        at = next((n for n, line in enumerate(lines) if line >= "config metrics"), len(lines))
        lines[at:at] = moves
    if not lines and old.get("config_hash") != new.get("config_hash") and "config" not in old:
        lines.append("config: the recorded manifest has no config to compare; its hash differs")
    elif not lines and old.get("config_hash") != new.get("config_hash") and (hidden := [k for k, v in b.items() if _hides(v) or is_digest(v) or MASK in k]):
        # Equal masked configs of different hashes differ in a masked value (an expected argument's password), which
        # changes the results as any other value does: named by the keys whose digests differ (`config_secrets`), a URL's
        # password but (a proxy's, rotated without changing any answer).
        got = config_secrets.changed(old.get("config_secrets"), new.get("config_secrets"),  # (the old config as written: its clear values)
                                     lambda: flatten(hashed_config(_with_resolved_metrics(old.get("config") or {})), "", {}))
        if got is None:
            why = ("the recorded manifest, written by an earlier version, has no digest of each" if "config_secrets" not in old
                   else "the recorded digests were made under another salt and cannot be compared with")
            lines.append(f"config: a masked value changed (the config hashes differ; {why} masked value, so which of the "
                         f"{len(hidden)} changed cannot be told)")
        elif named := [k for k in hidden if k in got and not is_digest(b[k])]:
            lines.append(f"config {' and '.join(named)}: {MASK} → {MASK} (a masked value changed: its digests differ)")
        # A long extra_body value is recorded by a sha256 of its masked text, which a changed credential inside it
        # leaves alike: the record's digests, of the values as given (under the salt), tell it changed.
        if got is not None and (long := [k for k in hidden if is_digest(b[k]) and any(g == k or g.startswith(k + ".") for g in got)]):
            lines += [f"config {k}: a credential masked inside this value (recorded by its digest) changed: the digests of the "
                      "values as given differ" for k in long]
    old_files, new_files = old.get("dataset"), new["dataset"]
    if not isinstance(old_files, dict):
        if old.get("dataset_fingerprint") != new["dataset_fingerprint"]:
            lines.append("dataset: the files' fingerprint differs from the recorded one")
        return lines
    for role in sorted(set(old_files) | set(new_files)):
        fa, fb = old_files.get(role), new_files.get(role)
        if fa is None and role == "beside":
            # (a run started before `Format.beside` existed, or before the folder was there: nothing to compare it with)
            lines.append(f"dataset.beside: folder {fb['path']} was not fingerprinted when this run directory was started, "
                         "so whether the files the run read from it changed since cannot be told")
        elif fa is None or fb is None:
            present = fb if fa is None else fa
            lines.append(f"dataset.{role}: {'added' if fa is None else 'removed'} ({present['path']})")
        elif fa.get("sha256") != fb.get("sha256"):
            where = fb["path"] if fa.get("path") == fb["path"] else f"{fb['path']} (was {fa.get('path')})"
            if isinstance(fa.get("files"), dict) and isinstance(fb.get("files"), dict):
                lines += [f"dataset.{role}: folder {where}: {line}" for line in _folder_diff(fa["files"], fb["files"])]
            else:
                kind = "folder" if "count" in fb else "file"
                lines.append(f"dataset.{role}: {kind} {where} changed: {_sizes(fa, fb)}")
    if old.get("tracejudge_version") != new["tracejudge_version"] and lines:
        lines.append(f"tracejudge version: {old.get('tracejudge_version')} → {new['tracejudge_version']}")
    return lines


def _sizes(fa: dict[str, Any], fb: dict[str, Any]) -> str:
    if fa.get("size") != fb["size"]:
        return f"size {fa.get('size')} → {fb['size']} bytes"
    return f"same size ({fb['size']} bytes), different content"


_FOLDER_LINES = 10


def _folder_diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per file added, removed or changed between two folder listings (the first `_FOLDER_LINES`, then a count)."""
    lines = []
    for rel in sorted(set(old) | set(new)):
        a, b = old.get(rel), new.get(rel)
        if a is None or b is None:
            lines.append(f"{rel} {'added' if a is None else 'removed'}")
        elif a.get("sha256") != b.get("sha256"):
            lines.append(f"{rel} changed: {_sizes(a, b)}")
    if len(lines) > _FOLDER_LINES:
        lines[_FOLDER_LINES:] = [f"and {len(lines) - _FOLDER_LINES} more files"]
    return lines or ["the same files, hashed differently (written by another version?)"]


def check(run_dir: Path, old: dict[str, Any] | None, new: dict[str, Any], force: bool, recorded_hash: str | None = None,
          *, unproven: bool = False) -> list[str]:
    """Compare manifests; return the changes (empty when none, or no old manifest and no recorded hash).

    `recorded_hash` is the config hash the run directory's last segment ran
    with (from its checkpoint), used when the manifest is missing or
    unreadable: a different hash is a change, though which keys changed
    cannot be listed. `unproven` says the directory holds results but nothing
    records their config: that is a change too (the config cannot be shown
    to be the same). Raises `ManifestMismatch` listing the changes unless
    `force` is set.
    """
    if old is None and unproven and recorded_hash is None:
        changes = ["config: the directory holds results, but manifest.json is missing or unreadable and nothing else "
                   "(configs.jsonl, checkpoint.json, summary.json) records the config they were computed with"]
    elif old is None:
        if recorded_hash is None or recorded_hash == new["config_hash"]:
            return []
        why = ("which keys changed cannot be listed without the manifest" if "config_secrets" not in new else
               "this config's masked values are hashed under the salt the manifest and configs.jsonl kept, so a lost salt reads as a change")
        changes = [f"config: manifest.json is missing or unreadable, and the checkpoint records this directory's config hash "
                   f"{recorded_hash[:12]}…, not this config's {new['config_hash'][:12]}… ({why})"]
    else:
        changes = diff(old, new)
    if changes and not force:
        raise refusal(run_dir, changes)
    return changes


CLI_OPTIONS = ("Run with --force to resume anyway (results already there are kept, an invalid_input one too: a record fixed "
               "since is read again only with --fresh), or with --fresh to start over in a new run directory.")


def refusal(run_dir: Path, changes: list[str], options: str = CLI_OPTIONS) -> ManifestMismatch:
    """The `ManifestMismatch` refusing to resume `run_dir`: one line per change, then `options` (how to go on)."""
    body = "\n".join(f"  - {c}" for c in changes)
    return ManifestMismatch(f"{run_dir}: cannot resume: this run directory was started with another config or dataset:\n{body}\n{options}", changes)
