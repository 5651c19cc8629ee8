"""The judge simulator over real HTTP: protocols, usage, limits with real headers, faults."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tracejudge.llm.tokens import counter_for
import _forkserver

SCHEMA = {
    "type": "object",
    "properties": {"q1": {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}, "reason": {"type": "string"}}, "required": ["answer", "reason"]}},
    "required": ["q1"],
}


def post(url: str, body: dict) -> tuple[int, dict, dict]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), json.loads(e.read())


def openai_body(text: str = "judge this", max_tokens: int = 100) -> dict:
    return {"model": "gpt-4o-mini", "max_tokens": max_tokens, "messages": [{"role": "user", "content": text}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": SCHEMA, "strict": True}}}


def test_openai_answer_is_deterministic_schema_shaped_and_counted(simulator):
    sim = simulator()
    s1, _, a = post(sim.url + "/v1/chat/completions", openai_body())
    s2, _, b = post(sim.url + "/v1/chat/completions", openai_body())
    assert s1 == s2 == 200
    assert a["choices"][0]["message"]["content"] == b["choices"][0]["message"]["content"]
    verdict = json.loads(a["choices"][0]["message"]["content"])
    assert set(verdict) == {"q1"} and verdict["q1"]["answer"] in ("yes", "no")
    expected = counter_for("gpt-4o-mini").messages([{"role": "user", "content": "judge this"}], json.dumps(SCHEMA, sort_keys=True, separators=(",", ":")))
    assert a["usage"]["prompt_tokens"] == expected
    assert a["usage"]["completion_tokens"] == counter_for("gpt-4o-mini").text(a["choices"][0]["message"]["content"])
    assert sim.stats.requests == 2 and sim.stats.answered == 2


def test_fields_it_does_not_read_are_answered_as_without_them_and_counted_by_value(simulator):
    sim = simulator()
    plain = post(sim.url + "/v1/chat/completions", openai_body())[2]
    for thinking in (False, False, True):
        body = {**openai_body(), "chat_template_kwargs": {"enable_thinking": thinking}, "reasoning_effort": "none"}
        status, _, reply = post(sim.url + "/v1/chat/completions", body)
        assert status == 200 and reply["choices"] == plain["choices"]  # (a server ignores a field it does not know)
    with urllib.request.urlopen(sim.url + "/_sim/stats", timeout=10) as r:
        stats = json.loads(r.read())
    assert stats["unread_fields"] == {"chat_template_kwargs": {'{"enable_thinking":false}': 2, '{"enable_thinking":true}': 1},
                                      "reasoning_effort": {'"none"': 3}}


def test_anthropic_forced_tool_gets_tool_use_block(simulator):
    sim = simulator()
    body = {"model": "claude-3-5-haiku", "max_tokens": 100, "system": "be a judge", "messages": [{"role": "user", "content": "x"}],
            "tools": [{"name": "verdict", "input_schema": SCHEMA}], "tool_choice": {"type": "tool", "name": "verdict"}}
    status, headers, reply = post(sim.url + "/v1/messages", body)
    assert status == 200
    block = reply["content"][0]
    assert block["type"] == "tool_use" and block["name"] == "verdict" and set(block["input"]) == {"q1"}
    assert reply["stop_reason"] == "tool_use" and reply["usage"]["input_tokens"] > 0


def test_a_max_tokens_below_1_or_not_a_whole_number_is_a_400_naming_it(simulator):
    # `max_tokens: 0` was read as none asked (the whole reply, `finish_reason: stop`), `-1` as a cut there billed as -1
    # completion tokens, `"10"` and `5.5` were taken as numbers: both APIs refuse each with a 400.
    url = simulator().url
    for key, value, said in [("max_tokens", 0, "Expected a value >= 1, but got 0 instead."), ("max_tokens", -1, "but got -1 instead."),
                             ("max_completion_tokens", 0, "but got 0 instead."), ("max_tokens", "10", "but got a string instead."),
                             ("max_tokens", 5.5, "but got a decimal number instead."), ("max_tokens", True, "but got a boolean instead.")]:
        status, _, reply = post(url + "/v1/chat/completions", {**openai_body(), "max_tokens": None, key: value})
        assert status == 400 and reply["error"]["param"] == key and reply["error"]["message"].endswith(said), (key, value, reply)
    body = {"model": "claude-3-5-haiku", "max_tokens": 0, "messages": [{"role": "user", "content": "x"}]}
    status, _, reply = post(url + "/v1/messages", body)
    assert status == 400 and reply["error"]["message"] == "max_tokens: Input should be greater than or equal to 1", reply
    assert post(url + "/v1/chat/completions", {**openai_body(), "max_tokens": None})[0] == 200  # (none asked: not cut)


def test_a_reply_longer_than_max_tokens_is_cut_there_without_a_server_cap(simulator):
    # Without --max-reply-tokens the whole verdict came back under `finish_reason: stop`, billed as max_tokens: no
    # OpenAI-style server sends more than the max_tokens asked.
    sim = simulator()
    enc = counter_for("gpt-4o-mini").encoding
    url = sim.url + "/v1/chat/completions"
    whole = post(url, {**openai_body(max_tokens=100), "n": 2})[2]
    cut = post(url, {**openai_body(max_tokens=3), "n": 2})[2]
    for full, short in zip(whole["choices"], cut["choices"], strict=True):
        assert full["finish_reason"] == "stop" and short["finish_reason"] == "length"
        assert short["message"]["content"] == enc.decode(enc.encode(full["message"]["content"])[:3])
    assert cut["usage"]["completion_tokens"] == 2 * 3
    body = {"model": "claude-3-5-haiku", "max_tokens": 3, "messages": [{"role": "user", "content": "x"}],
            "tools": [{"name": "verdict", "input_schema": SCHEMA}], "tool_choice": {"type": "tool", "name": "verdict"}}
    reply = post(sim.url + "/v1/messages", body)[2]
    assert reply["stop_reason"] == "max_tokens" and reply["usage"]["output_tokens"] == 3
    # A forced tool call cut short is still its `tool_use` block, incomplete (Anthropic: "the truncated response contains
    # an incomplete tool use block"): its input holds only the keys written whole before the cut, none in 3 tokens.
    [block] = reply["content"]
    assert block["type"] == "tool_use" and block["name"] == "verdict" and block["input"] == {}, reply
    longer = post(sim.url + "/v1/messages", {**body, "max_tokens": 400})[2]["content"][0]["input"]
    enough = post(sim.url + "/v1/messages", {**body, "max_tokens": 12})[2]
    assert enough["stop_reason"] == "max_tokens" and list(enough["content"][0]["input"].items()) == list(longer.items())[:len(enough["content"][0]["input"])]
    # A reply under max_tokens is sent whole.
    assert post(url, openai_body(max_tokens=100))[2]["choices"][0]["finish_reason"] == "stop"


def test_rpm_window_answers_429_with_provider_headers(simulator):
    sim = simulator(rpm=2)
    assert post(sim.url + "/v1/chat/completions", openai_body())[0] == 200
    assert post(sim.url + "/v1/chat/completions", openai_body())[0] == 200
    status, headers, body = post(sim.url + "/v1/chat/completions", openai_body())
    assert status == 429
    assert headers["x-ratelimit-limit-requests"] == "2"
    assert headers["x-ratelimit-remaining-requests"] == "0"
    assert int(headers["retry-after"]) >= 1 and 1 <= int(headers["retry-after-ms"]) <= 30_000
    assert re.fullmatch(r"(\d+m)?[\d.]+m?s", headers["x-ratelimit-reset-requests"])
    assert body["error"]["type"] == "rate_limit_error"
    status, headers, _ = post(sim.url + "/v1/messages", {**openai_body(), "response_format": None})
    assert status == 429 and headers["anthropic-ratelimit-requests-remaining"] == "0"
    assert headers["anthropic-ratelimit-requests-reset"].endswith("Z")
    assert sim.stats.rate_limited == 2


def test_tpm_charges_prompt_plus_completion(simulator):
    sim = simulator(tpm=10_000)
    status, headers, reply = post(sim.url + "/v1/chat/completions", openai_body(max_tokens=5000))
    used = reply["usage"]["total_tokens"]
    # The unused part of max_tokens is given back once the answer is made.
    # (a few tokens refill in the milliseconds the request took)
    assert 10_000 - used <= int(headers["x-ratelimit-remaining-tokens"]) <= 10_000 - used + 50
    status, _, _ = post(sim.url + "/v1/chat/completions", openai_body(max_tokens=20_000))
    assert status == 400  # larger than the whole per-minute allowance: never admissible


@pytest.mark.parametrize("limits", [{}, {"rpm": 100}, {"tpm": 100_000}, {"window": "strict", "book": "reply"}])
def test_the_ledger_records_every_request_and_its_tokens_whatever_the_limits(simulator, limits):
    # Without a token limit the ledger stayed empty: the requests were counted in /_sim/stats and nowhere to recount.
    sim = simulator(**limits)
    used = []
    for text in ("judge this", "judge that one, please", "and this"):
        status, _, reply = post(sim.url + "/v1/chat/completions", openai_body(text))
        assert status == 200
        used.append(reply["usage"]["total_tokens"])
    with urllib.request.urlopen(sim.url + "/_sim/ledger", timeout=10) as r:
        ledger = json.loads(r.read())
    stamps = [stamp for stamp, _ in ledger["entries"]]
    assert len(ledger["entries"]) == 3 and stamps == sorted(stamps) and stamps[0] == 0
    assert sorted(tokens for _, tokens in ledger["entries"]) == sorted(used)  # what each request finally cost


def test_scripted_faults(simulator):
    sim = simulator(script=["500", "truncated", "prose", "near_miss", "quota"])
    url = sim.url + "/v1/chat/completions"
    assert post(url, openai_body())[0] == 500
    status, _, r = post(url, openai_body(max_tokens=50))
    # Cut in half by the server, far under max_tokens: its usage counts the half it sent, as a server reports what it sent.
    sent = counter_for("gpt-4o-mini").text(r["choices"][0]["message"]["content"])
    assert r["choices"][0]["finish_reason"] == "length" and r["usage"]["completion_tokens"] == sent < 50
    try:
        json.loads(r["choices"][0]["message"]["content"])
        raise AssertionError("truncated content should not parse")
    except ValueError:
        pass
    assert "```json" in post(url, openai_body())[2]["choices"][0]["message"]["content"]
    assert post(url, openai_body())[2]["choices"][0]["message"]["content"].startswith("GRADE q1:")
    status, headers, body = post(url, openai_body())
    assert status == 429 and headers["retry-after"] == "86400" and body["error"]["type"] == "insufficient_quota"
    assert post(url, openai_body())[0] == 200


def test_cli_simulate_serves_until_signalled(tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "tracejudge")
    proc = _forkserver.popen([exe, "simulate", "--port", "0", "--latency-ms", "1"], stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+", line).group(0)
        assert post(url + "/v1/chat/completions", openai_body())[0] == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
