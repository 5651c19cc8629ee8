"""A reply the judge server cut itself, far under the `max_tokens` asked (llama.cpp's `--n-predict`), is told apart from
one cut at `max_tokens`, in the score's reason, the summary and the terminal, over real HTTP against the simulator."""

from __future__ import annotations

from tracejudge.stages.judge.error_note import with_first_error
from tracejudge.stages.reports.judge_lines import judge_lines

from test_judge_http import results, run_config, write_cases


def test_a_reply_the_server_cut_at_a_few_tokens_names_the_server_cap_not_max_tokens(simulator, tmp_path):
    sim = simulator(max_reply_tokens=8)
    summary = run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 2))
    for r in results(tmp_path):
        assert r["status"] == "judge_error" and r["error"]["kind"] == "truncated"
        reason = r["scores"]["TaskCompletion"]["reason"]
        # The figures a user can check: the server's 8 completion tokens against the 512 asked (the default max_tokens).
        assert "the server cut it off at 8 tokens, under the max_tokens=512 asked" in reason
        assert "cut off at max_tokens" not in reason and "raising judge.max_tokens does not help" in reason
        assert "--n-predict" in reason
    judge = summary["judge"]
    assert judge["server_cut_replies"] == judge["truncated_replies"] == 4 == sim.stats.answered  # each first reply and its repair
    lines = judge_lines(with_first_error(summary, tmp_path / "run"))
    (line,) = [x for x in lines if x.startswith("judge server cut replies:")]
    assert line.startswith("judge server cut replies: 4 replies stopped (finish_reason length) under half of the max_tokens asked")
    first = next(x for x in lines if x.startswith("judge errors:"))
    assert "the server cut it off at 8 tokens" in first


def test_a_reply_cut_at_max_tokens_still_says_max_tokens(simulator, tmp_path):
    # The simulator's `truncated` fault reports all max_tokens used: that is a cut at max_tokens, and said so.
    sim = simulator(script=["truncated", "truncated"])
    summary = run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 1))
    (r,) = results(tmp_path)
    reason = r["scores"]["TaskCompletion"]["reason"]
    assert "it was cut off at max_tokens=512" in reason and "server cut" not in reason
    assert summary["judge"]["server_cut_replies"] == 0 and summary["judge"]["truncated_replies"] == 2
    assert not [x for x in judge_lines(summary) if x.startswith("judge server cut replies:")]


def test_a_server_cap_above_what_a_reply_needs_cuts_nothing(simulator, tmp_path):
    sim = simulator(max_reply_tokens=400)
    summary = run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 2))
    assert summary["status"] == {"ok": 2} and summary["judge"]["server_cut_replies"] == 0


def test_a_reply_all_reasoning_that_the_server_cut_short_names_the_server_cap():
    from tracejudge.llm.providers import Reply
    from tracejudge.stages.judge.calls.reply_notes import empty_reply

    cut = Reply("", True, 900, 20, reasoning="Let me think about call 1", reasoning_field="reasoning_content")
    said = empty_reply(cut, "openai", 1024)
    assert "the server cut it off at 20 tokens, under max_tokens 1024" in said and "max_tokens cut it off" not in said
    at_cap = Reply("", True, 900, 1024, reasoning="Let me think about call 1", reasoning_field="reasoning_content")
    assert "max_tokens cut it off (raise judge.max_tokens" in empty_reply(at_cap, "openai", 1024)
