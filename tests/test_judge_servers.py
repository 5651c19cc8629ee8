"""Judging against real model servers, over real HTTP on 127.0.0.1: the simulator's local-server knobs and hostile endpoints.

Per-request verdict schemas, `judge.structured_output`, request errors and an unreachable judge that stop the run,
hostile replies, the context fit and `judge.tokenizer`, timeouts, the estimate's range, `bench`, and
unparseable grouped verdicts.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from _loopback import Loopback, any_verdict, completion, verdict
from aiohttp import web
from tracejudge.core.config import JudgeConfig, validate_config
from tracejudge.engine import runner
from tracejudge.simulator.server import free_port
import _forkserver

TWO = [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}]


def cases(path: Path, n: int, steps: int = 1) -> Path:
    with open(path, "w") as fh:
        for i in range(n):
            st = [{"tool_calls": [{"name": "lookup", "arguments": {"q": f"item {i} {k}"}, "result": f"found {i} {k}"}]} for k in range(steps)]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i}", "trace": {"steps": st, "output": f"Item {i} is found."}}) + "\n")
    return path


def config(tmp: Path, url: str, data: Path, *, metrics: list[dict[str, Any]] | None = None, run: str = "run", **judge: Any) -> dict[str, Any]:
    return {"dataset": {"path": str(data), "format": "native"}, "metrics": metrics or TWO,
            "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": url + "/v1", **judge},
            "cache": {"dir": str(tmp / "cache"), "enabled": False}, "run": {"dir": str(tmp / run)}}


def run(data: dict[str, Any]) -> dict[str, Any]:
    return anyio.run(lambda: runner.run(validate_config(data))).summary


def results(tmp: Path, run_name: str = "run") -> list[dict[str, Any]]:
    path = tmp / run_name / "results.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


def tj(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return _forkserver.run([sys.executable, "-m", "tracejudge", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def write(tmp: Path, data: dict[str, Any]) -> Path:
    path = tmp / "config.yaml"
    path.write_text(json.dumps(data))
    return path


# ---------------------------------------------------------------- 1. each request's schema names its own ids


@pytest.mark.parametrize("items", [1, 2])
def test_each_requests_schema_requires_exactly_its_question_ids(tmp_path, items):
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        return 200, completion(json.dumps(any_verdict(body)))  # (multi-item: one verdict per item)

    with Loopback(respond) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 2), items_per_request=items, item_wait_s=2.0))
        bodies = [b for _, b in server.requests]
    assert summary["status"] == {"ok": 2}
    for body in bodies:
        schema = body["response_format"]["json_schema"]["schema"]
        subs = [schema["$defs"][p["$ref"].split("/")[-1]] for p in schema["properties"].values()] if items > 1 else [schema]
        for sub in subs:
            ids = sub["required"]
            asked = [line.split(":")[0] for line in body["messages"][1]["content"].splitlines() if line[:2] in ("TC", "TCN") and ":" in line]
            assert sorted(ids) == sorted(set(ids)) and set(ids) <= set(asked) and sub["additionalProperties"] is False
            assert set(sub["properties"]) == set(ids) and {i[:2] for i in ids} == {"TC"}  # TC1…, TCN1…: the grouped request's own ids


# ---------------------------------------------------------------- 2. structured_output modes


@pytest.mark.parametrize("mode", ["json_object", "none"])
def test_json_object_and_none_modes_are_judged_by_a_json_object_only_server(simulator, tmp_path, mode):
    sim = simulator(json_object_only=True)
    summary = run(config(tmp_path, sim.url, cases(tmp_path / "c.jsonl", 4), structured_output=mode))
    assert summary["status"] == {"ok": 4} and sim.stats.server_errors == 0
    assert sim.stats.requests == 4 and summary["judge"]["parse_failed_items"] == 0  # one grouped request per case, each parsed


def test_json_schema_to_a_json_object_only_server_stops_at_once_and_the_fixed_config_resumes(simulator, tmp_path):
    sim = simulator(json_object_only=True)
    data = config(tmp_path, sim.url, cases(tmp_path / "c.jsonl", 30))
    data["limits"] = {"max_in_flight": 2}
    cfg = write(tmp_path, data)
    proc = tj("run", str(cfg), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if "refused the request itself" in x]
    assert len(lines) == 1 and "Input should be 'text' or 'json_object'" in lines[0] and "judge.structured_output" in lines[0]
    assert sim.stats.requests <= 4  # not retried, not re-asked per metric: stopped at the first refusals
    assert results(tmp_path) == []  # nothing marked final, nothing provisional
    again = tj("run", str(cfg), "--no-progress", "--set", "judge.structured_output=json_object", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert [r["status"] for r in results(tmp_path)] == ["ok"] * 30


def test_a_4xx_request_error_is_not_retried_and_a_content_filter_stays_one_cases_failure(simulator, tmp_path):
    sim = simulator(script=["bad_request"])
    with pytest.raises(Exception, match="refused the request itself.*response_format.*structured_output"):
        run(config(tmp_path, sim.url, cases(tmp_path / "c.jsonl", 1)))
    assert sim.stats.requests == 1
    sim2 = simulator(script=["400"])  # a content filter: the grouped request re-asked per metric, the case judged
    assert run(config(tmp_path, sim2.url, cases(tmp_path / "c.jsonl", 1), run="run2"))["status"] == {"ok": 1}


def test_an_unreachable_judge_is_waited_for_then_stops_naming_the_url_exit_3(tmp_path):
    # Refused before any answer, the judge may be a server still starting (vLLM binds its port once the model is
    # loaded): one request at a time tries it until judge.max_retry_wait_s is spent, then the run stops.
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    cfg = write(tmp_path, config(tmp_path, url, cases(tmp_path / "c.jsonl", 200), max_retry_wait_s=2))
    proc = tj("run", str(cfg), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if "cannot reach the judge" in x]
    assert len(lines) == 1 and url + "/v1/chat/completions" in lines[0] and "judge.base_url" in lines[0]
    assert results(tmp_path) == []


# ---------------------------------------------------------------- 4. hostile replies


class Hostile(Loopback):
    """Answers each request by the case it asks about: a reply nested 200,000 deep, usage 1e999, an oversized body, an endless stream."""

    sent: int = 0

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(({}, body))
        user = body["messages"][1]["content"]
        good = json.dumps(completion(json.dumps(verdict(body))))
        if "Find item 0" in user:
            return web.Response(text="[" * 200_000 + "]" * 200_000, content_type="application/json")
        if "Find item 1" in user:
            return web.Response(text=good.replace('"prompt_tokens": 50', '"prompt_tokens": 1e999'), content_type="application/json")
        if "Find item 2" in user:
            return web.Response(text=good + " " * (3 << 20), content_type="application/json")
        if "Find item 3" in user:
            return await _endless(self, request)
        return web.Response(text=good, content_type="application/json")


def test_hostile_replies_are_provider_errors_and_reading_stops_at_the_cap(tmp_path):
    # (Usage of 1e999 is a reply whose usage is unknown: its verdict counts, its cost is null.)
    with Hostile(lambda h, b: None) as server:
        summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 5), metrics=[{"type": "TaskCompletion"}],
                             max_response_bytes=1 << 20, max_attempts=1))
        sent = server.sent
    got = {r["case_id"]: r for r in results(tmp_path)}
    assert summary["status"] == {"judge_error": 3, "ok": 2}
    for cid in ("case-0", "case-2", "case-3"):
        assert got[cid]["status"] == "judge_error" and got[cid]["error"]["kind"] == "provider_error", got[cid]
    assert "not a JSON object" in got["case-0"]["error"]["message"]
    assert got["case-1"]["status"] == "ok" and got["case-1"]["scores"]["TaskCompletion"]["judge"]["cost_usd"] is None
    assert summary["judge"]["usage_unknown_replies"] == 1 and summary["judge"]["cost_usd"] is None
    assert "max_response_bytes" in got["case-2"]["error"]["message"] and "max_response_bytes" in got["case-3"]["error"]["message"]
    assert sent < 16 << 20  # the endless reply was cut near the 1 MiB cap, not read on


# ---------------------------------------------------------------- 5. the fit, the tokenizer, timeouts


def test_the_fit_reserves_max_tokens_for_every_metric_of_a_grouped_request(simulator, tmp_path):
    from tracejudge.core.records import Case
    from tracejudge.stages.judge.base import grouped_plan
    from tracejudge.stages.judge.fit import fit_request
    from tracejudge.stages.judge.metrics import TaskCompletion, ToolCallNecessity

    case = Case.model_validate(json.loads(cases(tmp_path / "one.jsonl", 1).read_text()))
    gp = grouped_plan([TaskCompletion().plan(case), ToolCallNecessity().plan(case)])
    prompt = fit_request(gp, gp.questions, JudgeConfig(too_long="skip")).req
    from tracejudge.stages.judge.client import request_tokens

    window = request_tokens(prompt) + 700  # room for 512 output tokens, not for 2 × 512
    fitted = fit_request(gp, gp.questions, JudgeConfig(too_long="skip", max_tokens=512, context_tokens=window))
    assert fitted.req.max_tokens == 1024 and not fitted.fits
    # Against a server with that window: the grouped prompt is never sent to overflow it; each metric is asked alone,
    # so no prompt was left unsent with its scores null.
    sim = simulator(context_tokens=window)
    summary = run(config(tmp_path, sim.url, cases(tmp_path / "c.jsonl", 1), too_long="skip", context_tokens=window, max_tokens=512))
    assert sim.stats.refused == 0 and sim.stats.answered == 2
    assert summary["judge"]["too_long"] == 0 and summary["judge"]["parts_reasked_alone"] == 2


def test_a_tokenizer_factor_makes_estimate_admission_and_usage_agree_with_the_server(simulator, tmp_path):
    from tracejudge.stages.judge.estimate import estimate

    sim = simulator(tokenizer_factor=1.25)
    data = config(tmp_path, sim.url, cases(tmp_path / "c.jsonl", 3), tokenizer={"factor": 1.25})
    est = estimate(validate_config(data))["total"]
    j = run(data)["judge"]
    assert est.input_tokens == j["input_tokens"] == sim.stats.input_tokens
    plain = estimate(validate_config(config(tmp_path, sim.url, tmp_path / "c.jsonl")))["total"]
    assert plain.input_tokens < est.input_tokens


def test_a_tokenizer_json_needs_the_tokenizers_package_or_names_the_file(tmp_path):
    from tracejudge.core.errors import ConfigError
    from tracejudge.stages.judge.stage import judge_stage

    data = config(tmp_path, "http://127.0.0.1:9", cases(tmp_path / "c.jsonl", 1), tokenizer=str(tmp_path / "missing" / "tokenizer.json"))
    with pytest.raises(ConfigError, match=r"judge\.tokenizer: .*(tokenizers|not a file)"):
        judge_stage(validate_config(data), [], lambda m, c: m)


def test_timeouts_say_to_raise_judge_timeout_s(simulator, tmp_path):
    from tracejudge.stages.reports.judge_lines import judge_lines

    sim = simulator(script=["ok", "timeout"], hang_s=3)  # (answered first: a judge that never answered stops the run)
    data = config(tmp_path, sim.url, cases(tmp_path / "c.jsonl", 2), metrics=[{"type": "TaskCompletion"}], timeout_s=0.3, max_attempts=1)
    data["limits"] = {"max_in_flight": 1}
    summary = run(data)
    (r,) = [r for r in results(tmp_path) if r["status"] != "ok"]
    assert r["error"]["kind"] == "timeout" and "judge.timeout_s 0.3: raise it" in r["error"]["message"]
    assert any("raise judge.timeout_s (now 0.3 s)" in line for line in judge_lines(summary))  # the terminal's judge lines


# ---------------------------------------------------------------- 6. estimate's range


def test_estimate_gives_a_range_and_uses_the_last_runs_reask_rate(simulator, tmp_path):
    sim = simulator(script=["near_miss", "near_miss"] + ["ok"] * 50)
    data = config(tmp_path, sim.url, cases(tmp_path / "c.jsonl", 4), workers=1)
    data["limits"] = {"max_in_flight": 1}
    cfg = write(tmp_path, data)
    first = tj("estimate", str(cfg), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    text = " ".join(first.stdout.split())  # the terminal wraps long lines
    assert "range: 4–16 requests" in text and "no earlier run" in text  # worst: a repair and 2 metrics alone each
    j = run(data)["judge"]
    assert j["repairs"] == 1 and j["parts_reasked_alone"] == 2 and j["requests"] == 7  # grouped, repair, 2 alone; 3 more cases
    text = " ".join(tj("estimate", str(cfg), cwd=tmp_path).stdout.split())
    assert "range: 4–7 requests" in text and "re-ask/repair rate of the last run" in text and "(0.75 extra" in text


# ---------------------------------------------------------------- 7. bench


def test_bench_sends_the_runs_grouped_requests_and_shows_the_servers_message(simulator, tmp_path):
    sim = simulator(json_object_only=True)
    data = config(tmp_path, sim.url, cases(tmp_path / "c.jsonl", 6))
    cfg = write(tmp_path, data)
    out = tmp_path / "bench.json"
    proc = tj("bench", str(cfg), "--sample", "3", "--requests", "6", "--duration", "0.5", "--json", str(out), cwd=tmp_path)
    report = json.loads(out.read_text())
    assert proc.returncode == 1 and {a["metric"] for a in report["attempts"]} == {"TaskCompletion+ToolCallNecessity"}
    assert "Input should be 'text' or 'json_object'" in report["error_messages"]["request"]
    assert "request" in proc.stdout and "validation" in proc.stdout and "set judge.structured_output" in proc.stdout  # the table wraps the message
    ok = tj("bench", str(cfg), "--sample", "3", "--requests", "6", "--duration", "0.5", "--set", "judge.structured_output=json_object",
            "--json", str(out), cwd=tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert json.loads(out.read_text())["measured"]["errors"] == {}


def test_bench_says_to_raise_the_timeout_and_a_dry_run_needs_no_key(simulator, tmp_path):
    sim = simulator(script=["timeout"] * 40, hang_s=2)
    data = config(tmp_path, sim.url, cases(tmp_path / "c.jsonl", 2), timeout_s=0.2)
    cfg = write(tmp_path, data)
    proc = tj("bench", str(cfg), "--sample", "2", "--requests", "3", "--duration", "0.2", cwd=tmp_path)
    assert "raise judge.timeout_s (now 0.2 s)" in proc.stdout
    data["judge"]["api_key_env"] = "TJ_NOT_SET_ANYWHERE"
    dry = tj("bench", str(write(tmp_path, data)), "--dry-run", cwd=tmp_path, env={"TJ_NOT_SET_ANYWHERE": ""})
    assert dry.returncode == 0 and "nothing sent" in dry.stdout, dry.stderr


# ---------------------------------------------------------------- 8. unparseable grouped verdicts


def test_an_unparseable_grouped_reply_costs_2_plus_m_requests_and_parse_failures_count_per_item(tmp_path):
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        user = body["messages"][1]["content"]
        if "Find item 0" in user or "Find item 1" in user:
            return 200, completion("GRADE TC1: yes")
        return 200, completion(json.dumps(verdict(body)))

    rates = {}
    for group in ("none", "case"):
        with Loopback(respond) as server:
            summary = run(config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 6), run=group, group=group))
            n = len(server.requests)
        rates[group] = summary["judge"]["parse_failure_rate"]
        assert summary["status"] == {"judge_error": 2, "ok": 4}
        assert n == (2 * 2 * 2 + 4 * 2 if group == "none" else 2 * (2 + 2) + 4)  # grouped: request, repair, each metric alone once
    assert rates["none"] == rates["case"] == pytest.approx(4 / 12)


class HostileAgent(Loopback):
    """A live agent (target kind `http`) answering by the case's `metadata.kind`: a 200,000-deep reply, an endless stream, or a reply."""

    sent: int = 0

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        kind = (await request.json())["case"]["metadata"].get("kind")
        if kind == "deep":
            return web.Response(text="[" * 200_000 + "]" * 200_000, content_type="application/json")
        if kind == "endless":
            return await _endless(self, request)
        return web.json_response({"output": "done", "trace": {"steps": []}})


