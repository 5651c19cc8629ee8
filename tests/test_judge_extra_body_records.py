"""What a run directory records of `judge.extra_body`, over real HTTP to the judge simulator on 127.0.0.1: a credential
inside a long value (recorded by a digest of its masked text) still tells a resume that it changed, naming the key,
and is written nowhere.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_judge_batch_api import write_cases
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.engine.manifest import ManifestMismatch
from tracejudge.simulator.server import SimulatorThread

KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"


def _config(tmp: Path, judge: dict[str, Any], run_dir: str = "run") -> dict[str, Any]:
    return {"dataset": {"path": str(write_cases(tmp / "c.jsonl", 2)), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
            "judge": judge, "cache": {"enabled": False}, "run": {"dir": str(tmp / run_dir)}}


def _run(data: dict[str, Any]) -> dict[str, Any]:
    return anyio.run(lambda: runner.run(validate_config(data))).summary


def _long(key: str) -> dict[str, Any]:
    # (over 4096 characters of JSON: recorded by its sha256, of the text with the key masked)
    return {"prompt_suffix": "x" * 5000 + f" {key} end", "seed": 1}


def test_a_credential_changed_inside_a_long_value_is_named_by_its_key_on_resume(simulator: Callable[..., SimulatorThread],
                                                                               tmp_path: Path) -> None:
    sim = simulator()
    judge = {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1"}
    assert _run(_config(tmp_path, {**judge, "extra_body": _long(KEY)}))["status"] == {"ok": 2}
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["judge"]["extra_body"]["prompt_suffix"].startswith("[sha256 ")
    _run(_config(tmp_path, {**judge, "extra_body": _long(KEY)}))  # the same value resumes
    # Before, the two recorded copies were alike (the key masked before the digest), so nothing was named and the run
    # resumed on another credential without a word.
    other = KEY[:-4] + "WXYZ"
    with pytest.raises(ManifestMismatch) as err:
        _run(_config(tmp_path, {**judge, "extra_body": _long(other)}))
    assert err.value.changes == ["config judge.extra_body.prompt_suffix: a credential masked inside this value (recorded by its "
                                 "digest) changed: the digests of the values as given differ"]
    for p in (tmp_path / "run").rglob("*"):  # the value as given is written nowhere, nor the credential
        assert not p.is_file() or (KEY.encode() not in p.read_bytes() and other.encode() not in p.read_bytes()), p
    assert KEY not in str(err.value) and other not in str(err.value)


def _blocks(run_dir: Path) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines() if x.strip()]
    return [s["judge"] for r in lines for s in r["scores"].values() if s.get("judge")]


def _digest(recorded: Any) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(recorded, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


def test_each_scores_judge_block_names_the_fields_sent_by_digest_and_none_without_them(simulator: Callable[..., SimulatorThread],
                                                                                       tmp_path: Path) -> None:
    sim = simulator()
    judge = {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1"}
    extra = {"chat_template_kwargs": {"enable_thinking": False}, "metadata": {"api_key": KEY}}
    summary = _run(_config(tmp_path, {**judge, "extra_body": extra}))
    blocks = _blocks(tmp_path / "run")
    # The digest of what summary.json shows of them (the credential masked, as there): a result line alone tells which.
    assert summary["judge"]["extra_body"]["metadata"] == {"api_key": "[REDACTED]"}
    assert len(blocks) == 2 and {b["extra_body"] for b in blocks} == {_digest(summary["judge"]["extra_body"])}
    assert KEY not in (tmp_path / "run" / "results.jsonl").read_text()
    # Without extra_body the block is as it was: no key at all.
    _run(_config(tmp_path, judge, run_dir="plain"))
    assert [b for b in _blocks(tmp_path / "plain") if "extra_body" in b] == []
    # A panel whose members send other fields: the digest of what summary.json shows by member.
    panel = {**judge, "model": "x", "extra_body": {"seed": 1}, "models": ["openai:a", {"model": "openai:b", "extra_body": {"seed": 2}}]}
    summary = _run(_config(tmp_path, panel, run_dir="panel"))
    assert {b["extra_body"] for b in _blocks(tmp_path / "panel")} == {_digest(summary["judge"]["extra_body_by_model"])}


def test_a_key_that_is_a_credential_is_masked_in_every_file_and_its_change_refuses_a_resume(
        simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    # A key pasted as a field's name (`{"sk-…": true}`) was recorded in clear in configs.jsonl, manifest.json and
    # summary.json, while a value under `api_key` or shaped like a key was masked.
    sim = simulator()
    judge = {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1"}
    second, third = "sk-ant-api03-Zy9Xw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe", "sk-proj-Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2Xc4Vb6Nm8"
    extra = {KEY: True, second: {"seed": 1}, "api_key": "sk-short1", "metadata": {"note": f"use {third}"}}
    summary = _run(_config(tmp_path, {**judge, "extra_body": extra}))
    assert summary["status"] == {"ok": 2}
    assert summary["judge"]["extra_body"] == {"[REDACTED]": True, "[REDACTED] (2)": {"seed": 1}, "api_key": "[REDACTED]",
                                              "metadata": {"note": "use [REDACTED]"}}
    files = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert {"configs.jsonl", "manifest.json", "summary.json", "report.md", "report.html", "junit.xml"} <= {p.name for p in files}
    for p in files:
        data = p.read_bytes()
        assert not any(k.encode() in data for k in (KEY, second, third, "sk-short1")), p
    _run(_config(tmp_path, {**judge, "extra_body": extra}))  # the same fields resume
    with pytest.raises(ManifestMismatch) as err:  # another key in the masked key's place
        _run(_config(tmp_path, {**judge, "extra_body": {KEY[:-4] + "WXYZ" if k == KEY else k: v for k, v in extra.items()}}))
    assert err.value.changes == ["config judge.extra_body.[REDACTED]: [REDACTED] → [REDACTED] (a masked value changed: its digests differ)"]
    with pytest.raises(ManifestMismatch) as err:  # a masked value beside masked keys still tells its own change
        _run(_config(tmp_path, {**judge, "extra_body": {**extra, "api_key": "sk-short2"}}))
    assert err.value.changes == ["config judge.extra_body.api_key: [REDACTED] → [REDACTED] (a masked value changed: its digests differ)"]
