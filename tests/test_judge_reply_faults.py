"""Replies a judge server really sends, over real HTTP on 127.0.0.1: no usage, transient 5xx whose text reads like a
refusal, implausible cached-token figures, the whole reply in `reasoning_content`, and the billing of attempts that
got no reply in the score that sent them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from _loopback import Loopback, completion, verdict
from test_judge_servers import cases, config, results, run
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.llm.replies import request_refused
from tracejudge.stages.reports.judge_lines import spend_line

ONE = [{"type": "TaskCompletion"}]


def judge_blocks(tmp: Path, run_name: str = "run") -> list[dict[str, Any]]:
    return [s["judge"] for r in results(tmp, run_name) for s in r["scores"].values() if s.get("judge")]


# ---------------------------------------------------------------- (a) a reply without usage


@pytest.mark.parametrize("usage", ["missing", "null", "zeros"])
def test_a_reply_without_usage_costs_an_unknown_amount_and_its_tokens_are_estimated(tmp_path: Path, usage: str) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        reply = completion(json.dumps(verdict(body)))
        if usage == "missing":
            del reply["usage"]
        else:
            reply["usage"] = None if usage == "null" else {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        return 200, reply

    data = cases(tmp_path / "c.jsonl", 3)
    with Loopback(respond) as server:  # gpt-4o-mini has a price: before, each score and the summary said $0
        cfg = config(tmp_path, server.url, data, metrics=ONE)
        cfg["cache"] = {"dir": str(tmp_path / "cache")}
        summary = run(cfg)
        again = run({**cfg, "run": {"dir": str(tmp_path / "again")}})
    j = summary["judge"]
    assert summary["status"] == {"ok": 3}
    blocks = judge_blocks(tmp_path)
    assert [b["cost_usd"] for b in blocks] == [None] * 3, blocks
    assert j["cost_usd"] is None and j["sync_equivalent_usd"] is None and j["usage_unknown_replies"] == 3, j
    # Tokens are estimated (the prompt as admitted, the reply's text counted), never 0, and add up to the summary's.
    assert all(b["input_tokens"] > 100 and b["output_tokens"] > 0 for b in blocks), blocks
    assert sum(b["input_tokens"] for b in blocks) == j["input_tokens"] and sum(b["output_tokens"] for b in blocks) == j["output_tokens"]
    assert "cost unknown (3 replies of the judge reported no usage; their tokens are estimated)" in spend_line(summary)
    # Answered by the cache: nothing billed ($0 is known), and what the cache saved is not.
    assert again["judge"]["requests"] == 0 and [b["cost_usd"] for b in judge_blocks(tmp_path, "again")] == [0.0] * 3
    assert again["judge"]["saved_tokens"] > 0 and again["judge"]["saved_usd"] is None and again["judge"]["cost_usd"] == 0.0


def test_an_anthropic_reply_without_usage_is_read_as_usage_unknown() -> None:
    from tracejudge.llm.providers import HttpReply, read_reply

    tool = {"type": "tool_use", "id": "t", "name": "answers", "input": {"answers": []}}
    got = read_reply("anthropic", HttpReply(200, {}, {"type": "message", "content": [tool], "stop_reason": "tool_use"}, 0.0), 60.0)
    assert not got.usage_known and got.input_tokens == 0
    known = read_reply("anthropic", HttpReply(200, {}, {"type": "message", "content": [tool], "usage": {"input_tokens": 10, "output_tokens": 2}}, 0.0), 60.0)
    assert known.usage_known and (known.input_tokens, known.output_tokens) == (10, 2)


# ---------------------------------------------------------------- (b) transient failures whose text names request fields


def test_502_503_504_and_retry_after_are_transient_whatever_their_text_says() -> None:
    assert not request_refused(503, "ServiceUnavailable: Server overloaded: too many messages queued, try again")
    assert not request_refused(502, "<html><h1>502 Bad Gateway</h1>invalid upstream response</html>")
    assert not request_refused(504, "upstream timed out reading the messages")
    assert not request_refused(500, "invalid state, try again", retry_after=True)
    assert not request_refused(400, "invalid request: try again later", retry_after=True)
    assert request_refused(500, "Input should be 'text' or 'json_object'")  # llama-cpp-python refusing json_schema: still a refusal
    assert request_refused(400, "unsupported value for messages")


def test_a_transient_5xx_reading_like_a_refusal_is_retried_and_the_run_finishes(tmp_path: Path) -> None:
    faults = [
        (503, {"object": "error", "message": "Server overloaded: too many messages queued, try again", "type": "ServiceUnavailable", "code": 503}, {}),
        (502, "<html><body><h1>502 Bad Gateway</h1>invalid upstream response</body></html>", {}),
        (504, {"error": {"message": "upstream did not answer: invalid response for max_tokens"}}, {}),
        (500, {"error": {"message": "invalid state: model reloading"}}, {"retry-after": "0"}),
        (400, {"error": {"message": "invalid: too many requests for messages"}}, {"retry-after": "0"}),
    ]

    class Faulty(Loopback):
        async def _handle(self, request: Any) -> Any:
            from aiohttp import web

            body = await request.json()
            self.requests.append(({}, body))
            if faults:
                status, payload, headers = faults.pop(0)
                text = payload if isinstance(payload, str) else json.dumps(payload)
                return web.Response(status=status, text=text, headers=headers,
                                    content_type="text/html" if isinstance(payload, str) else "application/json")
            return web.json_response(completion(json.dumps(verdict(body))))

    with Faulty(lambda h, b: None) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE, max_attempts=6))
        sent = len(server.requests)
    # Before: the first 503 stopped the run (exit 2, "the server refused the request itself"), nothing written.
    assert summary["status"] == {"ok": 1} and sent == 6
    assert summary["judge"]["retries"] == 5 and summary["judge"]["request_errors"] == 0 and summary["judge"]["server_errors"] == 5


def test_a_tgi_424_generation_failure_is_the_servers_failure_retried_not_a_refused_request(tmp_path: Path) -> None:
    # TGI answers 424 when generation fails in a model shard (CUDA out of memory, a shard lost): its body is
    # `{"error": "Request failed during generation: …", "error_type": "generation"}`, nothing about the request's fields.
    failed = {"error": "Request failed during generation: Server error: CUDA out of memory. Tried to allocate 2.00 GiB",
              "error_type": "generation"}
    assert not request_refused(424, failed["error"])
    assert request_refused(424, "Input validation error: `max_new_tokens` must be <= 4096")  # (read as a 5xx's text is)
    seen: set[str] = set()

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        asked = body["messages"][-1]["content"]
        if asked not in seen:  # each request's first attempt fails in the shard, its retry is answered
            seen.add(asked)
            return 424, failed
        return 200, completion(json.dumps(verdict(body)))

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2), metrics=ONE, max_attempts=3))
        sent = len(server.requests)
    # Before: the first 424 stopped the run (exit 2, "the server refused the request itself"), nothing judged.
    assert summary["status"] == {"ok": 2} and sent == 4
    assert summary["judge"]["request_errors"] == 0 and summary["judge"]["server_errors"] == 2


# ---------------------------------------------------------------- (c) more cached tokens than prompt tokens


def test_more_cached_tokens_than_prompt_tokens_is_a_reply_of_unknown_usage(tmp_path: Path, caplog) -> None:
    # The provider answered (and billed something): the verdict counts, tokens are estimated, the cost is unknown, and
    # one warning names the figure. As a malformed reply it was retried, billed $0 and ended every case judge_error.
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        reply = completion(json.dumps(verdict(body)))
        reply["usage"] = {"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 500}}
        return 200, reply

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2), metrics=ONE, max_attempts=2))
        sent = len(server.requests)
    assert summary["status"] == {"ok": 2} and sent == 2
    for r in results(tmp_path):
        judge = next(iter(r["scores"].values()))["judge"]
        assert judge["cost_usd"] is None and judge["input_tokens"] > 0, r
    assert summary["judge"]["usage_unknown_replies"] == 2 and summary["judge"]["cost_usd"] is None
    assert summary["judge"]["cached_input_tokens"] == 0 and summary["judge"]["retries"] == 0
    said = [r.getMessage() for r in caplog.records if "not plausible token counts" in r.getMessage()]
    assert len(said) == 1 and "cached_tokens (500) is more than usage.prompt_tokens (100)" in said[0], said


# ---------------------------------------------------------------- (d) the whole reply in reasoning_content


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_a_reply_whose_text_is_all_in_reasoning_content_says_so_and_is_never_scored_from_it(tmp_path: Path, field: str) -> None:
    key = "sk-proj-" + "a1B2c3D4e5" * 4

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        reply = completion("")
        msg = reply["choices"][0]["message"]
        msg["content"] = None
        # A verdict sits in the reasoning, after a long draft quoting a key: it must not be taken, and the key not kept.
        msg[field] = f"Thinking about {key}. " + "x" * 3000 + " " + json.dumps(verdict(body))
        return 200, reply

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE))
    (r,) = results(tmp_path)
    score = r["scores"]["TaskCompletion"]
    assert r["status"] == "judge_error" and r["error"]["kind"] == "parse_error" and score["value"] is None
    msg = r["error"]["message"]
    assert f"content was empty (null or \"\") and the server put its text" in msg and f"message.{field}" in msg, msg
    assert "--reasoning-format none" in msg and "--reasoning-parser" in msg and f"a verdict in {field} is never used" in msg
    assert "no JSON object found" not in msg and "raw reply: (empty)" in msg
    details = score["details"]
    assert details["reasoning_field"] == field and details["reasoning"].startswith("Thinking about ") and len(details["reasoning"]) == 2000
    assert key not in json.dumps(r) and key[:20] not in json.dumps(r)
    assert summary["judge"]["parse_failures"] == 2  # the reply and its repair


# ---------------------------------------------------------------- (e) attempts that got no reply, billed in their score


# A score left without a verdict by a timeout needs a judge that answered before (one that never did stops the run): its
# first request is answered, one at a time.
@pytest.mark.parametrize("script,attempts,items,n", [(["ok", "timeout"], 1, 1, 2), (["timeout", "ok"], 2, 1, 1), (["ok", "timeout"], 1, 2, 4)],
                         ids=["timed-out", "timed-out-then-answered", "multi-item-timed-out"])
def test_a_timed_out_attempt_is_billed_in_its_scores_judge_block_as_in_the_summary(simulator: Any, tmp_path: Path, script: list[str],
                                                                                     attempts: int, items: int, n: int) -> None:
    sim = simulator(script=script, hang_s=3)
    cfg = config(tmp_path, sim.url, cases(tmp_path / "c.jsonl", n), metrics=ONE, timeout_s=0.3, max_attempts=attempts,
                 items_per_request=items, group="none")
    cfg["limits"] = {"max_in_flight": 1}
    summary = anyio.run(lambda: runner.run(validate_config(cfg))).summary
    j, blocks = summary["judge"], judge_blocks(tmp_path)
    assert j["timeouts"] == 1 and j["input_tokens"] > 0 and len(blocks) == n
    assert summary["status"].get("judge_error", 0) == (items if n > 1 else 0), summary["status"]  # (where the judge answered before)
    # Before: summary.json billed the timed-out attempt, each score's judge block said 0 tokens and $0.
    assert sum(b["input_tokens"] for b in blocks) == j["input_tokens"], (blocks, j)
    assert sum(b["cost_usd"] for b in blocks) == pytest.approx(j["cost_usd"], abs=1e-6) and j["cost_usd"] > 0


@pytest.mark.parametrize("figure", [None, 0, "", "missing"])
def test_a_usage_block_without_completion_tokens_is_usage_unknown_not_zero(tmp_path: Path, figure: Any) -> None:
    # A reply holding a verdict took completion tokens: a block saying 0, null, "" or nothing for them was billed
    # 0 output tokens at a known price (and `tracejudge bench` measured 0 output tokens a request).
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        reply = completion(json.dumps(verdict(body)))
        reply["usage"] = {"prompt_tokens": 100}
        if figure != "missing":
            reply["usage"]["completion_tokens"] = figure
        return 200, reply

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE))
    assert summary["status"] == {"ok": 1}
    assert summary["judge"]["usage_unknown_replies"] == 1 and summary["judge"]["cost_usd"] is None
    assert summary["judge"]["output_tokens"] > 0


@pytest.mark.parametrize("figure", ["", False])
def test_a_prompt_figure_that_is_no_count_is_usage_unknown_and_said_once(tmp_path: Path, caplog, figure: Any) -> None:
    # `prompt_tokens: ""` (or false) read as 0: the reply's usage was unknown without a word of why.
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        reply = completion(json.dumps(verdict(body)))
        reply["usage"] = {"prompt_tokens": figure, "completion_tokens": 20}
        return 200, reply

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2), metrics=ONE))
    assert summary["status"] == {"ok": 2}
    assert summary["judge"]["usage_unknown_replies"] == 2 and summary["judge"]["cost_usd"] is None
    said = [r.getMessage() for r in caplog.records if "not plausible token counts" in r.getMessage()]
    assert len(said) == 1 and "usage.prompt_tokens is not a token count" in said[0], said
