"""Format `langfuse`: a trace's labels are its own scores, not those of the traces listed beside it.

A team that fetches a session's scores once (`GET /api/public/scores?sessionId=…`, or a page of `GET
/api/public/scores`) and puts the list on each trace of the session gives every trace the others' scores too: each
score names its trace (`traceId`), and, on an observation, the observation (`observationId`). Before, every score on a
trace's line was that trace's label: trace B read trace A's `correct: true` as its own, beside its own `false`, as
a conflict (`[true, false]`), and a conversation of the two read each score twice. Now (`langfuse_scores`): only the
trace's own scores (`traceId` the trace's; a score without one, on one of its observations) are its labels, and the
others are left out and said once per trace. A score on an observation (about a step, not the run) stays no label.

Traces: the API JSON `tests/frameworks/langfuse_api.py` builds from recorded OTLP (`tests/data/langfuse-api-observe`),
given ids of their own here (a warning is said once per trace id in a process); scores as `score_v1` lists them.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from langfuse_traces import DATA, score_v1, trace_with_full_details



def _renamed(trace: dict[str, Any], tid: str) -> dict[str, Any]:
    trace = json.loads(json.dumps(trace).replace(trace["id"], tid))
    assert trace["id"] == tid and all(o["traceId"] == tid for o in trace["observations"])
    return trace


def _session(tmp_path: Path, tag: str, session: str | None) -> tuple[Path, str, str, str]:
    """Two traces each listing the session's scores: A's person's `correct: true` and a person's `tool_ok: false` on A's
    first observation, B's `correct: false`, and a score of the session itself."""
    lines = {n: (DATA / "langfuse-api-observe" / f"{n}.otlp.jsonl").read_text().splitlines() for n in ("lf-args", "lf-manual")}
    a = _renamed(trace_with_full_details([json.loads(x) for x in lines["lf-args"]])[0], f"{tag}-a")
    b = _renamed(trace_with_full_details([json.loads(x) for x in lines["lf-manual"]])[0], f"{tag}-b")
    step = a["observations"][0]["id"]
    listed = [score_v1(a["id"], "correct", True, "BOOLEAN", when="2025-06-01T12:00:00.000Z", author="u1"),
              score_v1(a["id"], "tool_ok", False, "BOOLEAN", when="2025-06-01T12:01:00.000Z", observation_id=step, author="u1"),
              score_v1(b["id"], "correct", False, "BOOLEAN", when="2025-06-01T12:02:00.000Z", author="u2"),
              {**score_v1("", "session_ok", True, "BOOLEAN", when="2025-06-01T12:03:00.000Z", author="u2"), "traceId": None,
               "sessionId": "s-1"}]
    for t in (a, b):
        t["scores"] = listed
        if session:
            t["sessionId"] = session
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(a) + "\n" + json.dumps(b) + "\n")
    return path, a["id"], b["id"], step


def _said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "not its own" in r.getMessage()]


def test_each_trace_reads_its_own_scores_not_those_on_its_observations(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="tracejudge")
    path, a, b, _ = _session(tmp_path, "owners-trace", None)
    cases = {c.id: c for c in extract_path(path, "langfuse", {"group_by": "trace"})}
    assert cases[a].metadata["labels"] == {"correct": True}  # (`tool_ok`, on its first observation: a step's, no label)
    assert cases[a].metadata["label_sources"] == {"correct": "human"}
    assert cases[b].metadata["labels"] == {"correct": False}
    assert not any("session_ok" in c.metadata.get("labels", {}) for c in cases.values())  # (the session's: no trace's)
    said = _said(caplog)
    assert len(said) == 2 and f"trace {b} lists scores that are not its own (of {a}, s-1:" in said[1], said
    caplog.clear()
    extract_path(path, "langfuse", {"group_by": "trace"})
    assert _said(caplog) == []  # (said once per trace)


def test_a_conversation_reads_each_traces_score_once(tmp_path: Path) -> None:
    path, a, b, _ = _session(tmp_path, "owners-conversation", "s-1")
    (case,) = extract_path(path, "langfuse")
    assert case.metadata["langfuse"]["traces"] == [a, b]
    assert case.metadata["labels"] == {"correct": [True, False]}
    assert case.metadata["label_sources"] == {"correct": ["human", "human"]}


def test_a_score_without_trace_id_on_an_observation_of_another_trace_is_not_this_ones(tmp_path: Path) -> None:
    path, a, b, step = _session(tmp_path, "owners-no-id", None)
    traces = [json.loads(x) for x in path.read_text().splitlines()]
    for t in traces:
        t["scores"] = [{**score_v1("", "tool_ok", False, "BOOLEAN", observation_id=step, author="u1"), "traceId": None},
                       {**score_v1("", "correct", True, "BOOLEAN", author="u1"), "traceId": None}]
    path.write_text("".join(json.dumps(t) + "\n" for t in traces))
    cases = {c.id: c for c in extract_path(path, "langfuse", {"group_by": "trace"})}
    assert cases[a].metadata["labels"] == {"correct": True}  # (the observation's score is a step's: no label)
    assert cases[b].metadata["labels"] == {"correct": True}  # (no trace named, no session: the line's own)
