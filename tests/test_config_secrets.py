"""A run directory's config hash, when its recorded config has masked values (`engine.config_secrets`).

`config_hash` in manifest.json was a plain sha256 of the config as given, beside the masked copy: hashing the masked
copy with a candidate password put back told a weak password offline, at a sha256 a guess. It is now a sha256 of the
masked config and of each masked value's scrypt digest under the run directory's salt; the same config hashes the same
in that directory from any process. A resume refused for a changed masked value named every masked key; it names the
ones whose digest differs. A directory written by the previous version (plain hash, no digests) still resumes, and is
rewritten in the new form. The canaries are fake.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import yaml
from tracejudge.core.config import RunConfig
from tracejudge.engine import manifest as manifest_mod
from tracejudge.llm.redact import MASK
import _forkserver

FIRST = "First" + "Passw0rd"
SECOND = "Second" + "Passw0rd"
OTHER = "Changed" + "Passw0rd"
KEYS = ("metrics.0.expected_arguments.password", "metrics.0.expected_arguments.db_password")


def _raw(password: str = FIRST, db_password: str = SECOND, **run: str) -> dict:
    expected = {"user": "ann", "password": password, "db_password": db_password}
    return {"dataset": {"path": "data.jsonl", "format": "native"},
            "metrics": [{"type": "ArgumentCorrectness", "tool_name": "login", "expected_arguments": expected}, {"type": "ToolCalls"}],
            "run": {"dir": "run", **run}, "cache": {"dir": "cache"}}


def _write(tmp_path: Path, **kw: str) -> RunConfig:
    case = {"id": "c1", "input": "log in", "trace": {"steps": [{"tool_calls": [{"name": "login", "arguments": {
        "user": "ann", "password": "x", "db_password": "y"}}]}], "output": "done"}}
    (tmp_path / "data.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(_raw(**kw)), encoding="utf-8")
    return RunConfig.model_validate(_raw(**kw), context={"base_dir": tmp_path})


def _plain(config: RunConfig) -> str:
    # The hash as the previous version wrote it, and as anyone holding the manifest could check a guess with.
    dumped = config.model_dump(mode="json")
    dumped["metrics"] = [manifest_mod._resolved_metric(s) for s in dumped["metrics"]]
    payload = json.dumps(manifest_mod.hashed_config(dumped), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


FILES = {"path": {"path": "data.jsonl", "size": 1, "sha256": "0" * 64}}


def _manifest(config: RunConfig, salt: str | None = None, files: dict | None = None) -> dict:
    return manifest_mod.manifest_for(config, files=files or FILES, **({"salt": salt} if salt else {}))


def _run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", "run", "c.yaml", "--no-progress", *extra], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)


def test_the_hash_cannot_be_checked_with_a_sha256_a_guess(tmp_path: Path) -> None:
    config = _write(tmp_path)
    manifest = _manifest(config)
    text = json.dumps(manifest)
    assert FIRST not in text and SECOND not in text
    # The right guess, hashed as the previous version hashed it, no longer matches.
    assert manifest["config_hash"] != _plain(config)
    record = manifest["config_secrets"]
    assert record["kdf"] == "scrypt" and record["n"] >= 2**14 and len(record["salt"]) == 32
    assert sorted(record["digests"]) == sorted(KEYS)
    # A guess is checked by a scrypt of it, under the recorded salt and cost.
    guess = hashlib.scrypt(json.dumps([KEYS[0], json.dumps(FIRST)], separators=(",", ":")).encode(),
                           salt=bytes.fromhex(record["salt"]), n=record["n"], r=record["r"], p=record["p"], maxmem=1 << 26, dklen=32)
    assert record["digests"][KEYS[0]] == guess.hex()
    # Stable for one run directory (its salt) in another process; another directory's salt gives another hash.
    code = ("import json, sys, yaml; from pathlib import Path; from tracejudge.core.config import RunConfig; "
            "from tracejudge.engine import manifest as m; c = RunConfig.model_validate(yaml.safe_load(open('c.yaml')), "
            "context={'base_dir': Path('.').resolve()}); print(m.manifest_for(c, salt=sys.argv[1])['config_hash'])")
    other = _forkserver.run([sys.executable, "-c", code, record["salt"]], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert other.stdout.strip() == manifest["config_hash"], other.stderr
    assert _manifest(config)["config_hash"] != manifest["config_hash"]
    # A config without masked values is hashed as it always was (its run directories resume as they are).
    plain = RunConfig.model_validate({**_raw(), "metrics": [{"type": "ToolCalls"}]}, context={"base_dir": tmp_path})
    assert _manifest(plain)["config_hash"] == _plain(plain) and "config_secrets" not in _manifest(plain)


def test_the_shards_of_a_sweep_share_their_unsharded_hash(tmp_path: Path) -> None:
    _write(tmp_path)
    shards = [_manifest(RunConfig.model_validate(_raw(shard=f"{i}/2"), context={"base_dir": tmp_path})) for i in (1, 2)]
    assert shards[0]["config_hash_unsharded"] == shards[1]["config_hash_unsharded"]
    assert shards[0]["config_hash"] != shards[1]["config_hash"]
    unsharded = RunConfig.model_validate(_raw(), context={"base_dir": tmp_path})
    assert shards[0]["config_hash_unsharded"] != _plain(unsharded)  # (no plain hash there either)


def test_a_refused_resume_names_only_the_password_that_changed(tmp_path: Path) -> None:
    _write(tmp_path)
    first = _run(tmp_path)
    assert first.returncode in (0, 1), first.stderr
    again = _run(tmp_path)  # the same config, another process: the same hash
    assert again.returncode in (0, 1) and "cannot resume" not in again.stderr, again.stderr
    _write(tmp_path, db_password=OTHER)
    refused = _run(tmp_path)
    assert refused.returncode == 2 and "cannot resume" in refused.stderr, refused.stderr
    assert KEYS[1] in refused.stderr and KEYS[0] not in refused.stderr, refused.stderr
    assert "Passw0rd" not in refused.stderr
    # Both changed: both named.
    recorded = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    both = _manifest(RunConfig.model_validate(_raw(OTHER, OTHER), context={"base_dir": tmp_path}), recorded["config_secrets"]["salt"],
                     recorded["dataset"])
    (line,) = manifest_mod.diff(recorded, both)
    assert line.startswith(f"config {KEYS[0]} and {KEYS[1]}: {MASK} → {MASK}"), line


def test_a_value_a_later_version_masks_is_compared_with_its_clear_copy(tmp_path: Path) -> None:
    # A directory recorded when `db_password` was not masked yet (shown in clear, no digest of it): the same value now
    # masked is no change; another value is, named.
    config = _write(tmp_path)
    now = _manifest(config)
    before = json.loads(json.dumps(now))
    del before["config_secrets"]["digests"][KEYS[1]]
    before["config"]["metrics"][0]["expected_arguments"]["db_password"] = SECOND
    before["config_hash"] = "0" * 64
    assert manifest_mod.diff(before, now) == []
    before["config"]["metrics"][0]["expected_arguments"]["db_password"] = OTHER
    (line,) = manifest_mod.diff(before, now)
    assert line.startswith(f"config {KEYS[1]}: {MASK}") and KEYS[0] not in line, line


def _as_the_previous_version_wrote_it(run_dir: Path, config: RunConfig) -> str:
    # Its hash plain, no digests: in the manifest (and its history), configs.jsonl, the checkpoint's segments, summary.json.
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    new, old = manifest["config_hash"], _plain(config)
    for name in ("manifest.json", "configs.jsonl", "checkpoint.json", "summary.json"):
        path = run_dir / name
        if path.exists():
            path.write_text(path.read_text(encoding="utf-8").replace(new, old), encoding="utf-8")
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    manifest.pop("config_secrets", None)
    for entry in manifest["history"]:
        entry.pop("config_secrets", None)
    (run_dir / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    lines = [json.loads(x) for x in (run_dir / "configs.jsonl").read_text(encoding="utf-8").splitlines()]
    (run_dir / "configs.jsonl").write_text("".join(json.dumps({k: v for k, v in x.items() if k != "config_secrets"}) + "\n"
                                                   for x in lines), encoding="utf-8")
    return old


def test_a_run_directory_of_the_previous_version_resumes_and_is_rewritten(tmp_path: Path) -> None:
    config = _write(tmp_path)
    assert _run(tmp_path).returncode in (0, 1)
    run_dir = tmp_path / "run"
    old = _as_the_previous_version_wrote_it(run_dir, config)
    legacy = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert legacy["config_hash"] == old and "config_secrets" not in legacy
    # Another masked value than the recorded one: refused, without naming keys it cannot tell apart or any value.
    other = RunConfig.model_validate(_raw(db_password=OTHER), context={"base_dir": tmp_path})
    changed = _manifest(other, files=legacy["dataset"])
    (line,) = manifest_mod.diff(legacy, changed)
    assert "earlier version" in line and KEYS[0] not in line and "Passw0rd" not in line, line
    assert manifest_mod.upgraded(legacy, changed, other) is legacy  # (its plain hash is not the recorded one)
    # The same config: it resumes, and the manifest is written in the new form.
    resumed = _run(tmp_path)
    assert resumed.returncode in (0, 1) and "cannot resume" not in resumed.stderr, resumed.stderr
    now = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert now["config_hash"] != old and "config_secrets" in now
    assert [h["config_hash"] for h in now["history"]] == [now["config_hash"]]
    assert json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))["config_hash"] == now["config_hash"]
    report = _forkserver.run([sys.executable, "-m", "tracejudge", "report", "run"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert report.returncode in (0, 1) and "interrupted" not in report.stdout + report.stderr, report.stdout + report.stderr
