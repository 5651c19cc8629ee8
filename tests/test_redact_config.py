"""A run's config as its run directory records it (manifest.json, configs.jsonl) has its credentials masked.

A metric's `expected_arguments` (ArgumentCorrectness, a case's values written in the config) was copied verbatim into
manifest.json and configs.jsonl, and so was a target's `Authorization` header: a password there was in clear in a
run directory that is uploaded and shared, while results.jsonl masked the same value. The config hash is still
computed over the config as given: a resume with the same config goes on, one whose masked value changed is refused
(it changes the results), naming the key and not the value. The canaries are fake.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from tracejudge.core.config import RunConfig
from tracejudge.engine import manifest as manifest_mod
from tracejudge.llm.redact import MASK, redact_config
import _forkserver

PASSWORD = "Cfg" + "Passw0rd!x"
PIN = "4829" + "13"
BODY_KEY = "bodyKey" + "77aa"
HEADER = "Hdr" + "Tok9zz"
CANARIES = (PASSWORD, PIN, BODY_KEY, HEADER)


def _config(tmp_path: Path, password: str = PASSWORD) -> Path:
    case = {"id": "c1", "input": "log in", "trace": {"steps": [{"tool_calls": [{"name": "login", "arguments": {
        "user": "ann", "password": "other", "pin": "000000"}}]}], "output": "done"}}
    (tmp_path / "data.jsonl").write_text(json.dumps(case) + "\n", encoding="utf-8")
    expected = {"user": "ann", "password": password, "pin": PIN, "body": json.dumps({"api_key": BODY_KEY})}
    config = {"dataset": {"path": "data.jsonl", "format": "native"},
              "metrics": [{"type": "ArgumentCorrectness", "tool_name": "login", "expected_arguments": expected}, {"type": "ToolCalls"}],
              "run": {"dir": "run"}, "cache": {"dir": "cache"}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def _run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", "run", "c.yaml", "--no-progress", *extra], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)


def _leaks(run_dir: Path) -> dict[str, list[str]]:
    found = {p.name: [c for c in CANARIES if c in p.read_text(encoding="utf-8", errors="replace")] for p in run_dir.iterdir() if p.is_file()}
    return {name: got for name, got in found.items() if got}


def test_the_recorded_config_masks_credentials_and_resume_still_compares_the_real_one(tmp_path: Path) -> None:
    _config(tmp_path)
    first = _run(tmp_path)
    assert first.returncode in (0, 1), first.stderr
    run_dir = tmp_path / "run"
    assert _leaks(run_dir) == {}
    recorded = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    spec = recorded["config"]["metrics"][0]
    assert spec["expected_arguments"] == {"user": "ann", "password": MASK, "pin": MASK, "body": json.dumps({"api_key": MASK})}
    (line,) = (run_dir / "configs.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(line)["config"] == recorded["config"]
    # The hash tells the real config (its masked values by their digests under the directory's salt), not the masked one.
    real = RunConfig.model_validate(yaml.safe_load((tmp_path / "c.yaml").read_text(encoding="utf-8")), context={"base_dir": tmp_path})
    salt = recorded["config_secrets"]["salt"]
    assert recorded["config_hash"] == manifest_mod.manifest_for(real, files=recorded["dataset"], salt=salt)["config_hash"]

    same = _run(tmp_path)
    assert same.returncode in (0, 1) and "cannot resume" not in same.stderr, same.stderr
    report = _forkserver.run([sys.executable, "-m", "tracejudge", "report", "run"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert report.returncode in (0, 1), report.stdout + report.stderr  # (the masked config still reads as a config)
    # Another password in the same place: the masked configs read the same, the hashes do not.
    _config(tmp_path, "Another" + "Passw0rd")
    refused = _run(tmp_path)
    assert refused.returncode == 2 and "cannot resume" in refused.stderr, refused.stderr
    assert "metrics.0.expected_arguments.password" in refused.stderr and "Passw0rd" not in refused.stderr, refused.stderr
    forced = _run(tmp_path, "--force")
    assert forced.returncode in (0, 1), forced.stderr
    assert _leaks(run_dir) == {} and "Another" not in (run_dir / "manifest.json").read_text(encoding="utf-8")


def test_a_manifest_written_before_masking_resumes_and_is_rewritten_masked(tmp_path: Path) -> None:
    _config(tmp_path)
    assert _run(tmp_path).returncode in (0, 1)
    run_dir = tmp_path / "run"
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    # As an older version wrote it: the config as given (the same hash).
    spec = manifest["config"]["metrics"][0]
    spec["expected_arguments"] = {**spec["expected_arguments"], "password": PASSWORD, "pin": PIN}
    manifest["history"][0]["config"] = manifest["config"]
    (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    again = _run(tmp_path)
    assert again.returncode in (0, 1) and "cannot resume" not in again.stderr, again.stderr
    assert PASSWORD not in (run_dir / "manifest.json").read_text(encoding="utf-8")


def test_what_is_masked_and_what_is_kept() -> None:
    config = {"target": {"kind": "http", "url": "https://agent.example/run?api_key=" + HEADER,
                         "headers": {"Authorization": "Bearer " + HEADER, "X-Trace": "${TRACE_ID}", "X-Api-Key": "${AGENT_KEY}"}},
              "judge": {"base_url": "http://proxy:" + PASSWORD + "@host/v1", "api_key_env": "OPENAI_API_KEY", "max_tokens": 512},
              "metrics": [{"type": "ArgumentCorrectness", "expected_arguments": {"username": "ann", "token": "abc", "n": 3}},
                          {"type": "ToolCalls", "expected": {"token": "the", "count": 4}}]}
    got = redact_config(config)
    assert got["target"] == {"kind": "http", "url": "https://agent.example/run?api_key=" + MASK,
                             "headers": {"Authorization": "Bearer " + MASK, "X-Trace": "${TRACE_ID}", "X-Api-Key": "${AGENT_KEY}"}}
    assert got["judge"] == {"base_url": "http://proxy:" + MASK + "@host/v1", "api_key_env": "OPENAI_API_KEY", "max_tokens": 512}
    assert got["metrics"][0]["expected_arguments"] == {"username": "ann", "token": MASK, "n": 3}  # beside a user's name
    assert got["metrics"][1] == config["metrics"][1]  # a word under `token` alone stays
    assert redact_config(got) == got  # masking what is masked changes nothing
