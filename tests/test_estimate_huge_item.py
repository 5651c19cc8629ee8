"""`tracejudge estimate` with `items_per_request` > 1 and an item far over the judge's window: bounded as the run is.

The run never counts such an item's group whole (`multi`: `exceeds`), and asks the item alone, fitted. The estimate
counted the group and the item's one-item request whole (12 MB of tokenizing for one 6 MB output, seconds), and
priced that one-item request — 1.4 million tokens no run can send — in the range's high end.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import tracejudge.llm.tokens as tokens
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.stages.judge.estimate import estimate

HUGE = 3_000_000


def test_an_item_far_over_the_window_is_not_counted_whole_nor_priced_in_a_group(tmp_path: Path, monkeypatch) -> None:
    data = tmp_path / "c.jsonl"
    with open(data, "w") as fh:
        for i in range(3):
            out = "The ledger total is 42 because every row adds up; " * (HUGE // 50) if i == 1 else f"Item {i} is found."
            steps = [{"tool_calls": [{"name": "lookup", "arguments": {"q": f"item {i}"}, "result": f"found {i}"}]}]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i}", "trace": {"steps": steps, "output": out}}) + "\n")
    cfg = validate_config({"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
                           "judge": {"provider": "simulator", "model": "gpt-4o-mini", "group": "none", "items_per_request": 2,
                                     "item_wait_s": 0.05, "context_tokens": 16_000, "max_tokens": 256},
                           "cache": {"enabled": False}, "run": {"dir": str(tmp_path / "run")}})
    sizes: list[int] = []
    real = tokens.encode
    monkeypatch.setattr(tokens, "encode", lambda enc, text: sizes.append(len(text)) or real(enc, text))
    got = estimate(cfg)
    assert max(sizes) < HUGE // 4, sorted(sizes)[-3:]
    high = got["range"]["high"]
    # Nothing priced is over the window (16,000 tokens a request, its repair's reply and note besides).
    assert high["input_tokens"] <= high["requests"] * 16_000, high
    monkeypatch.setattr(tokens, "encode", real)
    spent = anyio.run(lambda: runner.run(cfg)).summary["judge"]
    assert got["range"]["low"]["input_tokens"] <= spent["input_tokens"] <= high["input_tokens"], (got["range"], spent)
    assert got["total"].truncated == 1 and spent["truncated_prompts"] == 1
