"""A lone UTF-16 surrogate in trace text (a JSON `\\ud800` escape with no partner, as a stream cut mid-emoji records)
reaches the judge as U+FFFD: it crashed the case's judge request (no UTF-8 form for the fence's hash, the tokenizer or
the wire) and was filed as a transient failure, retried on every resume. Real HTTP against the simulator, real files."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.simulator.server import SimulatorThread
from tracejudge.stages.judge.trace_text import whole_text

# (a tool call's name or arguments holding one is the record's invalid_input, `extract.lone_text`: text only here)
LINES = [
    '{"id": "cut", "messages": [{"role": "user", "content": "hi \\ud800 there"}, '
    '{"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{\\"q\\": \\"x\\"}"}}]}, '
    '{"role": "tool", "tool_call_id": "c1", "content": "ok"}, {"role": "assistant", "content": "answer \\udfff done \\ud83d\\ude00"}]}',
    '{"id": "plain", "messages": [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "fine \\ud83d\\ude00"}]}',
]


@pytest.mark.parametrize("items_per_request", [1, 2])
def test_a_lone_surrogate_is_judged_as_a_replacement_character(simulator: Callable[..., SimulatorThread], tmp_path: Path,
                                                               items_per_request: int) -> None:
    sim = simulator()
    data = tmp_path / "chats.jsonl"
    data.write_text("\n".join(LINES) + "\n", encoding="ascii")
    config = validate_config({
        "dataset": {"path": str(data), "format": "openai-messages"},
        "metrics": [{"type": "Rubric", "criteria": "The answer is polite."}, {"type": "TaskCompletion"}],
        "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1", "items_per_request": items_per_request,
                  "item_wait_s": 0.5},
        "cache": {"dir": str(tmp_path / "cache")},
        "run": {"dir": str(tmp_path / "run")},
    })
    summary = anyio.run(lambda: runner.run(config)).summary
    assert summary["status"] == {"ok": 2}, summary["status"]
    results = {r["case_id"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    for score in results["cut"]["scores"].values():
        assert score["value"] is not None, score
    assert summary["judge"]["requests"] >= 1 and summary["judge"]["judge_error_results"] == 0


def test_whole_text_replaces_only_lone_surrogates():
    assert whole_text("a \ud800 b \udfff c") == "a \ufffd b \ufffd c"
    text = "emoji 😀 and é"
    assert whole_text(text) is text
