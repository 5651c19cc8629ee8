"""`tracejudge estimate` with a panel (`judge.models`) and with `judge.samples`, checked against what the run sends.

A user trial found the estimate counting one model's requests at the section model's prices, whatever the panel,
and each request once, whatever `judge.samples`. Runs here go to the judge simulator over real HTTP on 127.0.0.1;
the simulator counts prompt tokens as the estimate does, so the estimate's requests and input tokens must be the run's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
from test_judge_samples_panel import write_cases  # (the same booking cases)
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.llm.prices import price_for
from tracejudge.stages.judge.estimate import estimate
import _forkserver

METRICS = [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}]  # grouped: one request per case asks both


def _config(tmp: Path, judge: dict[str, Any], name: str = "run") -> dict[str, Any]:
    return {"dataset": {"path": str(write_cases(tmp / "c.jsonl", 3))}, "metrics": METRICS, "judge": judge,
            "cache": {"dir": str(tmp / f"cache-{name}")}, "run": {"dir": str(tmp / name)}}


def test_a_panel_with_samples_is_estimated_as_the_run_sends_it(tmp_path: Path) -> None:
    judge = {"provider": "simulator", "models": ["gpt-4o-mini", "gpt-4.1"], "samples": 2, "temperature": 0.7}
    config = validate_config(_config(tmp_path, judge))
    got = estimate(config)
    total = got["total"]
    # 3 cases x 2 members x 2 samples, one grouped request each (the estimate counted 3: one model, one sample).
    assert total.requests == 12 and got["metrics"]["TaskCompletion+ToolCallNecessity"].requests == 12, total
    assert got["priced"] and got["unpriced"] == []
    mini, big = got["models"]["simulator:gpt-4o-mini"]["total"], got["models"]["simulator:gpt-4.1"]["total"]
    assert mini.requests == big.requests == 6 and mini.input_tokens == big.input_tokens
    # Each member at its own prices (the estimate priced every request at the section's model's).
    assert big.cost_usd > 5 * mini.cost_usd > 0
    for name, e in (("gpt-4o-mini", mini), ("gpt-4.1", big)):
        price = price_for(name)
        assert price is not None
        assert abs(e.cost_usd - price.cost(e.input_tokens, e.output_tokens, e.cached_input_tokens)) < 1e-9
    assert abs(total.cost_usd - (mini.cost_usd + big.cost_usd)) < 1e-9

    summary = anyio.run(lambda: runner.run(config)).summary["judge"]
    assert summary["requests"] == total.requests == 12, summary["requests"]
    assert summary["input_tokens"] == total.input_tokens, (summary["input_tokens"], total.input_tokens)
    for name in ("simulator:gpt-4o-mini", "simulator:gpt-4.1"):
        ran = summary["panel"]["models"][name]
        assert (ran["requests"], ran["input_tokens"]) == (got["models"][name]["total"].requests, got["models"][name]["total"].input_tokens), ran

    # The run cached every sample of every member: the estimate now finds them all answered.
    warm = estimate(config)["total"]
    assert (warm.requests, warm.cache_hits) == (0, 12), warm


def test_samples_alone_multiply_the_requests(tmp_path: Path) -> None:
    one = estimate(validate_config(_config(tmp_path, {"provider": "simulator", "model": "gpt-4o-mini"}, "one")))["total"]
    three = estimate(validate_config(_config(tmp_path, {"provider": "simulator", "model": "gpt-4o-mini", "samples": 3, "temperature": 0.7},
                                             "three")))["total"]
    assert (one.requests, three.requests) == (3, 9), (one, three)
    assert three.output_tokens == 3 * one.output_tokens and three.cost_usd > 2 * one.cost_usd


def test_a_member_without_a_price_makes_the_estimates_dollars_unknown_and_is_named(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps(_config(tmp_path, {"provider": "simulator", "model": "gpt-4o-mini", "models": ["gpt-4o-mini", "my-local-model"]})))
    got = estimate(validate_config(json.loads(cfg.read_text())))
    assert not got["priced"] and got["unpriced"] == ["simulator:my-local-model"], got["unpriced"]
    assert got["models"]["simulator:gpt-4o-mini"]["priced"] and got["models"]["simulator:gpt-4o-mini"]["total"].cost_usd > 0
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "estimate", str(cfg)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stdout + done.stderr
    text = " ".join(done.stdout.split())
    assert "simulator:my-local-model: 3 requests" in text and "cost unknown (no price for 'simulator:my-local-model'" in text, text
    assert "simulator:gpt-4o-mini: 3 requests" in text and "no price" in text, text


def test_a_calibrated_panel_with_samples_is_estimated_as_the_run_sends_it(tmp_path: Path) -> None:
    # `judge.calibration` asks each sampled item alone (its verdict came from a grouped request) and rendered in full,
    # per pass: its slot names the sample (`/s1`) and the panel member (`@name`), so each pass samples items of its own.
    # The estimate left those requests out (24 of the run's 80); each pass's are in rows of their own now.
    judge = {"provider": "simulator", "models": ["gpt-4o-mini", "gpt-4.1"], "samples": 2, "temperature": 0.7,
             "calibration": {"fraction": 0.5, "seed": 1}}
    config = validate_config({**_config(tmp_path, judge), "dataset": {"path": str(write_cases(tmp_path / "c.jsonl", 6))}})
    got = estimate(config)
    total, rows = got["total"], got["metrics"]
    assert rows["TaskCompletion+ToolCallNecessity"].requests == 24, rows
    calibration = {k: e for k, e in rows.items() if k.endswith(" (calibration)")}
    assert set(calibration) == {"TaskCompletion (calibration)", "ToolCallNecessity (calibration)"}, rows
    assert got["calibration"]["requests"] == sum(e.requests for e in calibration.values()) == total.requests - 24 > 0, got["calibration"]
    assert got["calibration"]["items"] == sum(e.cases for e in calibration.values()) < 6 * 2 * 2 * 2  # a sample, not every item

    summary = anyio.run(lambda: runner.run(config)).summary["judge"]
    assert summary["calibration"], summary
    assert (summary["requests"], summary["input_tokens"]) == (total.requests, total.input_tokens), (summary["requests"], total)
    for name in ("simulator:gpt-4o-mini", "simulator:gpt-4.1"):
        ran, est = summary["panel"]["models"][name], got["models"][name]["total"]
        assert (ran["requests"], ran["input_tokens"]) == (est.requests, est.input_tokens), (name, ran, est)
    warm = estimate(config)["total"]
    assert (warm.requests, warm.cache_hits) == (0, total.requests), warm