async def _endless(server: Any, request: web.Request) -> web.StreamResponse:
    """A chunked reply that never ends (until 64 MiB, so a broken client cannot hang the test); counts what it sent."""
    resp = web.StreamResponse()
    resp.enable_chunked_encoding()
    await resp.prepare(request)
    try:
        while server.sent < 64 << 20:
            await resp.write(b" " * 65536)
            server.sent += 65536
            await asyncio.sleep(0)
    except (ConnectionError, RuntimeError):
        pass
    return resp


def test_a_live_http_targets_endless_or_deeply_nested_reply_fails_only_its_case(tmp_path):
    from live_support import by_key, live_config, read_jsonl

    with HostileAgent(lambda h, b: None) as server:
        target = {"kind": "http", "url": server.url + "/v1/chat/completions", "retries": 0, "max_response_bytes": 1 << 20}
        data = [{"id": k, "input": "hi", "metadata": {"kind": k}} for k in ("ok", "deep", "endless")]
        outcome = anyio.run(runner.run, live_config(tmp_path, data, target))
        sent = server.sent
    got = by_key(read_jsonl(tmp_path / "run" / "results.jsonl"))
    assert outcome.summary["status"] == {"ok": 1, "target_error": 2}
    assert "not JSON" in got[("deep", 0)]["error"]["message"] and "max_response_bytes" in got[("endless", 0)]["error"]["message"]
    assert sent < 16 << 20


