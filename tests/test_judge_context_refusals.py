"""A judge server refusing one case's prompt as longer than its context window, over real HTTP on 127.0.0.1.

Each server's own refusal (llama.cpp's `exceed_context_size_error` with `n_ctx`, an older llama.cpp's KV-size 500,
vLLM's and OpenAI's "maximum context length is N tokens") for the one long case is that case's judge error, named
with the context settings; the other cases are judged, and a resume asks that case again. A window that the reply's
room alone fills (`judge.max_tokens` at or over it) refuses every request alike: that still stops the run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from _loopback import Loopback, any_verdict, completion, verdict
from test_judge_servers import cases, config, results, run, tj, write

ONE = [{"type": "TaskCompletion"}]
TWO = [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}]
LONG = "Find item 3"  # the case whose prompt the server says does not fit

REFUSALS = {
    "llama.cpp": (400, {"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it",
                                  "type": "exceed_context_size_error", "n_prompt_tokens": 5012, "n_ctx": 4096}}),
    "llama.cpp-kv": (500, {"error": {"code": 500, "message": "Input prompt is too big compared to KV size. Please try increasing KV size.",
                                     "type": "server_error"}}),
    "vllm": (400, {"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested 5120 tokens "
                   "(4608 in the messages, 512 in the completion). Please reduce the length of the messages or completion.",
                   "type": "BadRequestError", "param": None, "code": 400}),
    "openai": (400, {"error": {"message": "This model's maximum context length is 4096 tokens. However, your messages resulted in "
                               "5012 tokens. Please reduce the length of the messages.", "type": "invalid_request_error",
                               "param": "messages", "code": "context_length_exceeded"}}),
}


def refusing(server: str, long: str = LONG) -> Any:
    """A judge that answers every request but those whose prompt holds `long`, refused as `server` refuses a prompt
    longer than its context."""
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        if any(long in str(m.get("content")) for m in body["messages"]):
            return REFUSALS[server]
        return 200, completion(json.dumps(verdict(body)))

    return respond


@pytest.mark.parametrize("server", sorted(REFUSALS))
def test_one_prompt_over_the_servers_context_is_that_cases_error_and_a_resume_retries_it(tmp_path: Path, server: str) -> None:
    # Before: the first such refusal stopped the run (exit 2) after whatever was judged by then, the rest unjudged.
    with Loopback(refusing(server)) as judge:
        data = write(tmp_path, config(tmp_path, judge.url, cases(tmp_path / "c.jsonl", 8), metrics=ONE, max_attempts=3))
        proc = tj("run", str(data), "--no-progress", cwd=tmp_path)
        sent_long = sum(LONG in json.dumps(b) for _, b in judge.requests)
        assert proc.returncode == 1, proc.stderr  # the gate's verdict on one judge error, not a stop
        got = {r["case_id"]: r for r in results(tmp_path)}
        assert sorted(got) == [f"case-{i}" for i in range(8)]
        assert [c for c, r in got.items() if r["status"] != "ok"] == ["case-3"]
        assert sent_long == 1  # the same prompt cannot fit on a second try: not sent again
        error = got["case-3"]["error"]
        assert error["kind"] == "context_exceeded", error
        said = error["message"]
        assert "case 'case-3'" in said and judge.url + "/v1/chat/completions" in said, said
        assert "n_ctx" in said and "judge.context_tokens" in said and "the other cases are judged" in said, said
        if server != "llama.cpp-kv":  # (the KV-size text names no size)
            assert "4,096" in said, said
        assert got["case-3"]["scores"]["TaskCompletion"]["details"]["error_kind"] == "context_exceeded"
        assert "error: " not in proc.stderr and "context_exceeded 1" in proc.stdout, proc.stdout
        # The resume line says why it will fail again, not that it was a transient failure (as it said before).
        assert "ended in a transient failure" not in proc.stderr, proc.stderr
        assert ("1 results ended because the judge server refused their prompt as longer than its context" in proc.stderr
                and "refused again unless the server's context is raised or judge.context_tokens is set to it" in proc.stderr), proc.stderr

        # The server restarted with a larger context: the same command asks case-3 again, and only it.
        judge.respond = refusing(server, long="nothing is this long")
        before = len(judge.requests)
        again = tj("run", str(data), "--no-progress", cwd=tmp_path)
        asked = [b for _, b in judge.requests[before:]]
    assert again.returncode == 0, again.stderr
    assert len(asked) == 1 and LONG in json.dumps(asked[0])
    assert "1 retried after the judge server refused them as too large" in again.stdout, again.stdout
    assert {r["case_id"]: r["status"] for r in results(tmp_path)}["case-3"] == "ok"


def test_a_window_the_reply_room_alone_fills_still_stops_the_run(tmp_path: Path) -> None:
    # judge.max_tokens 4096 against a 2048-token window: no prompt fits, every request is refused alike.
    small = {"object": "error", "message": "This model's maximum context length is 2048 tokens. However, you requested 4196 tokens "
             "(100 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.",
             "type": "BadRequestError", "param": None, "code": 400}
    with Loopback(lambda headers, body: (400, small)) as judge:
        proc = tj("run", str(write(tmp_path, config(tmp_path, judge.url, cases(tmp_path / "c.jsonl", 6), metrics=ONE, max_tokens=4096))),
                  "--no-progress", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("error:")]
    assert "refused the request itself" in line and "maximum context length is 2048" in line and "judge.max_tokens" in line, line
    assert results(tmp_path) == []


def test_a_grouped_request_over_the_context_is_asked_metric_by_metric(tmp_path: Path) -> None:
    # Both metrics in one request do not fit; each metric's own, shorter prompt does.
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        asked = "\n".join(str(m["content"]) for m in body["messages"] if m["role"] == "user")
        grouped = re.search(r"(?m)^TC\d+: ", asked) is not None and re.search(r"(?m)^TCN\d+: ", asked) is not None
        return REFUSALS["llama.cpp"] if grouped else (200, completion(json.dumps(verdict(body))))

    with Loopback(respond) as judge:
        summary = run(config(tmp_path, judge.url, cases(tmp_path / "c.jsonl", 2), metrics=TWO))
    assert summary["status"] == {"ok": 2}, [r.get("error") for r in results(tmp_path)]
    for r in results(tmp_path):
        for score in r["scores"].values():
            assert score["details"]["group"]["alone"] is True and "exceed_context_size_error" in score["details"]["group"]["why"]


def test_a_multi_item_request_over_the_context_is_split_and_only_the_long_item_fails(tmp_path: Path) -> None:
    # judge.items_per_request 4: the request holding the long case is refused whole; its halves are asked, down to that
    # case's own request, so the three cases beside it are judged.
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        return REFUSALS["vllm"] if LONG in json.dumps(body) else (200, completion(json.dumps(any_verdict(body))))

    with Loopback(respond) as judge:
        summary = run(config(tmp_path, judge.url, cases(tmp_path / "c.jsonl", 8), metrics=ONE, items_per_request=4, item_wait_s=2.0))
    assert summary["status"] == {"ok": 7, "judge_error": 1}, [r.get("error") for r in results(tmp_path)]
    (bad,) = [r for r in results(tmp_path) if r["status"] != "ok"]
    assert bad["case_id"] == "case-3" and bad["error"]["kind"] == "context_exceeded", bad["error"]
    assert summary["judge"]["requests_split"] >= 1


def test_a_prompt_that_fits_alone_but_not_with_the_replys_room_names_judge_max_tokens(tmp_path: Path) -> None:
    # vLLM counts judge.max_tokens in: a 420-token prompt fits a 4096-token window, and 4000 tokens of room beside it do
    # not. It was "longer than the server's context", advising a bigger context or judge.context_tokens.
    said = {"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested 4420 tokens "
            "(420 in the messages, 4000 in the completion). Please reduce the length of the messages or completion.",
            "type": "BadRequestError", "param": None, "code": 400}

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        return (400, said) if LONG in json.dumps(body) else (200, completion(json.dumps(verdict(body))))

    with Loopback(respond) as judge:
        summary = run(config(tmp_path, judge.url, cases(tmp_path / "c.jsonl", 4), metrics=ONE, max_tokens=4000))
        sent = [b for _, b in judge.requests if LONG in json.dumps(b)]
    assert summary["status"] == {"ok": 3, "judge_error": 1}, [r.get("error") for r in results(tmp_path)]
    assert [b["max_tokens"] for b in sent] == [4000]  # (not retried with less room: the config's setting is what is sent)
    (bad,) = [r for r in results(tmp_path) if r["status"] != "ok"]
    message = bad["error"]["message"]
    assert bad["error"]["kind"] == "context_exceeded", bad["error"]
    assert "judge prompt (420 tokens) fits the server's context (4,096 tokens)" in message, message
    assert "judge.max_tokens: 4,000" in message and "set judge.max_tokens to at most 3,676" in message, message
    assert "longer than the server's context" not in message, message
