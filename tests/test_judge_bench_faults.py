"""Faults a user met against self-hosted judge servers, over real HTTP on 127.0.0.1 with real runs and benches:

1. a server that silently cuts the prompt to its context (Ollama's `num_ctx`) and says so only in `usage.prompt_tokens`;
2. `tracejudge bench` against a judge whose every reply is unusable (cut at `max_tokens`, or prose);
3. `tracejudge bench --max-cost-usd` with a model without a price;
4. `judge.mode: batch` against a server without a batch API;
5. a failing judge-panel member, and a member's own `structured_output`;
6. `tracejudge bench` against a judge that answers HTTP 200 with a refusal (billed, counted, capped).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from _loopback import Loopback, completion, verdict
from test_judge_servers import cases, config, results, run, tj, write
from tracejudge.stages.reports.judge_lines import judge_lines

ONE = [{"type": "TaskCompletion"}]


def _prompt_tokens(body: dict[str, Any]) -> int:
    """The request's messages counted by tiktoken, as the client counts them (its schema and framing left out)."""
    from tracejudge.llm.tokens import count_messages

    return count_messages(list(body["messages"]), "gpt-4o-mini")


# ---------------------------------------------------------------- 1. a server that cuts the prompt


def test_a_server_that_cuts_the_prompt_is_warned_about_once_and_counted(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def cutting(headers: dict[str, str], body: dict[str, Any]) -> Any:
        reply = completion(json.dumps(verdict(body)))
        reply["usage"] = {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020}  # Ollama: what num_ctx kept
        return 200, reply

    def honest(headers: dict[str, str], body: dict[str, Any]) -> Any:
        reply = completion(json.dumps(verdict(body)))
        # Another tokenizer: 30 % fewer tokens than tiktoken's is an ordinary difference, never a cut.
        reply["usage"] = {"prompt_tokens": int(_prompt_tokens(body) * 0.7), "completion_tokens": 20, "total_tokens": 0}
        return 200, reply

    long_cases = cases(tmp_path / "long.jsonl", 3, steps=80)  # prompts of several thousand tokens
    with caplog.at_level(logging.WARNING, logger="tracejudge"), Loopback(cutting) as server:
        summary = run(config(tmp_path, server.url, long_cases, metrics=ONE))
    j = summary["judge"]
    assert j["server_truncated_prompts"] == 3, j
    warned = [r.getMessage() for r in caplog.records if "prompt tokens for a prompt tracejudge counted" in r.getMessage()]
    assert len(warned) == 1, warned  # once a run, not once a reply
    assert "counted 1,000 prompt tokens" in warned[0] and "num_ctx" in warned[0] and "OLLAMA_CONTEXT_LENGTH" in warned[0]
    assert "judge.context_tokens" in warned[0]
    assert any("judge server cut prompts: 3 replies" in line for line in judge_lines(summary))

    # Ordinary tokenizer differences, and a short prompt whose count is far below ours but only by tens of tokens: no warning.
    with Loopback(honest) as server:
        quiet = run(config(tmp_path, server.url, long_cases, metrics=ONE, run="honest"))
    short_cut = cases(tmp_path / "short.jsonl", 2)
    with Loopback(lambda h, b: (200, completion(json.dumps(verdict(b))))) as server:  # usage says 50 prompt tokens
        short = run(config(tmp_path, server.url, short_cut, metrics=ONE, run="short"))
    assert quiet["judge"]["server_truncated_prompts"] == 0 and short["judge"]["server_truncated_prompts"] == 0


# ---------------------------------------------------------------- 2. a bench whose replies are all unusable


def _bench(tmp: Path, url: str, *more: str, budget: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
    data = config(tmp, url, cases(tmp / "c.jsonl", 4))
    if budget is not None:
        data["budget"] = budget
    cfg = write(tmp, data)
    out = tmp / "bench.json"
    out.unlink(missing_ok=True)
    proc = tj("bench", str(cfg), "--sample", "2", "--requests", "12", "--duration", "0.3", "--json", str(out), *more, cwd=tmp)
    return proc, json.loads(out.read_text()) if out.exists() else {}


@pytest.mark.parametrize("fault", ["length", "prose"])
def test_a_bench_whose_replies_are_all_unusable_fails_and_says_what_to_change(tmp_path: Path, fault: str) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        text = json.dumps(verdict(body))
        if fault == "prose":
            return 200, completion("TC1: yes, because the agent did it. TCN1: no.")
        # Cut where max_tokens ends it: as many tokens of text as it allows ("word " is one token), billed at it. (Half of a
        # short verdict, far under max_tokens, is a server's own cut: `test_bench_simulated_faults`.)
        cap = int(body["max_tokens"])
        reply = completion((text[:-2] + ' ' + "word " * cap)[: 5 * cap])
        reply["choices"][0]["finish_reason"] = "length"
        reply["usage"]["completion_tokens"] = cap
        return 200, reply

    with Loopback(respond) as server:
        proc, report = _bench(tmp_path, server.url)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    replies = report["replies"]
    kind = "truncated" if fault == "length" else "unparseable"
    assert replies["answered"] == report["requests_sent"] == 12 and replies["usable"] == 0 and replies[kind] == 12, replies
    assert report["measured"]["errors"] == {f"{kind} reply": report["measured"]["requests"]}
    assert report["recommended_limits"] is None
    assert "unusable replies" in proc.stdout and "errors │ none" not in proc.stdout.replace("  ", "")
    setting = "raise judge.max_tokens" if fault == "length" else "judge.structured_output"
    assert "not usable as configured" in proc.stdout and setting in proc.stdout, proc.stdout
    assert "not usable as configured" in proc.stderr


def test_a_bench_of_usable_replies_counts_none_unusable(tmp_path: Path) -> None:
    with Loopback(lambda h, b: (200, completion(json.dumps(verdict(b))))) as server:
        proc, report = _bench(tmp_path, server.url)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["replies"]["usable"] == report["replies"]["answered"] == 12 and "unusable replies" not in proc.stdout


@pytest.mark.parametrize("status", [400, 502])
def test_a_bench_against_a_server_failing_every_request_stops_after_its_first_three(tmp_path: Path, status: int) -> None:
    # It sent all 12 of --requests, then said "ran out of requests … raise --requests to measure further".
    with Loopback(lambda h, b: (status, {"error": {"message": "no such thing", "type": "invalid_request_error"}})) as server:
        proc, report = _bench(tmp_path, server.url)
        sent = len(server.requests)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert sent == report["requests_sent"] == 3 and report["stopped_by"] == "errors", report
    assert "the bench's first 3 requests all failed, so it sent no more" in report["ramp_stopped"], report["ramp_stopped"]
    assert "raise --requests" not in " ".join((proc.stdout + proc.stderr).split()), proc.stdout + proc.stderr
    assert "bench failed: no request was answered" in proc.stderr


# ---------------------------------------------------------------- 3. a bench's dollar cap with a model without a price


def test_a_bench_refuses_a_dollar_cap_for_a_model_without_a_price_and_never_shows_0_dollars(tmp_path: Path) -> None:
    with Loopback(lambda h, b: (200, completion(json.dumps(verdict(b))))) as server:
        refused, _ = _bench(tmp_path, server.url, "--model", "o3-pro", "--max-cost-usd", "0.01")
        sent_then = len(server.requests)
        proc, report = _bench(tmp_path, server.url, "--model", "o3-pro")
    assert refused.returncode == 2 and sent_then == 0, refused.stdout + refused.stderr
    assert "--max-cost-usd" in refused.stderr and "'o3-pro' has no price" in refused.stderr and "judge.prices" in refused.stderr
    # Without a cap it runs, bound by --requests, and its cost is unknown, never $0.
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["spent_usd"] is None and report["requests_sent"] == 12
    assert "$0.0000" not in proc.stdout and "cost is unknown" in proc.stdout and "cost unknown" in proc.stdout


def test_a_bench_is_not_refused_by_the_configs_own_dollar_budget(tmp_path: Path) -> None:
    # The config's `budget.max_cost_usd` (the demo's $20) refused a bench of an unpriced local model, which the bench
    # never enforces: it spends under --max-cost-usd alone.
    with Loopback(lambda h, b: (200, completion(json.dumps(verdict(b))))) as server:
        proc, report = _bench(tmp_path, server.url, "--model", "my-local-judge", budget={"max_cost_usd": 20, "max_judge_tokens": 5_000_000})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["spent_usd"] is None and report["requests_sent"] == 12 and "cost unknown" in proc.stdout


# ---------------------------------------------------------------- 4. batch mode against a server without a batch API


def test_batch_mode_against_a_server_without_a_batch_api_stops_at_once_naming_judge_mode_sync(tmp_path: Path) -> None:
    # The loopback serves only /v1/chat/completions: its /v1/files and /v1/batches answer 404, as vLLM's and Ollama's do.
    with Loopback(lambda h, b: (200, completion(json.dumps(verdict(b))))) as server:
        data = config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 4), metrics=ONE, model="my-local-model", mode="batch",
                      batch={"flush_after_s": 0.2, "poll_interval_s": 0.2})
        proc = tj("run", str(write(tmp_path, data)), cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = [x for x in proc.stderr.splitlines() if "batch API" in x]
    assert len(lines) == 1 and "has no batch API" in lines[0] and "judge.mode: sync" in lines[0], proc.stderr
    assert "HTTP 404" in lines[0] and server.url in lines[0]
    assert results(tmp_path) == []  # nothing written: the same command with judge.mode: sync judges every case


# ---------------------------------------------------------------- 5. a failing panel member is named


def _panel(tmp: Path, servers: list[Loopback], **member: Any) -> dict[str, Any]:
    data = config(tmp, servers[0].url, cases(tmp / "c.jsonl", 3), metrics=ONE)
    data["judge"]["models"] = [{"provider": "openai", "model": f"m{i}", "base_url": s.url + "/v1"} for i, s in enumerate(servers)]
    data["judge"]["models"][-1].update(member)
    data["judge"]["aggregate"] = "majority"
    return data


def test_a_panel_member_answering_prose_is_named_with_its_url(tmp_path: Path) -> None:
    good = lambda h, b: (200, completion(json.dumps(verdict(b))))  # noqa: E731
    with Loopback(good) as a, Loopback(good) as b, Loopback(lambda h, body: (200, completion("TC1: yes, it did"))) as c:
        summary = run(_panel(tmp_path, [a, b, c]))
        url = c.url + "/v1"
    scores = [r["scores"]["TaskCompletion"] for r in results(tmp_path)]
    assert len(scores) == 3 and all(s["value"] is None for s in scores)
    for s in scores:
        assert s["reason"].startswith(f"parse_error: panel member openai:m2 at {url}: "), s["reason"]
        assert s["details"]["panel_member"] == {"model": "openai:m2", "base_url": url}
    models = summary["judge"]["panel"]["models"]
    assert models["openai:m2"]["parse_failures"] > 0 and models["openai:m0"]["parse_failures"] == 0
    assert any("openai:m2" in line and "parse failures" in line for line in judge_lines(summary))


def test_a_panel_members_422_stops_the_run_naming_it_and_its_own_structured_output_fixes_it(tmp_path: Path) -> None:
    good = lambda h, b: (200, completion(json.dumps(verdict(b))))  # noqa: E731

    def tgi(headers: dict[str, str], body: dict[str, Any]) -> Any:
        if body.get("response_format"):  # TGI's refusal of an OpenAI json_schema response_format
            return 422, {"error": "Failed to deserialize the JSON body into the target type: response_format: unknown variant `json_schema`",
                         "error_type": "validation"}
        # No schema sent: answer the question ids the prompt lists, as a model following the prompt does.
        ids = re.findall(r"(?m)^([A-Z]+\d+): ", "\n".join(str(m["content"]) for m in body["messages"] if m["role"] == "user"))
        return 200, completion(json.dumps({q: {"answer": "yes", "reason": "ok"} for q in dict.fromkeys(ids)}))

    with Loopback(good) as a, Loopback(good) as b, Loopback(tgi) as c:
        stopped = tj("run", str(write(tmp_path, _panel(tmp_path, [a, b, c]))), cwd=tmp_path)
        url = c.url + "/v1"
        fixed = run({**_panel(tmp_path, [a, b, c], structured_output="none"), "run": {"dir": str(tmp_path / "fixed")}})
        sent_schema = [body.get("response_format") for _, body in c.requests[-3:]]
    assert stopped.returncode == 2, stopped.stdout + stopped.stderr
    assert "HTTP 422" in stopped.stderr and f"panel member openai:m2 at {url}" in stopped.stderr, stopped.stderr
    # A member's own structured_output: only that member is sent no response_format, and every case is judged.
    assert sent_schema == [None, None, None] and fixed["status"] == {"ok": 3}, fixed["status"]
    assert all(body.get("response_format") for _, body in a.requests)


@pytest.mark.parametrize("flag", [["--max-cost-usd=nan"], ["--max-cost-usd=inf"], ["--duration=nan"]])
def test_a_bench_refuses_a_cap_or_duration_that_is_no_number(tmp_path: Path, flag: list[str]) -> None:
    # `--max-cost-usd=nan` was taken and capped nothing (every comparison with NaN is False).
    with Loopback(lambda h, b: (200, completion(json.dumps(verdict(b))))) as server:
        proc, _ = _bench(tmp_path, server.url, *flag)
        sent = len(server.requests)
    assert proc.returncode == 2 and sent == 0, proc.stdout + proc.stderr
    assert "finite" in proc.stdout + proc.stderr


# ---------------------------------------------------------------- 6. a bench whose judge refuses (HTTP 200, message.refusal)


def _refusal(prompt_tokens: int = 100, completion_tokens: int = 7) -> dict[str, Any]:
    """OpenAI's refusal: HTTP 200, `content` null, `message.refusal` set, and the usage the provider bills for it."""
    return {"id": "x", "object": "chat.completion", "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": None,
            "refusal": "I can't help with that."}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens}}


