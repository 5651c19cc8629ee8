"""BFCL's relevance check: live_relevance passes on a decodable call, irrelevance on none, each verdict upstream's.

`upstream_has_call` transcribes upstream's rule (ShishirPatil/gorilla, berkeley-function-call-leaderboard/bfcl_eval:
`relevance_file_runner` in eval_checker/eval_runner.py, `decode_ast` of the OpenAI handler in
model_handler/api_inference/openai_completion.py, `is_empty_output` in utils.py); the run is the example config's,
asking a chat server on 127.0.0.1 that answers real BFCL questions with replies of every shape that rule tells apart.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from test_bfcl import load
from test_bfcl_example import run_example


def _call(name: str, arguments: Any) -> dict[str, Any]:
    return {"id": f"call_{name}", "type": "function", "function": {"name": name, "arguments": arguments}}


# (what the model answers, given the name of the first function offered as sent)
REPLIES = [
    lambda f: {"content": None, "tool_calls": [_call(f, '{"q": "x"}')]},
    lambda f: {"content": None, "tool_calls": [_call(f, "{}")]},  # no arguments: still a call
    lambda f: {"content": None, "tool_calls": [_call(f, '{"q": 1}'), _call(f, '{"q": 2}')]},
    lambda f: {"content": None, "tool_calls": [_call("not_offered", '{"a": 1}')]},  # any name counts
    lambda f: {"content": "I cannot help with that.", "tool_calls": None},
    lambda f: {"content": None, "tool_calls": []},  # nothing at all
    lambda f: {"content": None, "tool_calls": [_call(f, "")]},  # blank arguments do not decode
    lambda f: {"content": None, "tool_calls": [_call(f, "null")]},  # JSON, but no object
    lambda f: {"content": None, "tool_calls": [_call(f, "[1]")]},
    lambda f: {"content": None, "tool_calls": [_call(f, '{"q": ')]},
    lambda f: {"content": "Here:", "tool_calls": [_call(f, '{"q": 1}'), _call(f, "{'q': 2}")]},  # one bad call: none
]


def upstream_has_call(message: dict[str, Any]) -> bool:
    """Whether upstream's relevance check finds a function call in this Chat Completions reply (FC mode)."""
    calls = message.get("tool_calls") or []
    # (the OpenAI SDK that upstream reads the reply with gives a missing name as None)
    result: Any = [{c["function"].get("name"): c["function"]["arguments"]} for c in calls] if calls else (message.get("content") or "")
    try:
        decoded = []
        for invoked in result:  # (a text reply fails here: a character has no `keys`)
            name = list(invoked.keys())[0]
            decoded.append({name: json.loads(invoked[name])})
    except Exception:
        return False
    if not all(type(i) is dict and len(i) == 1 and type(list(i.values())[0]) is dict for i in decoded):
        return False
    return not (len(decoded) == 0 or (len(decoded) == 1 and len(decoded[0]) == 0))


@contextmanager
def chat_server(message_for: Callable[[str], dict[str, Any]]) -> Iterator[str]:
    """A Chat Completions server on 127.0.0.1 answering each request with `message_for(the last message's content)`;
    yields its base URL (without `/v1`) and stops it on leaving."""

    class Chat(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            reply = {"id": "r", "object": "chat.completion", "choices": [
                {"index": 0, "message": message_for(body["messages"][-1]["content"]), "finish_reason": "stop"}]}
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Chat)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_live_relevance_questions_carry_the_relevance_check() -> None:
    cases = load("live_relevance")
    assert len(cases) == 16 and all(c.expected_tool_calls is None for c in cases)
    assert all(c.metrics == [{"type": "BfclRelevance", "name": "bfcl_relevance"}]
               for c in cases)
    assert all(c.metrics == [] and c.expected_tool_calls == [] for c in load("irrelevance")[:20])


def test_the_example_gives_upstreams_verdict_on_real_questions(tmp_path: Path, data_dir: Path) -> None:
    bfcl = data_dir / "bfcl"
    lines = (bfcl / "BFCL_v4_live_relevance.json").read_text().splitlines()
    lines += (bfcl / "BFCL_v4_irrelevance.json").read_text().splitlines()[: len(REPLIES)]
    questions = tmp_path / "BFCL_v4_relevance_and_irrelevance.json"  # (no answer file: neither category has one)
    questions.write_text("\n".join(lines) + "\n")
    reply_of: dict[str, dict[str, Any]] = {}  # by the question asked
    for i, line in enumerate(lines):
        q = json.loads(line)
        first = q["function"][0]["name"].replace(".", "_")  # (as the example sends it)
        reply_of[q["question"][0][-1]["content"]] = {"id": q["id"], "message": {"role": "assistant", **REPLIES[i % len(REPLIES)](first)}}
    assert len(reply_of) == len(lines)  # (each question told apart by what it asks)

    with chat_server(lambda asked: reply_of[asked]["message"]) as url:
        listed, traces = run_example(tmp_path, url, f"dataset.path={questions}")
    results = {r["case_id"]: r for r in listed}
    assert len(results) == len(lines)
    upstream = {r["id"]: upstream_has_call(r["message"]) for r in reply_of.values()}
    relevance = {k: results[k]["scores"]["bfcl_relevance"]["passed"] for k in upstream if k.startswith("live_relevance")}
    irrelevance = {k: results[k]["scores"]["ast_match"]["passed"] for k in upstream if k.startswith("irrelevance")}
    assert relevance == {k: upstream[k] for k in relevance} and set(relevance.values()) == {True, False}
    assert irrelevance == {k: not upstream[k] for k in irrelevance} and set(irrelevance.values()) == {True, False}
    assert sum(upstream.values()) == 8 + 4  # the first four shapes hold a call (live_relevance meets them twice)
    # The expected calls of live_relevance are none: the run's own metric says nothing there, it is not failed.
    assert all(results[k]["scores"]["ast_match"]["value"] is None for k in relevance)
    bad = traces["live_relevance_10-10-0"]["steps"][0]  # the last shape: a call that decodes beside one that does not
    assert bad["error"].startswith("tool calls not decoded") and "{'q': 2}" in bad["error"] and not bad.get("tool_calls")
    assert bad["output"] == "Here:"


