"""`judge.extra_body`'s refused keys: the advice each refusal gives is true of the requests tracejudge sends, an empty
top-level key is refused wherever extra_body is written, and every problem of one extra_body is said at once.

The requests are the ones a run sends, recorded by a loopback server on 127.0.0.1 (OpenAI's protocol) or built by
the wire layer the judge sends with (Anthropic's).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from _loopback import Loopback, completion, verdict
from test_judge_batch_api import write_cases
from tracejudge.core.config import JudgeConfig, validate_config
from tracejudge.core.errors import ConfigError
from tracejudge.core.extra_body import reserved
from tracejudge.engine import runner
from tracejudge.llm.wire.payload import build_payload
from tracejudge.llm.wire.records import JudgeRequest
from tracejudge.simulator.server import SimulatorThread

BASE = {"metrics": [{"type": "TaskCompletion"}]}


def _config(tmp: Path, judge: dict[str, Any], n: int = 2) -> dict[str, Any]:
    return {"dataset": {"path": str(write_cases(tmp / "c.jsonl", n)), "format": "native"}, **BASE, "judge": judge,
            "cache": {"enabled": False}, "run": {"dir": str(tmp / "run")}}


def _problems(judge: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        validate_config({"dataset": {"path": "x.jsonl", "format": "native"}, **BASE, "judge": judge}, check_files=False)
    return str(err.value).splitlines()


def _settings(advice: str) -> set[str]:
    return set(re.findall(r"judge\.([a-z_]+)", advice))


def _sent_bodies(tmp: Path, **judge: Any) -> list[dict[str, Any]]:
    """The bodies a real run with `judge` (OpenAI's protocol) POSTs, as a loopback server received them."""
    bodies: list[dict[str, Any]] = []

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        bodies.append(body)
        return 200, completion(json.dumps(verdict(body)))

    with Loopback(respond) as server:
        data = _config(tmp, {"provider": "openai", "model": "m", "base_url": server.url + "/v1", "api_key_env": None, **judge})
        assert anyio.run(lambda: runner.run(validate_config(data))).summary["status"] == {"ok": 2}
    return bodies


@pytest.mark.parametrize("cache_hints", [True, False])
def test_each_openai_refusal_says_what_the_requests_a_run_sends_show(tmp_path: Path, cache_hints: bool) -> None:
    structured = "json_schema"
    bodies = _sent_bodies(tmp_path, cache_hints=cache_hints)
    assert bodies
    fields = JudgeConfig.model_fields
    for key, advice in reserved("openai", structured, cache_hints).items():
        assert _settings(advice) <= set(fields), advice  # (every setting it names exists)
        if advice.startswith(f"tracejudge sets `{key}` in its requests, from judge."):
            assert all(key in b for b in bodies), (key, bodies[0].keys())  # sent, from the setting named
        else:
            assert advice.startswith(f"`{key}` is reserved: ") and "set it there" not in advice, advice
            if "never streams" in advice or "one choice" in advice or "caps each reply with `max_tokens`" in advice:
                assert not any(key in b for b in bodies), key  # never sent: no setting would send it
    # A key a setting turned off is not refused, and is not sent by tracejudge either: extra_body may send it.
    assert ("prompt_cache_key" in reserved("openai", structured, cache_hints)) is cache_hints
    assert cache_hints or not any("prompt_cache_key" in b for b in bodies)
    req = JudgeRequest(model="m", messages=({"role": "user", "content": "x"},), schema={"type": "object"}, schema_name="v", max_tokens=9)
    assert "response_format" not in reserved("openai", "none") and "response_format" not in build_payload("openai", req, "none")


def test_each_anthropic_refusal_says_what_its_requests_hold() -> None:
    req = JudgeRequest(model="m", messages=({"role": "system", "content": "judge"}, {"role": "user", "content": "trace\n\nask"}),
                       schema={"type": "object"}, schema_name="verdict", max_tokens=64, cache_prefix=5)
    body = build_payload("anthropic", req)
    for key, advice in reserved("anthropic").items():
        assert _settings(advice) <= set(JudgeConfig.model_fields), advice
        if key == "stream":
            assert key not in body and "never streams" in advice and "set it there" not in advice
        else:
            assert key in body, key  # written by tracejudge: from a setting, or its own (the prompt, the forced tool)
            assert ("set it there" in advice) is bool(_settings(advice)), advice


def test_an_empty_top_level_key_is_refused_in_the_section_and_a_members_and_every_problem_is_said_at_once() -> None:
    got = _problems({"provider": "openai", "model": "m", "extra_body": {"": 1, " ": 2, "stream": False, "max_tokens": 3, "seed": None}})
    assert [line.split(": ")[1] for line in got] == ['judge.extra_body[""]', 'judge.extra_body[" "]', "judge.extra_body.stream",
                                                      "judge.extra_body.max_tokens", "judge.extra_body.seed"], got
    text = "\n".join(got)
    assert text.count("an empty key names no request field") == 2, text
    assert "`stream` is reserved: tracejudge never streams" in text and "from judge.max_tokens: set it there" in text, text
    assert "seed: null: leave the key out" in text, text
    member = _problems({"provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1",
                        "models": ["openai:a", {"model": "openai:b", "extra_body": {"": 1}}]})
    assert any('judge.models.1.extra_body[""]: an empty key names no request field' in line for line in member), member


def test_an_empty_key_inside_a_value_is_sent_as_written(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    # (a JSON object may have an empty key, and the servers' parsers read one: it is the value's data, not a field name)
    sim = simulator()
    extra = {"metadata": {"": "x", "run": "nightly"}}
    data = _config(tmp_path, {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1", "extra_body": extra})
    assert anyio.run(lambda: runner.run(validate_config(data))).summary["status"] == {"ok": 2}
    assert sim.stats.unread_fields["metadata"] == {json.dumps(extra["metadata"], sort_keys=True, separators=(",", ":")): 2}


def test_type_problems_are_said_with_the_rest_in_the_files_order(tmp_path: Path) -> None:
    # (the first value JSON cannot hold used to be the only line: a NaN hid the date, the reserved and empty keys after it)
    (tmp_path / "c.jsonl").write_text('{"id": "a", "trace": {"steps": []}}\n')
    cfg = tmp_path / "eb.yaml"
    cfg.write_text("dataset: {path: c.jsonl}\nmetrics: [{type: TaskCompletion}]\njudge:\n  provider: simulator\n  extra_body:\n"
                   "    a: .nan\n    b: [1, .inf, 2001-12-14]\n    c: 2001-12-14\n    stream: true\n    \"\": 1\n"
                   "    d: {1: 2, e: {true: .nan}}\n    f: {x: .nan}\n")
    from tracejudge.core.config import load_config

    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    got = [line.split(": ", 2)[:2] for line in str(err.value).splitlines()]
    assert got == [[f"{cfg}:6", "judge.extra_body.a"], [f"{cfg}:7", "judge.extra_body.b.1"], [f"{cfg}:7", "judge.extra_body.b.2"],
                   [f"{cfg}:8", "judge.extra_body.c"], [f"{cfg}:9", "judge.extra_body.stream"], [f"{cfg}:10", 'judge.extra_body[""]'],
                   [f"{cfg}:11", "judge.extra_body.d.1"], [f"{cfg}:11", "judge.extra_body.d.e.true"],
                   [f"{cfg}:11", "judge.extra_body.d.e.true"], [f"{cfg}:12", "judge.extra_body.f.x"]], str(err.value)
    text = str(err.value)
    assert text.count("not a finite number") == 4 and text.count("not a JSON value (a date)") == 2, text
    assert text.count("a key must be a string") == 2 and "`stream` is reserved" in text and "an empty key" in text, text


def test_a_value_nested_too_deeply_is_one_line_however_wide() -> None:
    deep: Any = 1
    for _ in range(70):
        deep = [deep]
    got = _problems({"provider": "openai", "model": "m", "extra_body": {"x": [deep, deep, deep], "stream": True}})
    assert [line.split(": ")[1] for line in got] == ["judge.extra_body.x", "judge.extra_body.stream"], got
    assert "nested too deeply" in got[0], got
