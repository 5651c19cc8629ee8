"""Format `inspect`: tool failures a sample went on from — a raise the solver caught, a retried sample, an approver's verdict.

The logs in `tests/data/inspect-failures/` were written by real `inspect_ai.eval(...)` runs (mockllm with scripted replies,
a real tool that logs its runs, a real approver) by `tests/frameworks/record_inspect_failures.py`; `truth.json` is what
each sample did: the replies of its last attempt, what the tool's log and the approver say of each call, what the solver
caught, what earlier attempts raised, and what inspect kept (completion, error, limit).

Before: a call whose tool raised an exception that a solver caught (inspect's `tool` event says `failed`, with no error)
read as a call with no result and no error, and so did the calls of its reply that never ran after it and a call an
approver ended the sample on (`terminate`); a retried sample kept no trace of the attempts that failed. Now each such call
fails saying why, and `metadata.inspect.error_retries` holds the earlier attempts' errors.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _inspect_logs import InspectLogs, assert_replies_are_steps, calls_as_listed, read_one_sample_log

LOGS = InspectLogs("inspect-failures")
TRUTH, SAMPLES = LOGS.truth, LOGS.samples
reading, _sample_of = LOGS.reading, LOGS.sample_of


@pytest.mark.parametrize(("task", "sid"), SAMPLES)
def test_every_call_reads_as_it_went(task: str, sid: str) -> None:
    want = TRUTH[task][sid]
    case = reading(task, sid)
    assert case.trace is not None and case.input == want["input"]
    assert_replies_are_steps(case, want)
    run_error = want["error"] if want["error"] is not None else (want["limit"] or {}).get("reason")
    assert case.metadata.get("run_error") == run_error
    for call, c in calls_as_listed(case, want):
        decided = (call["approval"] or {}).get("decision")
        if call["returned"] is not None:
            assert (c.result, c.error) == (call["returned"], None), c
        elif call["raised"] is not None and call["raised"] == want["error"]:  # the raise that ended the sample
            assert (c.result, c.error) == (None, call["raised"]), c
        elif call["raised"] is not None:  # raised, and the solver caught it: inspect kept no message of it
            assert call["raised"] == want["caught"] and c.result is None and c.error is not None and c.error.startswith("failed: "), c
        elif decided == "reject":  # the model was told the approver's explanation
            assert c.error == call["approval"]["explanation"], c
        elif decided == "terminate":
            assert c.result is None and c.error is not None and call["approval"]["explanation"] in c.error and "terminate" in c.error, c
        else:  # never started: an earlier call of its reply failed
            assert not call["started"] and c.result is None and c.error is not None and c.error.startswith("not run: "), c
    assert case.trace.output == want["output"]


@pytest.mark.parametrize(("task", "sid"), SAMPLES)
def test_usage_is_the_last_attempts_and_earlier_attempts_errors_are_kept(task: str, sid: str) -> None:
    """inspect's sample `model_usage` counts the attempt it kept (the log's `stats` count the retried ones too): so does
    the case; the errors of the attempts inspect retried are `metadata.inspect.error_retries`."""
    want = TRUTH[task][sid]
    case = reading(task, sid)
    assert case.trace is not None
    usage = case.trace.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == tuple(want["usage"][k] for k in ("requests", "input_tokens", "output_tokens"))
    assert case.metadata["inspect"].get("error_retries", []) == want["retried_errors"]


def test_a_retry_that_succeeded_leaves_no_run_error() -> None:
    case = reading("retried", "retried")
    assert case.trace is not None and "run_error" not in case.metadata
    assert case.metadata["inspect"]["error_retries"] == ["ConnectionError('weather backend unreachable')"]
    assert [(c.result, c.error) for c in case.trace.tool_calls()] == [("fine, 20 C", None)] and case.trace.output == "Flaky is fine, 20 C."


def test_a_caught_raise_fails_its_call_and_the_calls_after_it_did_not_run() -> None:
    case = reading("caught-loop", "caught_loop")
    assert case.trace is not None
    berlin, nowhere, madrid = case.trace.steps[0].tool_calls
    assert (berlin.result, berlin.error) == ("windy, 12 C", None)  # (its tool message was lost with the raise: its `tool` event holds it)
    assert nowhere.error is not None and "caught" in nowhere.error
    assert madrid.result is None and madrid.error is not None and madrid.error.startswith("not run: ") and f"`{nowhere.id}`" in madrid.error


def test_a_failed_call_of_an_earlier_reply_is_no_cause_of_the_samples_error(tmp_path: Path) -> None:
    """A sample that failed later for another reason: the caught raise of an earlier reply keeps its own reading, and only
    a failed call of the last reply takes the sample's error."""
    doc = _sample_of("caught-loop", "caught_loop")
    doc["error"] = {"message": "RuntimeError('scorer setup broke')", "traceback": "", "traceback_ansi": ""}
    case = read_one_sample_log(tmp_path, doc)
    assert case.trace is not None and case.metadata["run_error"] == "RuntimeError('scorer setup broke')"
    nowhere = case.trace.steps[0].tool_calls[1]
    assert nowhere.error is not None and nowhere.error.startswith("failed: ") and "scorer setup broke" not in nowhere.error
