"""How a reasoning model's thinking reaches the judge in the content, over real HTTP on 127.0.0.1: a verdict quoting a
closing tag, gpt-oss's harmony channels left unparsed (llama.cpp's `llama-server --reasoning-format none`), other
models' thinking tags (Seed-OSS, magistral, Kimi), and a reply whose only JSON is in its thinking.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _loopback import Loopback, completion, verdict
from test_judge_servers import cases, config, results, run
from tracejudge.stages.judge.parse import ParseError, extract_json, strip_reasoning

ONE = [{"type": "TaskCompletion"}]


def _answers(body: dict[str, Any], answer: str, reason: str) -> str:
    return json.dumps({q: {"answer": answer, "reason": reason} for q in verdict(body)})


def _second_unfinished(tmp: Path) -> Path:
    # Two cases, the second's task saying "unfinished": a server scripted on it answers that case's requests cut short.
    data = cases(tmp / "c.jsonl", 2)
    rows = [json.loads(x) for x in data.read_text().splitlines()]
    rows[1]["input"] = "Find item 1 (unfinished)"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def _scores(tmp: Path, name: str = "run") -> dict[str, dict[str, Any]]:
    # By case id: results.jsonl holds results in the order their cases finished, which the judge's concurrency decides.
    return {r["case_id"]: r["scores"]["TaskCompletion"] for r in results(tmp, name)}


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
    for score in _scores(tmp_path).values():
        answers = score["details"]["answers"]
        assert {a["answer"] for a in answers.values()} == {"yes"} and all(a["reason"] == quoted for a in answers.values()), score


def test_a_closing_tag_ends_the_thinking_before_it_whichever_way_the_verdict_follows() -> None:
    draft, final = '{"q1": {"answer": "no", "reason": "draft"}}', '{"q1": {"answer": "yes", "reason": "final"}}'
    for reply in (f"{draft}\n</think>\n\n{final}", f"{draft}</think>\n{final}", f"{draft}</think>{final}", f"{draft}\n</think>{final}",
                  f"{draft}</think> ```json\n{final}\n```", f"<think>a</think>{draft}\n</THINK >\n{final}"):
        assert extract_json(reply) == {"q1": {"answer": "yes", "reason": "final"}}, reply
    quoting = '{"q1": {"answer": "yes", "reason": "printed </think> then </thinking> mid-line"}}'
    assert strip_reasoning(quoting) == quoting


# ---------------------------------------------------------------- 2. gpt-oss's harmony channels in the content


def test_gpt_oss_harmony_channels_are_read_from_the_final_channel_never_the_analysis(tmp_path: Path) -> None:
    # llama.cpp's llama-server --reasoning-format none (which the README suggests for a reasoning parser that swallows the
    # whole reply) leaves gpt-oss's channels in the content. Before, the analysis channel's draft was read as a verdict.
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        analysis = "<|channel|>analysis<|message|>We need to judge. A first guess: " + _answers(body, "no", "draft")
        if "unfinished" in json.dumps(body["messages"]):
            return 200, completion(analysis + ". But check again whether")  # cut while still in the analysis channel
        return 200, completion(analysis + ". Check again: it did.<|end|><|start|>assistant<|channel|>final <|constrain|>json<|message|>"
                               + _answers(body, "yes", "the agent printed <|channel|>analysis tokens but answered"))

    with Loopback(respond) as server:
        run(config(tmp_path, server.url, _second_unfinished(tmp_path), metrics=ONE))
        sent = len(server.requests)
    scores = _scores(tmp_path)
    finished, unfinished = scores["case-0"], scores["case-1"]
    answers = finished["details"]["answers"].values()
    assert finished["value"] is not None and {a["answer"] for a in answers} == {"yes"}, finished  # the final channel's, not the draft's
    assert all("printed <|channel|>analysis tokens" in a["reason"] for a in answers), finished
    # The draft is never scored: repaired once, then a parse error that says the analysis never reached a final channel.
    assert unfinished["value"] is None and unfinished["details"]["error_kind"] == "parse_error", unfinished
    assert "analysis channel" in unfinished["reason"] and "<|channel|>final" in unfinished["reason"], unfinished["reason"]
    assert sent == 3


def test_a_verdict_quoting_harmony_tokens_is_not_taken_for_a_channel() -> None:
    quoting = '{"q1": {"answer": "yes", "reason": "the agent leaked <|channel|>analysis<|message|> tokens"}}'
    assert extract_json(quoting)["q1"]["answer"] == "yes"
    assert extract_json('<|channel|>final<|message|>{"q1": {"answer": "no", "reason": "low effort"}}<|return|>')["q1"]["answer"] == "no"


# ---------------------------------------------------------------- 3. other models' thinking tags, left in the content


SPELLINGS = {  # (how the reply opens its thinking, how it closes it): each server's reasoning parser for the model knows them
    "seed-oss": ("<seed:think>", "</seed:think>"),
    "seed-oss-template-opened": ("", "</seed:think>"),  # llama.cpp's Seed-OSS template ends the prompt with <seed:think>
    "magistral": ("[THINK]", "[/THINK]"),
    "kimi": ("\u25c1think\u25b7", "\u25c1/think\u25b7"),
}


@pytest.mark.parametrize("model", list(SPELLINGS))
def test_a_draft_in_another_models_thinking_tags_is_never_the_verdict(tmp_path: Path, model: str) -> None:
    # Served without a reasoning parser (llama.cpp --reasoning-format none, vLLM or SGLang without --reasoning-parser),
    # these models leave their thinking in the content. Before, its draft was read: a draft disagreeing with the answer
    # failed the case ("answered both yes and no"), and one in a block that never closed was scored.
    opening, closing = SPELLINGS[model]

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        thinking = opening + "Let me check. A first guess: " + _answers(body, "no", "draft")
        if "unfinished" in json.dumps(body["messages"]):
            return 200, completion(thinking + " but I should check each call again")  # EOS while thinking: finish_reason stop
        return 200, completion(thinking + ". On reflection each holds." + closing + _answers(body, "yes", "final"))

    with Loopback(respond) as server:
        run(config(tmp_path, server.url, _second_unfinished(tmp_path), metrics=ONE))
    by_case = {r["case_id"]: r["scores"]["TaskCompletion"] for r in results(tmp_path)}  # (results are written as cases finish)
    finished, unfinished = by_case["case-0"], by_case["case-1"]
    assert finished["value"] is not None and {a["answer"] for a in finished["details"]["answers"].values()} == {"yes"}, finished
    if opening:  # (a block the template opened and the model never closed holds no tag at all: nothing says it is thinking)
        assert unfinished["value"] is None and unfinished["details"]["error_kind"] == "parse_error", unfinished
        assert f"{opening} reasoning block never closed (no {closing})" in unfinished["reason"], unfinished["reason"]


@pytest.mark.parametrize("opened", ["in-reply", "by-template"])
def test_a_reply_whose_only_json_is_in_its_thinking_says_so(tmp_path: Path, opened: str) -> None:
    # The model answered inside its thinking and gave nothing after it. Before: "no JSON object found in the reply"
    # beside a raw reply holding one, which said nothing of why it was not read.
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        return 200, completion(("<think>\n" if opened == "in-reply" else "") + _answers(body, "yes", "inside") + "\n</think>\n\n")

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE))
    (score,) = _scores(tmp_path).values()
    assert summary["status"] == {"judge_error": 1} and score["details"]["error_kind"] == "parse_error", score
    assert "no JSON object after the model's thinking" in score["reason"] and "<think>…</think>" in score["reason"], score["reason"]
    assert "no JSON object found" not in score["reason"], score["reason"]
    # A reply with no JSON anywhere is still said as one.
    with pytest.raises(ParseError, match="no JSON object found"):
        extract_json("<think>\nhmm\n</think>\n\nno verdict")


@pytest.mark.parametrize("cap", ["max_tokens", "server"])
def test_a_reply_cut_while_its_think_block_is_open_says_to_turn_thinking_off_as_reasoning_content_does(tmp_path: Path, cap: str) -> None:
    # `<think>` in the content (no reasoning parser), cut at max_tokens: it said only "cut off at max_tokens=64", while
    # the same reply in `reasoning_content` was told to turn thinking off.
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        reply = completion("<think>I am still weighing " + _answers(body, "no", "draft"))
        reply["choices"][0]["finish_reason"] = "length"
        reply["usage"] = {"prompt_tokens": 400, "completion_tokens": 64 if cap == "max_tokens" else 20, "total_tokens": 0}
        return 200, reply

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 1), metrics=ONE, max_tokens=64))
    (score,) = _scores(tmp_path).values()
    assert summary["status"] == {"judge_error": 1} and score["details"]["error_kind"] == "truncated", score
    assert "the model was still reasoning when the reply ended (its <think> reasoning block never closed" in score["reason"], score["reason"]
    if cap == "max_tokens":
        assert "cut off at max_tokens=64; " in score["reason"] and "raise judge.max_tokens, or turn the model's thinking off" in score["reason"]
        assert "enable_thinking: false" in score["reason"], score["reason"]
    else:  # the server's own cap: raising max_tokens or thinking less is not the fix it names
        assert "the server cut it off at 20 tokens" in score["reason"] and "raise judge.max_tokens, or" not in score["reason"], score["reason"]
