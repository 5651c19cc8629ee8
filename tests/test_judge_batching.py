"""Multi-item judge requests and calibration, over real HTTP against the simulator."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from rich.console import Console
from tracejudge.core.config import JudgeConfig, validate_config
from tracejudge.core.records import Case
from tracejudge.engine import runner
from tracejudge.simulator.server import SimulatorThread
from tracejudge.stages.judge.batcher import Batcher
from tracejudge.stages.judge.metrics import TaskCompletion
from tracejudge.stages.judge.multi import MULTI_NOTE, Item, build_multi_request, item_id, shuffled
from tracejudge.stages.reports.judge_lines import judge_lines


def write_cases(path: Path, n: int, calls: int = 1) -> Path:
    with open(path, "w") as fh:
        for i in range(n):
            steps = [{"tool_calls": [{"id": f"c{i}-{k}", "name": "lookup", "arguments": {"q": f"item {i} {k}"}, "result": f"found {i}"}]} for k in range(calls)]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i}", "trace": {"steps": steps, "output": f"Item {i} is found."}}) + "\n")
    return path


def run(tmp: Path, sim_url: str, cases: Path, *, run_name: str = "run", metrics: list[dict[str, Any]] | None = None,
        cache: str = "cache", **judge: Any) -> dict[str, Any]:
    data = {
        "dataset": {"path": str(cases), "format": "native"},
        "metrics": metrics or [{"type": "TaskCompletion"}],
        "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim_url + "/v1", "items_per_request": 5, "item_wait_s": 2.0, **judge},
        "cache": {"dir": str(tmp / cache)},
        "run": {"dir": str(tmp / run_name)},
    }
    return anyio.run(lambda: runner.run(validate_config(data))).summary


def results(tmp: Path, run_name: str = "run") -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in map(json.loads, (tmp / run_name / "results.jsonl").read_text().splitlines())}


def test_missing_id_and_malformed_verdict_are_reasked_alone_and_the_rest_kept(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator(script=["drop_item", "malformed_item"])
    summary = run(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 10))
    assert summary["status"] == {"ok": 10}
    j = summary["judge"]
    # Two requests of 5 items; the first item of each (dropped / spoiled) re-asked alone.
    assert (sim.stats.requests, j["multi_requests"], j["items_batched"], j["items_reasked_alone"]) == (4, 2, 10, 2)
    got = results(tmp_path)
    alone = {cid: r["scores"]["TaskCompletion"]["details"]["batch"] for cid, r in got.items()
             if r["scores"]["TaskCompletion"]["details"]["batch"].get("alone")}
    assert len(alone) == 2
    whys = sorted(b["why"] for b in alone.values())
    assert whys[0].startswith("re-asked alone: expected an object of answers by question id")
    assert whys[1] == "re-asked alone: no verdict for this item"
    for b in alone.values():
        assert b["first_request"]["position"] == 0  # the simulator spoils the first item of a request
    kept = [r["scores"]["TaskCompletion"] for cid, r in got.items() if cid not in alone]
    assert len(kept) == 8
    requests = {s["details"]["batch"]["request"] for s in kept}
    assert len(requests) == 2
    for s in kept:
        b = s["details"]["batch"]
        assert b["size"] == 5 and b["items"][b["position"]].startswith("i") and b["position"] > 0
        # (the request is counted on its first item, each one re-asked alone here, whose tokens' share it also holds)
        assert s["judge"]["requests"] == 0 and s["judge"]["input_tokens"] > 0
    for cid in alone:
        assert got[cid]["scores"]["TaskCompletion"]["judge"]["requests"] == 2  # its share of the shared request, then its own
    judged = [r["scores"]["TaskCompletion"]["judge"] for r in got.values()]
    assert sum(x["requests"] for x in judged) == j["requests"] == 4
    assert (sum(x["input_tokens"] for x in judged), sum(x["output_tokens"] for x in judged)) == (j["input_tokens"], j["output_tokens"])


def test_results_that_shared_a_request_add_up_to_the_summary(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    # Each of the 4 results of 2 shared requests said `requests: 1` (summed: 4, the summary 2); a resume that rebuilds the
    # spend from the results counted twice the requests sent. The first item of a request counts it, the others 0.
    sim = simulator()
    summary = run(tmp_path, sim.url, write_cases(tmp_path / "c.jsonl", 4), items_per_request=2)
    j = summary["judge"]
    assert (sim.stats.requests, j["requests"], j["multi_requests"]) == (2, 2, 2)
    judged = [r["scores"]["TaskCompletion"]["judge"] for r in results(tmp_path).values()]
    by_request: dict[str, list[int]] = {}
    for r in results(tmp_path).values():
        s = r["scores"]["TaskCompletion"]
        by_request.setdefault(s["details"]["batch"]["request"], []).append(s["judge"]["requests"])
    assert sorted(sorted(v) for v in by_request.values()) == [[0, 1], [0, 1]]
    assert all(x["input_tokens"] > 0 and x["latency_s"] > 0 for x in judged)  # (each still holds its share and its wait)
    assert sum(x["requests"] for x in judged) == j["requests"]
    assert (sum(x["input_tokens"] for x in judged), sum(x["output_tokens"] for x in judged)) == (j["input_tokens"], j["output_tokens"])
    assert round(sum(x["cost_usd"] for x in judged), 6) == j["cost_usd"]


def test_verdicts_follow_the_item_id_not_its_position_and_the_cache_survives_a_new_grouping(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    cases = write_cases(tmp_path / "c.jsonl", 12)
    sim = simulator()
    run(tmp_path, sim.url, cases, run_name="a", cache="cache-a", item_seed=1)
    sim2 = simulator()
    run(tmp_path, sim2.url, cases, run_name="b", cache="cache-b", item_seed=2, items_per_request=4)
    a, b = results(tmp_path, "a"), results(tmp_path, "b")
    orders_a = {json.dumps(r["scores"]["TaskCompletion"]["details"]["batch"]["items"]) for r in a.values()}
    orders_b = {json.dumps(r["scores"]["TaskCompletion"]["details"]["batch"]["items"]) for r in b.values()}
    assert orders_a.isdisjoint(orders_b)  # other compositions and orders ...
    for cid in a:  # ... same verdicts per item
        assert a[cid]["scores"]["TaskCompletion"]["details"]["answers"] == b[cid]["scores"]["TaskCompletion"]["details"]["answers"]
    # A rerun into a new run directory that groups the items differently is served by the item entries of the cache.
    before = sim.stats.requests
    summary = run(tmp_path, sim.url, cases, run_name="c", cache="cache-a", item_seed=7, items_per_request=3)
    assert sim.stats.requests == before and summary["judge"]["items_from_cache"] == 12
    c = results(tmp_path, "c")
    for cid in a:
        sc = c[cid]["scores"]["TaskCompletion"]
        assert sc["value"] == a[cid]["scores"]["TaskCompletion"]["value"]
        assert sc["details"]["batch"]["cached"] is True
        assert sc["details"]["batch"]["request"] == a[cid]["scores"]["TaskCompletion"]["details"]["batch"]["request"]


def test_a_slow_trickle_is_flushed_after_the_wait() -> None:
    seen: list[list[int]] = []

    async def flush(items: list[int]) -> list[int]:
        seen.append(list(items))
        return [i * 10 for i in items]

    async def main() -> list[int]:
        b: Batcher[int, int] = Batcher(flush, max_items=4, max_wait_s=0.2, max_bytes=25, size=lambda i: 10)
        out: list[int] = []

        async def one(i: int, delay: float) -> None:
            await anyio.sleep(delay)
            out.append(await b.submit("k", i))

        async with anyio.create_task_group() as tg:
            for i, delay in enumerate([0, 0.01, 0.02, 0.5]):
                tg.start_soon(one, i, delay)
        return out

    out = anyio.run(main)
    assert sorted(out) == [0, 10, 20, 30]
    # Bytes close the first group at two items (a third would pass 25); the late one flushes alone after the wait.
    assert seen == [[0, 1], [2], [3]]


def test_fixed_part_first_and_byte_identical_and_ids_independent_of_case_id() -> None:
    cfg = JudgeConfig(provider="openai", items_per_request=3)

    def item(i: int, cid: str) -> Item:
        case = Case.model_validate({"id": cid, "input": f"task {i}", "trace": {"steps": [], "output": f"done {i}"}})
        plan = TaskCompletion().plan(case)
        it = Item(plan, 0, f"{cid}|TaskCompletion|0")  # type: ignore[arg-type]
        it.id = item_id(it, cfg)
        return it

    a = [item(i, f"a{i}") for i in range(3)]
    b = [item(i, f"b{i}") for i in range(3, 6)]
    assert item(0, "other-id").id == a[0].id
    ra, rb = build_multi_request(a, cfg), build_multi_request(b, cfg)
    assert ra.messages[0] == rb.messages[0] and ra.messages[0]["role"] == "system" and ra.messages[0]["content"].endswith(MULTI_NOTE)
    assert ra.schema["required"] == [it.id for it in a] and ra.schema_name == "verdicts"
    order, seed = shuffled([it.id for it in a], 0)
    assert (order, seed) == shuffled(list(reversed([it.id for it in a])), 0)  # the seed depends on the items, not their arrival


def test_calibration_judges_a_sample_alone_and_reports_agreement(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    sim = simulator()
    cases = write_cases(tmp_path / "c.jsonl", 20, calls=2)
    summary = run(tmp_path, sim.url, cases, metrics=[{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}],
                  calibration={"fraction": 0.5, "seed": 3})
    cal = summary["judge"]["calibration"]
    got = results(tmp_path)
    for metric in ("TaskCompletion", "ToolCallNecessity"):
        compared = [r["scores"][metric] for r in got.values() if "calibration" in (r["scores"][metric]["details"] or {})]
        assert 0 < len(compared) < 20 and cal[metric]["items"] == len(compared) and cal[metric]["not_compared"] == 0
        equal = sum(s["value"] == s["details"]["calibration"]["alone_value"] for s in compared)
        agreed = sum(len(s["details"]["calibration"]["agreed"]) for s in compared)
        questions = sum(s["details"]["calibration"]["questions"] for s in compared)
        assert cal[metric]["value_agreement"] == pytest.approx(equal / len(compared), abs=1e-6)
        assert cal[metric]["question_agreement"] == pytest.approx(agreed / questions, abs=1e-6)
    n_sampled = cal["TaskCompletion"]["items"] + cal["ToolCallNecessity"]["items"]
    full = sum(cal[m]["render"]["items"] - cal[m]["render"]["identical_render"] for m in ("TaskCompletion", "ToolCallNecessity"))
    # Every sampled item cost one extra alone request besides the shared ones, and one in full where that renders differently.
    assert sim.stats.requests == summary["judge"]["multi_requests"] + n_sampled + full
    con = Console(record=True, width=200)
    for line in judge_lines(summary):
        con.print(line)
    text = con.export_text()
    assert "calibration TaskCompletion" in text and f"{cal['TaskCompletion']['items']} items" in text
