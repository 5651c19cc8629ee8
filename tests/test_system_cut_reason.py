"""A score's reason says a system prompt was cut to fit only when it was, and says each cut of it once.

Runs against the judge simulator over real HTTP: a short prompt ("Be nice.") in a conversation too long for the window,
and τ-bench's airline runs, whose 6,155-character policy is cut by field and then by level.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from tracejudge.core.config import JudgeConfig, validate_config
from tracejudge.core.records import Case
from tracejudge.engine import runner
from tracejudge.simulator.server import SimulatorThread
from tracejudge.stages.judge.field_cut import cut_note
from tracejudge.stages.judge.fit import fit_request
from tracejudge.stages.judge.metrics import TaskCompletion
from tracejudge.stages.judge.system_section import system_note


def _reasons(config: dict[str, Any], tmp_path: Path, sim: SimulatorThread) -> dict[str, str]:
    window = config.pop("context_tokens")
    config = {**config, "metrics": [{"type": "TaskCompletion", "include_system_prompt": True}],
              "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": sim.url + "/v1", "api_key_env": None,
                        "context_tokens": window},
              "cache": {"dir": str(tmp_path / "cache")}, "run": {"dir": str(tmp_path / "run")}}
    anyio.run(lambda: runner.run(validate_config(config)))
    lines = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    return {r["case_id"]: r["scores"]["TaskCompletion"]["reason"] for r in lines}


def test_a_short_prompt_is_not_said_to_be_cut(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    steps = [{"output": f"answer number {i} " + "z" * 300} for i in range(10)]
    users = [{"step": i, "content": f"user turn {i} " + "q" * 300} for i in range(10)]
    case = {"id": "cut", "input": "x", "trace": {"steps": steps, "user_messages": users, "output": "done", "system_prompts": [{"text": "Be nice."}]}}
    (tmp_path / "c.jsonl").write_text(json.dumps(case) + "\n")
    reason = _reasons({"dataset": {"path": str(tmp_path / "c.jsonl"), "format": "native"}, "context_tokens": 1100}, tmp_path, simulator())["cut"]
    assert "middle user turns left out" in reason  # fitted: every level of cutting the prompt was gone through
    assert "system prompt" not in reason.lower()


def test_the_configured_cut_is_not_said_to_be_a_cut_to_fit(simulator: Callable[..., SimulatorThread], tmp_path: Path) -> None:
    # A 5,600-character policy is cut to 2,000 by `system_prompt_chars` (its default) in every prompt; fitting leaves
    # steps out and cuts nothing more of it: the reason once said `System prompt cut to 2,000 characters to fit …`,
    # and the prompt's marker counted its own characters (`…[23 characters cut]`) instead of the policy's.
    steps = [{"output": f"answer number {i} " + "z" * 300} for i in range(10)]
    case = {"id": "cut", "input": "x", "trace": {"steps": steps, "output": "done", "system_prompts": [{"text": "Policy. " * 700}]}}
    (tmp_path / "c.jsonl").write_text(json.dumps(case) + "\n")
    reason = _reasons({"dataset": {"path": str(tmp_path / "c.jsonl"), "format": "native"}, "context_tokens": 2500}, tmp_path, simulator())["cut"]
    assert "middle steps left out to fit the judge's context" in reason, reason
    assert "system prompt" not in reason.lower(), reason


def test_a_cut_to_fit_below_the_setting_counts_the_prompts_characters() -> None:
    steps = [{"output": f"answer number {i} " + "z" * 300} for i in range(10)]
    case = Case.model_validate({"id": "c", "input": "x", "trace": {"steps": steps, "output": "done",
                                                                   "system_prompts": [{"text": "P" * 9000}, {"text": "Q" * 3000}]}})
    plan = TaskCompletion(include_system_prompt=True, system_prompt_chars=8000).plan(case)
    fitted = fit_request(plan, plan.questions, JudgeConfig(context_tokens=3000))
    assert fitted.omit and fitted.cap == 2000 and cut_note(fitted.cut, fitted.cap).endswith(" cut to 2,000 characters")
    shown = fitted.req.messages[-1]["content"].split("## System prompt", 1)[1].split("\n## Task", 1)[0]
    # the first 2,000 characters of the first prompt; the marker counts the 7,000 after them and the second prompt's 3,000
    assert "P" * 2000 + " …[10000 characters cut]" in shown and "Q" not in shown, shown[-80:]


def test_a_cut_policy_is_said_once_with_the_cut_the_judge_saw(simulator: Callable[..., SimulatorThread], tmp_path: Path,
                                                              tau_paths: tuple[Path, Path]) -> None:
    runs, tasks = tau_paths
    reasons = _reasons({"dataset": {"path": str(runs), "format": "tau-bench", "tasks": str(tasks), "limit": 4}, "context_tokens": 1400},
                       tmp_path, simulator())
    said = {cid: re.findall(r"system prompt cut to ([0-9,]+) characters", r, re.I) for cid, r in reasons.items()}
    assert any(said.values()), reasons  # the window makes some prompt cut past its field cut
    assert all(len(cuts) <= 1 for cuts in said.values()), reasons
    assert all(cut in ("1,000", "500", "200") for cuts in said.values() for cut in cuts), reasons


def test_the_note_counts_only_the_prompts_a_level_cuts() -> None:
    assert system_note(3, (8,)) == "" and system_note(0, (5000,)) == ""
    assert system_note(3, (201,)) == "the system prompt cut to 200 characters"
    assert system_note(2, (2000, 40, 600)) == "2 of the 3 system prompts cut to 500 characters each"
    assert system_note(1, (2000, 40)) == "1 of the 2 system prompts cut to 1,000 characters"
    # every prompt cut: said as a reader would say it, not "2 of the 2"
    assert system_note(2, (2000, 600)) == "both system prompts cut to 500 characters each"
    assert system_note(3, (2000, 600, 201)) == "all 3 system prompts cut to 200 characters each"


def test_show_prompt_says_what_was_left_out_as_the_reason_says_it(tmp_path: Path) -> None:
    steps = [{"output": f"answer number {i} " + "z" * 300} for i in range(10)]
    users = [{"step": i, "content": f"user turn {i} " + "q" * 300} for i in range(10)]
    case = {"id": "cut", "input": "x", "trace": {"steps": steps, "user_messages": users, "output": "done", "system_prompts": [{"text": "Be nice."}]}}
    (tmp_path / "c.jsonl").write_text(json.dumps(case) + "\n")
    (tmp_path / "c.yaml").write_text(json.dumps({"dataset": {"path": "c.jsonl", "format": "native"},
                                                 "metrics": [{"type": "TaskCompletion", "include_system_prompt": True}],
                                                 "judge": {"provider": "simulator", "model": "gpt-4o-mini", "context_tokens": 1100},
                                                 "run": {"dir": "run"}, "cache": {"dir": "cache"}}))
    args = [sys.executable, "-m", "tracejudge", "estimate", "c.yaml", "--show-prompt", "cut"]
    text = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, check=True).stdout
    # what was cut, in the words of the run's reason (it said `cut: Conversation` where the reason said `Conversation cut
    # to 200 characters`)
    assert "fitted to judge.context_tokens: 8 middle steps and 8 middle user turns left out; Conversation cut to 200 characters" in text.splitlines()[0]
    [shown] = [json.loads(x) for x in subprocess.run([*args, "--json"], capture_output=True, text=True, cwd=tmp_path, check=True).stdout.splitlines()]
    assert (shown["omitted_steps"], shown["omitted_turns"], shown["left_out"]) == (8, 8, "8 middle steps and 8 middle user turns left out")
    assert (shown["cut"], shown["cut_said"]) == (["Conversation"], "Conversation cut to 200 characters")


def test_the_note_counts_in_words_true_of_one() -> None:
    from tracejudge.stages.judge.conversation import omitted_note

    assert omitted_note(5, 1).startswith("1 middle step left out to fit"), omitted_note(5, 1)
    assert omitted_note(5, 3).startswith("3 middle steps left out to fit"), omitted_note(5, 3)
