"""`DeepEvalToolCorrectness` on a real τ²-bench results file, against deepeval's own `ToolCorrectnessMetric`.

The `tau2-bench` format writes a `compare_args` key the action lacks as `{"$absent": true}`. deepeval, given the
action as an expected tool call, has no such key in `input_parameters` and compares the mappings with `==`: the
matcher is no value there, and the call without the key is what meets it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from deepeval_table import offline_model
from helpers import DATA
from tracejudge.core.records import Case
from tracejudge.core.registry import format_for
from tracejudge.stages.extract import extract_record
from tracejudge.stages.score import DeepEvalToolCorrectness

AIRLINE = DATA / "tau2_bench" / "model_training_results" / "gpt-4.1_airline_default_gpt-4.1_1trials.json"
pytestmark = pytest.mark.skipif(not AIRLINE.exists(), reason="the tau2-bench developer files are not beside the repository")

UNSET = "note"  # a key no action of the file has and no call of it passes


class _Dataset:
    def __init__(self, path: Path) -> None:
        self.path, self.tasks, self.limit, self.options = path, None, None, {}


def _cases(path: Path) -> list[Case]:
    fmt = format_for("tau2-bench")
    cases = [extract_record(raw, fmt, None) for raw in fmt.read(_Dataset(path))]
    assert all(isinstance(c, Case) for c in cases)
    return cases


def _listing_an_unset_key(tmp_path: Path) -> tuple[Path, dict[str, list[dict[str, Any]]]]:
    """The airline file with every action's `compare_args` listing its own keys and `UNSET`; each task's actions."""
    data = json.loads(AIRLINE.read_text(encoding="utf-8"))
    actions = {}
    for task in data["tasks"]:
        listed = (task.get("evaluation_criteria") or {}).get("actions") or []
        for action in listed:
            assert UNSET not in action["arguments"]
            action["compare_args"] = [*action["arguments"], UNSET]
        actions[task["id"]] = listed
    path = tmp_path / AIRLINE.name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path, actions


@pytest.mark.parametrize(("params", "whole"), [({}, 9), ({"should_consider_ordering": True}, 8), ({"should_exact_match": True}, 2)])
def test_a_compare_args_key_the_action_lacks_is_no_parameter_of_the_expected_call(tmp_path, params, whole):
    path, _ = _listing_an_unset_key(tmp_path)
    cases = _cases(path)
    assert sum(e.arguments.get(UNSET) == {"$absent": True} for c in cases for e in c.expected_tool_calls or []) == 61
    metric = DeepEvalToolCorrectness(evaluation_params=["input_parameters"], **params)
    listed = {c.id: metric.evaluate(c).value for c in cases}
    # Without `compare_args` the expected parameters are the action's own: the same call meets them alike.
    assert listed == {c.id: metric.evaluate(c).value for c in _cases(AIRLINE)}
    # (the cases whose every action was called with its arguments, as the mode wants: partly met, had `$absent` been a value)
    assert sum(v == 1.0 for v in listed.values()) == whole


def test_deepeval_itself_gives_the_same_values(tmp_path, monkeypatch):
    monkeypatch.setenv("DEEPEVAL_TELEMETRY_OPT_OUT", "1")  # no network from the peer
    pytest.importorskip("deepeval")
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.test_case import LLMTestCase, ToolCall, ToolCallParams

    path, actions = _listing_an_unset_key(tmp_path)
    ours = DeepEvalToolCorrectness(evaluation_params=["input_parameters"])
    compared = 0
    for case in _cases(path):
        task = case.metadata["task_id"]
        # The action as upstream's check reads it: its arguments among `compare_args` (`UNSET` is none of them).
        expected = [ToolCall(name=a["name"], input_parameters={k: v for k, v in a["arguments"].items() if k in a["compare_args"]})
                    for a in actions[task]]
        called = [ToolCall(name=c.name, input_parameters=c.arguments, output=c.result) for c in case.trace.tool_calls()]
        theirs = ToolCorrectnessMetric(model=offline_model(), async_mode=False, evaluation_params=[ToolCallParams.INPUT_PARAMETERS])
        value = theirs.measure(LLMTestCase(input="q", actual_output="a", expected_tools=expected, tools_called=called), _show_indicator=False)
        assert ours.evaluate(case).value == pytest.approx(value, abs=1e-12), case.id
        compared += bool(expected)
    assert compared == 18
