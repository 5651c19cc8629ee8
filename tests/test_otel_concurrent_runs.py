"""Agent runs started side by side under one span, recorded by the real instrumentations, in `tests/data/concurrent-runs/`.

Recorded by `tests/frameworks/record_concurrent_runs.py` (its docstring says what each scenario runs); each
`<scenario>.truth.json` is what the application itself sent and got, per run.

- The OpenAI Agents SDK's `asyncio.gather` of two `Runner.run` inside `trace("eval-batch")` (OpenInference: one AGENT
  span over both runs), with two questions or one question twice, and LangGraph's `.batch()` inside a plain span
  (OpenInference, OpenLLMetry): by default one case (no conversation id tells the runs apart), each run a turn of
  its own: its question, then its own steps, calls and answer, never the other run's; the SDK's own export of
  the same question asked twice too.
- The same SDK runs one after the other in one trace (a harness's loop): each run a turn of its own with its own
  question under OpenInference too (its AGENT span of the trace holds them), as the SDK's own export reads them.
- `group_by: run`: one case per run (`concurrent.split_runs`, which `group_by: run` splits a trace with).
- One LangGraph run whose nodes run at once (`Send`) and are then summarised stays one run.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case
from tracejudge.stages.extract.otel import adapt, read, turn_calls

DATA = Path(__file__).parent / "data" / "concurrent-runs"
# (recording, format, truth) of every batch: two runs at once under one span
BATCHES = [("oi-agents-gather.jsonl", "otel", "agents-gather"), ("oi-agents-gather-same.jsonl", "otel", "agents-gather-same"),
           ("export-agents-gather-same.jsonl", "openai-agents", "agents-gather-same"), ("export-agents-gather.jsonl", "openai-agents", "agents-gather"),
           ("oi-langgraph-batch.jsonl", "otel", "oi-langgraph-batch"), ("tl-langgraph-batch.jsonl", "otel", "tl-langgraph-batch"),
           # the Agents SDK's runs one after the other in one trace: each its own turn too, as its export reads them
           ("oi-agents-sequence.jsonl", "otel", "agents-sequence"), ("export-agents-sequence.jsonl", "openai-agents", "agents-sequence")]
OTLP = [b for b in BATCHES if b[1] == "otel"]


def extract(name: str, fmt: str = "otel", **options: Any) -> list[Case]:
    cases = extract_path(DATA / name, fmt, options)
    assert all(isinstance(c, Case) for c in cases), cases
    return cases


def truth(name: str) -> list[dict[str, Any]]:
    return json.loads((DATA / f"{name}.truth.json").read_text())["runs"]


def _calls(calls: list[Any]) -> list[dict[str, Any]]:
    return [{"id": c.id, "name": c.name, "arguments": c.arguments, "result": c.result} for c in calls]


def turns(case: Case) -> list[dict[str, Any]]:
    """Each turn of `case` as a run's facts: its user turns (the user messages placed in its steps), calls, answer, usage."""
    meta = case.metadata["otel"]["turns"]
    out = []
    for turn, calls in zip(meta, turn_calls(case)):
        first, end = turn["steps"]
        asked = [m.content for m in case.trace.user_messages if first <= m.step < end or (m.step == end == first)]
        u = turn["usage"]
        out.append({"user_turns": asked, "calls": _calls(calls), "output": turn["final_text"],
                    "usage": {k: u[k] for k in ("input_tokens", "output_tokens", "requests")}})
    return out


def facts(case: Case) -> dict[str, Any]:
    """What a case says one run was: user turns, calls, answer, usage."""
    u = case.trace.usage
    return {"user_turns": [m.content for m in case.trace.user_messages], "calls": _calls(case.trace.tool_calls()),
            "output": case.trace.output, "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens, "requests": u.requests}}


def _by_calls(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(runs, key=lambda r: [c["id"] for c in r["calls"]])  # the runs' order of start is not the question


@pytest.mark.parametrize("name,fmt,scenario", BATCHES)
def test_each_concurrent_run_is_a_turn_with_its_own_question_steps_and_answer(name, fmt, scenario):
    [case] = extract(name, fmt)  # no conversation id: one case, as README says
    runs = truth(scenario)
    got = turns(case)
    assert _by_calls(got) == _by_calls(runs)
    # each run's question opens its turn, its steps follow together: one run's steps never inside the other's
    assert [m.content for m in case.trace.user_messages] == [t["user_turns"][0] for t in got]
    assert [m.step for m in case.trace.user_messages] == [t["steps"][0] for t in case.metadata["otel"]["turns"]]
    assert case.trace.output == got[-1]["output"]


@pytest.mark.parametrize("name,fmt,scenario", OTLP)
def test_group_by_run_splits_concurrent_runs_into_a_case_each(name, fmt, scenario):
    from tracejudge.stages.extract.otel.concurrent import split_runs  # `group_by: run` splits each trace with it

    [trace] = [raw.payload for raw in read(SimpleNamespace(path=str(DATA / name), options={"group_by": "trace"}, limit=None))]
    cases = [adapt(g) for g in split_runs(trace)]
    assert _by_calls([facts(c) for c in cases]) == _by_calls(truth(scenario))
    assert len({c.id for c in cases}) == len(cases) and all(c.id.startswith(trace.key + ":") for c in cases)


@pytest.mark.parametrize("name,fmt,scenario", OTLP)
def test_group_by_run_option_reads_a_case_per_run(name, fmt, scenario):
    cases = extract(name, group_by="run")
    assert _by_calls([facts(c) for c in cases]) == _by_calls(truth(scenario))


def test_one_run_whose_nodes_run_at_once_stays_one_run():
    [run] = truth("oi-langgraph-fanout")
    for group_by in ("conversation", "run"):
        [case] = extract("oi-langgraph-fanout.jsonl", group_by=group_by)
        assert case.trace.output == run["output"]
        assert [s.output for s in case.trace.steps] == [*run["notes"], run["output"]] or \
            [s.output for s in case.trace.steps] == [*reversed(run["notes"]), run["output"]]
        assert facts(case)["usage"] == run["usage"]
    from tracejudge.stages.extract.otel.concurrent import split_runs

    [trace] = [raw.payload for raw in read(SimpleNamespace(path=str(DATA / "oi-langgraph-fanout.jsonl"), options={"group_by": "trace"}, limit=None))]
    assert split_runs(trace) == [trace]
