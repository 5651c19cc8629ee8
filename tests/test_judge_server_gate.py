"""A judge server that is not ready or too slow, over real HTTP on 127.0.0.1: a model still loading (llama.cpp's 503),
a server not listening yet, one that never answers within `judge.timeout_s`, and the stop line of a refused request
naming the case and the judge's URL.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from _loopback import Loopback, answers_then_hangs, completion, verdict
from test_judge_servers import cases, config, results, run, tj, write
from tracejudge.simulator.server import SimConfig, SimulatorThread, free_port

ONE = [{"type": "TaskCompletion"}]
TWO = [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}]
LOADING = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}


def _loading_for(seconds: float) -> Any:
    """llama.cpp's `llama-server` while it loads its model: 503 `Loading model` for `seconds` from the first request."""
    start: list[float] = []

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        start.append(time.monotonic())
        if time.monotonic() - start[0] < seconds:
            return 503, LOADING
        return 200, completion(json.dumps(verdict(body)))

    return respond


# ---------------------------------------------------------------- a server still loading its model


def test_a_run_against_a_loading_server_waits_for_it_and_asks_each_grouped_request_once(tmp_path: Path) -> None:
    # max_attempts 1: a 503 while loading is waited out within judge.max_retry_wait_s, not counted as an attempt.
    # Before: every request gave up after its attempts and each grouped request was asked again metric by metric.
    with Loopback(_loading_for(1.5)) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 8), metrics=TWO, max_attempts=1))
    assert summary["status"] == {"ok": 8}, summary["status"]
    j = summary["judge"]
    assert j["parts_reasked_alone"] == 0 and j["grouped_requests"] == 8 and j["answered"] == 8


def test_a_server_that_stays_unavailable_fails_each_case_once_without_asking_each_metric(tmp_path: Path) -> None:
    with Loopback(lambda headers, body: (503, LOADING)) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 3), metrics=TWO, max_retry_wait_s=1))
    assert summary["status"] == {"judge_error": 3}
    assert summary["judge"]["parts_reasked_alone"] == 0  # before: 2 per case, each sent to a server that could not serve
    for r in results(tmp_path):
        for s in r["scores"].values():
            assert s["details"]["error_kind"] == "provider_error" and s["details"]["http_status"] == 503, s
            assert "Loading model" in s["reason"] and "judge.max_retry_wait_s 1" in s["reason"], s["reason"]
            assert server.url + "/v1/chat/completions" in s["reason"], s["reason"]


def test_a_server_that_starts_listening_late_is_waited_for(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there until the simulator below starts
    data = config(tmp_path, f"http://127.0.0.1:{port}", cases(tmp_path / "c.jsonl", 4), metrics=ONE)
    started: list[SimulatorThread] = []

    def start_later() -> None:
        time.sleep(1.0)
        started.append(SimulatorThread(SimConfig(), port=port))

    later = threading.Thread(target=start_later)
    later.start()
    try:
        summary = run(data)  # before: the first refused connection stopped the run (unreachable, exit 3)
    finally:
        later.join()
        for server in started:
            server.stop()
    assert summary["status"] == {"ok": 4}, summary["status"]


# ---------------------------------------------------------------- a server slower than judge.timeout_s


def test_requests_that_time_out_are_sent_again_once_and_then_no_more(tmp_path: Path) -> None:
    # One request answered, the others never: a judge that never answered stops the run instead (test_judge_frozen_server).
    with Loopback(answers_then_hangs(1)) as server:
        data = config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 6), metrics=ONE, timeout_s=0.5)
        data["limits"] = {"max_in_flight": 8}
        summary = run(data)
        sent = len(server.requests)
    assert summary["status"] == {"ok": 1, "judge_error": 5}
    # Each request at most twice (before: max_attempts, 6 each, 36 in all); and once three in a row timed out, the
    # requests not yet sent again are not: two at most were sent again before that.
    assert sent <= 6 + 2, sent
    reasons = [r["scores"]["TaskCompletion"]["reason"] for r in results(tmp_path) if r["status"] != "ok"]
    assert all(r.startswith("timeout: ") and "judge.timeout_s 0.5: raise it for a slow server" in r for r in reasons), reasons
    assert any("not sent again" in r and "limits.max_in_flight" in r for r in reasons), reasons


