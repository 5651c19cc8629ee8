"""The name of a sweep's shared judge gate on a Ray cluster says nothing of the config's credentials.

Any client of the cluster can list its actors' names; the gate's was 16 hex digits of a plain sha256 of the config as
given, so a weak password in it (a metric's `expected_arguments`, a judge URL's) could be guessed offline from the name
and the config the manifest shows. It is hashed masked now, as the manifest shows it. The canaries are fake.
"""

from __future__ import annotations

from pathlib import Path

from tracejudge.core.config import validate_config
from tracejudge.llm.ray_gate import gate_name


def _config(password: str, shard: str | None = None):
    return validate_config({
        "dataset": {"path": "cases.jsonl", "format": "native"},
        "metrics": [{"type": "ArgumentCorrectness", "tool_name": "login", "expected_arguments": {"user": "ann", "password": password}}],
        "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": f"http://ann:{password}@127.0.0.1:8000/v1"},
        "run": {"dir": "runs/sweep", **({"shard": shard} if shard else {})},
    }, check_files=False)


def test_the_gate_name_does_not_depend_on_a_masked_value() -> None:
    assert gate_name(_config("Hunt3r" + "Canary-1")) == gate_name(_config("Hunt3r" + "Canary-2"))


def test_the_shards_of_a_sweep_still_share_a_gate_and_another_sweep_gets_its_own() -> None:
    first, second = _config("Hunt3r" + "Canary-1", "1/2"), _config("Hunt3r" + "Canary-1", "2/2")
    assert gate_name(first, Path("runs/sweep-shard-1-of-2")) == gate_name(second, Path("runs/sweep-shard-2-of-2"))
    assert gate_name(first, Path("runs/other")) != gate_name(first, Path("runs/sweep"))
