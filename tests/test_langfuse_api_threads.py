"""Format `langfuse`: the invokes of one LangGraph thread, traced by Langfuse's `CallbackHandler`, are one conversation.

Recording in `tests/data/langfuse-api-faults/` (`tests/frameworks/record_langfuse_api_faults.py`, scenario `lf-thread`):
a checkpointed `create_react_agent` invoked on `thread-42` (Paris), on `thread-99` (a lone question), then on `thread-42`
again (Tokyo, with the thread's history). The handler sets no `sessionId`; it keeps the run's `thread_id` as trace
metadata (`langfuse.trace.metadata.thread_id`), which Langfuse's API returns as `metadata.thread_id`.

Format `otel` reads the SDK's spans of the two `thread-42` invokes as one case (the second's request replays the
first's); format `langfuse` read each trace alone, so the Tokyo turn was judged without the Paris one. Now the traces
of one `thread_id` without a `sessionId` are one case as a session's are: id the thread, turns in order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record

DATA = Path(__file__).parent / "data" / "langfuse-api-faults"
TRUTH = {t["thread_id"]: t for t in json.loads((DATA / "lf-thread.truth.json").read_text())["threads"]}


def extract(path: Path, fmt_name: str, **options: Any) -> list[Case]:
    fmt = registry.format_for(fmt_name)
    ds = DatasetConfig(path=path, format=fmt_name, options=options)
    ctx = fmt.prepare(ds)
    cases = [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]
    assert all(isinstance(c, Case) for c in cases), cases
    return cases


def reading(case: Case) -> tuple[Any, ...]:
    return (case.input, case.turns, [(c.name, c.arguments, c.result) for c in case.trace.tool_calls()],
            [m.content for m in case.trace.user_messages], case.trace.output, case.trace.usage.requests)


def truth_reading(thread: str) -> tuple[Any, ...]:
    turns = TRUTH[thread]["turns"]
    return (turns[0]["user"], [t["user"] for t in turns[1:]], [(c["name"], c["arguments"], c["result"]) for t in turns for c in t["calls"]],
            [t["user"] for t in turns], turns[-1]["answer"], sum(t["requests"] for t in turns))


@pytest.mark.parametrize("file", ["lf-thread.json", "lf-thread.v2.json"])
def test_the_invokes_of_one_thread_are_one_case(file: str) -> None:
    thread, lone = extract(DATA / file, "langfuse")  # (conversations in the order they were first seen)
    assert (thread.id, lone.id) == ("thread-42", "thread-99")
    assert reading(thread) == truth_reading("thread-42") and reading(lone) == truth_reading("thread-99")
    assert thread.metadata["langfuse"]["traces"] == TRUTH["thread-42"]["traces"]
    assert [t["user_text"] for t in thread.metadata["otel"]["turns"]] == [t["user"] for t in TRUTH["thread-42"]["turns"]]
    assert "sessionId" not in thread.metadata["langfuse"]  # (the v2 page's `""`: no session)


def test_format_otel_reads_the_thread_alike() -> None:
    otel = sorted((reading(c) for c in extract(DATA / "lf-thread.otlp.jsonl", "otel")), key=repr)
    assert otel == sorted((reading(c) for c in extract(DATA / "lf-thread.json", "langfuse")), key=repr)


def test_group_by_trace_keeps_each_invoke_a_case() -> None:
    cases = extract(DATA / "lf-thread.json", "langfuse", group_by="trace")
    assert [c.id for c in cases] == [TRUTH["thread-42"]["traces"][0], TRUTH["thread-99"]["traces"][0], TRUTH["thread-42"]["traces"][1]]


def test_a_session_is_the_key_before_the_thread_and_a_thread_id_that_is_no_key_reads_alone(tmp_path: Path) -> None:
    traces = [json.loads(line) for line in (DATA / "lf-thread.json").read_text().splitlines()]
    first, lone, second = traces
    path = tmp_path / "keys.json"
    rows = [{**first, "sessionId": "chat-1"}, {**lone, "metadata": {**lone["metadata"], "thread_id": {"id": 99}}},
            {**second, "sessionId": "chat-1"}]
    path.write_text("".join(json.dumps(t) + "\n" for t in rows))
    lone_case, joined = extract(path, "langfuse")  # (a trace read alone comes before the conversations)
    assert (joined.id, lone_case.id) == ("chat-1", lone["id"])
    assert reading(joined) == truth_reading("thread-42")
