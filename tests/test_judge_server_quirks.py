"""Self-hosted judge servers' quirks, over real HTTP on 127.0.0.1: a reasoning block that never closes, an older
llama.cpp's context overflow (HTTP 500 about KV size), a 404 saying the model is missing, a server that always streams,
a 200 with an HTML page, and a server that accepts every connection and resets it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _loopback import Loopback, completion, verdict
from aiohttp import web
from test_judge_servers import cases, config, results, run, tj, write

ONE = [{"type": "TaskCompletion"}]


def _flipped(body: dict[str, Any]) -> dict[str, Any]:
    # The opposite of the verdict `verdict` builds: a draft the model would have changed had it finished thinking.
    return {q: {"answer": "no", "reason": "draft"} for q in verdict(body)}


# ---------------------------------------------------------------- 1. a reasoning block that never closes


def test_a_draft_verdict_in_an_unclosed_think_block_is_never_scored(tmp_path: Path) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        # finish_reason stop (EOS inside the thinking), the block never closed: before, the draft was scored silently.
        return 200, completion("<think>\nOkay, let me evaluate. A first guess would be " + json.dumps(_flipped(body))
                               + " but I should double-check each question")

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2), metrics=ONE))
        sent = len(server.requests)
    assert summary["status"] == {"judge_error": 2}, summary["status"]
    assert sent == 4  # each asked, then repaired once
    for r in results(tmp_path):
        score = r["scores"]["TaskCompletion"]
        assert score["value"] is None and score["details"]["error_kind"] == "parse_error", score
        assert "<think> reasoning block never closed" in score["reason"] and "judge.max_tokens" in score["reason"], score["reason"]
        assert "reasoning settings" in score["reason"]

    # A verdict whose reason quotes "<think>" (inside a JSON string: never at a line's start) is still the verdict.
    def quoting(headers: dict[str, str], body: dict[str, Any]) -> Any:
        return 200, completion(json.dumps({q: {"answer": "yes", "reason": "the agent printed <think> in its reply"} for q in verdict(body)}))

    with Loopback(quoting) as server:
        ok = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE, run="quoting"))
    assert ok["status"] == {"ok": 1}


# ---------------------------------------------------------------- 2. an older llama.cpp's context overflow


def test_an_older_llama_cpp_kv_size_500_is_each_cases_error_never_sent_again(tmp_path: Path) -> None:
    kv = {"error": {"code": 500, "message": "Input prompt is too big compared to KV size. Please try increasing KV size.", "type": "server_error"}}
    with Loopback(lambda headers, body: (500, kv)) as server:
        data = config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 20), metrics=ONE, max_attempts=3, max_retry_wait_s=1)
        data["limits"] = {"max_in_flight": 1}
        proc = tj("run", str(write(tmp_path, data)), "--no-progress", cwd=tmp_path)
        sent = len(server.requests)
    # A prompt over the window is its case's error (the other cases may fit): the run goes on, and the gate fails it.
    assert proc.returncode == 1, proc.stderr
    assert sent == 20  # each prompt that cannot fit is sent once (before the refusal was read as such: every attempt)
    got = results(tmp_path)
    assert len(got) == 20 and {r["error"]["kind"] for r in got} == {"context_exceeded"}
    said = got[0]["error"]["message"]
    assert "KV size" in said and "judge.context_tokens" in said and "n_ctx" in said, said

    # The same text behind a gateway's 503 stays transient: retried, then one case's provider_error.
    with Loopback(lambda headers, body: (503, kv)) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE, run="r503", max_attempts=2, max_retry_wait_s=1))
        assert len(server.requests) == 2
    assert summary["status"] == {"judge_error": 1}


# ---------------------------------------------------------------- 3. a 404 saying the model is missing


@pytest.mark.parametrize("server_kind", ["ollama", "vllm"])
def test_a_model_not_found_404_names_judge_model_not_the_base_url(tmp_path: Path, server_kind: str) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        if server_kind == "ollama":
            return 404, {"error": {"message": f"model \"{body['model']}\" not found, try pulling it first", "type": "api_error"}}
        return 404, {"object": "error", "message": f"The model `{body['model']}` does not exist.", "type": "NotFoundError", "code": 404}

    with Loopback(respond) as server, pytest.raises(Exception) as err:
        run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE))
    msg = str(err.value)
    assert "judge.model" in msg and "gpt-4o-mini" in msg and "nothing answers at" not in msg, msg
    assert ("ollama pull gpt-4o-mini" in msg) == (server_kind == "ollama"), msg
    assert server_kind == "ollama" or "does not exist" in msg  # vLLM's own message, read from its error shape

    # A 404 from no such endpoint (Ollama's and Go's plain "404 page not found") still names the base URL.
    with Loopback(lambda headers, body: (404, {"error": "404 page not found"})) as server, pytest.raises(Exception) as err:
        run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE, run="no_endpoint"))
    assert "nothing answers at" in str(err.value) and "judge.base_url" in str(err.value)


# ---------------------------------------------------------------- 4. replies that are not JSON


class Streaming(Loopback):
    """Always answers as server-sent events, whatever `stream` says (a server or proxy that only streams)."""

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append((dict(request.headers), body))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        chunk = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": json.dumps(verdict(body))}, "finish_reason": "stop"}]}
        await resp.write(f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode())
        return resp


class Page(Loopback):
    """Answers every request 200 with `text` of `content_type`: a reverse proxy's login page, a web server's page."""

    def __init__(self, text: str, content_type: str) -> None:
        self.text, self.content_type = text, content_type
        super().__init__(lambda headers, body: None)

    async def _handle(self, request: web.Request) -> web.Response:
        self.requests.append((dict(request.headers), await request.json()))
        return web.Response(text=self.text, content_type=self.content_type)


def _stopped_line(tmp_path: Path, server: Loopback, said: str) -> str:
    """Runs 20 cases against `server`, which must stop the run at once (exit 2, nothing written, at most a request or two
    per slot in flight sent): the one stderr line holding `said`."""
    with server:
        data = config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 20), metrics=ONE)
        data["limits"] = {"max_in_flight": 2}
        proc = tj("run", str(write(tmp_path, data)), "--no-progress", cwd=tmp_path)
        sent = len(server.requests)
    assert proc.returncode == 2, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if said in x]
    assert len(lines) == 1 and server.url in lines[0], proc.stderr
    assert sent <= 4  # not retried nor re-asked per case (before: every attempt of every case)
    assert results(tmp_path) == []
    return lines[0]


def served(tmp_path: Path, server: Loopback, n: int, in_flight: int, **judge: Any) -> tuple[dict[str, Any], int]:
    """Runs `n` cases against `server` (in process, `in_flight` requests at most): the run's summary and how many
    requests the server got."""
    with server:
        data = config(tmp_path, server.url, cases(tmp_path / "c.jsonl", n), metrics=ONE, **judge)
        data["limits"] = {"max_in_flight": in_flight}
        summary = run(data)
        return summary, len(server.requests)


def test_a_stream_only_server_stops_the_run_at_once_naming_the_content_type(tmp_path: Path) -> None:
    line = _stopped_line(tmp_path, Streaming(lambda headers, body: None), "text/event-stream")
    assert 'no "stream" key' in line


def test_a_200_html_page_where_nothing_was_answered_stops_the_run_naming_the_url_and_content_type(tmp_path: Path) -> None:
    # A proxy's login page (or a web server's page for a wrong path) at judge.base_url: each of the cases was retried
    # judge.max_attempts times to the same page, each ending judge_error; on 50,000 cases, 50,000 × retries.
    server = Page("<html><head><title>Sign in</title></head><body>Please log in</body></html>", "text/html")
    line = _stopped_line(tmp_path, server, "HTML page (text/html)")
    assert server.url + "/v1/chat/completions" in line and "serves no judge API" in line and "judge.base_url" in line


def test_any_200_that_is_not_json_where_nothing_was_answered_stops_the_run_the_same_way(tmp_path: Path) -> None:
    line = _stopped_line(tmp_path, Page("It works!", "text/plain"), "reply is not a JSON object (text/plain)")
    assert "serves no judge API" in line


def test_an_html_page_once_the_judge_has_answered_is_a_passing_proxy_page_retried(tmp_path: Path) -> None:
    pages = [2]  # the 2nd request gets a proxy's error page; its retry, and all the others, are answered

    class Passing(Loopback):
        async def _handle(self, request: web.Request) -> web.Response:
            body = await request.json()
            self.requests.append((dict(request.headers), body))
            if len(self.requests) in pages:
                return web.Response(text="<html><body><h1>Bad gateway</h1></body></html>", content_type="text/html")
            return web.json_response(completion(json.dumps(verdict(body))))

    summary, sent = served(tmp_path, Passing(lambda headers, body: None), 3, 1)
    assert summary["status"] == {"ok": 3} and sent == 4
    assert summary["judge"]["server_errors"] == 1 and summary["judge"]["request_errors"] == 0


def test_html_pages_from_then_on_close_the_judges_gate_so_cases_fail_fast_not_each_retried(tmp_path: Path) -> None:
    # The proxy's session expires after two answers: from then on every reply is its login page. Each case was retried
    # to it (140 requests for 40 cases); now the pages close the gate as a proxy's 502s do: one try at a time, then
    # the waiting cases end at once, each with the page's URL and content type.
    class Expiring(Loopback):
        async def _handle(self, request: web.Request) -> web.Response:
            body = await request.json()
            self.requests.append((dict(request.headers), body))
            if len(self.requests) > 2:
                return web.Response(text="<html><body>Sign in</body></html>", content_type="text/html")
            return web.json_response(completion(json.dumps(verdict(body))))

    server = Expiring(lambda headers, body: None)
    summary, sent = served(tmp_path, server, 40, 2, max_retry_wait_s=1)
    assert summary["status"] == {"ok": 2, "judge_error": 38}
    assert sent <= 12, sent
    for r in results(tmp_path):
        if r["status"] == "judge_error":
            reason = r["scores"]["TaskCompletion"]["reason"]
            assert "HTML page (text/html)" in reason and server.url + "/v1/chat/completions" in reason, reason


# ---------------------------------------------------------------- 5. a server that resets every connection


class Resetting(Loopback):
    """Reads each request, then resets its connection without a reply; `answer` lists request numbers (1-based) it
    answers instead, after `delay_s`."""

    answer: frozenset[int] = frozenset()
    delay_s = 0.0

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append((dict(request.headers), body))
        if len(self.requests) in self.answer:
            import asyncio

            await asyncio.sleep(self.delay_s)
            return web.json_response(completion(json.dumps(verdict(body))))
        assert request.transport is not None
        request.transport.abort()
        return web.Response()


def test_a_judge_that_resets_every_connection_is_unreachable_exit_3(tmp_path: Path) -> None:
    with Resetting(lambda headers, body: None) as server:
        proc = tj("run", str(write(tmp_path, config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 30), metrics=ONE))), "--no-progress",
                  cwd=tmp_path)
        sent = len(server.requests)
    assert proc.returncode == 3, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if "cannot reach the judge" in x]
    assert len(lines) == 1 and server.url + "/v1/chat/completions" in lines[0] and "reset" in lines[0], proc.stderr
    assert sent < 30 * 3  # not every attempt of every case
    assert results(tmp_path) == []

    # A server that answers one request of the run's start while resetting another is reachable: the reset is retried.
    class Flaky(Resetting):
        answer = frozenset({1, 3, 4, 5, 6})
        delay_s = 0.3

    with Flaky(lambda headers, body: None) as server:
        data = config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 3), metrics=ONE, run="flaky", max_retry_wait_s=1)
        data["limits"] = {"max_in_flight": 2}
        summary = run(data)
    assert summary["status"] == {"ok": 3}, summary["status"]


def test_a_server_refusing_temperature_zero_is_told_to_set_judge_temperature() -> None:
    # TGI before 2.0.1 answers 422 "`temperature` must be strictly positive"; the hint named every judge setting but that one.
    from tracejudge.llm.replies import request_fix

    fix = request_fix('HTTP 422: Input validation error: `temperature` must be strictly positive')
    assert fix.startswith("set judge.temperature") and "0.01" in fix
    assert "judge.structured_output" in request_fix("response_format json_schema is not supported")


def test_a_501_not_implemented_stops_the_run_at_once_with_the_servers_message(tmp_path: Path) -> None:
    # llama.cpp's llama-server started with --embeddings answers every chat request so. Before, a 501 was a server error:
    # each case was retried to max_attempts and ended provider_error, however many cases, for a server that never can.
    body = {"error": {"code": 501, "message": "This server does not support completions. Start it without `--embeddings`",
                      "type": "not_supported_error"}}
    with Loopback(lambda headers, body_: (501, body)) as server:
        data = config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 6), metrics=ONE, max_attempts=3, max_retry_wait_s=1)
        data["limits"] = {"max_in_flight": 1}
        with pytest.raises(Exception, match=r"refused the request itself.*HTTP 501.*Start it without `--embeddings`.*judge\.base_url") as got:
            run(data)
        sent = len(server.requests)
    assert sent <= 2, sent  # not retried, nor sent for the other cases (before: 6 cases × 3 attempts)
    assert results(tmp_path) == []
    # One that asks to be tried again later is transient all the same.
    from tracejudge.llm.replies import request_refused

    assert request_refused(501, "not_supported_error: nope") and not request_refused(501, "not_supported_error: nope", retry_after=True)


NGINX_413 = ("<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n<center><h1>413 Request Entity Too Large"
             "</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")


def _body_limit(limit: int) -> Any:
    """A judge behind a proxy that refuses a request body over `limit` bytes with its own 413 page, as nginx does past
    client_max_body_size; the others are answered."""
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        size = int({k.lower(): v for k, v in headers.items()}["content-length"])
        return (413, NGINX_413) if size > limit else (200, completion(json.dumps(verdict(body))))

    return respond


def test_a_413_for_one_huge_case_is_that_cases_error_naming_the_body_limit_and_a_resume_retries_it(tmp_path: Path) -> None:
    # One case of 150 steps, each with a result of its own 900 characters: its judge request is some 150 kB, the others
    # under 4 kB. Before, the proxy's 413 for it stopped the run (exit 2), the cases after it never judged.
    data = cases(tmp_path / "c.jsonl", 6)
    lines = data.read_text().splitlines()
    steps = [{"tool_calls": [{"name": "lookup", "arguments": {"q": f"page {k}"}, "result": f"page {k}: " + " ".join(f"w{k}x{j}" for j in range(150))}]}
             for k in range(150)]
    lines[3] = json.dumps({"id": "case-3", "input": "Read every page", "trace": {"steps": steps, "output": "All read."}})
    data.write_text("\n".join(lines) + "\n")
    with Loopback(_body_limit(64_000)) as server:
        cfg = write(tmp_path, config(tmp_path, server.url, data, metrics=ONE, max_attempts=3))
        proc = tj("run", str(cfg), "--no-progress", cwd=tmp_path)
        refused = [b for _, b in server.requests if "Read every page" in json.dumps(b)]
        assert proc.returncode == 1, proc.stderr  # the gate's verdict on one judge error, not a stop
        got = {r["case_id"]: r for r in results(tmp_path)}
        assert sorted(got) == [f"case-{i}" for i in range(6)]
        assert [c for c, r in got.items() if r["status"] != "ok"] == ["case-3"]
        assert len(refused) == 1  # the same body is as large on a second try: not sent again
        error = got["case-3"]["error"]
        assert error["kind"] == "body_too_large" and got["case-3"]["scores"]["TaskCompletion"]["details"]["http_status"] == 413, error
        said = error["message"]
        assert "HTTP 413" in said and "case 'case-3'" in said and server.url + "/v1/chat/completions" in said, said
        assert "client_max_body_size" in said and "judge.context_tokens" in said and "judge.structured_output" not in said, said
        assert "the other cases are judged" in said, said
        # The resume line says why this one will fail again, not that it was a transient failure.
        assert "ended in a transient failure" not in proc.stderr, proc.stderr
        assert ("1 results ended because the judge server, or a proxy before it, refused their request body as too large (HTTP 413"
                in proc.stderr and "refused again unless that body limit is raised or judge.context_tokens is set lower" in proc.stderr), proc.stderr

        # The proxy's limit raised: the same command asks case-3 again, and only it.
        server.respond = _body_limit(1_000_000)
        before = len(server.requests)
        again = tj("run", str(cfg), "--no-progress", cwd=tmp_path)
        asked = [b for _, b in server.requests[before:]]
    assert again.returncode == 0, again.stderr
    assert len(asked) == 1 and "Read every page" in json.dumps(asked[0])
    assert "1 retried after the judge server refused them as too large" in again.stdout, again.stdout
    assert {r["case_id"]: r["status"] for r in results(tmp_path)}["case-3"] == "ok"


def test_vllms_too_large_max_tokens_gets_the_context_advice() -> None:
    # vLLM's context overflow says "too large" of max_tokens: still the context advice, not a body limit.
    from tracejudge.llm.replies import request_fix

    vllm = ("HTTP 400 BadRequestError: 'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's maximum context "
            "length is 4096 tokens and your request has 3500 input tokens (1000 > 4096 - 3500).")
    assert request_fix(vllm).startswith("lower judge.max_tokens, or set judge.context_tokens"), request_fix(vllm)
