"""`judge.extra_body`: request fields of the user's own (a self-hosted model's thinking turned off) in every judge request.

Over real HTTP on 127.0.0.1: the judge simulator counts every request field it does not read
(`SimStats.unread_fields`), the recording loopback server keeps whole bodies. Each kind of request carries the fields
(verdicts, repair requests, multi-item, batch mode, pairwise, panel members with their own); they enter the cache key
and the resume check; a key tracejudge sets itself is refused; a credential in them is masked wherever it is copied.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from _loopback import Loopback, completion, verdict
from test_judge_batch_api import write_cases
from tracejudge.core.config import validate_config
from tracejudge.core.errors import ConfigError
from tracejudge.engine import runner
from tracejudge.engine.manifest import ManifestMismatch
from tracejudge.simulator.server import SimulatorThread
from tracejudge.stages.judge.panel import panel_members
import _forkserver

EXE = os.path.join(os.path.dirname(sys.executable), "tracejudge")
NO_THINK = {"chat_template_kwargs": {"enable_thinking": False}}
SECRET = "tok_9f8e7d6c5b4a39281706"


def _config(tmp: Path, judge: dict[str, Any], n: int = 4, run_dir: str = "run", **more: Any) -> dict[str, Any]:
    return {"dataset": {"path": str(write_cases(tmp / "c.jsonl", n)), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
            "judge": judge, "cache": {"dir": str(tmp / "cache"), **more.pop("cache", {})}, "run": {"dir": str(tmp / run_dir)}, **more}


def _run(data: dict[str, Any], **kw: Any) -> dict[str, Any]:
    return anyio.run(lambda: runner.run(validate_config(data), **kw)).summary


def _sent(sim: SimulatorThread, field: str) -> dict[Any, int]:
    """How many requests carried each value of `field` (decoded), as the simulator counted them."""
    return {json.dumps(json.loads(v), sort_keys=True): n for v, n in sim.stats.unread_fields.get(field, {}).items()}


def _problem(judge: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as err:
        validate_config({"dataset": {"path": "x.jsonl", "format": "native"}, "metrics": [{"type": "TaskCompletion"}], "judge": judge},
                        check_files=False)
    return str(err.value)


# ------------------------------------------------------------------ the config


@pytest.mark.parametrize(("provider", "key", "setting"), [
    ("openai", "temperature", "judge.temperature"), ("openai", "max_tokens", "judge.max_tokens"),
    ("openai", "response_format", "judge.structured_output"), ("openai", "prompt_cache_key", "judge.cache_hints"),
    ("openai", "model", "judge.model"), ("anthropic", "max_tokens", "judge.max_tokens")])
def test_a_key_tracejudge_sets_is_refused_naming_the_setting_that_controls_it(provider: str, key: str, setting: str) -> None:
    said = _problem({"provider": provider, "model": "m", "extra_body": {key: 1, "seed": 3}})
    assert f"judge.extra_body.{key}: tracejudge sets `{key}` in its requests, from {setting}" in said and "set it there" in said


@pytest.mark.parametrize(("provider", "key", "why"), [
    ("simulator", "stream", "tracejudge never streams"), ("openai", "stream_options", "tracejudge never streams"),
    ("openai", "max_completion_tokens", "caps each reply with `max_tokens`, from judge.max_tokens"),
    ("openai", "n", "judge.samples"), ("anthropic", "system", "system prompt"),
    ("anthropic", "tool_choice", "forces its verdict tool"), ("anthropic", "messages", "writes every message")])
def test_a_key_no_setting_lets_through_is_refused_as_reserved_saying_why(provider: str, key: str, why: str) -> None:
    # `stream: false` was told "from no setting: …: set it there", where no setting controls streaming.
    said = _problem({"provider": provider, "model": "m", "extra_body": {key: 1, "seed": 3}})
    assert f"judge.extra_body.{key}: `{key}` is reserved: " in said and why in said and "leave it out" in said, said
    assert "set it there" not in said and "no setting:" not in said, said


def test_a_key_is_refused_only_where_tracejudge_sends_it_and_values_must_be_json() -> None:
    ok = {"dataset": {"path": "x.jsonl", "format": "native"}, "metrics": [{"type": "TaskCompletion"}]}
    # No response_format without structured output, no prompt_cache_key without cache hints, tools never on OpenAI's protocol.
    judge = {"provider": "openai", "model": "m", "structured_output": "none", "cache_hints": False,
             "extra_body": {"response_format": {"type": "json_object"}, "prompt_cache_key": "k", "reasoning_effort": "none"}}
    assert validate_config({**ok, "judge": judge}, check_files=False).judge.extra_body == judge["extra_body"]
    anthropic = {"provider": "anthropic", "model": "m", "extra_body": {"thinking": {"type": "disabled"}, "top_k": 5}}
    assert validate_config({**ok, "judge": anthropic}, check_files=False).judge.extra_body == anthropic["extra_body"]
    said = _problem({"provider": "anthropic", "model": "m", "extra_body": {"thinking": {"type": "enabled", "budget_tokens": 2048}}})
    assert "judge.extra_body.thinking: Anthropic refuses extended thinking in a request that forces a tool" in said
    assert "judge.extra_body.a.b: not a finite number" in _problem({"provider": "openai", "model": "m", "extra_body": {"a": {"b": float("inf")}}})
    assert "judge.extra_body.a.1: not a JSON value (a bytes)" in _problem({"provider": "openai", "model": "m", "extra_body": {"a": [1, b"x"]}})
    # A key that is no string is named as the file spells it, not as pydantic's `1["[key]"]`; `true` was even named `1`.
    assert "judge.extra_body.1: a key must be a string, as a JSON object's keys are (got int)" in _problem(
        {"provider": "openai", "model": "m", "extra_body": {1: 2}})
    assert "judge.extra_body.true: a key must be a string, as a JSON object's keys are (got bool)" in _problem(
        {"provider": "openai", "model": "m", "extra_body": {True: 2}})
    assert "judge.extra_body.a.null: a key must" in _problem({"provider": "openai", "model": "m", "extra_body": {"a": {None: 1}}})
    # A refused value is never quoted: it may be a credential.
    assert SECRET not in _problem({"provider": "openai", "model": "m", "extra_body": {"api_key": SECRET, "n": 2}})


def test_a_null_in_the_section_is_refused_and_a_null_inside_a_value_is_sent() -> None:
    # A member's null leaves out the section's key; the same null in the section was sent as JSON null: one rule now.
    said = _problem({"provider": "openai", "model": "m", "extra_body": {**NO_THINK, "seed": None}})
    assert "judge.extra_body.seed: null: leave the key out to send nothing" in said, said
    ok = {"dataset": {"path": "x.jsonl", "format": "native"}, "metrics": [{"type": "TaskCompletion"}]}
    inner = {"chat_template_kwargs": {"enable_thinking": False, "tools": None}}
    judge = {"provider": "openai", "model": "m", "extra_body": inner}
    assert validate_config({**ok, "judge": judge}, check_files=False).judge.extra_body == inner


def test_a_model_thinking_though_extra_body_turns_it_off_is_said_to_be_the_servers_doing(tmp_path: Path) -> None:
    # A server that ignores chat_template_kwargs (a chat template without enable_thinking): the model thinks all the
    # same, once cut at max_tokens while reasoning, once with its <think> block never closed. The advice names the
    # server's flags, not the field the config already sends.
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        reply = completion("<think>Let me weigh each question" if "case-1" in json.dumps(body) else "")
        message = reply["choices"][0]["message"]
        if not message["content"]:
            message["reasoning_content"], reply["choices"][0]["finish_reason"] = "Let me weigh each question at length", "length"
            reply["usage"]["completion_tokens"] = body["max_tokens"]  # (cut at the max_tokens asked, not by the server)
        return 200, reply

    judge = {"provider": "openai", "model": "m", "base_url": "", "api_key_env": None, "extra_body": NO_THINK, "max_attempts": 1}
    with Loopback(respond) as server:
        judge["base_url"] = server.url + "/v1"
        anyio.run(lambda: runner.run(validate_config(_config(tmp_path, judge, n=2, cache={"enabled": False}))))
    lines = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 2
    for line in lines:
        msg = " ".join(line["error"]["message"].split())
        assert "judge.extra_body already sends chat_template_kwargs.enable_thinking: false" in msg, msg
        assert "the server seems to ignore it" in msg and "--default-chat-template-kwargs" in msg and "--jinja" in msg, msg
        assert "by judge.extra_body: {chat_template_kwargs" not in msg and "sends it with every request" not in msg, msg


def test_a_panel_member_puts_its_own_fields_over_the_sections_key_by_key() -> None:
    data = {"dataset": {"path": "x.jsonl", "format": "native"}, "metrics": [{"type": "TaskCompletion"}], "judge": {
        "provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1", "extra_body": {**NO_THINK, "seed": 1}, "models": [
            "openai:a", {"model": "openai:b", "extra_body": {"seed": 2, "chat_template_kwargs": None, "top_k": 20}}, "anthropic:c"]}}
    members = {m.name: m.cfg.extra_body for m in panel_members(validate_config(data, check_files=False))}
    # (a key given as null is not sent; a member on another provider inherits none of the section's server's fields)
    assert members == {"openai:a": {**NO_THINK, "seed": 1}, "openai:b": {"seed": 2, "top_k": 20}, "anthropic:c": {}}
    data["judge"]["models"][1]["extra_body"] = {"max_tokens": 9}
    assert "judge.models.1.extra_body.max_tokens: tracejudge sets `max_tokens` in its requests, from judge.max_tokens" in _problem(data["judge"])


# ------------------------------------------------------------------ on the wire


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_every_verdict_request_carries_the_fields(simulator: Callable[..., SimulatorThread], tmp_path: Path, provider: str) -> None:
    sim = simulator()
    extra = NO_THINK if provider == "openai" else {"thinking": {"type": "disabled"}, "metadata": {"user_id": "eval"}}
    summary = _run(_config(tmp_path, {"provider": provider, "model": "gpt-4o-mini", "base_url": sim.url + "/v1", "extra_body": extra}))
    assert summary["status"] == {"ok": 4}
    assert sim.stats.requests == summary["judge"]["requests"] == 4
    for key, value in extra.items():
        assert _sent(sim, key) == {json.dumps(value, sort_keys=True): 4}
    assert summary["judge"]["extra_body"] == extra


def test_multi_item_requests_and_batch_mode_carry_the_fields(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator()
    judge = {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1", "extra_body": NO_THINK, "items_per_request": 3,
             "item_wait_s": 0.2}
    summary = _run(_config(tmp_path, judge, n=6))
    assert summary["status"] == {"ok": 6} and summary["judge"]["multi_requests"] >= 1
    assert _sent(sim, "chat_template_kwargs") == {json.dumps(NO_THINK["chat_template_kwargs"]): sim.stats.requests}

    batched = simulator(batch_completion_s=0.2)
    judge = {"provider": "openai", "model": "gpt-4o-mini", "base_url": batched.url + "/v1", "mode": "batch", "extra_body": NO_THINK,
             "batch": {"flush_after_s": 0.3, "poll_interval_s": 0.05}}
    summary = _run(_config(tmp_path, judge, n=5, run_dir="batched", cache={"enabled": False}))
    assert summary["status"] == {"ok": 5} and batched.stats.requests == 0
    assert _sent(batched, "chat_template_kwargs") == {json.dumps(NO_THINK["chat_template_kwargs"]): batched.stats.batch_requests} \
        and batched.stats.batch_requests == 5


def test_a_repair_request_carries_the_fields_too(tmp_path: Path) -> None:
    asked: list[dict[str, Any]] = []

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        asked.append(body)
        # The first reply is prose without a verdict: the judge asks again, the unusable reply quoted.
        return 200, completion("I think it went fine." if len(asked) == 1 else json.dumps(verdict(body)))

    with Loopback(respond) as server:
        summary = _run(_config(tmp_path, {"provider": "openai", "model": "gpt-4o-mini", "base_url": server.url + "/v1",
                                          "extra_body": {**NO_THINK, "reasoning_format": "none"}}, n=1))
    assert summary["judge"]["repairs"] == 1 and len(asked) == 2
    assert all(b["chat_template_kwargs"] == {"enable_thinking": False} and b["reasoning_format"] == "none" for b in asked)
    assert asked[1]["messages"][-2]["role"] == "assistant"  # (the second is the repair)


def test_panel_members_send_their_own_fields(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator()
    judge = {"provider": "openai", "model": "x", "base_url": sim.url + "/v1", "extra_body": NO_THINK,
             "models": ["openai:a", {"model": "openai:b", "extra_body": {"chat_template_kwargs": {"enable_thinking": True}}}]}
    summary = _run(_config(tmp_path, judge, n=3))
    assert summary["status"] == {"ok": 3}
    assert _sent(sim, "chat_template_kwargs") == {'{"enable_thinking": false}': 3, '{"enable_thinking": true}': 3}
    assert summary["judge"]["extra_body_by_model"] == {"openai:a": NO_THINK, "openai:b": {"chat_template_kwargs": {"enable_thinking": True}}}


def test_pairwise_requests_carry_the_fields(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    from test_compare_pairwise import make_run
    from tracejudge.core.config import load_config
    from tracejudge.stages.comparison.pairwise import compare_pairwise

    sim = simulator()
    a, b = make_run(tmp_path, "a", "alpha"), make_run(tmp_path, "b", "beta")
    path = tmp_path / "judge.yaml"
    path.write_text(yaml.safe_dump({"dataset": {"path": str(tmp_path / "a.jsonl")}, "metrics": [{"type": "TaskCompletion"}],
                                    "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1", "extra_body": NO_THINK},
                                    "cache": {"enabled": False}, "run": {"dir": str(tmp_path / "cmp")}}))
    res = compare_pairwise(a, b, load_config(path, []), top=3)
    assert res.pairs > 0 and sim.stats.requests >= 2 * res.pairs
    assert _sent(sim, "chat_template_kwargs") == {json.dumps(NO_THINK["chat_template_kwargs"]): sim.stats.requests}


# ------------------------------------------------------------------ cache, resume, what is copied


def test_the_fields_are_part_of_the_cache_key_and_a_miss_says_so(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator()
    base = {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1"}
    first = _run(_config(tmp_path, {**base, "extra_body": NO_THINK}, run_dir="r1"))
    assert first["judge"]["cache_hits"] == 0
    again = _run(_config(tmp_path, {**base, "extra_body": NO_THINK}, run_dir="r2"))
    assert again["judge"]["cache_hits"] == 4 and sim.stats.requests == 4
    # Thinking on: no verdict given with it off answers, and each miss names the fields.
    on = {"chat_template_kwargs": {"enable_thinking": True}}
    other = _run(_config(tmp_path, {**base, "extra_body": on}, run_dir="r3", cache={"explain": True}))
    assert other["judge"]["cache_hits"] == 0 and sim.stats.requests == 8
    assert other["judge"]["cache_misses_explained"] == {"changed: extra_body": 4}
    # None at all: the key a request without extra_body always had (the first run's answers are not it either).
    plain = _run(_config(tmp_path, base, run_dir="r4", cache={"explain": True}))
    assert plain["judge"]["cache_hits"] == 0 and plain["judge"]["cache_misses_explained"] == {"changed: extra_body": 4}
    # `compare` says the runs' judges differ: a delta may be the thinking's, not the agent's.
    from tracejudge.stages.comparison.runs import compare_runs

    assert compare_runs(tmp_path / "r1", tmp_path / "r3").warnings == [
        'TaskCompletion: the runs\' judges differ (judge.extra_body {"chat_template_kwargs": {"enable_thinking": false}} → '
        '{"chat_template_kwargs": {"enable_thinking": true}}); a delta may be the judge\'s, not the agent\'s']
    assert compare_runs(tmp_path / "r1", tmp_path / "r2").warnings == []
    # A credential in them: the cache's index keeps a digest, never the value, and a change still reads as one.
    _run(_config(tmp_path, {**base, "extra_body": {"metadata": {"api_key": SECRET}}}, run_dir="r5"))
    changed = _run(_config(tmp_path, {**base, "extra_body": {"metadata": {"api_key": SECRET + "x"}}}, run_dir="r6", cache={"explain": True}))
    assert changed["judge"]["cache_misses_explained"] == {"changed: extra_body": 4}
    assert not any(SECRET.encode() in p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file())


def test_a_resume_with_other_fields_is_refused_naming_them(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator()
    base = {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1"}
    _run(_config(tmp_path, {**base, "extra_body": NO_THINK}, n=2))
    _run(_config(tmp_path, {**base, "extra_body": NO_THINK}, n=2))  # the same fields: resumes
    with pytest.raises(ManifestMismatch) as err:
        _run(_config(tmp_path, {**base, "extra_body": {"chat_template_kwargs": {"enable_thinking": True}}}, n=2))
    assert err.value.changes == ["config judge.extra_body.chat_template_kwargs.enable_thinking: false → true"]
    with pytest.raises(ManifestMismatch) as err:
        _run(_config(tmp_path, base, n=2))
    assert err.value.changes == ['config judge.extra_body: {"chat_template_kwargs": {"enable_thinking": false}} → (absent)']


def test_a_credential_in_the_fields_is_masked_where_they_are_copied(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator()
    extra = {**NO_THINK, "metadata": {"api_key": SECRET}}
    data = _config(tmp_path, {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1", "extra_body": extra}, n=2,
                   cache={"enabled": False})
    summary = _run(data)
    assert _sent(sim, "metadata") == {json.dumps({"api_key": SECRET}): 2}  # sent as given
    assert summary["judge"]["extra_body"] == {**NO_THINK, "metadata": {"api_key": "[REDACTED]"}}
    for p in (tmp_path / "run").rglob("*"):
        assert not p.is_file() or SECRET.encode() not in p.read_bytes(), p
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["judge"]["extra_body"] == {**NO_THINK, "metadata": {"api_key": "[REDACTED]"}}
    # Changed, it is named by its key, its value not shown.
    with pytest.raises(ManifestMismatch) as err:
        _run({**data, "judge": {**data["judge"], "extra_body": {**NO_THINK, "metadata": {"api_key": SECRET + "x"}}}})
    assert err.value.changes == ["config judge.extra_body.metadata.api_key: [REDACTED] → [REDACTED] (a masked value changed: its digests differ)"]
    # --show-prompt, as text and as the JSON body the run POSTs.
    cfg = tmp_path / "show.yaml"
    cfg.write_text(yaml.safe_dump({**data, "run": {"dir": str(tmp_path / "show")}}))
    for extra_args in ([], ["--json"]):
        proc = _forkserver.run([EXE, "estimate", str(cfg), "--show-prompt", "case-0", *extra_args], capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert SECRET not in proc.stdout + proc.stderr
        if extra_args:
            [line] = [json.loads(x) for x in proc.stdout.splitlines()]
            assert line["body"]["chat_template_kwargs"] == {"enable_thinking": False}
            assert line["body"]["metadata"] == {"api_key": "[REDACTED]"}
        else:
            assert 'extra_body {"chat_template_kwargs": {"enable_thinking": false}, "metadata": {"api_key": "[REDACTED]"}}' in proc.stdout


def test_a_long_value_is_recorded_by_its_digest_and_a_change_to_it_still_tells(simulator: Callable[..., SimulatorThread],
                                                                               tmp_path: Path) -> None:
    # A 2 MB value was copied whole into manifest.json (twice: its config and its history), summary.json, configs.jsonl
    # and each entry of the cache's index.
    sim = simulator()
    base = {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1"}
    big, other = "x" * 2_000_000, "x" * 1_999_999 + "y"
    summary = _run(_config(tmp_path, {**base, "extra_body": {**NO_THINK, "blob": big}}, n=2, run_dir="r1"))
    assert sim.stats.requests == 2 and _sent(sim, "blob") == {json.dumps(big): 2}  # sent whole
    digest = hashlib.sha256(json.dumps(big).encode()).hexdigest()
    shown = {**NO_THINK, "blob": f"[sha256 {digest} of 2000002 characters of JSON, not kept]"}
    assert summary["judge"]["extra_body"] == shown
    manifest = json.loads((tmp_path / "r1" / "manifest.json").read_text())
    assert manifest["config"]["judge"]["extra_body"] == manifest["history"][0]["config"]["judge"]["extra_body"] == shown
    files = [*(tmp_path / "r1").rglob("*"), *(tmp_path / "cache").rglob("*")]
    assert not any(big[:100_000].encode() in p.read_bytes() for p in files if p.is_file())
    # The same value resumes; another of the same length is refused, named by its digests.
    _run(_config(tmp_path, {**base, "extra_body": {**NO_THINK, "blob": big}}, n=2, run_dir="r1"))
    with pytest.raises(ManifestMismatch) as err:
        _run(_config(tmp_path, {**base, "extra_body": {**NO_THINK, "blob": other}}, n=2, run_dir="r1"))
    [line] = err.value.changes
    assert line.startswith("config judge.extra_body.blob: ") and digest[:12] in line
    # The cache: answered from it with the same value, a miss explained with another; `compare` tells the runs apart.
    again = _run(_config(tmp_path, {**base, "extra_body": {**NO_THINK, "blob": big}}, n=2, run_dir="r2"))
    assert again["judge"]["cache_hits"] == 2
    changed = _run(_config(tmp_path, {**base, "extra_body": {**NO_THINK, "blob": other}}, n=2, run_dir="r3", cache={"explain": True}))
    assert changed["judge"]["cache_misses_explained"] == {"changed: extra_body": 2}
    from tracejudge.stages.comparison.runs import compare_runs

    assert compare_runs(tmp_path / "r1", tmp_path / "r2").warnings == []
    assert "judges differ (judge.extra_body" in compare_runs(tmp_path / "r1", tmp_path / "r3").warnings[0]
