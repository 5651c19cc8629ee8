"""A verdict complete before the reply ran on in whitespace to the length limit, over real HTTP on 127.0.0.1: taken,
each answer saying how the reply ended; text after the verdict, a verdict that never closed, stays a cut reply."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _loopback import Loopback, completion, verdict
from test_judge_servers import cases, config, results, run, tj, write


@pytest.mark.parametrize("after", ["\n" * 400, "\n\nNote: I also considered"], ids=["whitespace", "text"])
def test_a_verdict_complete_before_whitespace_to_the_length_limit_is_taken_and_text_after_it_stays_cut(tmp_path: Path, after: str) -> None:
    # A JSON grammar lets the model write newlines until max_tokens: its verdict was complete, and was discarded as cut
    # with "raise max_tokens" advice that only buys more newlines.
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        reply = completion(json.dumps(verdict(body)) + after)
        reply["choices"][0]["finish_reason"] = "length"
        reply["usage"] = {"prompt_tokens": 400, "completion_tokens": 64, "total_tokens": 464}
        return 200, reply

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=[{"type": "TaskCompletion"}], max_tokens=64))
    (score,) = [r["scores"]["TaskCompletion"] for r in results(tmp_path)]
    if after.strip():
        assert summary["status"] == {"judge_error": 1} and score["details"]["error_kind"] == "truncated", score
        return
    assert summary["status"] == {"ok": 1} and score["value"] is not None, score
    ended = {a["reply_ended"] for a in score["details"]["answers"].values()}
    assert len(ended) == 1 and next(iter(ended)).startswith("at the length limit (finish_reason length), in whitespace after this complete verdict")
    assert summary["judge"]["requests"] == 1, summary["judge"]  # taken at once: no repair request


def test_the_bench_reads_such_a_reply_as_the_run_does(tmp_path: Path) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        reply = completion(json.dumps(verdict(body)) + "\n" * 50)
        reply["choices"][0]["finish_reason"] = "length"
        return 200, reply

    out = tmp_path / "bench.json"
    with Loopback(respond) as server:
        cfg = write(tmp_path, config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2)))
        proc = tj("bench", str(cfg), "--sample", "2", "--requests", "6", "--duration", "0.2", "--json", str(out), cwd=tmp_path)
    replies = json.loads(out.read_text())["replies"]
    assert proc.returncode == 0 and replies["usable"] == replies["answered"] > 0 and not replies.get("truncated"), proc.stdout + proc.stderr
