"""The judge simulator's `/v1/messages` and the request fields Anthropic's Messages API does not have, over real HTTP on
127.0.0.1.

Anthropic's API refuses a top-level field it does not have: 400, `{"type": "error", "error": {"type":
"invalid_request_error", "message": "response_format: Extra inputs are not permitted"}}`. The simulator answered
such a request and, for an OpenAI field (`response_format`, `n`, `prompt_cache_key`), did not even count it in
`/_sim/stats`' `unread_fields`: it read `/v1/messages` with the OpenAI route's fields. Now it counts every field of a
request it does not read as Anthropic's route reads it, and with `strict_fields` refuses a foreign one as the API does.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_judge_batch_api import write_cases
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.simulator.server import SimulatorThread
from tracejudge.simulator.state import ANTHROPIC_FIELDS
from tracejudge.stages.judge.client import JudgeRequestError

FOREIGN = {"response_format": {"type": "json_object"}, "n": 2, "prompt_cache_key": "k"}


def _post(sim: SimulatorThread, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    req = urllib.request.Request(sim.url + path, data=json.dumps(body).encode(),
                                 headers={"content-type": "application/json", "anthropic-version": "2023-06-01"})
    try:
        with urllib.request.urlopen(req, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _unread(sim: SimulatorThread) -> dict[str, Any]:
    with urllib.request.urlopen(sim.url + "/_sim/stats", timeout=30) as reply:
        return dict(json.loads(reply.read())["unread_fields"])


def _run(tmp: Path, sim: SimulatorThread, extra: dict[str, Any]) -> dict[str, Any]:
    data = {"dataset": {"path": str(write_cases(tmp / "c.jsonl", 2)), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
            "judge": {"provider": "anthropic", "model": "claude-x", "base_url": sim.url + "/v1", "api_key_env": None, "extra_body": extra},
            "cache": {"enabled": False}, "run": {"dir": str(tmp / "run")}}
    return anyio.run(lambda: runner.run(validate_config(data))).summary


def test_an_openai_field_sent_to_the_anthropic_route_is_counted_as_unread(simulator: Callable[..., SimulatorThread],
                                                                          tmp_path: Path) -> None:
    sim = simulator()
    assert _run(tmp_path, sim, {**FOREIGN, "metadata": {"user_id": "eval"}})["status"] == {"ok": 2}
    unread = _unread(sim)
    for key, value in FOREIGN.items():
        assert unread.get(key) == {json.dumps(value, separators=(",", ":")): 2}, (key, unread)
    assert unread["metadata"] == {'{"user_id":"eval"}': 2}
    # The OpenAI route reads those fields as it did: not counted there.
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5, **FOREIGN}
    assert _post(sim, "/v1/chat/completions", body)[0] == 200
    assert _unread(sim) == unread


def test_strict_fields_refuses_a_foreign_field_as_anthropic_does_and_accepts_tracejudges_requests(
        simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator(strict_fields=True)
    body = {"model": "claude-x", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5, "metadata": {"user_id": "u"},
            "response_format": {"type": "json_object"}}
    assert _post(sim, "/v1/messages", body) == (400, {"type": "error", "error": {
        "type": "invalid_request_error", "message": "response_format: Extra inputs are not permitted"}})
    assert _unread(sim)["response_format"] == {'{"type":"json_object"}': 1}  # (counted all the same)
    assert sim.stats.refused == 1
    # What tracejudge sends to Anthropic, its own fields and those of Anthropic's a config adds, passes.
    assert _run(tmp_path, sim, {"metadata": {"user_id": "eval"}, "thinking": {"type": "disabled"}, "top_k": 5})["status"] == {"ok": 2}
    # A foreign field in judge.extra_body is the server's refusal: the run stops at the first, naming it.
    (tmp_path / "b").mkdir()
    with pytest.raises(JudgeRequestError, match="response_format: Extra inputs are not permitted"):
        _run(tmp_path / "b", sim, {"response_format": {"type": "json_object"}})
    assert {"model", "messages", "max_tokens", "system", "tools", "tool_choice", "thinking", "metadata"} <= ANTHROPIC_FIELDS