def _cost(prompt_tokens: int, completion_tokens: int) -> float:
    return prompt_tokens * 0.15e-6 + completion_tokens * 0.60e-6  # gpt-4o-mini's price table entry (per token)


def test_a_bench_bills_refused_replies_as_a_run_does_and_counts_them_as_refused_not_unanswered(tmp_path: Path) -> None:
    with Loopback(lambda h, b: (200, _refusal())) as server:
        proc, report = _bench(tmp_path, server.url)
        sent = len(server.requests)
    out = proc.stdout + proc.stderr
    # Answered, billed, never usable: the judge is not usable as configured (exit 1), but nothing went unanswered.
    assert proc.returncode == 1, out
    assert report["requests_sent"] == sent == 12, report["requests_sent"]
    assert report["spent_usd"] == round(12 * _cost(100, 7), 6) > 0, report["spent_usd"]  # 12 × $0.0000192
    replies = report["replies"]
    assert replies["answered"] == 12 and replies["refused"] == 12 and replies["usable"] == 0, replies
    assert replies["truncated"] == replies["unparseable"] == 0 and "I can't help with that." in replies["messages"]["refused"]
    assert report["measured"]["answered"] == report["measured"]["requests"] > 0
    assert report["measured"]["errors"] == {"refused reply": report["measured"]["requests"]}
    assert report["measured"]["latency_p50_s"] is not None and report["measured"]["rpm"] > 0
    assert report["recommended_limits"] is None  # rates of a judge that only refuses are no working judge's
    assert "no request was answered" not in out and "fatal" not in report["measured"]["errors"]
    assert "refused 12 of 12 answered" in proc.stdout and "bench spent │ $0.0002 (12 requests" in proc.stdout.replace("  ", "")
    assert "were refused by the model" in proc.stdout and "refused 12" in proc.stderr, out


