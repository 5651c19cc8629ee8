"""The checks the schema runs only on valid fields (a panel's members, `judge.extra_body` under a misspelt provider,
a gate's metric name beside a refused metric option) are named beside the schema's other errors, in the order of the
file's lines, each at its file, line and key: before, each took one rerun after the first mistake was fixed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tracejudge.core.config import load_config
from tracejudge.core.errors import ConfigError

CASE = {"id": "c1", "input": "hi", "trace": {"steps": [{"kind": "message", "role": "assistant", "content": "hello"}]}}

HEAD = """\
dataset: {path: cases.jsonl, format: native}
metrics:
  - {type: TaskCompletion}
judge:
"""

PANEL = HEAD + """\
  provider: simulator
  model: gpt-4o-mini
  models:
    - {provider: simulator, model: gpt-4o-mini, limits: {rmp: 3}}
    - {provider: simulator, model: gpt-4o, extra_body: {n: 3}}
run: {dir: runs/rp, processes: x}
"""

# The member's extra_body with two problems, on a config otherwise valid.
ONE_MEMBER_TWO_KEYS = PANEL.replace("limits: {rmp: 3}", 'extra_body: {"": 1, stream_options: {}}').replace("processes: x", "processes: 1")

PROVIDER = HEAD + """\
  provider: simulater
  model: gpt-4o-mini
  extra_body: {stream: true, "": 1}
"""

GATE = """\
dataset: {path: cases.jsonl, format: native}
metrics:
  - {type: TaskCompletion}
  - {type: ToolCalls, arguments: exakt}
judge: {provider: simulator, model: gpt-4o-mini}
assertions:
  metrics:
    TaskCompleton: {min_mean: 0.5}
"""


def _said(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "cases.jsonl").write_text(json.dumps(CASE) + "\n")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    return [line.split(": ", 1)[0].split(":", 1)[1] + " " + line.split(": ", 2)[1] for line in str(err.value).splitlines()]


def test_panel_members_mistakes_are_named_beside_a_wrong_run_option(tmp_path: Path) -> None:
    assert _said(tmp_path, PANEL) == ["8 judge.models.0.limits.rmp", "9 judge.models.1.extra_body.n", "10 run.processes"]


def test_panel_members_mistakes_are_named_beside_an_unknown_judge_key(tmp_path: Path) -> None:
    text = PANEL.replace("  model: gpt-4o-mini\n", "  model: gpt-4o-mini\n  modle: y\n", 1).replace("processes: x", "processes: 1")
    assert _said(tmp_path, text) == ["7 judge.modle", "9 judge.models.0.limits.rmp", "10 judge.models.1.extra_body.n"]


def test_every_problem_of_one_members_extra_body_is_named(tmp_path: Path) -> None:
    assert _said(tmp_path, ONE_MEMBER_TWO_KEYS) == [
        '8 judge.models.0.extra_body[""]', "8 judge.models.0.extra_body.stream_options", "9 judge.models.1.extra_body.n"]


def test_a_members_unknown_limit_and_its_extra_body_key_are_named_together(tmp_path: Path) -> None:
    text = PANEL.replace("limits: {rmp: 3}", "limits: {rmp: 3}, extra_body: {n: 2}").replace("processes: x", "processes: 1")
    assert _said(tmp_path, text) == ["8 judge.models.0.extra_body.n", "8 judge.models.0.limits.rmp", "9 judge.models.1.extra_body.n"]


def test_extra_body_keys_every_provider_refuses_are_named_beside_a_misspelt_provider(tmp_path: Path) -> None:
    assert _said(tmp_path, PROVIDER) == ["5 judge.provider", "7 judge.extra_body.stream", '7 judge.extra_body[""]']


def test_a_key_only_one_provider_refuses_waits_for_a_valid_provider(tmp_path: Path) -> None:
    # `thinking` is refused for anthropic only: which provider was meant is not known yet.
    assert _said(tmp_path, PROVIDER.replace('"": 1', "thinking: {type: enabled}")) == ["5 judge.provider", "7 judge.extra_body.stream"]


def test_a_gate_on_no_metric_is_named_beside_a_refused_metric_option(tmp_path: Path) -> None:
    assert _said(tmp_path, GATE) == ["4 metrics.1.arguments", "8 assertions.metrics.TaskCompleton"]


def test_a_gate_on_no_metric_is_named_beside_a_schema_error_and_a_refused_gate_rule(tmp_path: Path) -> None:
    text = GATE.replace("    TaskCompleton: {min_mean: 0.5}\n", "    TaskCompleton: {min_mean: 0.5}\n    ToolCalls: {min_kapa: 0.5}\n") + "bogus: 1\n"
    assert _said(tmp_path, text) == ["4 metrics.1.arguments", "8 assertions.metrics.TaskCompleton",
                                     "9 assertions.metrics.ToolCalls.min_kapa", "10 bogus"]


def test_a_gate_on_a_refused_metric_written_name_is_not_refused(tmp_path: Path) -> None:
    assert _said(tmp_path, GATE.replace("TaskCompleton", "ToolCalls")) == ["4 metrics.1.arguments"]