def test_a_tokenizer_json_drives_the_fit(simulator, tmp_path):
    tokenizers = pytest.importorskip("tokenizers")  # the `local-judges` extra
    from tracejudge.stages.judge.client import build_request, request_tokens
    from tracejudge.stages.judge.requests import case_requests
    from tracejudge.core.records import Case
    from tracejudge.stages.judge.metrics import TaskCompletion

    # A character-level tokenizer (a stand-in for a model whose tokenizer counts far more than tiktoken).
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab={"[UNK]": 0}, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Split(tokenizers.Regex("."), behavior="isolated")
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    data = cases(tmp_path / "c.jsonl", 1)
    case = Case.model_validate(json.loads(data.read_text()))
    (asked,), _ = case_requests(case, [TaskCompletion()], JudgeConfig(), reused=False)
    req = build_request(asked.plan, asked.questions[0], JudgeConfig())
    by_tiktoken, by_chars = request_tokens(req), request_tokens(req, str(path))
    assert by_chars > 2 * by_tiktoken
    window = by_tiktoken + 512 + 100  # fits by tiktoken's count, not by the server's
    sim = simulator()
    base = config(tmp_path, sim.url, data, metrics=[{"type": "TaskCompletion"}], too_long="skip", context_tokens=window, max_tokens=512)
    assert run(base)["judge"]["too_long"] == 0
    base["judge"]["tokenizer"] = str(path)
    base["run"]["dir"] = str(tmp_path / "run2")
    j = run(base)["judge"]
    assert j["too_long"] == 1 and j["requests"] == 0
    (r,) = results(tmp_path, "run2")
    assert f"the judge prompt has {by_chars} tokens" in r["scores"]["TaskCompletion"]["reason"]


