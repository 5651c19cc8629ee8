"""A judge answering 200 with a body that its content type calls JSON but is none, over real HTTP on 127.0.0.1: text
that does not even begin as JSON is a wrong endpoint or a proxy's garbling, read as the HTML page it stands for (the run
stops while nothing was answered; once answered, it closes the judge's gate), while JSON cut short stays a malformed
reply retried."""

from __future__ import annotations

import json
from pathlib import Path

from _loopback import Loopback, completion, verdict
from aiohttp import web
from test_judge_server_quirks import _stopped_line, served
from test_judge_servers import results

GARBAGE = b'hello garbage \x00\xff not json {"choices": ['


class Garbling(Loopback):
    """Answers the requests numbered in `answer` (1-based) with a verdict, every other one 200 with `body` labelled
    application/json."""

    def __init__(self, body: bytes, answer: frozenset[int] = frozenset()) -> None:
        self.body, self.answer = body, answer
        super().__init__(lambda headers, body: None)

    async def _handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append((dict(request.headers), body))
        if len(self.requests) in self.answer:
            return web.json_response(completion(json.dumps(verdict(body))))
        return web.Response(body=self.body, content_type="application/json")


def test_text_that_is_no_json_under_a_json_content_type_stops_the_run_as_an_html_page_does(tmp_path: Path) -> None:
    # Before: every case retried judge.max_attempts times to the same text, all judge_error, exit 1 and the results
    # written as transient failures, whatever judge.max_retry_wait_s said.
    line = _stopped_line(tmp_path, Garbling(GARBAGE), "reply is no JSON at all though its content type is application/json")
    assert "serves no judge API" in line and "it begins 'hello garbage \\x00" in line, line


def test_garbled_text_once_the_judge_has_answered_closes_its_gate_for_max_retry_wait_s(tmp_path: Path) -> None:
    summary, sent = served(tmp_path, Garbling(GARBAGE, frozenset({1, 2})), 40, 2, max_retry_wait_s=1)
    assert summary["status"] == {"ok": 2, "judge_error": 38}
    assert sent <= 12, sent  # one try at a time once the gate closed, not every case retried max_attempts times
    for r in results(tmp_path):
        if r["status"] == "judge_error":
            score = r["scores"]["TaskCompletion"]
            assert "no JSON at all" in score["reason"] and score["details"].get("given_up") is True, score


def test_json_cut_short_is_a_malformed_reply_retried_not_a_wrong_endpoint(tmp_path: Path) -> None:
    # A provider's occasional truncated reply, even as the run's first: the retry is answered and the run finishes.
    cut = Garbling(b'{"id": "x", "choices": [{"index": 0, "message": {"role": "assi', frozenset(range(2, 10)))
    summary, sent = served(tmp_path, cut, 2, 1)
    assert summary["status"] == {"ok": 2} and sent == 3
    assert summary["judge"]["server_errors"] == 1 and summary["judge"]["request_errors"] == 0


def test_a_malformed_reply_is_said_as_what_it_is() -> None:
    # "reply is not a JSON object" sent a user hunting for a wrong endpoint where the reply was JSON cut short.
    from tracejudge.llm.wire.not_json import not_json_error
    from tracejudge.llm.wire.records import HttpReply

    def said(body: str) -> str:
        return str(not_json_error(HttpReply(200, {"content-type": "application/json"}, body, 0.1, url="http://127.0.0.1:9/v1/x")))

    assert "reply is not a JSON object but JSON cut short (application/json)" in said('{"choices": [{"index": 0')
    assert "reply is not a JSON object but JSON nested too deep" in said("[" * 100_000)
    assert "reply is not a JSON object (application/json)" in said("[1, 2]")  # (whole JSON of another shape)
