"""`tracejudge estimate`'s range holds what the run then really spends: requests, input and output tokens, dollars.

Measured against the judge simulator, the low end was above the real spend: a request the run answers itself (a case
that appears twice in the dataset, the same prompt asked by two metrics) was counted as sent, and each reply was
priced at 40 tokens a question where the simulator writes about 20. Each config here is estimated (the printed
`range:` line), then run against the simulator over real HTTP on 127.0.0.1, and the run's spending (`summary.json`'s
judge block) must fall inside the range; then estimated again beside that run (the high end at its measured re-ask
rate), with a cold cache, and it must still.

A calibrated judge (`judge.calibration`) asks its sampled items alone and rendered in full besides the shared request
that scores them: the estimate left those requests out, so a run sampling every item sent 42 requests where the range
said 12–36. They are counted now, at both ends.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.entrypoints.cli import main

RUBRIC = {"type": "Rubric", "criteria": "The agent booked what the user asked for, and nothing else."}
TWO = [{"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}]


def write_cases(path: Path, n: int, again: int = 0) -> Path:
    """`n` cases of 1 to 3 tool calls each (so their requests ask different numbers of questions), then the first `again`
    of them once more under new ids: the same traces, which the run judges once."""
    rows = []
    for i in range(n):
        steps = [{"tool_calls": [{"name": "search", "arguments": {"day": i, "leg": k}, "result": f"flight F{i}{k} at {9 + k}:00"}]}
                 for k in range(1 + i % 3)]
        steps.append({"tool_calls": [{"name": "book", "arguments": {"flight": f"F{i}0"}, "result": "confirmed"}]})
        rows.append({"id": f"c{i}", "input": f"Book the cheapest flight on day {i}", "trace": {"steps": steps, "output": f"Booked F{i}0."}})
    rows += [{**r, "id": f"{r['id']}-again"} for r in rows[:again]]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


CONFIGS: dict[str, tuple[list[dict[str, Any]], dict[str, Any], int, int]] = {
    # (metrics, judge settings, cases, repeated cases); trials come from the judge settings' "trials".
    "grouped, with a rubric": ([*TWO, RUBRIC], {}, 6, 0),
    "repeated cases and trials": ([*TWO, RUBRIC], {"trials": 2}, 5, 3),
    "one prompt asked by two metrics": ([{"type": "TaskCompletion", "name": "done_a"}, {"type": "TaskCompletion", "name": "done_b"},
                                         {"type": "ToolCallNecessity", "one_question_per_request": True}], {"group": "none"}, 5, 0),
    "multi-item requests": (TWO, {"group": "none", "items_per_request": 3, "item_wait_s": 0.2}, 7, 2),
    "multi-item grouped requests": (TWO, {"group": "case", "items_per_request": 2, "item_wait_s": 0.2}, 5, 2),
    "calibrated, grouped, with a rubric": ([*TWO, RUBRIC], {"calibration": {"fraction": 1.0}}, 6, 0),
    "calibrated, a sample of multi-item requests": (TWO, {"group": "none", "items_per_request": 3, "item_wait_s": 0.2,
                                                          "calibration": {"fraction": 0.6}}, 7, 2),
}

_RANGE = re.compile(r"range: ([\d,]+)–([\d,]+) requests, ([\d,]+)–([\d,]+) input and ([\d,]+)–([\d,]+) output tokens, "
                    r"\$([\d,.]+)–\$([\d,.]+) \((.*)\)")


def printed_range(cfg: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, tuple[float, float]], str]:
    """The `range:` line `tracejudge estimate` prints for `cfg`: each figure's (low, high), and what it says it assumes."""
    capsys.readouterr()
    assert main(["estimate", str(cfg)]) == 0
    text = " ".join(capsys.readouterr().out.split())  # (the terminal wraps long lines)
    got = _RANGE.search(text)
    assert got is not None, text
    n = [float(x.replace(",", "")) for x in got.groups()[:8]]
    return {"requests": (n[0], n[1]), "input_tokens": (n[2], n[3]), "output_tokens": (n[4], n[5]), "cost_usd": (n[6], n[7])}, got.group(9)


def inside(rng: dict[str, tuple[float, float]], judge: dict[str, Any]) -> list[str]:
    """The figures of the run's judge block outside `rng` (dollars compared as printed, to the cent's hundredth)."""
    real = {"requests": judge["requests"], "input_tokens": judge["input_tokens"], "output_tokens": judge["output_tokens"],
            "cost_usd": round(judge["cost_usd"], 4)}
    return [f"{k}: {real[k]:,} not in {lo:,}–{hi:,}" for k, (lo, hi) in rng.items() if not lo <= real[k] <= hi]


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_real_spend_falls_inside_the_printed_range(name: str, simulator: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    metrics, judge, n, again = CONFIGS[name]
    judge = dict(judge)
    trials = judge.pop("trials", 1)
    sim = simulator()  # (a simulator of its own: its provider prompt cache starts cold, as the low end assumes)

    def config(cache: str) -> Path:
        data = {"dataset": {"path": str(write_cases(tmp_path / "c.jsonl", n, again)), "format": "native"}, "metrics": metrics,
                "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1", **judge},
                "cache": {"dir": str(tmp_path / cache)}, "run": {"dir": str(tmp_path / "run"), "trials": trials}}
        path = tmp_path / f"{cache}.yaml"
        path.write_text(json.dumps(data))
        return path

    cold, why = printed_range(config("cache"), capsys)
    assert sim.stats.requests == 0  # the estimate asks nothing
    summary = anyio.run(lambda: runner.run(validate_config(json.loads(config("cache").read_text())))).summary
    spent = summary["judge"]
    assert spent["answered"] == spent["requests"] > 0 and spent["repairs"] == 0, spent
    if (again or name.startswith("one prompt")) and "items_per_request" not in judge:
        assert spent["cache_hits"] > 0, spent  # the run answered some requests itself: the estimate must not count them sent
    assert inside(cold, spent) == [], (name, why)
    # The range says what it assumes.
    assert "low: no repair or re-ask, each reply as short as its verdict format allows, a cold judge cache" in why, why
    assert "no earlier run" in why and "each reply as long as max_tokens allows" in why, why
    if again or name.startswith("one prompt"):
        assert "asked again within the run answered by their first" in why and "the repeats sent again" in why, why
    if "calibration" in judge:
        # The sampled items were asked alone (when shared) and in full: requests the range counts at both ends, and says so.
        assert summary["judge"]["calibration"], summary["judge"]
        assert re.search(r"both ends count the [\d,]+ requests judge\.calibration adds", why), why
        if "items_per_request" not in judge:  # (the batcher's real groups may differ from the estimate's a little)
            assert cold["requests"][0] == spent["requests"] and cold["input_tokens"][0] == spent["input_tokens"], (cold, spent)

    # Beside that run, its re-ask rate (none) makes the high end; a cold cache again, so the same requests are counted.
    measured, why = printed_range(config("cold-again"), capsys)
    assert "re-ask/repair rate of the last run" in why and "(0.00 extra" in why, why
    assert inside(measured, spent) == [], (name, why)
    assert measured["requests"][0] == cold["requests"][0] and measured["requests"][1] <= cold["requests"][1]
