"""OpenAI Agents SDK handoffs the SDK ignored or that failed, read as they went, in OpenInference's recording (`otel`) and the
SDK's own export (`openai-agents`) alike.

Recorded by the real SDK (0.24.0; `handoff_recovered`, a handoff with a `failure_error_function`, 0.25.0) against the project's
scripted loopback server (`tests/frameworks/record_agents_handoff_faults.py`;
the folder's README says what each scenario is; `<scenario>.truth.json` is what the application saw). What was wrong before:

- a second handoff in one reply, which the SDK does not run (it answers it "Multiple handoffs detected, ignoring this one."),
  read as a call that ran, with that text as its result and no error;
- a handoff that failed (its `on_handoff` raised; arguments that are not JSON) read as a call with no result and no error, and
  OpenInference's span of it (named `handoff`, not `handoff to <agent>`, since it names no agent) as a second call, `handoff`;
- a run that raised at a handoff's unreadable arguments had no `metadata.run_error` in the export (the SDK marks only the
  handoff span), and under OpenInference one saying the run was cancelled, the handoff call "not run" because of it.

The same runs under `mlflow.openai.autolog()` (MLflow's own Agents SDK tracing processor; `mlflow-<scenario>`, read as format
`mlflow` and, over OTLP, as `otel`) read the ignored and the failed handoff as calls that ran, too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "agents-handoff-faults"
READERS = [("oi", "otel"), ("export", "openai-agents")]


def read(scenario: str, prefix: str, fmt: str) -> Case:
    (case,) = extract_path(DATA / f"{prefix}-{scenario}.jsonl", fmt)
    assert isinstance(case, Case), case
    return case


def truth(scenario: str) -> dict[str, Any]:
    return json.loads((DATA / f"{scenario}.truth.json").read_text())


def calls(case: Case) -> list[Any]:
    assert case.trace is not None
    return [c for s in case.trace.steps for c in s.tool_calls]


@pytest.mark.parametrize(("prefix", "fmt"), READERS)
def test_a_second_handoff_in_one_reply_did_not_run(prefix: str, fmt: str) -> None:
    want = truth("two_handoffs")
    assert want["handoffs_invoked"] == ["Weather"]  # the SDK ran the first handoff only
    sent = {i["call_id"]: i["output"] for i in want["items"] if "output" in i}
    case = read("two_handoffs", prefix, fmt)
    assert case.trace is not None and case.trace.output == want["final_output"]
    taken, ignored = calls(case)
    assert (taken.id, taken.name, taken.error) == ("call_h1", "transfer_to_weather", None)
    result = json.loads(taken.result) if isinstance(taken.result, str) else taken.result
    assert result == json.loads(sent["call_h1"])
    assert (ignored.id, ignored.name, ignored.result) == ("call_h2", "transfer_to_news", sent["call_h2"])  # what the model was sent
    assert ignored.failed and ignored.error.startswith("not run: ") and "transfer_to_weather" in ignored.error
    assert "run_error" not in case.metadata


@pytest.mark.parametrize(("prefix", "fmt"), READERS)
@pytest.mark.parametrize(("scenario", "said"), [("handoff_raises", "Error in agent run: weather desk is closed"),
                                                ("handoff_bad_args", "Invalid JSON provided")])
def test_a_failed_handoff_fails_its_call_and_the_tool_beside_it_ran(scenario: str, said: str, prefix: str, fmt: str) -> None:
    want = truth(scenario)
    assert want["raised"] and want["final_output"] is None
    case = read(scenario, prefix, fmt)
    assert case.trace is not None and case.trace.output is None
    assert case.metadata["run_error"] == said  # the run raised; the trace's error, not a cancel
    (step,) = case.trace.steps
    tool, handoff = step.tool_calls  # no third call: OpenInference's `handoff` span is the handoff, not a call of its own
    (ran,) = want["tool_runs"]
    assert (tool.id, tool.name, tool.arguments, tool.result, tool.error) == ("call_t1", ran["name"], ran["arguments"], ran["result"], None)
    assert (handoff.id, handoff.name, handoff.result) == ("call_h1", "transfer_to_weather", None)
    assert handoff.failed and handoff.error.startswith(said) and "handoff did not complete" in handoff.error


@pytest.mark.parametrize(("prefix", "fmt"), READERS)
def test_a_handoff_that_failed_on_its_arguments_under_the_responses_api(prefix: str, fmt: str) -> None:
    want = truth("handoff_bad_args_responses")
    case = read("handoff_bad_args_responses", prefix, fmt)
    assert case.trace is not None and case.trace.output is None
    assert case.metadata["run_error"] == "Invalid JSON provided"
    got = calls(case)
    assert [(c.name, c.arguments, c.result) for c in got][:1] == [(r["name"], r["arguments"], r["result"]) for r in want["tool_runs"]]
    if prefix == "oi":  # (the export keeps no Responses API output: the handoff's call is not recorded there)
        assert [c.name for c in got] == ["get_weather", "transfer_to_weather"] and got[1].failed
    else:
        assert [c.name for c in got] == ["get_weather"]


MLFLOW = [("mlflow", "mlflow"), ("otlp", "otel")]


def read_mlflow(scenario: str, ext: str, fmt: str) -> Case:
    (case,) = extract_path(DATA / f"mlflow-{scenario}.{ext}.jsonl", fmt)
    assert isinstance(case, Case), case
    return case


@pytest.mark.parametrize(("ext", "fmt"), MLFLOW)
def test_under_mlflow_a_second_handoff_did_not_run(ext: str, fmt: str) -> None:
    want = truth("mlflow-two_handoffs")
    sent = {i["call_id"]: i["output"] for i in want["items"] if "output" in i}
    case = read_mlflow("two_handoffs", ext, fmt)
    assert case.trace is not None and case.trace.output == want["final_output"]
    taken, ignored = calls(case)
    assert (taken.id, taken.name, taken.error) == ("call_h1", "transfer_to_weather", None)
    assert (ignored.id, ignored.name, ignored.result) == ("call_h2", "transfer_to_news", sent["call_h2"])
    assert ignored.failed and ignored.error.startswith("not run: ")


@pytest.mark.parametrize(("ext", "fmt"), MLFLOW)
@pytest.mark.parametrize(("scenario", "said"), [("handoff_raises", "Error in agent run: weather desk is closed"),
                                                ("handoff_bad_args", "Invalid JSON provided")])
def test_under_mlflow_a_failed_handoff_fails_its_call(scenario: str, said: str, ext: str, fmt: str) -> None:
    want = truth(f"mlflow-{scenario}")
    case = read_mlflow(scenario, ext, fmt)
    assert case.trace is not None and case.trace.output is None
    assert case.metadata["run_error"] == want["raised"]  # MLflow records the exception the run raised on its root span
    tool, handoff = calls(case)
    (ran,) = want["tool_runs"]
    assert (tool.id, tool.name, tool.arguments, tool.result, tool.error) == ("call_t1", ran["name"], ran["arguments"], ran["result"], None)
    assert (handoff.id, handoff.name, handoff.result) == ("call_h1", "transfer_to_weather", None)
    assert handoff.failed and handoff.error.startswith(said)  # the SDK's error as its export reads it


@pytest.mark.parametrize(("path", "fmt"), [("oi-handoff_recovered.jsonl", "otel"), ("export-handoff_recovered.jsonl", "openai-agents"),
                                           ("mlflow-handoff_recovered.mlflow.jsonl", "mlflow"), ("mlflow-handoff_recovered.otlp.jsonl", "otel")])
def test_a_failed_handoff_the_sdk_answered_fails_its_call_and_the_run_goes_on(path: str, fmt: str) -> None:
    """A handoff with a `failure_error_function` (SDK 0.25.0 on) whose `on_handoff` raised: the model is sent the formatter's text as the
    call's output and the calling agent answers; the `handoff` span failed "Handoff invocation failed" with no `to_agent`."""
    want = truth(path.split(".")[0].removeprefix("oi-").removeprefix("export-"))
    sent = {i["call_id"]: i["output"] for i in want["items"] if "output" in i}
    assert want["last_agent"] == "Triage" and want["handoffs_invoked"] == ["Weather"]  # invoked, not taken
    (case,) = extract_path(DATA / path, fmt)
    assert isinstance(case, Case) and case.trace is not None, case
    assert case.trace.output == want["final_output"] and "run_error" not in case.metadata
    tool, handoff = calls(case)
    (ran,) = want["tool_runs"]
    assert (tool.id, tool.name, tool.arguments, tool.result, tool.error) == ("call_t1", ran["name"], ran["arguments"], ran["result"], None)
    assert (handoff.id, handoff.name, handoff.result) == ("call_h1", "transfer_to_weather", sent["call_h1"])
    assert handoff.failed and handoff.error.startswith("Handoff invocation failed") and "handoff did not complete" in handoff.error
