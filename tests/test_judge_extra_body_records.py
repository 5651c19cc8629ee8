"""What a run directory records of `judge.extra_body`, over real HTTP to the judge simulator on 127.0.0.1: a credential
inside a long value (recorded by a digest of its masked text) still tells a resume that it changed, naming the key,
and is written nowhere.
"""

from __future__ import annotations

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
