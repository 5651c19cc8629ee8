"""The judge budget gate's resume command never repeats the cap that ran out (a user trial).

It said `resume with: tracejudge run x.yaml --set budget.max_cost_usd=0.05` after that very cap stopped the run:
followed, it sent no request and failed the same way. The command now drops that `--set`, keeps the others, and
names the cap to raise as a placeholder the user must fill in. Runs go to the judge simulator the run starts on 127.0.0.1.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from tracejudge.stages.aggregate.gate_judge import raised_command
import _forkserver

CLI = str(Path(sys.executable).with_name("tracejudge"))


def _config(tmp: Path, budget: dict[str, Any] | None = None) -> Path:
    (tmp / "c.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": f"Find item {i}", "trace": {"steps": [
        {"tool_calls": [{"name": "lookup", "arguments": {"q": i}, "result": f"found {i}"}]}], "output": f"Item {i}."}}) + "\n" for i in range(3)))
    cfg = tmp / "cfg.json"
    cfg.write_text(json.dumps({"dataset": {"path": str(tmp / "c.jsonl"), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
                               "judge": {"provider": "simulator"}, "budget": budget or {}, "cache": {"enabled": False},
                               "run": {"dir": str(tmp / "run")}}))
    return cfg


def _budget_detail(run_dir: Path) -> str:
    checks = {c["name"]: c for c in json.loads((run_dir / "summary.json").read_text())["verdict"]["checks"]}
    return checks["judge budget"]["detail"]


def test_the_suggested_command_drops_the_exhausted_cap_and_names_it_to_raise(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    got = _forkserver.run([CLI, "run", str(cfg), "--no-progress", "--set", "budget.max_cost_usd=0.0001", "--set", "judge.max_attempts=2"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert got.returncode == 1 and "FAIL judge budget" in got.stdout, got.stdout + got.stderr
    detail = _budget_detail(tmp_path / "run")
    command = detail.split("resume with: ", 1)[1].split(" (put a larger cap", 1)[0]
    words = shlex.split(command)
    assert "budget.max_cost_usd=0.0001" not in words, detail  # the cap that just ran out, suggested again
    assert words[words.index("budget.max_cost_usd=<more than 0.0001>") - 1] == "--set", detail
    assert words[words.index("judge.max_attempts=2") - 1] == "--set", detail  # the other settings stay
    assert "put a larger cap in place of each <more than …>" in detail, detail

    # As suggested, the placeholder filled in: the skipped results are judged and the run passes.
    filled = [CLI if w == "tracejudge" else w.replace("<more than 0.0001>", "5") for w in words]
    done = _forkserver.run(filled, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0 and "verdict: PASS" in done.stdout, done.stdout + done.stderr
    # As suggested and not filled in, it is refused rather than met by the same cap again.
    refused = _forkserver.run([CLI if w == "tracejudge" else w for w in words], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert refused.returncode == 2 and "budget.max_cost_usd" in refused.stderr, refused.stdout + refused.stderr


def test_a_cap_from_the_config_file_is_named_to_raise_too(tmp_path: Path) -> None:
    cfg = _config(tmp_path, {"max_judge_tokens": 10})
    got = _forkserver.run([CLI, "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert got.returncode == 1, got.stdout + got.stderr
    detail = _budget_detail(tmp_path / "run")
    assert f"resume with: tracejudge run {cfg} --no-progress --set 'budget.max_judge_tokens=<more than 10>'" in detail, detail


def test_raised_command_keeps_everything_but_the_caps() -> None:
    line = "cd /w && tracejudge run x.yaml --set run.dir=/r --set 'budget={max_cost_usd: 0.05}' --set budget.max_judge_tokens=900 --no-progress"
    assert raised_command(line, {"max_cost_usd": 0.05, "max_judge_tokens": 900}) == (
        "cd /w && tracejudge run x.yaml --set run.dir=/r --no-progress --set 'budget.max_cost_usd=<more than 0.05>' "
        "--set 'budget.max_judge_tokens=<more than 900>'")
    assert raised_command("tracejudge run x.yaml --set judge.model=m", {}) == "tracejudge run x.yaml --set judge.model=m"
