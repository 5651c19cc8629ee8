"""A reply the judge server cut itself, far under the `max_tokens` asked (llama.cpp's `--n-predict`), is told apart from
one cut at `max_tokens`, in the score's reason, the summary and the terminal, over real HTTP against the simulator."""

from __future__ import annotations

from tracejudge.stages.judge.error_note import with_first_error
from tracejudge.stages.reports.judge_lines import judge_lines

from _loopback import Loopback, completion
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
    assert line.startswith("judge server cut replies: 4 replies stopped (finish_reason length) under the max_tokens asked (by the server's count")
    first = next(x for x in lines if x.startswith("judge errors:"))
    assert "the server cut it off at 8 tokens" in first


def _cut_reply(body: dict, completion_tokens: int | None) -> tuple[int, dict]:
    # A verdict cut off mid-reason (`finish_reason: length`), with the server's own count of it, or no usage at all.
    text = '{"answers": [{"id": "TC1", "answer": "yes", "reason": "' + "the agent looked the item up " * 60
    reply = {**completion(text), "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}]}
    if completion_tokens is None:
        reply.pop("usage")
    else:
        reply["usage"] = {"prompt_tokens": 900, "completion_tokens": completion_tokens}
    return 200, reply


def test_a_reply_cut_at_max_tokens_still_says_max_tokens(tmp_path):
    # The server counted all the max_tokens asked: a cut at max_tokens, and said so.
    with Loopback(lambda _h, body: _cut_reply(body, body["max_tokens"])) as server:
        summary = run_config(tmp_path, server.url, write_cases(tmp_path / "c.jsonl", 1))
    (r,) = results(tmp_path)
    reason = r["scores"]["TaskCompletion"]["reason"]
    assert "it was cut off at max_tokens=512" in reason and "server cut" not in reason
    assert summary["judge"]["server_cut_replies"] == 0 and summary["judge"]["truncated_replies"] == 2
    assert not [x for x in judge_lines(summary) if x.startswith("judge server cut replies:")]


def test_a_server_cap_over_half_of_max_tokens_is_the_servers_by_its_own_count(simulator, tmp_path):
    # llama.cpp's --n-predict 20 under judge.max_tokens 30: the server counted 20 completion tokens of the 30 asked. The
    # "under half" rule blamed judge.max_tokens, whose raising cannot help.
    sim = simulator(max_reply_tokens=20)
    summary = run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 1), judge={"max_tokens": 30})
    (r,) = results(tmp_path)
    reason = r["scores"]["TaskCompletion"]["reason"]
    assert "the server cut it off at 20 tokens, under the max_tokens=30 asked" in reason, reason
    assert "cut off at max_tokens" not in reason and "raising judge.max_tokens does not help" in reason
    assert summary["judge"]["server_cut_replies"] == summary["judge"]["truncated_replies"] == 2


def test_a_server_cap_over_max_tokens_cuts_the_reply_at_max_tokens(simulator, tmp_path):
    # --max-reply-tokens 20 with judge.max_tokens 10: the reply came whole (a verdict parsed, counted as 10 completion tokens
    # under finish_reason stop); the server cuts it at the 10 asked, and raising judge.max_tokens is what helps.
    sim = simulator(max_reply_tokens=20)
    summary = run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 1), judge={"max_tokens": 10})
    (r,) = results(tmp_path)
    assert r["status"] == "judge_error" and r["error"]["kind"] == "truncated", r
    reason = r["scores"]["TaskCompletion"]["reason"]
    assert "it was cut off at max_tokens=10" in reason and "server cut" not in reason, reason
    assert summary["judge"]["server_cut_replies"] == 0 and summary["judge"]["truncated_replies"] == 2


def test_a_reply_without_usage_keeps_the_under_half_rule(tmp_path):
    # Without usage the reply's tokens are our estimate (about 380 here): over half of the 512 asked is not taken as the
    # server's cut; the same reply with the server's own count under 512 is.
    with Loopback(lambda _h, body: _cut_reply(body, None)) as server:
        bare = run_config(tmp_path, server.url, write_cases(tmp_path / "c.jsonl", 1), run="bare")
    assert "it was cut off at max_tokens=512" in results(tmp_path, "bare")[0]["scores"]["TaskCompletion"]["reason"]
    assert bare["judge"]["server_cut_replies"] == 0 and bare["judge"]["usage_unknown_replies"] == 2
    with Loopback(lambda _h, body: _cut_reply(body, 360)) as server:
        counted = run_config(tmp_path, server.url, write_cases(tmp_path / "c.jsonl", 1), run="counted", cache={"enabled": False})
    assert "the server cut it off at 360 tokens" in results(tmp_path, "counted")[0]["scores"]["TaskCompletion"]["reason"]
    assert counted["judge"]["server_cut_replies"] == 2


def test_the_simulators_truncated_fault_is_a_server_cut_counted_as_sent(simulator, tmp_path):
    # Half a verdict under `finish_reason: length`: the simulator counts the half it sent, so the run names the server's
    # cut (as `tracejudge bench` does), not max_tokens, and bills what was sent.
    sim = simulator(script=["truncated", "truncated"])
    summary = run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 1))
    (r,) = results(tmp_path)
    reason = r["scores"]["TaskCompletion"]["reason"]
    assert "the server cut it off at" in reason and "under the max_tokens=512 asked" in reason, reason
    assert summary["judge"]["server_cut_replies"] == summary["judge"]["truncated_replies"] == 2
    assert sim.stats.output_tokens == summary["judge"]["output_tokens"]
    assert 0 < sim.stats.output_tokens < 2 * 100  # two halves of a short verdict, not 2 × 512


def test_the_rule_takes_the_servers_count_and_an_estimate_only_under_half():
    from tracejudge.llm.providers import Reply
    from tracejudge.stages.judge.calls.reply_notes import server_cut

    assert server_cut(Reply("{", True, 900, 20), 30) == 20  # the server's own count, under max_tokens
    assert server_cut(Reply("{", True, 900, 30), 30) is None  # all of max_tokens: cut at it
    assert server_cut(Reply("{", True, 900, 20, usage_known=False), 30) is None  # an estimate over half: not taken
    assert server_cut(Reply("{", True, 900, 0, usage_known=False), 30, estimate=10) == 10  # bench's count of the reply
    assert server_cut(Reply("{", True, 900, 20, window_full=True), 30) is None  # the window filled: judge.context_tokens
    assert server_cut(Reply("{", False, 900, 20), 30) is None


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