def test_a_reply_holding_a_lone_surrogate_gets_upstreams_verdict(tmp_path: Path, data_dir: Path) -> None:
    # JSON may spell half a UTF-16 pair (`"\ud800"`), and upstream's `json.loads` reads it as a call like any other;
    # the trace, written as UTF-8, cannot hold it, and the reply was a target_error, no verdict at all.
    bfcl = data_dir / "bfcl"
    lines = (bfcl / "BFCL_v4_live_relevance.json").read_text().splitlines()[:2]
    lines += (bfcl / "BFCL_v4_irrelevance.json").read_text().splitlines()[:3]
    questions = tmp_path / "BFCL_v4_surrogates.json"
    questions.write_text("\n".join(lines) + "\n")
    shapes = [lambda f: {"content": None, "tool_calls": [_call(f, '{"q": "a\\ud800b"}')]},
              lambda f: {"content": None, "tool_calls": [_call("\ud800", '{"q": 1}')]},  # (the name, as the SDK reads it)
              lambda f: {"content": "I cannot \ud800 help.", "tool_calls": None}]
    reply_of = {}
    for i, line in enumerate(lines):
        q = json.loads(line)
        first = q["function"][0]["name"].replace(".", "_")
        reply_of[q["question"][0][-1]["content"]] = {"id": q["id"], "message": {"role": "assistant", **shapes[i % len(shapes)](first)}}
    with chat_server(lambda asked: reply_of[asked]["message"]) as url:
        listed, traces = run_example(tmp_path, url, f"dataset.path={questions}")
    results = {r["case_id"]: r for r in listed}
    for r in reply_of.values():
        passed = results[r["id"]]["scores"]["bfcl_relevance" if r["id"].startswith("live") else "ast_match"]["passed"]
        assert passed == (upstream_has_call(r["message"]) == r["id"].startswith("live")), r
    assert traces["live_relevance_0-0-0"]["steps"][0]["tool_calls"][0]["arguments"] == {"q": "a\ufffdb"}


def test_the_check_reads_the_recorded_calls_as_upstream_whatever_the_target_recorded() -> None:
    # A target of its own that records every call as the model sent it, decodable or not: the check passed any of them.
    from tracejudge.core.records import Case
    from tracejudge.stages.score.bfcl_relevance import BfclRelevance

    checked = 0
    for shape in REPLIES:
        message = shape("f")
        calls = [{"name": c["function"]["name"], "arguments": c["function"]["arguments"]} for c in message.get("tool_calls") or []]
        if any(c["arguments"] == "" for c in calls):
            continue  # (blank arguments text is a call without arguments to the trace model: README's differences)
        steps = [{"output": message["content"], "tool_calls": calls}] if calls else [{"output": message["content"]}]
        case = Case.model_validate({"id": "live_relevance_0-0-0", "trace": {"steps": steps}})
        relevance, irrelevance = BfclRelevance().evaluate(case), BfclRelevance(expect="none").evaluate(case)
        assert (relevance.passed, irrelevance.passed) == (upstream_has_call(message), not upstream_has_call(message)), message
        checked += 1
    assert checked == len(REPLIES) - 1
    bad = Case.model_validate({"id": "x", "trace": {"steps": [{"tool_calls": [{"name": "f", "arguments": '{"q": 1}'},
                                                                               {"name": "f", "arguments": "{'q': 2}"}]}]}})
    score = BfclRelevance().evaluate(bad)
    assert score.value == 0.0 and score.details == {"calls": 2, "undecodable": 1} and "{'q': 2}" in score.reason
    assert BfclRelevance().evaluate(Case.model_validate({"id": "x"})).value is None  # (no trace)


def test_a_catch_all_error_share_gate_counts_the_run_metric_live_relevance_skips_as_not_applicable(tmp_path: Path,
                                                                                                  data_dir: Path) -> None:
    # `ast_match` has no expected calls to check on a live_relevance question (upstream checks none there): "not
    # computed", it was every such case's error under `"*": {max_error_share: 0}`, and the run failed.
    bfcl = data_dir / "bfcl"
    lines = (bfcl / "BFCL_v4_live_relevance.json").read_text().splitlines()[:2]
    lines += (bfcl / "BFCL_v4_irrelevance.json").read_text().splitlines()[:2]
    questions = tmp_path / "BFCL_v4_mixed.json"
    questions.write_text("\n".join(lines) + "\n")
    with chat_server(lambda asked: REPLIES[0]("f")) as url:
        listed, _ = run_example(tmp_path, url, f"dataset.path={questions}", "assertions.metrics.*.max_error_share=0")
    assert {r["case_id"]: r["scores"]["ast_match"]["reason"].split(":")[0] for r in listed if r["case_id"].startswith("live")} == \
        {"live_relevance_0-0-0": "not applicable", "live_relevance_1-1-0": "not applicable"}
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    ast = summary["metrics"]["ast_match"]
    assert (ast["scored"], ast["not_computed"], ast["not_applicable"], ast["error_share"]) == (2, 0, 2, 0.0)
    assert summary["metrics"]["bfcl_relevance"]["not_applicable"] == 2  # (the irrelevance questions do not carry it)
