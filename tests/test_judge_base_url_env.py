"""Where the Anthropic judge's requests go: `ANTHROPIC_BASE_URL` as the Anthropic SDK reads it, `judge.base_url` as documented."""

from __future__ import annotations

import pytest
from test_judge_http import run_config, write_cases
from tracejudge.core.config import JudgeConfig
from tracejudge.stages.judge.client import JudgeRequestError

ANTHROPIC = {"provider": "anthropic", "model": "claude-haiku-4-5"}


@pytest.fixture
def anthropic_env(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    return monkeypatch


def test_anthropic_base_url_from_the_environment_is_the_sdks(simulator, tmp_path, anthropic_env):
    # The SDK sends to {ANTHROPIC_BASE_URL}/v1/messages; the simulator answers /v1/messages only.
    sim = simulator()
    anthropic_env.setenv("ANTHROPIC_BASE_URL", sim.url)
    summary = run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 2), judge={**ANTHROPIC, "base_url": None})
    assert summary["status"] == {"ok": 2} and sim.stats.by_path == {"/v1/messages": 2}
    # A value already ending in /v1 (tracejudge's form) is taken as it is; a trailing slash is no second path part.
    for given, used in ((sim.url + "/v1", sim.url + "/v1"), (sim.url + "/", sim.url + "/v1"), ("https://gw.example/anthropic", "https://gw.example/anthropic/v1")):
        anthropic_env.setenv("ANTHROPIC_BASE_URL", given)
        assert JudgeConfig.model_validate(ANTHROPIC).base_url == used
    # judge.base_url in the config keeps its documented meaning: the URL before /messages.
    assert JudgeConfig.model_validate({**ANTHROPIC, "base_url": sim.url}).base_url == sim.url


def test_a_404_names_the_base_url_used_and_where_it_came_from(simulator, tmp_path, anthropic_env):
    sim = simulator()
    with pytest.raises(JudgeRequestError) as stopped:  # no request can succeed: the run stops, marking no case
        run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 1), judge={**ANTHROPIC, "base_url": sim.url})
    reason = str(stopped.value)
    assert "request_error: HTTP 404" in reason, reason
    assert f"nothing answers at {sim.url}/messages: the base URL used is judge.base_url {sim.url};" in reason, reason
    assert "judge.base_url is the URL before /messages (such as https://api.anthropic.com/v1)" in reason, reason
    assert "ANTHROPIC_BASE_URL is read as the Anthropic SDK reads it" in reason, reason
    assert "judge.structured_output" not in reason, reason


def test_a_404_from_an_environment_base_url_names_the_variable(simulator, tmp_path, anthropic_env):
    sim = simulator()
    anthropic_env.setenv("ANTHROPIC_BASE_URL", sim.url + "/custom")  # the SDK form, /v1 added: nothing answers there
    with pytest.raises(JudgeRequestError) as stopped:
        run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 1), judge={**ANTHROPIC, "base_url": None})
    reason = str(stopped.value)
    assert f"nothing answers at {sim.url}/custom/v1/messages: the base URL used is {sim.url}/custom/v1, from ANTHROPIC_BASE_URL='{sim.url}/custom'" in reason, reason
