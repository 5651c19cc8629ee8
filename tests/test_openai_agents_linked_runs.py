"""The turns of one conversation run as `Runner.run`s of their own, no `trace()` or `group_id` around them, read as one
case from the SDK's own export (format `openai-agents`) as from OpenInference's recording of the same program
(format `otel`), and runs the recording does not link stay apart.

Recordings: `tests/frameworks/record_agents_linked_runs.py` (`tests/data/agents-linked-runs`); `<s>.truth.json` is what
the program asked and got.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import extract_path

DATA = Path(__file__).parent / "data" / "agents-linked-runs"


def _read(name: str, fmt: str, **options: Any) -> list[Any]:
    cases = extract_path(DATA / name, fmt, options)
    assert all(not isinstance(c, tuple) for c in cases), cases
    return sorted(cases, key=lambda c: str(c.trace.output))


def _reading(case: Any) -> tuple[Any, ...]:
    return ([m.content for m in case.trace.user_messages], [(c.name, c.arguments, c.result) for c in case.trace.tool_calls()], case.trace.output)


def test_session_turns_are_one_case_per_conversation_as_openinference_reads_them() -> None:
    truth = json.loads((DATA / "sessions.truth.json").read_text())
    export, oi = _read("export-sessions.jsonl", "openai-agents"), _read("oi-sessions.jsonl", "otel")
    # (both conversations open with the same question, their prompts stamped per request: only the replayed history,
    # answers and call ids included, tells them apart)
    assert [[m.content for m in c.trace.user_messages] for c in export] == [[t["asked"] for t in truth[k]] for k in ("A", "B")]
    assert [c.trace.output for c in export] == [truth[k][-1]["answer"] for k in ("A", "B")]
    assert [_reading(c) for c in export] == [_reading(c) for c in oi]
    for case in export:
        traces = case.metadata["openai_agents"]["traces"]
        assert len(traces) == 2 and case.id == traces[0]
        assert case.trace.usage.input_tokens is not None


def test_session_turns_stay_apart_by_trace_when_asked() -> None:
    assert len(_read("export-sessions.jsonl", "openai-agents", group_by="trace")) == 4


def test_runs_chained_by_previous_response_id_stay_apart_in_the_export_which_does_not_keep_the_link() -> None:
    export = _read("export-chained.jsonl", "openai-agents")
    assert len(export) == 2
    assert [[c.arguments["city"] for c in case.trace.tool_calls()] for case in export] in (
        [["Paris"], ["Oslo"]], [["Oslo"], ["Paris"]])
