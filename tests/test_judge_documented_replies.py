"""Judge replies as servers document them, over real HTTP on 127.0.0.1: Mistral's `message.content` as a list of
chunks (magistral's thinking chunk beside its text), a reasoning model's thinking beside its answer in a reply
without usage, a reply cut at the model's context window (Anthropic `stop_reason: "model_context_window_exceeded"`,
Mistral `finish_reason: "model_length"`), and FastAPI's `{"detail": …}` error bodies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _loopback import Loopback, completion, verdict
from test_judge_bench_faults import _bench
from test_judge_reply_values import Messages, _message, _tool_verdict
from test_judge_servers import cases, config, results, run
from tracejudge.llm.judge_tokenizer import prompt_counter
from tracejudge.llm.providers import HttpReply, ProviderError, read_reply
from tracejudge.stages.judge.calls.asking import empty_reply

ONE = [{"type": "TaskCompletion"}]


def _draft(body: dict[str, Any]) -> str:
    # A draft verdict the model would have changed (every answer "no"): never to be scored.
    return json.dumps(verdict(body)).replace('"yes"', '"no"').replace('"fine"', '"draft"')


def _chunks(*parts: dict[str, Any]) -> dict[str, Any]:
    reply = completion("")
    reply["choices"][0]["message"]["content"] = list(parts)
    return reply


def _thinking(text: str) -> dict[str, Any]:
    # Mistral's ThinkChunk: its thinking is itself a list of text chunks.
    return {"type": "thinking", "thinking": [{"type": "text", "text": text}]}


# ---------------------------------------------------------------- 1. message.content as a list of chunks


@pytest.mark.parametrize("shape", ["text-chunks", "magistral"])
def test_a_content_given_as_chunks_is_read_from_its_text_chunks(tmp_path: Path, shape: str) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        answer = json.dumps(verdict(body))
        if shape == "text-chunks":
            return 200, _chunks({"type": "text", "text": answer[:20]}, {"type": "text", "text": answer[20:]})
        return 200, _chunks(_thinking("Let me check each question. A first guess: " + _draft(body)), {"type": "text", "text": answer})

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2), metrics=ONE, max_attempts=2, max_retry_wait_s=1))
        sent = len(server.requests)
    # Before: "unexpected reply shape (TypeError)", retried, then provider_error with 0 tokens billed.
    assert summary["status"] == {"ok": 2} and sent == 2, summary["status"]
    assert summary["judge"]["retries"] == 0 and summary["judge"]["input_tokens"] == 100 and summary["judge"]["output_tokens"] == 20
    for r in results(tmp_path):
        score = r["scores"]["TaskCompletion"]
        assert score["value"] == 0.75 and "draft" not in json.dumps(score), score  # the text chunk's verdict, not the thinking's


def test_a_magistral_reply_of_thinking_alone_is_never_scored_from_it(tmp_path: Path) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        return 200, _chunks(_thinking("Draft: " + _draft(body)), {"type": "reference", "reference_ids": [1]})

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE))
    (r,) = results(tmp_path)
    assert summary["status"] == {"judge_error": 1} and r["error"]["kind"] == "parse_error"
    msg = " ".join(r["error"]["message"].split())
    assert "held only thinking chunks" in msg and "a verdict in thinking is never used" in msg, msg
    # The advice is for the OpenAI-compatible server in use, not Anthropic's ("tool_use", "extended thinking"):
    assert "raise judge.max_tokens" in msg and "--default-chat-template-kwargs '{\"enable_thinking\": false}'" in msg, msg
    assert "llama-server: --reasoning-budget 0" in msg and "tool_use" not in msg and "extended thinking" not in msg, msg
    assert r["scores"]["TaskCompletion"]["details"]["reasoning"].startswith("Draft: ")


def test_an_anthropic_reply_of_thinking_blocks_alone_keeps_anthropics_advice(tmp_path: Path) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        return 200, _message([{"type": "thinking", "thinking": "Draft: " + json.dumps(_tool_verdict(body)), "signature": "s"}],
                             stop="end_turn")

    with Messages(respond) as server:
        run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE, provider="anthropic",
                   model="claude-haiku-4-5", api_key_env=None))
    (r,) = results(tmp_path)
    msg = " ".join(r["error"]["message"].split())
    assert "held only thinking blocks" in msg and "no text or tool_use" in msg and "turn extended thinking off" in msg, msg
    assert "chat_template_kwargs" not in msg and "llama-server" not in msg, msg


def test_content_chunks_read_directly() -> None:
    def read(content: Any) -> Any:
        return read_reply("openai", HttpReply(200, {}, {**completion(""), "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}, 0.0), 60.0)

    got = read([_thinking("hmm"), {"type": "text", "text": "{\"a\": 1}"}, {"type": "reference", "reference_ids": [0]}])
    assert (got.text, got.reasoning, got.unread_reasoning) == ('{"a": 1}', "", "hmm")
    alone = read([{"type": "thinking", "thinking": "as a string"}])  # (a gateway's flattened thinking)
    assert (alone.text, alone.reasoning, alone.reasoning_field) == ("", "as a string", "thinking")
    with pytest.raises(ProviderError, match=r"unexpected reply shape \(choices\[0\]\.message\.content is an object, not text or a list of parts\)"):  # neither text nor a list: still malformed
        read({"type": "text", "text": "x"})


# ---------------------------------------------------------------- 2. thinking beside the answer, no usage


@pytest.mark.parametrize("where", ["reasoning_content", "reasoning", "magistral"])
@pytest.mark.parametrize("usage", ["missing", "no-completion-count"])
def test_a_reply_without_usage_is_estimated_with_the_thinking_beside_its_answer(tmp_path: Path, where: str, usage: str) -> None:
    thought = "Checking the trace step by step before answering. " * 200

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        answer = json.dumps(verdict(body))
        reply = _chunks(_thinking(thought), {"type": "text", "text": answer}) if where == "magistral" else completion(answer)
        if where != "magistral":
            reply["choices"][0]["message"][where] = thought
        if usage == "missing":
            del reply["usage"]
        else:
            reply["usage"] = {"prompt_tokens": 500, "completion_tokens": 0}
        return 200, reply

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE))
    (r,) = results(tmp_path)
    score = r["scores"]["TaskCompletion"]
    assert r["status"] == "ok" and score["value"] == 0.75
    # Before: the estimate counted the verdict's few tokens alone, though the provider bills the thinking as output.
    assert summary["judge"]["usage_unknown_replies"] == 1 and summary["judge"]["cost_usd"] is None
    assert score["judge"]["output_tokens"] >= prompt_counter("gpt-4o-mini", None).text(thought), score["judge"]
    assert "reasoning" not in (score.get("details") or {})  # a usable reply's thinking is never shown


def test_a_bench_estimates_a_reply_without_usage_with_its_thinking_as_a_run_does(tmp_path: Path) -> None:
    thought = "Weighing each step of the trace. " * 300

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        reply = completion(json.dumps(verdict(body)))
        reply["choices"][0]["message"]["reasoning_content"] = thought
        del reply["usage"]
        return 200, reply

    with Loopback(respond) as server:
        proc, report = _bench(tmp_path, server.url)
    measured = report["measured"]
    assert proc.returncode == 0 and measured["usage_estimated"] == measured["answered"] > 0, proc.stdout + proc.stderr
    assert measured["output_tokens_per_request"] >= prompt_counter("gpt-4o-mini", None).text(thought), measured


def test_thinking_beside_an_answer_is_not_what_an_empty_reply_is_told_by() -> None:
    reply = completion('{"a": 1}')
    reply["choices"][0]["message"]["reasoning_content"] = "thinking"
    got = read_reply("openai", HttpReply(200, {}, reply, 0.0), 60.0)
    assert (got.reasoning, got.reasoning_field, got.unread_reasoning) == ("", "", "thinking") and empty_reply(got) == ""
    reply["choices"][0]["message"]["content"] = None
    got = read_reply("openai", HttpReply(200, {}, reply, 0.0), 60.0)
    assert (got.reasoning, got.reasoning_field, got.unread_reasoning) == ("thinking", "reasoning_content", "")


# ---------------------------------------------------------------- 3. cut at the model's context window


@pytest.mark.parametrize("provider", ["anthropic", "mistral"])
def test_a_reply_cut_at_the_context_window_is_truncated_naming_the_context_setting(tmp_path: Path, provider: str) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        if provider == "anthropic":
            cut = json.dumps(_tool_verdict(body))[:25]
            return 200, _message([{"type": "text", "text": cut}], "model_context_window_exceeded")
        reply = completion(json.dumps(verdict(body))[:25])
        reply["choices"][0]["finish_reason"] = "model_length"
        return 200, reply

    server_cls = Messages if provider == "anthropic" else Loopback
    with server_cls(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE, api_key_env=None,
                             provider="anthropic" if provider == "anthropic" else "openai",
                             model="claude-haiku-4-5" if provider == "anthropic" else "gpt-4o-mini"))
        sent = len(server.requests)
    (r,) = results(tmp_path)
    # Before: read as a finished reply, "no JSON object found" (parse_error); a cut verdict that parsed was scored.
    assert r["error"]["kind"] == "truncated" and sent == 2 and summary["judge"]["truncated_replies"] == 2  # as max_tokens: one repair
    reason = r["scores"]["TaskCompletion"]["reason"]
    assert "filled the model's context window" in reason and "judge.context_tokens" in reason and "raise judge.max_tokens" not in reason, reason


def test_a_bench_of_replies_cut_at_the_context_window_names_the_context_setting(tmp_path: Path) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        reply = completion(json.dumps(verdict(body))[:25])
        reply["choices"][0]["finish_reason"] = "model_length"
        return 200, reply

    with Loopback(respond) as server:
        proc, report = _bench(tmp_path, server.url)
    replies, out = report["replies"], " ".join(proc.stdout.split())
    assert proc.returncode == 1 and replies["truncated"] == replies["window_full"] == replies["answered"] > 0, replies
    assert "filled the model's context window: set judge.context_tokens" in out and "raise judge.max_tokens" not in out, out
    assert "context window" in replies["messages"]["truncated"], replies["messages"]


def test_a_cut_verdict_that_parses_is_never_taken_and_thinking_cut_by_the_window_says_so() -> None:
    body = _message([{"type": "text", "text": '{"score": 4}'}], "model_context_window_exceeded")
    got = read_reply("anthropic", HttpReply(200, {}, body, 0.0), 60.0)
    assert got.truncated and got.window_full
    assert not read_reply("anthropic", HttpReply(200, {}, _message([], "max_tokens"), 0.0), 60.0).window_full
    thinking = read_reply("anthropic", HttpReply(200, {}, _message([{"type": "thinking", "thinking": "so far"}], "model_context_window_exceeded"), 0.0), 60.0)
    said = empty_reply(thinking)
    assert "the context window filled" in said and "judge.context_tokens" in said and "raise judge.max_tokens" not in said, said


# ---------------------------------------------------------------- 4. FastAPI's {"detail": …}


def test_a_fastapi_validation_error_is_said_field_by_field_not_as_a_python_repr(tmp_path: Path) -> None:
    # FastAPI's 422 (pydantic v2): each error's `input` echoes the refused part of the request, the prompt included.
    echo = {"role": "user", "content": "Judge this trace. " * 80}
    detail = [{"type": "missing", "loc": ["body", "messages", 1, "name"], "msg": "Field required", "input": echo},
              {"type": "literal_error", "loc": ["body", "response_format", "type"], "msg": "Input should be 'text' or 'json_object'",
               "input": "json_schema", "ctx": {"expected": "'text' or 'json_object'"}}]
    with Loopback(lambda headers, body: (422, {"detail": detail})) as server, pytest.raises(Exception) as err:
        run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE))
    msg = str(err.value)
    # Before: `HTTP 422 {'detail': [{'type': 'missing', … 'input': {'role': 'user', 'content': 'Judge this trace. …` cut at 300.
    assert ("HTTP 422 validation error: body.messages.1.name: Field required; body.response_format.type: Input should be "
            "'text' or 'json_object'") in msg, msg
    assert "Judge this trace" not in msg and "{'" not in msg and "judge.structured_output" in msg


@pytest.mark.parametrize(("status", "kind"), [(500, "provider_error"), (400, None)])
def test_a_fastapi_http_exception_detail_is_the_servers_message(tmp_path: Path, status: int, kind: str | None) -> None:
    said = {"detail": "Model is loading, please retry"} if status == 500 else {"detail": "Only n=1 is supported"}
    with Loopback(lambda headers, body: (status, said)) as server:
        if kind is None:
            with pytest.raises(Exception) as err:
                run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE))
            msg = str(err.value)
        else:
            run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE, max_attempts=2, max_retry_wait_s=1))
            (r,) = results(tmp_path)
            assert r["error"]["kind"] == kind
            msg = r["scores"]["TaskCompletion"]["reason"]
    assert f"HTTP {status} error: {said['detail']}" in msg and "{'detail'" not in msg, msg


def test_an_error_body_of_another_shape_is_shown_as_the_json_it_was() -> None:
    with pytest.raises(ProviderError) as err:
        read_reply("openai", HttpReply(400, {}, {"message": "bad", "ok": False}, 0.0), 60.0)
    assert str(err.value) == 'HTTP 400 {"message": "bad", "ok": false}'
