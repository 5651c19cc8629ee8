"""One request per case (`judge.group: case`) over the simulator: same scores as separate requests, re-asks, caching, estimate."""

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
from tracejudge.stages.judge.trace_text import compact, render_steps

METRICS = [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}, {"type": "PlanQuality"}, {"type": "TrajectoryEfficiency"}]
NAMES = [m["type"] for m in METRICS]


def write_cases(path: Path, n: int, rows: int = 4) -> Path:
    """`n` distinct cases, each with calls whose JSON results are lists of records, and one failed call."""
    with open(path, "w") as fh:
        for i in range(n):
            flights = [{"flight": f"HAT{i}{k:02d}", "origin": "JFK", "destination": "LAX", "price": 100 + k} for k in range(rows)]
            steps = [{"tool_calls": [{"id": f"a{i}", "name": "search_flights", "arguments": {"date": f"2024-05-{i % 28 + 1:02d}"}, "result": json.dumps(flights)}]},
                     {"tool_calls": [{"id": f"b{i}", "name": "book", "arguments": {"flight": f"HAT{i}00"}, "error": "seat map unavailable"}]},
                     {"output": f"Booked flight HAT{i}00."}]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Book the cheapest flight on day {i}", "trace": {"steps": steps}}) + "\n")
    return path


def config(tmp: Path, url: str, cases: Path, *, run_name: str, cache: bool = False, metrics: list[dict[str, Any]] | None = None,
           **judge: Any) -> dict[str, Any]:
    return {
        "dataset": {"path": str(cases), "format": "native"},
        "metrics": metrics or METRICS,
        "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": url + "/v1", **judge},
        "cache": {"dir": str(tmp / f"cache-{run_name}"), "enabled": cache},
        "run": {"dir": str(tmp / run_name)},
    }


def run(tmp: Path, url: str, cases: Path, *, run_name: str, **kw: Any) -> dict[str, Any]:
    data = config(tmp, url, cases, run_name=run_name, **kw)
    return anyio.run(lambda: runner.run(validate_config(data))).summary


def scores(tmp: Path, run_name: str) -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r["scores"] for r in map(json.loads, (tmp / run_name / "results.jsonl").read_text().splitlines())}


def same_verdicts(a: dict[str, Any], b: dict[str, Any]) -> None:
    for cid in a:
        for name in NAMES:
            x, y = ({k: v for k, v in s.items() if k not in ("details", "judge")} for s in (a[cid][name], b[cid][name]))
            assert x == y and "value" in x and "reason" in x, (cid, name)
            assert a[cid][name]["details"]["answers"] == b[cid][name]["details"]["answers"]


def test_grouped_and_separate_requests_give_the_same_scores(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "c.jsonl", 6)
    sim = simulator()
    sep = run(tmp_path, sim.url, cases, run_name="none", group="none")
    n_sep = sim.stats.requests
    grp = run(tmp_path, sim.url, cases, run_name="case", group="case")
    assert sep["status"] == grp["status"] == {"ok": 6}
    assert n_sep == 24 and sim.stats.requests - n_sep == 6  # four requests per case against one
    assert grp["judge"]["grouped_requests"] == 6 and grp["judge"]["parts_reasked_alone"] == 0
    a, b = scores(tmp_path, "none"), scores(tmp_path, "case")
    same_verdicts(a, b)
    for cid in b:
        for pos, name in enumerate(NAMES):
            assert b[cid][name]["details"]["group"] == {"metrics": NAMES, "position": pos}
    # The grouped request's tokens are shared out over its metrics: the summary and the scores agree.
    assert sum(s[n]["judge"]["input_tokens"] for s in b.values() for n in NAMES) == grp["judge"]["input_tokens"]
    assert grp["judge"]["input_tokens"] < sep["judge"]["input_tokens"] / 2


@pytest.mark.parametrize("fault", ["malformed_item", "drop_item"])
def test_a_malformed_or_missing_part_is_reasked_alone(simulator: Callable[..., SimulatorThread], tmp_path: Path, fault: str) -> None:
    cases = write_cases(tmp_path / "c.jsonl", 1)
    sim = simulator()
    run(tmp_path, sim.url, cases, run_name="none", group="none")
    before = sim.stats.requests
    sim.set_script([fault])  # spoils the first answer of the grouped reply: TaskCompletion.q1
    summary = run(tmp_path, sim.url, cases, run_name="case")
    assert summary["status"] == {"ok": 1}
    assert sim.stats.requests - before == 2 and summary["judge"]["parts_reasked_alone"] == 1  # the group, then TaskCompletion alone
    got = scores(tmp_path, "case")["case-0"]
    assert got["TaskCompletion"]["details"]["group"]["alone"] is True
    assert "missing or malformed" in got["TaskCompletion"]["details"]["group"]["why"]
    assert [got[n]["details"]["group"].get("position") for n in NAMES[1:]] == [1, 2, 3]
    # Every token paid is on some score: the grouped request's shares and the re-ask.
    assert sum(got[n]["judge"]["input_tokens"] for n in NAMES) == summary["judge"]["input_tokens"]
    same_verdicts(scores(tmp_path, "none"), scores(tmp_path, "case"))