def test_refused_replies_count_toward_the_benchs_dollar_cap(tmp_path: Path) -> None:
    # Each refusal bills 2,000 + 500 tokens ($0.0006); a $0.002 cap admits a request only while what was spent plus its
    # worst case stays under it, so the bench stops by the cap after a few. Unbilled, every refusal counted $0: all 12 went.
    with Loopback(lambda h, b: (200, _refusal(2000, 500))) as server:
        proc, report = _bench(tmp_path, server.url, "--max-cost-usd", "0.002")
        sent = len(server.requests)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert report["stopped_by"] == "cost cap" and 1 <= sent == report["requests_sent"] < 12, report
    assert report["spent_usd"] == round(sent * _cost(2000, 500), 6) <= 0.002, report["spent_usd"]
    assert report["replies"]["refused"] == report["replies"]["answered"] == sent


def test_a_bench_with_some_refusals_still_measures_and_recommends_limits(tmp_path: Path) -> None:
    seen = [0]

    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        seen[0] += 1
        return 200, (_refusal() if seen[0] % 3 == 0 else completion(json.dumps(verdict(body))))  # every third request refused

    with Loopback(respond) as server:
        proc, report = _bench(tmp_path, server.url)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    replies = report["replies"]
    assert replies["answered"] == 12 and replies["refused"] == 4 and replies["usable"] == 8, replies
    # A refusal is an answered request for the rates and latency (the server served it): every request counts.
    assert report["measured"]["answered"] == report["measured"]["requests"] == 12
    assert report["recommended_limits"] is not None and report["recommended_limits"]["max_in_flight"] >= 1
    assert report["spent_usd"] == round(8 * _cost(50, 10) + 4 * _cost(100, 7), 6)  # (`completion` reports 50 + 10 tokens)
    assert "4 of 12 replies held no verdict" in proc.stdout and "were refused by the model" in proc.stdout


def test_a_bench_bills_malformed_replies_that_reported_usage_and_counts_them_as_server_errors(tmp_path: Path) -> None:
    # A 200 whose `choices` is empty still carried the provider's usage: billed, so it counts toward the spend and the
    # cap as a run bills it. Unbilled, every such reply was $0 and the bench spent nothing for 12 requests.
    with Loopback(lambda h, b: (200, {**_refusal(2000, 500), "choices": []})) as server:
        proc, report = _bench(tmp_path, server.url)
        sent = len(server.requests)
    assert report["requests_sent"] == sent >= 1, report
    assert report["spent_usd"] == round(sent * _cost(2000, 500), 6) > 0, report["spent_usd"]
    assert set(report["measured"]["errors"]) == {"server"} and report["replies"]["answered"] == 0, report