def test_one_slow_prompt_is_sent_twice_while_the_others_are_answered(tmp_path: Path) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        return "hang" if "Find item 0" in body["messages"][1]["content"] else (200, completion(json.dumps(verdict(body))))

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 5), metrics=ONE, timeout_s=0.5))
        slow = [b for _, b in server.requests if "Find item 0" in b["messages"][1]["content"]]
    assert summary["status"] == {"ok": 4, "judge_error": 1}
    assert len(slow) == 2  # sent again once (before: max_attempts, 6)
    (failed,) = [r for r in results(tmp_path) if r["status"] != "ok"]
    assert failed["error"]["kind"] == "timeout" and "raise it for a slow server" in failed["error"]["message"]


# ---------------------------------------------------------------- stop and error lines name the case and the server


def test_a_context_overflow_names_the_case_and_the_judge_url_without_its_password(tmp_path: Path) -> None:
    overflow = {"object": "error", "message": "This model's maximum context length is 2048 tokens. However, you requested 3072 tokens "
                "(2048 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.",
                "type": "BadRequestError", "param": None, "code": 400}

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        return (400, overflow) if "Find item 3" in body["messages"][1]["content"] else (200, completion(json.dumps(verdict(body))))

    with Loopback(respond) as server:
        url = server.url.replace("http://", "http://tj:s3cret-pass@")
        proc = tj("run", str(write(tmp_path, config(tmp_path, url, cases(tmp_path / "c.jsonl", 6), metrics=ONE))), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # that case's judge error: the other cases are judged (the gate fails the run)
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("judge errors:")]
    assert "maximum context length" in line and "case 'case-3'" in line, line
    assert server.url + "/v1/chat/completions" in line and "s3cret-pass" not in proc.stdout + proc.stderr, line
    assert "judge.context_tokens" in line  # the setting to change is still named
    assert "s3cret-pass" not in (tmp_path / "run" / "results.jsonl").read_text()


def test_an_error_body_with_http_200_names_the_judge_url(tmp_path: Path) -> None:
    with Loopback(lambda headers, body: (200, {"error": "Model is not loaded. Please load a model first."})) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE, max_attempts=1))
    assert summary["status"] == {"judge_error": 1}
    reason = results(tmp_path)[0]["scores"]["TaskCompletion"]["reason"]
    assert "Model is not loaded" in reason and server.url + "/v1/chat/completions" in reason, reason



def test_a_lone_503_from_a_server_that_answers_is_that_requests_failure_not_a_stall_for_all(tmp_path: Path) -> None:
    # A busy provider's occasional 503 closed the gate for every request, each try after a growing pause: against a
    # judge failing half its requests at random, a 12-case shard took 62 s where it takes a few. One request at a time
    # (max_in_flight 1) makes "the third request" a fixed one; max_attempts 1: its 503 is its failure, not retried.
    seen: list[int] = []

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        seen.append(1)
        if len(seen) == 3:
            return 503, {"error": {"message": "The server is overloaded", "type": "server_error"}}
        return 200, completion(json.dumps(verdict(body)))

    with Loopback(respond) as server:
        data = config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 6), metrics=ONE, max_attempts=1)
        data["limits"] = {"max_in_flight": 1}
        summary = run(data)
    assert summary["status"] == {"ok": 5, "judge_error": 1}, summary["status"]
    assert len(seen) == 6  # (each case asked once: the 503 was neither waited out nor retried)


def test_a_request_the_slow_gate_never_let_through_says_it_was_not_sent(tmp_path: Path) -> None:
    # It said "not sent again" of requests the server never saw. (The first is answered: one that never answered stops the run.)
    with Loopback(answers_then_hangs(1)) as server:
        data = config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 6), metrics=ONE, timeout_s=0.5)
        data["limits"] = {"max_in_flight": 1}
        run(data)
        asked = {f"case-{i}" for i in range(6) if any(f"Find item {i}" in json.dumps(body) for _, body in server.requests)}
    reasons = {r["case_id"]: r["scores"]["TaskCompletion"]["reason"] for r in results(tmp_path) if r["status"] != "ok"}
    assert set(reasons) - asked, (asked, reasons)  # (one at a time: the gate closed before every case was sent)
    for case_id, reason in reasons.items():
        if case_id not in asked:
            assert reason.startswith("timeout: not sent: 3 requests in a row got no reply within 0.5 s"), (case_id, reason)
        else:
            assert "timeout" in reason and "not sent: " not in reason, (case_id, reason)
