"""`tracejudge estimate` with `items_per_request` > 1: an item left alone in its group is the run's single-item request.

The run asks such an item alone (`multi`: "the only item of its group left to ask"), under the address of its own
request — the very request `judge.calibration` sends for an item its sample holds, so the run sends it once. The
estimate counted it twice in the expected figures (the group's, then the calibration's): 4 requests where the run
sent 3. And beside a judge cache that holds the answer (an earlier run's), it priced the lone item as sent where the
run sent nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from tracejudge.core.config import JudgeConfig, validate_config
from tracejudge.engine import runner
from tracejudge.stages.judge.calibration import Calibration
from tracejudge.stages.judge.estimate import estimate


def _config(tmp: Path, run: str, judge: dict[str, Any], trials: int) -> dict[str, Any]:
    steps = [{"tool_calls": [{"name": "search", "arguments": {"day": 1}, "result": "flight F1 at 9:00"}]},
             {"tool_calls": [{"name": "book", "arguments": {"flight": "F1"}, "result": "confirmed"}]}]
    data = tmp / "c.jsonl"
    data.write_text(json.dumps({"id": "c0", "input": "Book the cheapest flight on day 1", "trace": {"steps": steps, "output": "Booked F1."}}) + "\n")
    return {"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
            "judge": {"provider": "simulator", "model": "gpt-4o-mini", "group": "none", "items_per_request": 2, "item_wait_s": 0.05, **judge},
            "cache": {"dir": str(tmp / "cache")}, "run": {"dir": str(tmp / run), "trials": trials}}


def _spent(cfg: dict[str, Any]) -> dict[str, Any]:
    return anyio.run(lambda: runner.run(validate_config(cfg))).summary["judge"]


def test_a_lone_sampled_item_is_one_request_with_its_calibration(tmp_path: Path) -> None:
    # One case, two trials: each trial's item is alone in its group; the sample holds trial 0's, not trial 1's.
    calibration = {"fraction": 0.5, "seed": 0}
    sample = Calibration(JudgeConfig(calibration=calibration).calibration)
    assert [t for t in range(2) if sample.sampled(f"c0|TaskCompletion|{t}")] == [0]
    cfg = _config(tmp_path, "run", {"calibration": calibration}, trials=2)
    got = estimate(validate_config(cfg))
    total, low = got["total"], got["range"]["low"]
    spent = _spent(cfg)
    # Trial 0: the lone item's request is its calibration's alone request (sent once), and the full rendering; trial 1: alone.
    assert spent["requests"] == 3 and spent["cache_hits"] == 1, spent
    assert (total.requests, total.cache_hits, total.input_tokens) == (spent["requests"], spent["cache_hits"], spent["input_tokens"]), (total, spent)
    assert got["metrics"]["TaskCompletion"].requests == 1 and got["metrics"]["TaskCompletion"].repeats == 1
    assert got["metrics"]["TaskCompletion (calibration)"].requests == 2
    assert (low["requests"], low["input_tokens"]) == (spent["requests"], spent["input_tokens"])


def test_a_lone_item_the_cache_holds_is_not_priced_as_sent(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "first", {}, trials=1)
    assert _spent(cfg)["requests"] == 1  # the lone item, asked alone: its answer is cached under its own request's address
    again = {**cfg, "run": {**cfg["run"], "dir": str(tmp_path / "second")}}
    got = estimate(validate_config(again))
    assert (got["total"].requests, got["total"].cache_hits, got["range"]["low"]["requests"]) == (0, 1, 0), got
    spent = _spent(again)
    assert (spent["requests"], spent["cache_hits"]) == (0, 1), spent