class Nested(Loopback):
    """Every reply nested 200,000 deep."""

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(({}, await request.json()))
        return web.Response(text="[" * 200_000 + "]" * 200_000, content_type="application/json")


def test_bench_classifies_a_hostile_reply_instead_of_crashing(tmp_path):
    with Nested(lambda h, b: None) as server:
        out = tmp_path / "bench.json"
        proc = tj("bench", "--synthetic", "--provider", "openai", "--base-url", server.url + "/v1", "--prompt-tokens", "50", "--max-tokens", "20",
                  "--requests", "3", "--duration", "0.2", "--json", str(out), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # nothing answered: a verdict on the endpoint, not an internal error (3)
    report = json.loads(out.read_text())
    assert "not a JSON object" in report["error_messages"]["server"]


def test_simulator_json_object_only_answers_llama_cpp_pythons_500_and_counts_tokens_by_the_factor(simulator):
    import math
    import urllib.error
    import urllib.request

    from tracejudge.llm.tokens import counter_for

    def post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(), headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    schema = {"type": "object", "properties": {"TC1": {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]}}}}}
    messages = [{"role": "user", "content": "Questions:\nTC1: done?"}]
    sim = simulator(json_object_only=True, tokenizer_factor=1.25)
    status, body = post(sim.url, {"model": "gpt-4o-mini", "messages": messages,
                                   "response_format": {"type": "json_schema", "json_schema": {"name": "answers", "schema": schema}}})
    assert status == 500 and body["error"]["type"] == "internal_server_error"
    assert "'loc': ('body', 'response_format', 'type')" in body["error"]["message"] and "Input should be 'text' or 'json_object'" in body["error"]["message"]
    status, body = post(sim.url, {"model": "gpt-4o-mini", "messages": messages, "response_format": {"type": "json_object", "schema": schema}})
    assert status == 200 and set(json.loads(body["choices"][0]["message"]["content"])) == {"TC1"}
    assert body["usage"]["prompt_tokens"] == math.ceil(counter_for("gpt-4o-mini").messages(messages) * 1.25)


def test_estimate_after_a_run_that_got_no_reply_keeps_the_worst_case(tmp_path):
    # The last run's server was not there (8 requests refused, none answered): its re-ask rate of 0 measured nothing,
    # and the high end said "2–2 requests ... (0.00 extra requests per request)".
    from tracejudge.stages.judge.estimate import last_run_rate

    (tmp_path / "summary.json").write_text(json.dumps({"judge": {"requests": 8, "answered": 0, "repairs": 0, "connection_errors": 8}}))
    assert last_run_rate(tmp_path) is None
    (tmp_path / "summary.json").write_text(json.dumps({"judge": {"requests": 8, "answered": 8, "repairs": 2}}))
    assert last_run_rate(tmp_path) == 2 / 6
