"""A stage that raises on a case (a bug in it, not a failure it reports) costs that case alone, under the stage's status.

The score stage's bug is the record's (`invalid_input`); a judge stage's is the judge's (`judge_error`, retried by a
resume), never the agent's: it was `target_error`, and the terminal then said the agent raised. The stages are real
but for the one that raises, which stands in for a bug no real input can be made to trigger.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from tracejudge.core.config import validate_config
from tracejudge.core.work import Stage, Work
from tracejudge.engine import runner


def _config(tmp_path: Path):
    with open(tmp_path / "cases.jsonl", "w") as fh:
        for i in range(4):
            fh.write(json.dumps({"id": f"case-{i}", "trace": {"steps": [{"tool_calls": [{"name": "get"}]}]},
                                 "expected_tool_calls": [{"name": "get"}]}) + "\n")
    return validate_config({"dataset": {"path": str(tmp_path / "cases.jsonl")}, "metrics": [{"type": "ToolCorrectness"}],
                            "run": {"dir": str(tmp_path / "run")}})


@pytest.mark.parametrize(("stage_name", "status"), [("judge", "judge_error"), ("target", "target_error")])
def test_a_stage_raising_on_a_case_fails_it_under_its_own_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 stage_name: str, status: str) -> None:
    config = _config(tmp_path)
    real_build = runner.build_stages

    def with_a_buggy_stage(cfg, metrics, **_):
        async def process(work: Work) -> None:
            if work.case.id == "case-2":
                raise KeyError("choices")  # what a parsing bug raises

        return [*real_build(cfg, metrics), Stage(stage_name, process)]

    monkeypatch.setattr(runner, "build_stages", with_a_buggy_stage)
    outcome = anyio.run(lambda: runner.run(config))
    lines = {r["case_id"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    assert {k: r["status"] for k, r in lines.items()} == {"case-0": "ok", "case-1": "ok", "case-2": status, "case-3": "ok"}
    assert lines["case-2"]["error"]["kind"] == f"{stage_name}_error" and "choices" in lines["case-2"]["error"]["message"]
    assert outcome.summary["status"] == {"ok": 3, status: 1}
