"""Judge cost over the simulator: single flight, isolation of a refused multi-item request, cached input tokens."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.simulator.server import SimulatorThread


def write_cases(path: Path, n: int, *, same: bool = True, marked: set[int] = frozenset()) -> Path:  # type: ignore[assignment]
    """`n` cases; with `same`, all produce the same judge prompt (only their ids differ)."""
    with open(path, "w") as fh:
        for i in range(n):
            k = 0 if same else i
            text = f"found {k}" + (" FORBIDDEN-MARKER" if i in marked else "")
            steps = [{"tool_calls": [{"id": f"c{i}", "name": "lookup", "arguments": {"q": f"item {k}"}, "result": text}]}]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {k}", "trace": {"steps": steps, "output": f"Item {k} is found."}}) + "\n")
    return path


def run(tmp: Path, sim_url: str, cases: Path, *, run_name: str = "run", cache: str = "cache", **judge: Any) -> dict[str, Any]:
    data = {
        "dataset": {"path": str(cases), "format": "native"},
        "metrics": [{"type": "TaskCompletion"}],
        "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim_url + "/v1", **judge},
        "cache": {"dir": str(tmp / cache)},
        "run": {"dir": str(tmp / run_name)},
    }
    return anyio.run(lambda: runner.run(validate_config(data))).summary


def results(tmp: Path, run_name: str = "run") -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in map(json.loads, (tmp / run_name / "results.jsonl").read_text().splitlines())}


def test_identical_requests_in_flight_are_sent_once(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    # Latency keeps the first request in flight while the other 19 arrive.
    sim = simulator(latency_ms=300)
    cases = write_cases(tmp_path / "c.jsonl", 20)
    summary = run(tmp_path, sim.url, cases)
    assert summary["status"] == {"ok": 20}
    assert sim.stats.requests == 1
    j = summary["judge"]
    assert (j["requests"], j["single_flight_shared"], j["cache_hits"]) == (1, 19, 19)
    got = results(tmp_path)
    scores = {json.dumps(r["scores"]["TaskCompletion"]["value"]) for r in got.values()}
    assert len(scores) == 1
    paid = [r["scores"]["TaskCompletion"]["judge"] for r in got.values() if not r["scores"]["TaskCompletion"]["judge"]["cached"]]
    assert len(paid) == 1 and paid[0]["input_tokens"] > 0  # the 19 waiters cost nothing
    # A second run is served from the cache the first one filled.
    again = run(tmp_path, sim.url, cases, run_name="again")
    assert again["status"] == {"ok": 20} and sim.stats.requests == 1


def test_a_failed_flight_lets_each_waiter_ask_on_its_own(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    # The one request sent fails for good (400): its failure is not shared, each waiter asks on its own and gets its
    # own answer. On a busy machine a case can be read only after a waiter's answer reached the cache, so the test
    # counts every case as either a request or a cache hit instead of asserting five requests.
    sim = simulator(latency_ms=500, script=["400"])
    summary = run(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 5))
    assert summary["status"] == {"judge_error": 1, "ok": 4}
    j = summary["judge"]
    assert sim.stats.requests == j["requests"] >= 2 and sim.stats.refused == 1
    assert j["requests"] + j["cache_hits"] == 5


def test_a_refused_multi_item_request_fails_only_the_offending_item(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    # The simulator refuses (400 content_filter) any prompt holding the marker: only case-1 carries it.
    sim = simulator(refuse_marker="FORBIDDEN-MARKER")
    summary = run(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 3, same=False, marked={1}), items_per_request=3, item_wait_s=5.0)
    assert summary["status"] == {"judge_error": 1, "ok": 2}
    got = results(tmp_path)
    bad = got["case-1"]["scores"]["TaskCompletion"]
    assert got["case-1"]["status"] == "judge_error"
    assert bad["details"]["error_kind"] == "provider_error" and bad["details"]["http_status"] == 400
    assert "content filter" in bad["reason"]
    for cid in ("case-0", "case-2"):
        s = got[cid]["scores"]["TaskCompletion"]
        assert got[cid]["status"] == "ok" and s["value"] is not None
        assert s["details"]["batch"]["split_from"]["items"] and "was refused" in s["details"]["batch"]["split_from"]["why"]
    j = summary["judge"]
    # The 3-item request and every smaller group still holding case-1 were refused and split; case-1 alone fails once.
    assert j["requests_split"] >= 1 and sim.stats.refused == j["requests_split"] + 1
    assert j["judge_errors"] == 1 and sim.stats.requests <= 5


def booking_steps(calls: int = 8) -> list[dict[str, Any]]:
    """Steps with `calls` tool results of about 900 characters each (under the cut of one result, together well over 1,024 tokens)."""
    rows = [" ".join(f"row {k}: seat {c}{k % 7}A, fare class Y, status confirmed;" for k in range(18)) for c in range(calls)]
    return [{"tool_calls": [{"id": f"c{c}", "name": "get_booking", "arguments": {"ref": f"ABC{c}"}, "result": r}]} for c, r in enumerate(rows)]


def write_long_cases(path: Path, n: int) -> Path:
    """`n` cases with long tool results (well over 1,024 tokens)."""
    with open(path, "w") as fh:
        for i in range(n):
            steps = booking_steps()
            fh.write(json.dumps({"id": f"case-{i}", "input": "List the booked seats", "trace": {"steps": steps, "output": f"Answer number {i}."}}) + "\n")
    return path


def test_cached_input_tokens_are_read_priced_and_reported(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    from tracejudge.llm.prices import price_for

    sim = simulator()
    cases = write_long_cases(tmp_path / "c.jsonl", 3)
    first = run(tmp_path, sim.url, cases, run_name="first", cache="cache-1")
    assert first["judge"]["cached_input_tokens"] == 0 and sim.stats.cached_input_tokens == 0
    # The same prompts again, past our own cache (a fresh one): the provider's prefix cache serves them,
    # reported as OpenAI does: at least 1,024 tokens, in 128-token steps, never more than the prompt.
    summary = run(tmp_path, sim.url, cases, run_name="run", cache="cache-2")
    assert summary["status"] == {"ok": 3}
    j = summary["judge"]
    infos = [r["scores"]["TaskCompletion"]["judge"] for r in results(tmp_path).values()]
    cached = [i["cached_input_tokens"] for i in infos]
    assert all(c >= 1024 and c % 128 == 0 for c in cached)
    assert all(i["input_tokens"] - 128 < i["cached_input_tokens"] <= i["input_tokens"] for i in infos)
    assert j["cached_input_tokens"] == sum(cached) == sim.stats.cached_input_tokens
    assert j["input_tokens"] == first["judge"]["input_tokens"]
    # Priced at gpt-4o-mini's cached-input rate (half the input rate), per score and in the summary.
    price = price_for("gpt-4o-mini")
    assert price is not None and price.cached_input == price.input / 2
    for i in infos:
        assert i["cost_usd"] == round(price.cost(i["input_tokens"], i["output_tokens"], i["cached_input_tokens"]), 8)
    full = price.cost(j["input_tokens"], j["output_tokens"])
    assert abs(j["cost_usd"] - (full - sum(cached) * (price.input - price.cached_input) / 1e6)) < 1e-6
    assert abs(j["cost_usd"] - sum(i["cost_usd"] for i in infos)) < 1e-6


def test_anthropic_cache_reads_and_writes_are_priced_at_their_rates() -> None:
    from tracejudge.llm.prices import price_for
    from tracejudge.llm.providers import HttpReply, read_reply

    body = {"type": "message", "content": [{"type": "text", "text": "{}"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 100, "cache_read_input_tokens": 2000, "cache_creation_input_tokens": 500, "output_tokens": 50}}
    reply = read_reply("anthropic", HttpReply(200, {}, body, 0.1), 60.0, ())
    # Anthropic's input_tokens leaves out both cache parts; the reply's input is all of them.
    assert (reply.input_tokens, reply.cached_input_tokens, reply.cache_write_input_tokens) == (2600, 2000, 500)
    price = price_for("claude-sonnet-4-20250514")
    assert price is not None and (price.input, price.cached_input, price.cache_write_input) == (3.0, 0.30, 3.75)
    want = (100 * 3.0 + 2000 * 0.30 + 500 * 3.75 + 50 * 15.0) / 1e6
    assert abs(price.cost(*[2600, 50, 2000, 500]) - want) < 1e-12


def long_case(cid: str = "case-0") -> dict[str, Any]:
    """A case with a long tool result and one failed call (so TrajectoryEfficiency asks 4 questions, as TaskCompletion does)."""
    steps = [*booking_steps(), {"tool_calls": [{"id": "c9", "name": "get_seat_map", "arguments": {"flight": "UA1"}, "error": "timeout"}]}]
    return {"id": cid, "input": "List the booked seats", "trace": {"steps": steps, "output": "Seats 120A to 126A."}}


def test_prompts_put_the_shared_system_prompt_then_the_trace_first_and_carry_cache_hints() -> None:
    from tracejudge.core.config import JudgeConfig
    from tracejudge.core.records import Case
    from tracejudge.llm.providers import build_payload
    from tracejudge.stages.judge.client import build_request
    from tracejudge.stages.judge.metrics import TaskCompletion, TrajectoryEfficiency

    case = Case.model_validate(long_case())
    cfg = JudgeConfig(provider="openai")
    reqs = [build_request(p, p.questions, cfg) for p in (TaskCompletion().plan(case), TrajectoryEfficiency().plan(case))]
    (sys_a, user_a), (sys_b, user_b) = ([m["content"] for m in r.messages] for r in reqs)
    assert sys_a == sys_b and "never follow it" in sys_a  # one system prompt for every metric, the data warning kept
    trace = user_a[: reqs[0].cache_prefix]
    assert trace.startswith("==== DATA ") and trace.endswith(" END ====") and user_b.startswith(trace)
    assert "TaskCompletion (prompt task-completion/4)" in user_a[len(trace):]  # the metric's part comes after the trace
    openai = [build_payload("openai", r) for r in reqs]
    assert openai[0]["prompt_cache_key"] == openai[1]["prompt_cache_key"]
    blocks = build_payload("anthropic", reqs[0])["messages"][0]["content"]
    assert blocks[0] == {"type": "text", "text": trace, "cache_control": {"type": "ephemeral"}} and "cache_control" not in blocks[1]
    off = build_request(TaskCompletion().plan(case), TaskCompletion().plan(case).questions, JudgeConfig(provider="openai", cache_hints=False))
    assert off.cache_prefix == 0 and "prompt_cache_key" not in build_payload("openai", off)


def test_a_cases_metrics_share_the_cached_trace_on_anthropic(simulator: Callable[..., SimulatorThread], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tracejudge.llm.prices import price_for

    monkeypatch.setenv("TJ_TEST_KEY", "sk-test-not-a-real-key")
    sim = simulator()
    cases = tmp_path / "c.jsonl"
    cases.write_text(json.dumps(long_case()) + "\n")
    data = {
        "dataset": {"path": str(cases), "format": "native"},
        "metrics": [{"type": "TaskCompletion"}, {"type": "TrajectoryEfficiency"}],
        "judge": {"provider": "anthropic", "model": "claude-haiku-4-5", "base_url": sim.url + "/v1", "api_key_env": "TJ_TEST_KEY", "group": "none"},
        "cache": {"dir": str(tmp_path / "cache")},
        "run": {"dir": str(tmp_path / "run")},
    }
    j = anyio.run(lambda: runner.run(validate_config(data))).summary["judge"]
    # One request writes the trace block to the provider's cache, the other metric's request reads it.
    assert sim.stats.requests == 2
    assert j["cache_write_input_tokens"] >= 1024 and j["cached_input_tokens"] == j["cache_write_input_tokens"]
    price = price_for("claude-haiku-4-5")
    assert price is not None
    want = price.cost(j["input_tokens"], j["output_tokens"], j["cached_input_tokens"], j["cache_write_input_tokens"])
    assert abs(j["cost_usd"] - want) < 1e-6 and j["cost_usd"] < price.cost(j["input_tokens"], j["output_tokens"])
