"""OpenAI Responses API requests recorded by `mlflow.openai.autolog()`, read by formats `mlflow` and `otel`.

The recordings (`tests/data/mlflow-responses`, made by `tests/frameworks/record_mlflow_responses.py` with the real
MLflow 3.17.2 against a loopback server) hold a `client.responses.create` loop: one question, a reasoning summary
and two parallel `get_weather` calls, then the answer. MLflow records a request as its keyword arguments
(`input` items) and the `Response` it got (`output` items); each reading is checked field by field against what
the application itself sent and got (`<scenario>.truth.json`).
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "mlflow-responses"


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.truth.json").read_text())


def read(path: Path, fmt: str) -> list[Case]:
    cases = extract_path(path, fmt)
    assert all(isinstance(c, Case) for c in cases), cases
    return cases


def facts(case: Case) -> dict[str, Any]:
    """What a case says the run was, in the truth file's terms."""
    u = case.trace.usage
    return {"input": case.input, "output": case.trace.output,
            "calls": [{"id": c.id, "name": c.name, "arguments": c.arguments, "result": c.result} for c in case.trace.tool_calls()],
            "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens, "requests": u.requests},
            "steps": [{"thought": s.thought, "output": s.output} for s in case.trace.steps]}


def expected(name: str) -> dict[str, Any]:
    got = truth(name)
    return {k: got[k] for k in ("input", "output", "calls", "usage", "steps")}


@pytest.mark.parametrize("name", ["agent", "bare", "prev", "prev2"])
def test_otlp_export_reads_as_the_run_the_application_made(name: str) -> None:
    """Over OTLP every scenario is one case: the requests of a bare loop (whole `input` history, or
    `previous_response_id`) and its lone tool traces join into the run they were steps of, each tool trace into the
    round that asked for it (`prev2`: turn 2's Berlin call was also read as a phantom call of turn 1's first step)."""
    (case,) = read(DATA / f"{name}.otlp.jsonl", "otel")
    assert facts(case) == expected(name)
    assert [m.content for m in case.trace.user_messages] == truth(name).get("user_messages", [truth(name)["input"]])


def test_mlflow_traces_of_an_agent_span_read_as_the_run_the_application_made() -> None:
    (case,) = read(DATA / "agent.mlflow.jsonl", "mlflow")
    assert facts(case) == expected("agent")
    assert [m.content for m in case.trace.user_messages] == [truth("agent")["input"]]


@pytest.mark.parametrize("name", ["bare", "prev"])
def test_mlflow_traces_of_a_bare_loop_read_each_request_whole(name: str) -> None:
    """Format `mlflow` reads each trace without a session as a case of its own (one per request and per tool
    call: `truth.traces`), but each request is read whole: the first one's question, thought and calls (by
    their `call_id`), the last one's answer and usage."""
    want = truth(name)
    cases = read(DATA / f"{name}.mlflow.jsonl", "mlflow")
    assert len(cases) == want["traces"] == 4
    first, last = facts(cases[0]), facts(cases[-1])
    assert first["input"] == want["input"]
    assert first["steps"] == [want["steps"][0]]
    assert [(c["id"], c["name"], c["arguments"]) for c in first["calls"]] == [(c["id"], c["name"], c["arguments"]) for c in want["calls"]]
    assert last["output"] == want["output"] and last["steps"] == [want["steps"][1]]
    # the chained request sent only the results, no question: it has none
    assert last["input"] == (want["input"] if name == "bare" else None)
    assert first["usage"]["input_tokens"] + last["usage"]["input_tokens"] == want["usage"]["input_tokens"]
    assert first["usage"]["output_tokens"] + last["usage"]["output_tokens"] == want["usage"]["output_tokens"]
    tools = [facts(c)["calls"] for c in cases[1:3]]
    assert [(t[0]["name"], t[0]["arguments"], t[0]["result"]) for t in tools] == [(c["name"], c["arguments"], c["result"]) for c in want["calls"]]


def test_mlflow_bare_loop_split_into_cases_is_warned_about_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A trace that is one request or tool call alone is a step of a run no span wrapped: the split is said, once per file."""
    path = shutil.copy(DATA / "bare.mlflow.jsonl", tmp_path / f"{tmp_path.name}.jsonl")  # (a name no other test read: once per file)
    with caplog.at_level(logging.WARNING):
        read(Path(path), "mlflow")
    said = [r.getMessage() for r in caplog.records if "format mlflow reads each such trace as a case of its own" in r.getMessage()]
    assert len(said) == 1 and "one model request alone" in said[0] and "format otel" in said[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        read(DATA / "agent.mlflow.jsonl", "mlflow")
    assert not [r for r in caplog.records if "as a case of its own" in r.getMessage()]
