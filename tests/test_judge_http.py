"""The judge stage over real HTTP against the simulator: retries, quotas, faults, budget, cache, keys."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest
from tracejudge.core.config import JudgeConfig, validate_config
from tracejudge.core.records import Case
from tracejudge.engine import runner
from tracejudge.llm.cache import cache_key
from tracejudge.stages.judge.client import build_request, key_components
from tracejudge.stages.judge.metrics import Rubric, TaskCompletion, ToolCallNecessity
import _forkserver


def write_cases(path: Path, n: int, calls: int = 1) -> Path:
    with open(path, "w") as fh:
        for i in range(n):
            steps = [{"tool_calls": [{"id": f"c{i}-{k}", "name": "lookup", "arguments": {"q": f"item {i} {k}"}, "result": f"found {i}"}]} for k in range(calls)]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i}", "trace": {"steps": steps, "output": f"Item {i} is found."}}) + "\n")
    return path


def run_config(tmp: Path, sim_url: str, cases: Path, *, metrics=None, run="run", judge=None, **sections):
    data = {
        "dataset": {"path": str(cases), "format": "native"},
        "metrics": metrics or [{"type": "TaskCompletion"}],
        "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim_url + "/v1", **(judge or {})},
        "cache": {"dir": str(tmp / "cache")},
        "run": {"dir": str(tmp / run)},
        **sections,
    }
    config = validate_config(data)
    return anyio.run(lambda: runner.run(config)).summary


def results(tmp: Path, run: str = "run") -> list[dict]:
    return [json.loads(line) for line in (tmp / run / "results.jsonl").read_text().splitlines()]


def test_429_bursts_with_retry_after_all_cases_scored_and_sleep_covers_what_was_asked(simulator, tmp_path):
    script = ["429"] * 20 + ["ok"] * 200 + ["429"] * 20
    sim = simulator(script=script, fault_retry_after_s=0.2)
    summary = run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 500))
    assert summary["status"] == {"ok": 500}
    assert summary["metrics"]["TaskCompletion"]["scored"] == 500
    judge = summary["judge"]
    assert sim.stats.rate_limited == 40 and judge["rate_limited"] == 40 and judge["retries"] == 40
    assert judge["requests"] == sim.stats.requests == 540
    assert judge["slept_s"] >= 40 * 0.2  # every retry slept at least what the server asked


def test_daily_quota_fails_at_once_as_rate_limited(simulator, tmp_path):
    sim = simulator(script=["quota"])
    summary = run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 1))
    (r,) = results(tmp_path)
    assert r["status"] == "rate_limited" and r["error"]["kind"] == "rate_limited"
    assert "86400" in r["error"]["message"]
    assert sim.stats.requests == 1 and summary["judge"]["slept_s"] == 0
    assert summary["segments"][-1]["elapsed_s"] < 10


def test_server_errors_and_timeouts_are_retried(simulator, tmp_path):
    sim = simulator(script=["500", "timeout", "500"], hang_s=3)
    summary = run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 1), judge={"timeout_s": 0.5})
    assert summary["status"] == {"ok": 1}
    j = summary["judge"]
    assert (j["server_errors"], j["timeouts"], j["retries"], j["requests"], j["answered"]) == (2, 1, 3, 4, 1)


def test_retries_stop_at_max_attempts_with_judge_error(simulator, tmp_path):
    sim = simulator(script=["500"] * 10)
    run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 1), judge={"max_attempts": 3})
    (r,) = results(tmp_path)
    assert r["status"] == "judge_error" and r["error"]["kind"] == "provider_error" and "HTTP 500" in r["error"]["message"]
    assert r["scores"]["TaskCompletion"]["details"] == {"error_kind": "provider_error", "http_status": 500}
    assert sim.stats.requests == 3


def test_truncated_json_gets_one_repair_and_is_never_cached(simulator, tmp_path):
    sim = simulator(script=["truncated"])
    summary = run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 1))
    assert summary["status"] == {"ok": 1} and summary["judge"]["repairs"] == 1 and sim.stats.requests == 2
    # Twice truncated: judge_error with the raw text kept.
    sim2 = simulator(script=["truncated", "truncated"])
    run_config(tmp_path, sim2.url, write_cases(tmp_path / "d.jsonl", 1, calls=2), run="run2")
    (r,) = results(tmp_path, "run2")
    assert r["status"] == "judge_error" and r["error"]["kind"] == "truncated"
    assert "the server cut it off at" in r["scores"]["TaskCompletion"]["reason"]  # (half a verdict: the simulator's own cut)
    assert r["scores"]["TaskCompletion"]["details"]["raw"].startswith("{")
    # Nothing was stored for it: a third run asks again.
    sim3 = simulator()
    run_config(tmp_path, sim3.url, write_cases(tmp_path / "d.jsonl", 1, calls=2), run="run3")
    assert sim3.stats.requests == 1


def test_prose_answer_is_accepted_and_near_miss_is_repaired_once_then_judge_error(simulator, tmp_path):
    sim = simulator(script=["prose", "near_miss", "ok", "near_miss", "near_miss"])
    cases = write_cases(tmp_path / "c.jsonl", 3)
    data = {"dataset": {"path": str(cases), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
            "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1", "workers": 1},
            "limits": {"max_in_flight": 1}, "cache": {"dir": str(tmp_path / "cache")}, "run": {"dir": str(tmp_path / "run")}}
    summary = anyio.run(lambda: runner.run(validate_config(data))).summary
    by_id = {r["case_id"]: r for r in results(tmp_path)}
    assert by_id["case-0"]["status"] == "ok"  # fenced JSON inside prose
    assert by_id["case-1"]["status"] == "ok"  # near miss, repaired
    bad = by_id["case-2"]
    assert bad["status"] == "judge_error" and bad["error"]["kind"] == "parse_error"
    assert bad["scores"]["TaskCompletion"]["judge"]["requests"] == 2  # the repair request counts
    assert "GRADE TC1:" in bad["scores"]["TaskCompletion"]["details"]["raw"] and "GRADE TC1:" in bad["error"]["message"]
    assert summary["judge"]["repairs"] == 2 and sim.stats.requests == 5
    assert summary["judge"]["error_kinds"] == {"parse_error": 1} and summary["judge"]["parse_failures"] == 3
    # Per item, not per attempt: 1 of 3 scores ended without a verdict (3 of 5 replies did not parse).
    assert summary["judge"]["parse_failure_rate"] == pytest.approx(1 / 3, abs=1e-6)
    assert summary["judge"]["repair_input_tokens"] > 0
    assert summary["metrics"]["TaskCompletion"]["scored"] == 2 and summary["metrics"]["TaskCompletion"]["excluded"] == {"judge_error": 1}
    assert summary["judge"]["error_share"] == pytest.approx(1 / 3, abs=1e-6) and summary["judge"]["gate_failed"] is True


def test_budget_cap_skips_then_resume_with_larger_budget_finishes(simulator, tmp_path):
    sim = simulator()
    cases = write_cases(tmp_path / "c.jsonl", 10)
    base = {"dataset": {"path": str(cases), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
            "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1", "max_tokens": 100, "workers": 1},
            "limits": {"max_in_flight": 1}, "cache": {"dir": str(tmp_path / "cache")}, "run": {"dir": str(tmp_path / "run")}}
    # One request reserves its prompt (~560 tokens) + max_tokens; 2,000 tokens admit 3 of them.
    first = anyio.run(lambda: runner.run(validate_config({**base, "budget": {"max_judge_tokens": 2000}}))).summary
    assert first["status"]["skipped_budget"] >= 6 and first["status"]["ok"] >= 1
    assert first["status"]["ok"] + first["status"]["skipped_budget"] == 10
    spent = first["judge"]["input_tokens"] + first["judge"]["output_tokens"]
    assert spent <= 2000 and sim.stats.requests == first["status"]["ok"]
    skipped = [r for r in results(tmp_path) if r["status"] == "skipped_budget"]
    assert all(r["error"]["kind"] == "skipped_budget" for r in skipped)
    second = anyio.run(lambda: runner.run(validate_config({**base, "budget": {"max_judge_tokens": 100_000}}))).summary
    assert second["status"] == {"ok": 10} and second["results"] == 10
    assert sim.stats.requests == 10  # the finished cases were not asked again
    # The skipped lines stay in the append-only file, superseded: a rebuild from it agrees.
    from tracejudge.stages.reports import rebuild

    assert len(results(tmp_path)) == 10 + len(skipped)
    rebuilt, _ = rebuild(tmp_path / "run")
    assert rebuilt["status"] == {"ok": 10} and rebuilt["results"] == 10


def test_requests_in_flight_hold_their_worst_case_only_until_they_settle(simulator, tmp_path):
    # Every waiting request reserved its worst case (prompt + max_tokens) at once, and one that found the cap full of
    # such reservations was skipped for good: 30 cases under a cap that held all they spent ended 22 skipped_budget,
    # "judge budget ran out" with a fifth of it spent. A request now waits for those in flight to settle.
    sim = simulator()
    cases = write_cases(tmp_path / "c.jsonl", 30)
    free = run_config(tmp_path, sim.url, cases, run="free", judge={"max_tokens": 2000}, cache={"enabled": False})
    spent = free["judge"]["input_tokens"] + free["judge"]["output_tokens"]
    cap = spent + 2000 + 200  # room for all they spend, and for the last one's worst case; 30 worst cases are ~3x that
    capped = run_config(tmp_path, sim.url, cases, run="capped", judge={"max_tokens": 2000}, cache={"enabled": False},
                        budget={"max_judge_tokens": cap})
    assert capped["status"] == {"ok": 30} and capped["judge"]["input_tokens"] + capped["judge"]["output_tokens"] <= cap
    # A cap that holds half of it still stops at the cap: what is judged fits, the rest is skipped, nothing crosses.
    half = run_config(tmp_path, sim.url, cases, run="half", judge={"max_tokens": 2000}, cache={"enabled": False},
                      budget={"max_judge_tokens": spent // 2})
    used = half["judge"]["input_tokens"] + half["judge"]["output_tokens"]
    assert used <= spent // 2 and half["status"]["ok"] >= 30 // 2 - 5 and half["status"]["ok"] + half["status"]["skipped_budget"] == 30


def test_a_budget_cap_is_said_plainly_and_its_skips_are_counted_once_over_resumes(simulator, tmp_path):
    # The summary's judge.skipped_budget added up over segments (the same skipped cases counted again by each resume),
    # a skipped score said `requests: 1` for a request never sent, and nothing said the budget had run out.
    import subprocess
    import sys

    sim = simulator()
    cases = write_cases(tmp_path / "c.jsonl", 10)
    capped = {"budget": {"max_judge_tokens": 2000}, "judge": {"max_tokens": 100, "workers": 1}, "limits": {"max_in_flight": 1}}
    first = run_config(tmp_path, sim.url, cases, **capped)
    skipped = first["status"]["skipped_budget"]
    assert skipped >= 6 and first["judge"]["skipped_budget"] == skipped
    again = run_config(tmp_path, sim.url, cases, **capped)  # the resume meets the same cap on the same cases
    assert again["status"]["skipped_budget"] == skipped and again["judge"]["skipped_budget"] == skipped
    assert again["judge"]["requests"] == first["judge"]["requests"] == sim.stats.requests  # nothing more was sent
    for r in (r for r in results(tmp_path) if r["status"] == "skipped_budget"):
        info = r["scores"]["TaskCompletion"]["judge"]
        assert (info["requests"], info["input_tokens"], info["output_tokens"]) == (0, 0, 0)
    got = _forkserver.run([str(Path(sys.executable).with_name("tracejudge")), "report", str(tmp_path / "run")],
                         capture_output=True, text=True, timeout=120)
    text = " ".join(got.stdout.split())
    assert f"judge budget ran out (caps: budget.max_judge_tokens 2,000): {skipped} results (case, trial) were not judged" in text, text
    assert "judge budget ran out" in (tmp_path / "run" / "report.md").read_text()
    # The same command again meets the same cap: "0 new results" says how many are still skipped for it.
    cfg = tmp_path / "capped.json"
    cfg.write_text(json.dumps({"dataset": {"path": str(cases), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
                               "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1", **capped["judge"]},
                               "limits": capped["limits"], "budget": capped["budget"], "cache": {"dir": str(tmp_path / "cache")},
                               "run": {"dir": str(tmp_path / "run")}}))
    resumed = _forkserver.run([str(Path(sys.executable).with_name("tracejudge")), "run", str(cfg), "--no-progress"],
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode in (0, 1), resumed.stderr
    assert f"(0 new results, {10 - skipped} already finished, {skipped} still skipped for the judge budget)" in " ".join(resumed.stdout.split())


def test_dollar_budget_also_caps(simulator, tmp_path):
    sim = simulator()
    run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 3), budget={"max_cost_usd": 0.0})
    assert [r["status"] for r in results(tmp_path)] == ["skipped_budget"] * 3 and sim.stats.requests == 0


def test_cache_second_run_makes_zero_requests_and_reports_saving(simulator, tmp_path):
    sim = simulator()
    cases = write_cases(tmp_path / "c.jsonl", 20, calls=2)
    metrics = [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}]
    first = run_config(tmp_path, sim.url, cases, metrics=metrics, run="a")
    # One grouped request per case asks both metrics.
    assert sim.stats.requests == 20 and first["judge"]["cache_hits"] == 0 and first["judge"]["grouped_requests"] == 20
    second = run_config(tmp_path, sim.url, cases, metrics=metrics, run="b")
    assert sim.stats.requests == 20  # nothing new reached the server
    assert second["judge"]["requests"] == 0 and second["judge"]["cache_hits"] == 20
    assert second["judge"]["saved_usd"] == pytest.approx(first["judge"]["cost_usd"], rel=1e-6) and second["judge"]["cost_usd"] == 0
    a = {r["case_id"]: r["scores"] for r in results(tmp_path, "a")}
    b = {r["case_id"]: r["scores"] for r in results(tmp_path, "b")}
    for cid in a:
        for key in ("TaskCompletion", "ToolCallNecessity"):
            assert a[cid][key]["value"] == b[cid][key]["value"] and b[cid][key]["judge"]["cached"] is True


def test_explain_cache_names_the_component_that_changed(simulator, tmp_path):
    sim = simulator()
    cases = write_cases(tmp_path / "c.jsonl", 2)
    run_config(tmp_path, sim.url, cases, run="a")
    run_config(tmp_path, sim.url, cases, run="b", judge={"max_tokens": 300}, cache={"dir": str(tmp_path / "cache"), "explain": True})
    misses = {r["scores"]["TaskCompletion"]["judge"]["cache_miss"] for r in results(tmp_path, "b")}
    assert misses == {"changed: sampling"}


def _case(call_id: str, args: dict) -> Case:
    return Case.model_validate({"id": "k", "input": "do it", "trace": {"steps": [{"tool_calls": [{"id": call_id, "name": "t", "arguments": args, "result": {"b": 1, "a": 2}}]}], "output": "done"}})


def _key(metric, case: Case, cfg: JudgeConfig, trial: int = 0) -> str:
    plan = metric.plan(case)
    req = build_request(plan, plan.questions, cfg)
    return cache_key(key_components(cfg.provider, "http://x/v1", req, metric.prompt_version, metric.rubric, trial))


def test_cache_key_ignores_ids_and_dict_order_and_follows_model_rubric_max_tokens():
    cfg = JudgeConfig(provider="openai", model="gpt-4o-mini")
    base = _key(ToolCallNecessity(), _case("call_1", {"x": 1, "y": [1, {"p": 1, "q": 2}]}), cfg)
    assert _key(ToolCallNecessity(), _case("call_999", {"y": [1, {"q": 2, "p": 1}], "x": 1}), cfg) == base
    assert _key(ToolCallNecessity(name="other_name", threshold=0.9), _case("c", {"x": 1, "y": [1, {"p": 1, "q": 2}]}), cfg) == base
    assert _key(ToolCallNecessity(), _case("c", {"x": 1, "y": [1, {"p": 1, "q": 2}]}), cfg.model_copy(update={"model": "gpt-4o-mini-2024-07-18"})) != base
    assert _key(ToolCallNecessity(), _case("c", {"x": 1, "y": [1, {"p": 1, "q": 2}]}), cfg.model_copy(update={"max_tokens": 513})) != base
    assert _key(ToolCallNecessity(), _case("c", {"x": 1, "y": [1, {"p": 1, "q": 2}]}), cfg, trial=1) != base
    # Retry, timeout and concurrency settings never enter the key.
    assert _key(ToolCallNecessity(), _case("c", {"x": 1, "y": [1, {"p": 1, "q": 2}]}), cfg.model_copy(update={"timeout_s": 5, "max_attempts": 2, "workers": 3})) == base
    r1 = _key(Rubric(criteria="Be polite."), _case("c", {}), cfg)
    assert _key(Rubric(criteria="Be polite!"), _case("c", {}), cfg) != r1
    assert _key(Rubric(criteria="Be polite.", name="x"), _case("c", {}), cfg) == r1


def test_anthropic_protocol_and_api_key_never_written(simulator, tmp_path, monkeypatch):
    sim = simulator()
    secret = "sk-ant-test-SECRET-4242"
    monkeypatch.setenv("TJ_TEST_KEY", secret)
    summary = run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 3),
                         judge={"provider": "anthropic", "model": "claude-3-5-haiku", "api_key_env": "TJ_TEST_KEY"})
    assert summary["status"] == {"ok": 3} and sim.stats.by_path == {"/v1/messages": 3}
    for root in (tmp_path / "run", tmp_path / "cache"):
        for p in root.rglob("*"):
            if p.is_file():
                assert secret.encode() not in p.read_bytes(), p


def test_missing_api_key_variable_is_a_config_error(simulator, tmp_path, monkeypatch):
    from tracejudge.core.errors import ConfigError

    monkeypatch.delenv("TJ_MISSING_KEY", raising=False)
    with pytest.raises(ConfigError, match="TJ_MISSING_KEY is not set"):
        run_config(tmp_path, "http://127.0.0.1:9", write_cases(tmp_path / "c.jsonl", 1), judge={"api_key_env": "TJ_MISSING_KEY"})


def test_one_question_per_request_and_item_cap(simulator, tmp_path):
    sim = simulator()
    cases = write_cases(tmp_path / "c.jsonl", 1, calls=10)
    summary = run_config(tmp_path, sim.url, cases, metrics=[{"type": "ToolArgumentAccuracy", "one_question_per_request": True}])
    assert sim.stats.requests == 8 and summary["judge"]["requests"] == 8
    (r,) = results(tmp_path)
    score = r["scores"]["ToolArgumentAccuracy"]
    assert len(score["details"]["answers"]) == 8 and "first 8 of 10 tool calls" in score["reason"]
    assert score["judge"]["requests"] == 8


def test_too_long_prompt_skip_and_truncate_policies(simulator, tmp_path):
    sim = simulator()
    cases = write_cases(tmp_path / "c.jsonl", 1, calls=40)
    run_config(tmp_path, sim.url, cases, run="skip", judge={"context_tokens": 1200, "max_tokens": 100, "too_long": "skip"})
    (r,) = results(tmp_path, "skip")
    s = r["scores"]["TaskCompletion"]
    assert s["value"] is None and s["reason"].startswith("too_long:") and s["details"]["too_long_tokens"] > 1100
    assert sim.stats.requests == 0
    # Nothing was sent: no request and no latency (it recorded the microseconds spent deciding not to send).
    assert s["judge"]["requests"] == 0 and s["judge"]["latency_s"] is None, s["judge"]
    # Items that shared a request too long for the window are each asked alone, and skipped alone: no latency either.
    run_config(tmp_path, sim.url, write_cases(tmp_path / "c2.jsonl", 2, calls=40), run="skip2",
               judge={"context_tokens": 1200, "max_tokens": 100, "too_long": "skip", "items_per_request": 2, "item_wait_s": 1.0})
    assert [(r["scores"]["TaskCompletion"]["judge"]["requests"], r["scores"]["TaskCompletion"]["judge"]["latency_s"])
            for r in results(tmp_path, "skip2")] == [(0, None), (0, None)]
    assert sim.stats.requests == 0
    run_config(tmp_path, sim.url, cases, run="cut", judge={"context_tokens": 1200, "max_tokens": 100})
    (r,) = results(tmp_path, "cut")
    s = r["scores"]["TaskCompletion"]
    assert s["value"] is not None and "middle steps left out" in s["reason"] and sim.stats.input_tokens <= 1100
    assert s["judge"]["requests"] == 1 and s["judge"]["latency_s"] > 0


def test_gate_failure_exits_1_from_the_cli(simulator, tmp_path):
    import subprocess
    import sys

    sim = simulator(script=["quota"])
    cases = write_cases(tmp_path / "c.jsonl", 1)
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(json.dumps({"dataset": {"path": str(cases), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
                               "judge": {"provider": "openai", "base_url": sim.url + "/v1"}, "cache": {"dir": str(tmp_path / "cache")},
                               "run": {"dir": str(tmp_path / "run")}}))
    exe = os.path.join(os.path.dirname(sys.executable), "tracejudge")
    proc = _forkserver.run([exe, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "judge max_error_share" in proc.stdout and "verdict: FAIL" in proc.stdout


def test_estimate_counts_exact_input_tokens_and_known_cache_hits(simulator, tmp_path):
    from tracejudge.stages.judge.client import request_tokens
    from tracejudge.stages.judge.estimate import estimate

    sim = simulator()
    cases = write_cases(tmp_path / "c.jsonl", 4)
    data = {"dataset": {"path": str(cases), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
            "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1", "expected_output_tokens": 30},
            "cache": {"dir": str(tmp_path / "cache")}, "run": {"dir": str(tmp_path / "run")}}
    config = validate_config(data)
    before = estimate(config)
    e = before["metrics"]["TaskCompletion"]
    m = TaskCompletion()
    expected_in = 0
    for line in cases.read_text().splitlines():
        plan = m.plan(Case.model_validate_json(line))
        expected_in += request_tokens(build_request(plan, plan.questions, config.judge))
    assert (e.requests, e.cache_hits, e.input_tokens, e.output_tokens) == (4, 0, expected_in, 4 * 4 * 30)
    assert sim.stats.requests == 0  # no call was made
    summary = anyio.run(lambda: runner.run(config)).summary
    assert summary["judge"]["input_tokens"] == expected_in  # the simulator counts as the estimate does
    after = estimate(config)["metrics"]["TaskCompletion"]
    assert (after.requests, after.cache_hits, after.input_tokens, after.cost_usd) == (0, 4, 0, 0.0)
    # Grouped or not, `requests` are what will be sent: cache hits are never in it.
    grouped = validate_config({**data, "judge": {**data["judge"], "items_per_request": 2}})
    assert estimate(grouped)["metrics"]["TaskCompletion"].requests == 2
    anyio.run(lambda: runner.run(grouped, run_dir=tmp_path / "grouped"))
    after = estimate(grouped)["metrics"]["TaskCompletion"]
    assert (after.requests, after.cache_hits) == (0, 4)


_SECRET = "sk-proj-Zq8Xw2Lr5Tn9Vb3Mk7Hd4Gf6"


def test_the_cache_folder_holds_no_trace_text_and_still_explains_a_changed_prompt(simulator, tmp_path):
    """The index that explains misses keeps the prompts as a digest: a CI job that keeps the cache folder keeps no
    trace text (here a key an agent passed to a tool), grouped requests and single ones alike."""
    sim = simulator()
    cases = tmp_path / "c.jsonl"
    rows = [{"id": f"s{i}", "input": f"Rotate the key for account {i}",
             "trace": {"steps": [{"tool_calls": [{"id": "c1", "name": "rotate", "arguments": {"old_key": _SECRET, "dsn": "postgres://u:Pa55w0rdXyz@db/x"},
                                                  "result": "rotated"}]}], "output": f"Rotated {_SECRET}"}} for i in range(3)]
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_config(tmp_path, sim.url, cases, run="a", metrics=[{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}])
    run_config(tmp_path, sim.url, cases, run="b", metrics=[{"type": "TaskCompletion"}])
    assert sim.stats.requests == 6
    stored = b"".join(p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert b"Rotate the key" not in stored and _SECRET.encode() not in stored and b"Pa55w0rdXyz" not in stored
    rows[0]["input"] = "Rotate the key for account zero"
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_config(tmp_path, sim.url, cases, run="c", metrics=[{"type": "TaskCompletion"}], cache={"dir": str(tmp_path / "cache"), "explain": True})
    misses = {r["case_id"]: r["scores"]["TaskCompletion"]["judge"]["cache_miss"] for r in results(tmp_path, "c")}
    assert misses == {"s0": "changed: messages", "s1": None, "s2": None}


def test_a_stored_answer_is_masked_as_results_mask_it_and_a_hit_gives_the_same(tmp_path):
    from tracejudge.llm.cache import DiskJudgeCache, diff_components
    cache = DiskJudgeCache(tmp_path / "cache")
    comps = {"provider": "openai", "base_url": "u", "model": "m", "messages": [{"role": "user", "content": f"key {_SECRET}"}],
             "sampling": {}, "response_format": None, "prompt_version": "1", "rubric": None, "trial": 0}
    cache.put("k", {"answers": {"q1": {"verdict": "yes", "reason": f"it printed {_SECRET}"}}, "text": f'{{"reason": "it printed {_SECRET}"}}'}, comps, "s")
    hit = cache.get("k")
    assert _SECRET not in json.dumps(hit) and json.loads(hit["text"])["reason"].startswith("it printed ")
    assert hit["answers"]["q1"]["verdict"] == "yes"
    assert cache.explain(comps, "s") == "an entry with these components was written and then removed"
    assert diff_components(comps, {**comps, "messages": [{"role": "user", "content": "other"}]}) == ["messages"]
    cache.close()
    assert _SECRET.encode() not in b"".join(p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file())


def test_a_password_in_the_judges_url_is_kept_nowhere_in_the_cache_or_the_run_directory(simulator, tmp_path):
    # `base_url: http://user:pass@host/v1` (a proxy with basic auth) went into the cache's index, manifest.json and
    # configs.jsonl in clear; the requests still carry it, so the judge answers.
    sim = simulator()
    url = sim.url.replace("http://", "http://bob:UrlPassw0rdXYZ@") + "/v1"
    summary = run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 3), judge={"base_url": url, "api_key_env": None},
                         cache={"dir": str(tmp_path / "cache"), "explain": True})
    assert summary["status"] == {"ok": 3} and sim.stats.requests == 3
    stored = b"".join(p.read_bytes() for d in (tmp_path / "cache", tmp_path / "run") for p in d.rglob("*") if p.is_file())
    assert b"UrlPassw0rdXYZ" not in stored and b"bob:[REDACTED]@" in stored
    again = run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 3), run="again", judge={"base_url": url, "api_key_env": None})
    assert again["judge"]["cache_hits"] == 3 and sim.stats.requests == 3  # the key is the real URL's, as before
    resumed = run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 3), judge={"base_url": url, "api_key_env": None})
    assert resumed["status"] == {"ok": 3} and sim.stats.requests == 3  # the same run resumes: its recorded config is the same


def test_a_user_in_the_judges_url_beside_a_key_is_a_config_error(simulator, tmp_path, monkeypatch):
    # Both go in the Authorization header; aiohttp refused every request, and each case read "the agent raised…".
    from tracejudge.core.errors import ConfigError

    sim = simulator()
    monkeypatch.setenv("TJ_TEST_KEY", "sk-test-0000")
    url = sim.url.replace("http://", "http://bob:Pw0rdXYZ@") + "/v1"
    with pytest.raises(ConfigError) as err:
        run_config(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 1), judge={"base_url": url, "api_key_env": "TJ_TEST_KEY"})
    assert str(err.value).startswith("judge.base_url: it holds a user name before its host") and "Pw0rdXYZ" not in str(err.value)
    assert sim.stats.requests == 0
