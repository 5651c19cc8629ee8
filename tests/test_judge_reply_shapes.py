"""A 200 reply of the wrong shape, over real HTTP on 127.0.0.1: the judge error names the field that is off
(`choices` empty or null, `choices[0].message` null, a `content` that is a number, a streamed chunk's `delta` where
the message should be), not the Python exception reading it raised ("unexpected reply shape (IndexError)" told the
user nothing to fix). A reply whose content is null beside `tool_calls` (a gateway that answers with a call of a tool
nobody offered) said "the server returned no text", when it had answered: the error names the calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _loopback import Loopback, completion, verdict
from test_judge_servers import cases, config, results, run

ONE = [{"type": "TaskCompletion"}]


def _choice(**fields: Any) -> dict[str, Any]:
    reply = completion("")
    reply["choices"] = [{"index": 0, "finish_reason": "stop", **fields}]
    return reply


SHAPES = {
    "empty choices": ({**completion(""), "choices": []}, "choices is an empty list"),
    "null choices": ({**completion(""), "choices": None}, "choices is null, not a list"),
    "no choices": ({"id": "x", "object": "chat.completion", "model": "m"}, "no choices field; the reply's fields: id, model, object"),
    "null message": (_choice(message=None), "choices[0].message is null, not an object"),
    "a stream's chunk": (_choice(delta={"content": "{}"}), "choices[0] has no message (it has delta, as a streamed chunk has)"),
    "number content": (_choice(message={"role": "assistant", "content": 42}), "choices[0].message.content is a number"),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_reply_of_the_wrong_shape_names_its_field(tmp_path: Path, shape: str) -> None:
    reply, said = SHAPES[shape]
    with Loopback(lambda headers, body: (200, reply)) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE, max_attempts=2, max_retry_wait_s=1))
        sent = len(server.requests)
    (r,) = results(tmp_path)
    error = r["error"]
    assert (r["status"], error["kind"], sent) == ("judge_error", "provider_error", 2), error  # still retried as a malformed reply
    assert f"HTTP 200: unexpected reply shape ({said}" in error["message"], error
    assert not any(name in error["message"] for name in ("IndexError", "TypeError", "AttributeError", "KeyError")), error
    assert summary["judge"]["error_kinds"] == {"provider_error": 1}


def test_a_null_content_beside_tool_calls_says_the_server_called_a_tool(tmp_path: Path) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        call = {"id": "c1", "type": "function", "function": {"name": "record_verdict", "arguments": json.dumps(verdict(body))}}
        return 200, _choice(message={"role": "assistant", "content": None, "tool_calls": [call]}, finish_reason="tool_calls")

    with Loopback(respond) as server:
        run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE, max_attempts=2, max_retry_wait_s=1))
    (r,) = results(tmp_path)
    error = r["error"]
    assert (r["status"], error["kind"]) == ("judge_error", "parse_error"), error  # a call's arguments are still no verdict
    assert "called tools instead (record_verdict)" in error["message"] and "the judge offers none" in error["message"], error
    assert "the server returned no text" not in error["message"], error


def test_a_malformed_reply_that_reported_usage_is_billed_then_retried(tmp_path: Path) -> None:
    # The provider counted and billed the request whatever shape the answer came back in. Before, the malformed first
    # attempt was billed nothing: the summary and the score's judge block counted the second attempt's 50 + 10 alone.
    answers: list[dict[str, Any]] = []

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        if not answers:
            answers.append(body)
            return 200, {**completion(""), "choices": [], "usage": {"prompt_tokens": 321, "completion_tokens": 17}}
        return 200, completion(json.dumps(verdict(body)))

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE, max_attempts=3, max_retry_wait_s=1,
                             prices={"gpt-4o-mini": {"input": 1.0, "output": 2.0}}))
    (r,) = results(tmp_path)
    assert r["status"] == "ok", r
    judge = summary["judge"]
    assert (judge["input_tokens"], judge["output_tokens"], judge["server_errors"]) == (321 + 50, 17 + 10, 1), judge
    assert judge["cost_usd"] == pytest.approx((371 * 1.0 + 27 * 2.0) / 1e6), judge
    (block,) = [s["judge"] for s in r["scores"].values() if s.get("judge")]
    assert (block["input_tokens"], block["cost_usd"]) == (371, pytest.approx(judge["cost_usd"])), block


@pytest.mark.parametrize("usage", [None, {"prompt_tokens": 0, "completion_tokens": 0}, {"prompt_tokens": "many"}], ids=["none", "zeros", "not-a-count"])
def test_a_malformed_reply_without_usable_usage_is_billed_nothing(tmp_path: Path, usage: Any) -> None:
    reply = {**completion(""), "choices": []}
    reply["usage"] = usage
    with Loopback(lambda headers, body: (200, reply)) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE, max_attempts=2, max_retry_wait_s=1))
    (r,) = results(tmp_path)
    assert r["status"] == "judge_error", r
    assert (summary["judge"]["input_tokens"], summary["judge"]["output_tokens"]) == (0, 0), summary["judge"]


def test_an_anthropic_reply_of_the_wrong_shape_carries_its_usage() -> None:
    from tracejudge.llm.providers import HttpReply, ProviderError, read_reply

    body = {"type": "message", "content": {"text": "not a list"}, "usage": {"input_tokens": 40, "cache_read_input_tokens": 60, "output_tokens": 5}}
    with pytest.raises(ProviderError) as caught:
        read_reply("anthropic", HttpReply(200, {}, body, 0.0), 60.0)
    got = caught.value.billed_reply
    assert caught.value.kind == "server" and caught.value.reply is None
    assert got is not None and (got.input_tokens, got.output_tokens, got.cached_input_tokens, got.text) == (100, 5, 60, "")
