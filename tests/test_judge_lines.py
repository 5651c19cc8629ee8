"""The judge's terminal lines say what their figures count."""

from __future__ import annotations

from tracejudge.stages.reports.judge_lines import judge_lines


def test_the_repairs_line_names_what_its_rate_counts_when_other_errors_leave_scores_unjudged() -> None:
    # 20 scores judged, none with a verdict: 17 replies could not be read, 3 requests failed at the server. The
    # repairs line's rate is the first share only (`parse_failure_rate`); it must not read as every score left unjudged.
    summary = {"judge": {"requests": 40, "repairs": 17, "parse_failures": 34, "parse_failure_rate": 0.85, "judged_items": 20,
                         "error_kinds": {"parse_error": 17, "server_error": 3}}}
    lines = judge_lines(summary)
    repairs = next(line for line in lines if line.startswith("judge repairs:"))
    assert "85.0% of judged scores left without a verdict by a reply that could not be read" in repairs, repairs
    assert "other judge errors are counted apart" in repairs, repairs
    assert "judge errors: parse_error 17, server_error 3" in lines, lines


def test_requests_answered_429_are_said_on_the_terminal_not_only_in_the_summary() -> None:
    # A strict provider's 429s were in summary.json (`judge.rate_limited`) and no line the run printed said so.
    base = {"judge": {"requests": 80, "cache_hits": 0, "input_tokens": 1000, "output_tokens": 100, "cost_usd": 0.01}, "status": {"ok": 80}}
    assert not any("429" in line for line in judge_lines(base))
    lines = judge_lines({**base, "judge": {**base["judge"], "rate_limited": 11}})
    assert "judge 429s: 11 requests were answered 429 (rate limited) and retried after the server's wait" in "\n".join(lines)
    one = judge_lines({**base, "judge": {**base["judge"], "rate_limited": 1}})
    assert any(line.startswith("judge 429s: 1 request was answered 429") for line in one)


def test_batch_answers_billed_without_a_readable_line_are_said() -> None:
    base = {"judge": {"mode": "batch", "requests": 8, "batches_submitted": 2, "batch_resubmits": 2, "cost_usd": 0.001,
                      "sync_equivalent_usd": 0.002, "input_tokens": 1000, "output_tokens": 100}, "status": {"ok": 6}}
    assert not any("could not be read" in line for line in judge_lines(base))
    lines = judge_lines({**base, "judge": {**base["judge"], "batch_unread_billed": 3, "batch_nameless_billed": 1}})
    said = next(line for line in lines if "could not be read" in line)
    assert said.startswith("judge batch API: 3 answers billed whose result line could not be read (1 naming no request, "), said
    lines = judge_lines({**base, "judge": {**base["judge"], "batch_nameless_unbilled": 2}})
    assert any("2 more lines naming no request than requests without a result, not counted" in line for line in lines), lines
