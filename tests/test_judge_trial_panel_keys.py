"""A panel member's `api_key_env: null`, over real HTTP on 127.0.0.1 (a user trial's secret leak).

The member must send no key to its server (the section's OPENAI_API_KEY went to a self-hosted server), and a run
whose members all say `api_key_env: null` must not demand OPENAI_API_KEY. A member leaving the key out still
inherits the section's, and `base_url: null` is the provider's own endpoint, not the section's base URL.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from _loopback import Loopback, completion, verdict
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.stages.judge.panel import member_key, panel_members

ONE = [{"type": "TaskCompletion"}]
SECRET = "sk-trial-0123456789abcdefghijklmnop"


def _cases(path: Path, n: int = 2) -> Path:
    with open(path, "w") as fh:
        for i in range(n):
            steps = [{"tool_calls": [{"name": "lookup", "arguments": {"q": f"item {i}"}, "result": f"found {i}"}]}]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i}", "trace": {"steps": steps, "output": f"Item {i} is found."}}) + "\n")
    return path


def _config(tmp: Path, judge: dict[str, Any], run: str) -> dict[str, Any]:
    return {"dataset": {"path": str(_cases(tmp / "c.jsonl")), "format": "native"}, "metrics": ONE, "judge": judge,
            "cache": {"dir": str(tmp / "cache"), "enabled": False}, "run": {"dir": str(tmp / run)}}


def _answer(headers: dict[str, str], body: dict[str, Any]) -> Any:
    return 200, completion(json.dumps(verdict(body)))


def _auth(requests: list[tuple[dict[str, str], dict[str, Any]]], model: str) -> list[str | None]:
    """The Authorization header (None: none sent) of each request for `model`."""
    return [next((v for k, v in h.items() if k.lower() == "authorization"), None) for h, b in requests if b.get("model") == model]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return monkeypatch


def test_a_member_with_api_key_env_null_gets_no_key_while_the_section_key_is_set(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPENAI_API_KEY", SECRET)
    with Loopback(_answer) as server:
        judge = {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.url + "/v1",
                 "models": [{"model": "judge-a", "api_key_env": None}, {"model": "judge-b"}]}
        summary = anyio.run(lambda: runner.run(validate_config(_config(tmp_path, judge, "run")))).summary
        sent = list(server.requests)
    assert summary["status"] == {"ok": 2}, summary["status"]
    keyless, keyed = _auth(sent, "judge-a"), _auth(sent, "judge-b")
    assert len(keyless) == 2 and keyless == [None, None], keyless  # the leak: `Bearer sk-trial-…` went to this member's server
    assert len(keyed) == 2 and all(a == f"Bearer {SECRET}" for a in keyed), keyed  # a member leaving it out inherits the section's


def test_a_panel_of_keyless_members_needs_no_openai_api_key(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    # As the trial wrote it: the section names only the provider (so its own endpoint would need OPENAI_API_KEY), the
    # members are self-hosted servers that take no key. Nothing demands the variable, and nothing sends one.
    with Loopback(_answer) as server:
        url = server.url + "/v1"
        judge = {"provider": "openai", "aggregate": "mean",
                 "models": [{"provider": "openai", "model": "org/judge-a", "base_url": url, "api_key_env": None},
                            {"provider": "openai", "model": "org/judge-b", "base_url": url, "api_key_env": None}]}
        config = validate_config(_config(tmp_path, judge, "keyless"))
        assert [member_key(m) for m in panel_members(config)] == [None, None]
        summary = anyio.run(lambda: runner.run(config)).summary
        sent = list(server.requests)
    assert summary["status"] == {"ok": 2}, summary["status"]
    assert len(sent) == 4 and all(a is None for m in ("org/judge-a", "org/judge-b") for a in _auth(sent, m))


def test_a_member_with_base_url_null_uses_the_providers_endpoint_and_its_key(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> None:
    # `base_url: null` said is not `base_url` left out: the provider's own endpoint (here OPENAI_BASE_URL), with the
    # provider's key variable, as the same null means in the judge section; the section's server and key are not this member's.
    clean_env.setenv("OPENAI_API_KEY", SECRET)
    clean_env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    config = validate_config(_config(tmp_path, {"provider": "openai", "model": "gpt-4o-mini", "base_url": "http://127.0.0.1:8/v1",
                                                "api_key_env": "MY_KEY", "models": [{"model": "a"}, {"model": "b", "base_url": None}]},
                                     "unused"))
    a, b = panel_members(config)
    assert (a.cfg.base_url, a.cfg.api_key_env) == ("http://127.0.0.1:8/v1", "MY_KEY")
    assert (b.cfg.base_url, b.cfg.api_key_env) == ("http://127.0.0.1:9/v1", "OPENAI_API_KEY")
