"""Replies a user trial met from self-hosted servers, over real HTTP on 127.0.0.1.

1. A 200 whose body is vLLM's error object (`{"object": "error", "message": …}`) read as "unexpected reply shape
   (KeyError)"; `{"error": {…}}` already reported the provider's own message, and so must this shape.
2. `tracejudge bench` against a server whose reasoning parser moved the whole reply to `reasoning_content`
   (`content: null`) said "the reply began: ''" and advised `judge.structured_output`; `run` diagnoses it: bench
   must say what run says.
3. The bench's `errors` row (the held level) and `unusable replies` row (the whole bench) counted different replies
   under labels that did not say so ("unparseable reply 12" beside "unparseable 20 of 20").
4. A 200 whose body is FastAPI's `{"detail": …}` read as a shape error, as 1. did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from _loopback import Loopback, completion, verdict
from test_judge_servers import cases, config, results, run, write
import _forkserver

ONE = [{"type": "TaskCompletion"}]


def test_a_200_with_vllms_error_object_reports_the_servers_message(tmp_path: Path) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        return 200, {"object": "error", "message": "KV cache full", "type": "ServiceUnavailableError", "param": None, "code": 503}

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE, max_attempts=2, max_retry_wait_s=1))
        sent = len(server.requests)
    (r,) = results(tmp_path)
    msg = r["error"]["message"]
    assert r["status"] == "judge_error" and r["error"]["kind"] == "provider_error", r["error"]
    assert "KV cache full" in msg and "ServiceUnavailableError" in msg and "with an error body" in msg, msg
    assert "unexpected reply shape" not in msg and "KeyError" not in msg, msg
    assert sent == 2 and summary["judge"]["error_kinds"] == {"provider_error": 1}  # retried as a transient server error


def test_a_200_with_fastapis_detail_reports_the_servers_detail(tmp_path: Path) -> None:
    # A FastAPI server behind a proxy that answers 200: its `{"detail": …}` read as "unexpected reply shape (KeyError)",
    # where the same body with a 4xx status already said the server's text.
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        return 200, {"detail": "Model judge-7b is still loading, try again shortly"}

    with Loopback(respond) as server:
        run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE, max_attempts=2, max_retry_wait_s=1))
        sent = len(server.requests)
    (r,) = results(tmp_path)
    msg = r["error"]["message"]
    assert r["status"] == "judge_error" and r["error"]["kind"] == "provider_error", r["error"]
    assert "HTTP 200 with an error body: error: Model judge-7b is still loading, try again shortly" in msg, msg
    assert "unexpected reply shape" not in msg and "KeyError" not in msg, msg
    assert sent == 2  # retried as a transient server error, as the other error bodies are


def _bench(tmp: Path, url: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    cfg = write(tmp, config(tmp, url, cases(tmp / "c.jsonl", 4)))
    out = tmp / "bench.json"
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "bench", str(cfg), "--sample", "2", "--requests", "20", "--duration", "0.3",
                           "--json", str(out)], cwd=tmp, capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "250"})
    return proc, json.loads(out.read_text()) if out.exists() else {}


def test_bench_says_a_reply_moved_to_reasoning_content_as_run_does_and_labels_what_each_row_counts(tmp_path: Path) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        reply = completion("")
        reply["choices"][0]["message"].update(content=None, reasoning_content="Let me check. " + json.dumps(verdict(body)))
        return 200, reply

    with Loopback(respond) as server:
        proc, report = _bench(tmp_path, server.url)
    text = " ".join(proc.stdout.split())
    assert proc.returncode == 1, proc.stdout + proc.stderr
    replies = report["replies"]
    assert replies["unparseable"] == replies["in_reasoning"] == replies["answered"] == report["requests_sent"] == 20, replies
    # Run's own diagnosis (`asking.empty_reply`): the server put the text in message.reasoning_content, and what to change there.
    said = replies["messages"]["in_reasoning"]
    assert "the server put its text" in said and "message.reasoning_content" in said and "--reasoning-format none" in said, said
    assert "--reasoning-parser" in said and "a verdict in reasoning_content is never used" in said, said
    assert "the reply began: ''" not in proc.stdout and "judge.structured_output" not in text, text
    assert "had no answer outside the model's reasoning" in text and "not usable as configured" in text, text
    assert "reasoning field" in proc.stderr, proc.stderr  # the failure line counts them as such too
    # Each count says what it counts: the held level's errors, every reply of the bench for the unusable ones.
    held = report["measured"]["requests"]
    assert report["measured"]["errors"] == {"unparseable reply": held} and held < 20, report["measured"]
    assert f"errors (measured phase) │ unparseable reply {held} " in text, text
    assert "unusable replies (whole bench) │ unparseable 20 (20 with the reply's text in a reasoning field) of 20 answered" in text, text
    assert f"measured phase │ " in text and f"s, {held} requests" in text, text


def test_bench_still_points_prose_replies_at_structured_output(tmp_path: Path) -> None:
    with Loopback(lambda h, b: (200, completion("TC1: yes, because the agent did it."))) as server:
        proc, report = _bench(tmp_path, server.url)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert report["replies"]["in_reasoning"] == 0 and report["replies"]["unparseable"] == 20, report["replies"]
    text = " ".join(proc.stdout.split())
    assert "judge.structured_output (now json_schema)" in text and "the reply began: 'TC1: yes" in text, text
    assert "outside the model's reasoning" not in text, text
