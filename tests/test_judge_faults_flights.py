"""Requests the judge counted or sent wrongly, over real HTTP on 127.0.0.1: requests never sent failed at once when
the "slow" gate closed (README: one at a time) and counted `requests: 1`, and an identical request made ready while
its twin was in flight was sent again once that twin had landed (`compare --judge` of two identical runs paid twice).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from _loopback import Loopback, answers_then_hangs, completion, verdict
from anyio import wait_all_tasks_blocked
from test_judge_servers import cases, config, results, run
from tracejudge.core import registry
from tracejudge.core.config import load_config, validate_config
from tracejudge.core.records import Case, CaseResult
from tracejudge.core.work import Work
from tracejudge.engine import runner
from tracejudge.llm.providers import ProviderError
from tracejudge.stages.comparison.pairwise import compare_pairwise
from tracejudge.stages.judge.calls.gate import SLOW_AFTER, Gate
from tracejudge.stages.judge.stage import judge_stage

TC = {"type": "TaskCompletion"}


def _asked(server: Loopback, n: int) -> set[str]:
    return {f"case-{i}" for i in range(n) if any(f"Find item {i}" in json.dumps(b["messages"]) for _, b in server.requests)}


# ---------------------------------------------------------------- 5. the slow gate: one at a time, and a request never sent counts none


def _slow_gate() -> Gate:
    gate = Gate(60.0, 0.5, lambda: "http://127.0.0.1:9/v1/chat/completions")
    for _ in range(SLOW_AFTER):
        gate.sent()
    for _ in range(SLOW_AFTER):
        gate.done(False, ProviderError("timeout", "no reply within 0.5 s"))
    assert gate.state == "slow" and gate.stalled
    return gate


def _entering(gate: Any, got: dict[str, Any]) -> Any:
    # A request never sent asking the gate: what it answered (or raised) filed under the request's name.
    async def enter(name: str) -> None:
        try:
            got[name] = await gate.enter(True, lambda: False)
        except ProviderError as exc:
            got[name] = exc

    return enter


def test_requests_never_sent_wait_for_the_slow_gates_try_and_all_go_once_it_is_answered() -> None:
    # Before, a request never sent that found another trying the closed gate failed at once ("timeout: not sent"),
    # though that try might be answered in time and open the gate.
    async def main() -> dict[str, Any]:
        gate = _slow_gate()
        got: dict[str, Any] = {}
        enter = _entering(gate, got)

        assert await gate.enter(True, lambda: False) is True  # the one request trying the gate
        async with anyio.create_task_group() as tg:
            tg.start_soon(enter, "b")
            tg.start_soon(enter, "c")
            await wait_all_tasks_blocked()
            waiting = dict(got)
            gate.sent()
            gate.done(True, None)  # the try is answered in time
            gate.end_try(True)
        return {"waiting": waiting, "got": got, "state": gate.state}

    out = anyio.run(main)
    assert out["waiting"] == {}, out  # they waited for the try
    assert out["got"] == {"b": False, "c": False} and out["state"] is None, out  # and go, the gate open


def test_when_the_try_gets_no_reply_either_those_that_waited_fail_unsent_while_the_next_tries() -> None:
    async def main() -> tuple[dict[str, Any], dict[str, Any]]:
        gate = _slow_gate()
        got: dict[str, Any] = {}
        enter = _entering(gate, got)

        assert await gate.enter(True, lambda: False) is True
        async with anyio.create_task_group() as tg:
            for name in "bcd":
                tg.start_soon(enter, name)
            await wait_all_tasks_blocked()
            waiting = dict(got)
            gate.sent()
            gate.done(True, ProviderError("timeout", "no reply within 0.5 s"))  # the try timed out too
            gate.end_try(True)
        return waiting, got

    waiting, got = anyio.run(main)
    assert waiting == {}, waiting
    tries = [k for k, v in got.items() if v is True]
    failed = [v for v in got.values() if isinstance(v, ProviderError)]
    assert len(tries) == 1 and len(failed) == 2, got  # the next one tries; the others fail, never sent
    for exc in failed:
        assert exc.kind == "timeout" and exc.unsent, exc
        assert str(exc).startswith("not sent: 3 requests in a row got no reply within 0.5 s and none in flight was answered, "
                                   "nor 1 tried one at a time since"), str(exc)


@pytest.mark.parametrize("server", ["slow", "down"])
def test_a_request_the_gate_never_let_through_counts_no_request(tmp_path: Path, server: str) -> None:
    # Its score said `requests: 1` (as the summary's failed results read), though the server never saw it.
    if server == "slow":  # (one answered: a judge that never answered stops the run instead)
        respond: Any = answers_then_hangs(1)
        judge = {"timeout_s": 0.5}
    else:
        respond = lambda headers, body: (503, {"error": {"message": "Loading model", "type": "unavailable_error"}})  # noqa: E731
        judge = {"max_retry_wait_s": 1.0}
    with Loopback(respond) as loop:
        data = config(tmp_path, loop.url, cases(tmp_path / "c.jsonl", 6), metrics=[TC], api_key_env=None, **judge)
        data["limits"] = {"max_in_flight": 1}
        run(data)
        asked = _asked(loop, 6)
    got = {r["case_id"]: r["scores"]["TaskCompletion"] for r in results(tmp_path)}
    assert len(got) == 6 and sum(s["value"] is None for s in got.values()) == (5 if server == "slow" else 6), got
    for case_id, score in got.items():
        assert score["judge"]["requests"] == int(case_id in asked), (case_id, asked, score)
        if case_id not in asked:
            assert "not sent" in score["reason"], score["reason"]


# ---------------------------------------------------------------- 6. identical requests in flight at once are sent once


def _case(cid: str) -> Case:
    steps = [{"tool_calls": [{"name": "lookup", "arguments": {"q": "item 0"}, "result": "found 0"}]}]
    return Case.model_validate({"id": cid, "input": "Find item 0", "trace": {"steps": steps, "output": "Item 0 is found."}})


@pytest.mark.parametrize("cache", [True, False])
def test_a_request_made_ready_while_its_twin_was_in_flight_takes_the_twins_answer(tmp_path: Path, cache: bool) -> None:
    # Two identical cases made ready together (each a cache miss), then judged one after the other: the second was sent
    # again once the first had landed, its cache read having missed while the first was still in flight.
    with Loopback(lambda headers, body: (200, completion(json.dumps(verdict(body))))) as loop:
        data = config(tmp_path, loop.url, cases(tmp_path / "c.jsonl", 1), metrics=[TC], api_key_env=None)
        data["cache"] = {"dir": str(tmp_path / "cache"), "enabled": cache}
        cfg = validate_config(data)
        stage = judge_stage(cfg, [registry.build_metric(s) for s in cfg.metrics], lambda ms, specs: ms)
        works = [Work(_case(cid), 0, CaseResult(case_id=cid), time.monotonic()) for cid in ("twin-a", "twin-b")]

        async def main() -> dict[str, Any]:
            try:
                assert stage.settle is not None
                left = await stage.settle(works)  # both made ready at once: both miss the cache
                assert len(left) == 2
                for work in left:  # judged one after the other
                    await stage.process(work)
            finally:
                assert stage.aclose is not None
                await stage.aclose()
            assert stage.summary is not None
            return stage.summary()

        summary = anyio.run(main)
        sent = len(loop.requests)
    assert sent == 1, sent
    blocks = [w.result.scores["TaskCompletion"] for w in works]
    assert [b.value for b in blocks] == [0.75, 0.75] and [b.judge.cached for b in blocks] == [False, True], blocks
    assert summary["requests"] == 1 and summary["single_flight_shared"] == 1, summary


def test_compare_of_two_identical_runs_sends_each_prompt_once(tmp_path: Path) -> None:
    # Both orders of a pair of identical runs are one prompt: a pair's second order took it from the first, or from the
    # cache, never paid for it again.
    n = 40
    data = tmp_path / "a.jsonl"
    with open(data, "w") as fh:
        for i in range(n):
            steps = [{"tool_calls": [{"name": "search", "arguments": {"day": i}, "result": f"flights {i}"}]}, {"output": f"booked {i}"}]
            fh.write(json.dumps({"id": f"c{i}", "input": f"Book a flight on day {i}", "trace": {"steps": steps}}) + "\n")
    anyio.run(lambda: runner.run(validate_config({"dataset": {"path": str(data)}, "metrics": [{"type": "Contains"}],
                                                  "run": {"dir": str(tmp_path / "a")}})))
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    with Loopback(lambda headers, body: (200, completion(json.dumps(verdict(body))))) as loop:
        cfg = tmp_path / "judge.yaml"
        cfg.write_text(yaml.safe_dump({"dataset": {"path": str(data)}, "metrics": [TC], "cache": {"dir": str(tmp_path / "cache")},
                                       "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": loop.url + "/v1", "api_key_env": None},
                                       "run": {"dir": str(tmp_path / "r")}}))
        res = compare_pairwise(tmp_path / "a", tmp_path / "b", load_config(cfg, []))
        bodies = [json.dumps(b, sort_keys=True) for _, b in loop.requests]
    assert res.pairs == n and res.win_rate == 0.5, res
    assert len(bodies) == len(set(bodies)) == n and res.judge["requests"] == n, (len(bodies), len(set(bodies)), res.judge)
