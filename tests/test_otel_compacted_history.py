"""Format `otel` on plain OpenAI chat loops that compact their history before a request (`tests/data/compacted-history`).

Recorded by `tests/frameworks/record_otel_compacted_history.py` under opentelemetry-instrumentation-openai (OpenLLMetry)
and openinference-instrumentation-openai; `<scenario>.truth.json` is what the application itself sent and got.
What was wrong before: a request whose history kept the question but dropped earlier tool rounds replays neither the
whole history nor a suffix of it (a sliding window), so its trace joined no conversation. The run became two cases:
one ending on the text of the reply that asked for the last call (read as the answer), that call without a result,
and one asking the same question again with the real answer and no calls; inside a session (OpenInference's
`using_session`) the user asked the question twice; a chat that stores only the user's and the assistant's texts
became one case per user turn. Now such a request goes on with its conversation: its start (the question) and its
end (the latest reply, call ids included) are the conversation's own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import extract_path
from test_otel_loop_faults import facts  # (the same facts of a conversation)
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "compacted-history"
SCENARIOS = ["tl-compact-round", "oi-compact-round", "oi-compact-round-session", "tl-compact-turns", "oi-compact-turns"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_loop_reads_as_its_truth(name: str) -> None:
    cases = extract_path(DATA / f"{name}.jsonl", "otel")
    assert all(isinstance(c, Case) for c in cases), cases
    truth = json.loads((DATA / f"{name}.truth.json").read_text())["cases"]
    assert [facts(c) for c in cases] == [{k: v for k, v in t.items() if k != "answers"} for t in truth]


@pytest.mark.parametrize("name", SCENARIOS)
def test_turns_end_on_their_answers(name: str) -> None:
    """One turn per question the user asked, each ending on its answer; the text beside a call is no answer."""
    (case,) = extract_path(DATA / f"{name}.jsonl", "otel")
    (truth,) = json.loads((DATA / f"{name}.truth.json").read_text())["cases"]
    turns = case.metadata["otel"]["turns"]
    assert [(t["user_text"], t["final_text"]) for t in turns] == list(zip(truth["user_turns"], truth["answers"]))
    assert len(case.metadata["otel"]["traces"]) == truth["usage"]["requests"]
