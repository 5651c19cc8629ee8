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

from pathlib import Path

from _history_loops import history_loop_tests

DATA = Path(__file__).parent / "data" / "compacted-history"
SCENARIOS = ["tl-compact-round", "oi-compact-round", "oi-compact-round-session", "tl-compact-turns", "oi-compact-turns"]

test_loop_reads_as_its_truth, test_turns_end_on_their_answers = history_loop_tests(DATA, SCENARIOS)