def test_a_refused_grouped_request_asks_each_metric_alone(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator(script=["400"])
    summary = run(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 1), run_name="case")
    assert summary["status"] == {"ok": 1} and sim.stats.requests == 5 and summary["judge"]["parts_reasked_alone"] == 4
    assert summary["judge"]["grouped_requests"] == 0  # refused: the judge answered no grouped request
    for name in NAMES:
        g = scores(tmp_path, "case")["case-0"][name]["details"]["group"]
        assert g["alone"] is True and "simulated refusal" in g["why"]


def test_identical_cases_in_flight_send_one_grouped_request(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator(latency_ms=300)
    path = tmp_path / "c.jsonl"
    line = json.loads(write_cases(tmp_path / "one.jsonl", 1).read_text())
    path.write_text("".join(json.dumps({**line, "id": f"case-{i}"}) + "\n" for i in range(20)))
    summary = run(tmp_path, sim.url, path, run_name="case", cache=True)
    assert summary["status"] == {"ok": 20} and sim.stats.requests == 1 and summary["judge"]["single_flight_shared"] == 19


def test_grouped_with_items_per_request_and_with_the_batch_api(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "c.jsonl", 6)
    sim = simulator(batch_completion_s=0.2)
    multi = run(tmp_path, sim.url, cases, run_name="multi", items_per_request=3, item_wait_s=5.0)
    assert multi["status"] == {"ok": 6} and sim.stats.requests == 2 and multi["judge"]["items_batched"] == 6  # 3 cases × 4 metrics each
    for s in scores(tmp_path, "multi").values():
        assert all(s[n]["value"] is not None and s[n]["details"]["batch"]["size"] == 3 for n in NAMES)
    sep = run(tmp_path, sim.url, cases, run_name="none", group="none")
    batch = run(tmp_path, sim.url, cases, run_name="batch", mode="batch", batch={"flush_after_s": 0.5, "poll_interval_s": 0.1})
    assert sep["status"] == batch["status"] == {"ok": 6} and sim.stats.batch_requests == 6
    same_verdicts(scores(tmp_path, "none"), scores(tmp_path, "batch"))


def test_calibration_compares_grouped_with_separate_per_metric(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator()
    summary = run(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 5), run_name="case", calibration={"fraction": 1.0, "seed": 0})
    cal = summary["judge"]["calibration"]
    full = sum(cal[n]["render"]["items"] - cal[n]["render"]["identical_render"] for n in NAMES)
    assert full == 20  # the JSON arguments and results render differently in full
    assert sim.stats.requests == 5 + 20 + full  # each case grouped, each metric alone, and alone in full
    for name in NAMES:
        # The simulator's answers depend on the trace and the question alone: grouping changes nothing.
        assert cal[name]["items"] == 5 and cal[name]["question_agreement"] == 1.0 and cal[name]["value_agreement"] == 1.0


def long_cases(path: Path, n: int) -> Path:
    """`n` cases whose traces are over 1,024 tokens (many distinct, compact results)."""
    with open(path, "w") as fh:
        for i in range(n):
            steps = [{"tool_calls": [{"id": f"c{k}", "name": "get_reservation", "arguments": {"id": f"R{i}{k}"},
                                      "result": {"reservation": f"R{i}{k}", "passengers": [{"name": f"P{j}", "seat": f"{k}{j}A"} for j in range(12)]}}]}
                     for k in range(8)]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Check reservations of user {i}", "trace": {"steps": steps, "output": "All checked."}}) + "\n")
    return path


ANTHROPIC = {"provider": "anthropic", "model": "claude-haiku-4-5", "api_key_env": "TJ_TEST_KEY"}


@pytest.mark.parametrize("judge", [{"group": "none"}, {"group": "case"}, {"group": "case", "mode": "batch"}, {"group": "none", **ANTHROPIC},
                                   {"group": "case", "trials": 2, **ANTHROPIC}])
def test_estimate_equals_the_runs_tokens_and_cached_tokens(simulator: Callable[..., SimulatorThread], tmp_path: Path, judge: dict[str, Any],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from tracejudge.stages.judge.estimate import estimate

    monkeypatch.setenv("TJ_TEST_KEY", "sk-test-not-a-real-key")
    cases = long_cases(tmp_path / "c.jsonl", 3)
    sim = simulator(batch_completion_s=0.2)
    extra = {"batch": {"flush_after_s": 0.3, "poll_interval_s": 0.1}} if judge.get("mode") == "batch" else {}
    trials = judge.pop("trials", 1)
    data = config(tmp_path, sim.url, cases, run_name="run", **judge, **extra)
    data["run"]["trials"] = trials
    data["judge"]["workers"] = 1  # one case at a time: a trace's requests meet the provider's cache as the estimate assumes
    cfg = validate_config(data)
    est = estimate(cfg)["total"]
    assert sim.stats.requests == 0
    j = anyio.run(lambda: runner.run(cfg)).summary["judge"]
    assert est.input_tokens == j["input_tokens"] == sim.stats.input_tokens
    assert est.cached_input_tokens == j["cached_input_tokens"] and est.cache_write_input_tokens == j["cache_write_input_tokens"]
    assert est.requests == j["requests"]
    if trials > 1 or (judge["group"] == "none" and judge.get("provider") == "anthropic"):
        # A case's trials share the cached prefix; on Anthropic (one shared tool schema) its metrics asked apart do too.
        # (On OpenAI they no longer do: the schema comes first, and each request's schema names its own question ids.)
        assert j["cached_input_tokens"] > 0
    elif judge.get("provider") == "anthropic":
        assert j["cache_write_input_tokens"] == 0  # a trace asked once is not written to the cache (writes cost 1.25 × input)


def test_compact_rendering_states_each_key_once_and_cuts_long_results() -> None:
    from tracejudge.core.records import Step

    rows = [{"b": 2, "a": "x y"}, {"a": "z", "b": 3}]
    assert compact({"list": rows, "q": "a:b", "n": None}) == '{list:[{a,b}: x y,2; z,3],n:null,q:"a:b"}'
    long = {"rows": [{"k": i, "v": "w" * 20} for i in range(100)]}
    steps = [Step.model_validate({"tool_calls": [{"name": "get", "arguments": {"i": 1}, "result": long}]}),
             Step.model_validate({"tool_calls": [{"name": "get", "arguments": {"i": 1}, "result": json.dumps(long)}]})]
    text = render_steps(steps)
    assert "characters cut]" in text and "(same result as call 1)" in text and '"k"' not in text


def test_calibration_measures_the_compact_rendering_against_the_full_one(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    """A result over the cut (1,000 characters) is judged uncut too; a trace that renders the same both ways costs no request."""
    sim = simulator()
    cases = tmp_path / "c.jsonl"
    long_result = " ".join(f"seat {k}A free" for k in range(200))  # plain text: only the cut tells the two renderings apart
    assert len(long_result) > 1000
    rows = [{"id": "long", "input": "Find a free seat", "trace": {"steps": [{"tool_calls": [{"id": "a", "name": "seats", "arguments": {},
                                                                                             "result": long_result}]}, {"output": "Seat 0A."}]}},
            {"id": "same", "input": "Say hello", "trace": {"steps": [{"thought": "greet", "output": "Hello."}]}}]
    cases.write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = run(tmp_path, sim.url, cases, run_name="run", group="none", metrics=[{"type": "TaskCompletion"}],
                  calibration={"fraction": 1.0, "seed": 0})
    render = summary["judge"]["calibration"]["TaskCompletion"]["render"]
    assert sim.stats.requests == 2 + 1  # each case once, and only the long one again in full
    assert (render["items"], render["identical_render"], render["not_compared"]) == (2, 1, 0)
    got = scores(tmp_path, "run")
    assert got["same"]["TaskCompletion"]["details"]["calibration"]["full_render"] == {"identical": True}
    full = got["long"]["TaskCompletion"]["details"]["calibration"]["full_render"]
    assert full["questions"] == 4
    assert render["question_agreement"] == pytest.approx((4 + len(full["agreed"])) / 8, abs=1e-6)
    assert render["value_agreement"] == pytest.approx((1 + (full["value"] == got["long"]["TaskCompletion"]["value"])) / 2, abs=1e-6)
    from tracejudge.stages.reports.judge_lines import judge_lines

    lines = judge_lines(summary)
    assert any("2 items judged with the compact and the full trace" in line and "1 of them rendered identically" in line for line in lines)
