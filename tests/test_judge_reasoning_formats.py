"""How a reasoning model's thinking reaches the judge in the content, over real HTTP on 127.0.0.1: a verdict quoting a
closing tag.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _loopback import Loopback, completion, verdict
from test_judge_servers import cases, config, results, run
from tracejudge.stages.judge.parse import extract_json, strip_reasoning

ONE = [{"type": "TaskCompletion"}]


def _answers(body: dict[str, Any], answer: str, reason: str) -> str:
    return json.dumps({q: {"answer": answer, "reason": reason} for q in verdict(body)})


def _scores(tmp: Path, name: str = "run") -> list[dict[str, Any]]:
    return [r["scores"]["TaskCompletion"] for r in results(tmp, name)]


# ---------------------------------------------------------------- 1. a verdict quoting a closing tag


@pytest.mark.parametrize("thinking", ["none", "template-opened"])
def test_a_verdict_whose_reason_quotes_a_closing_think_tag_is_still_the_verdict(tmp_path: Path, thinking: str) -> None:
    # Agents on reasoning models leak "</think>" into their output, and a judge's reason quotes it. Before, everything up
    # to that quoted tag was taken for thinking a chat template had opened: the verdict was cut, "no JSON object found".
    quoted = "the agent's reply ended with a stray </think> tag, yet it completed the task"

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        answer = _answers(body, "yes", quoted)
        if thinking == "template-opened":  # DeepSeek-R1 / Qwen3: the template opened the block, the reply only closes it
            answer = "Draft: " + _answers(body, "no", "draft") + "\nLet me look again.\n</think>\n\n" + answer
        return 200, completion(answer)

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2), metrics=ONE))
        sent = len(server.requests)
    assert summary["status"] == {"ok": 2} and sent == 2, summary["status"]
    for score in _scores(tmp_path):
        answers = score["details"]["answers"]
        assert {a["answer"] for a in answers.values()} == {"yes"} and all(a["reason"] == quoted for a in answers.values()), score


def test_a_closing_tag_ends_the_thinking_before_it_whichever_way_the_verdict_follows() -> None:
    draft, final = '{"q1": {"answer": "no", "reason": "draft"}}', '{"q1": {"answer": "yes", "reason": "final"}}'
    for reply in (f"{draft}\n</think>\n\n{final}", f"{draft}</think>\n{final}", f"{draft}</think>{final}", f"{draft}\n</think>{final}",
                  f"{draft}</think> ```json\n{final}\n```", f"<think>a</think>{draft}\n</THINK >\n{final}"):
        assert extract_json(reply) == {"q1": {"answer": "yes", "reason": "final"}}, reply
    quoting = '{"q1": {"answer": "yes", "reason": "printed </think> then </thinking> mid-line"}}'
    assert strip_reasoning(quoting) == quoting
