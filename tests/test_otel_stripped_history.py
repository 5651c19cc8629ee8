"""Format `otel` on plain OpenAI chat loops in OpenInference's `using_session` that send the assistant's words back without
their text (`tests/data/stripped-history`).

Recorded by `tests/frameworks/record_otel_stripped_history.py` under openinference-instrumentation-openai (and one loop
under opentelemetry-instrumentation-openai, without a session); `<scenario>.truth.json` is what the application itself
sent and got. What was wrong before: inside a session each request of the loop is a trace of the session's conversation,
and a request goes on with the user's exchange only when it replays the request before exactly. An application that
sends a reply back as its calls alone (the text beside them, "Checking Paris.", removed) replays the same history, calls
and results, but not that text, so each request after a tool round read as the user asking the question again: the
question was a user turn two or three times. Now such a request goes on with the exchange: it replays the history whole
with the assistant's texts left out, the calls by their ids (`replays.textless`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _history_loops import history_loop_tests
from tracejudge.stages.extract.otel.stitch import continues
from tracejudge.stages.extract.otel.view import View

DATA = Path(__file__).parent / "data" / "stripped-history"
SCENARIOS = ["oi-texts-round", "oi-texts-turns", "oi-users-turns", "oi-tools-turns", "tl-texts-round"]

test_loop_reads_as_its_truth, test_turns_end_on_their_answers = history_loop_tests(DATA, SCENARIOS)


def _m(role: str, *parts: dict[str, object]) -> dict[str, object]:
    return {"role": role, "parts": list(parts)}


def _text(t: str) -> dict[str, object]:
    return {"type": "text", "content": t}


def _call(cid: str | None) -> dict[str, object]:
    return {"type": "tool_call", "id": cid, "name": "get_weather", "arguments": {"city": "Paris"}}


def _result(cid: str | None) -> dict[str, object]:
    return {"type": "tool_call_response", "id": cid, "response": "sunny"}


ASK = [_m("system", _text("Be brief.")), _m("user", _text("Weather in Paris?"))]


@pytest.mark.parametrize(("reply", "replayed", "result", "goes_on"), [
    (_call("call_1"), _call("call_1"), _result("call_1"), True),  # its own calls, by id: the same exchange
    (_call("call_1"), _call("call_9"), _result("call_9"), False),  # other calls: not the reply it replays
    (_call(None), _call(None), _result(None), False),  # calls without ids prove nothing
])
def test_a_reply_sent_back_without_its_text_goes_on_only_with_its_own_calls(reply: dict[str, object], replayed: dict[str, object],
                                                                            result: dict[str, object], goes_on: bool) -> None:
    previous = View(role="model", inputs=ASK, outputs=[_m("assistant", _text("Checking Paris."), reply)])
    request = View(role="model", inputs=[*ASK, _m("assistant", replayed), _m("tool", result)])
    assert continues(previous, request) is goes_on
    asking_again = View(role="model", inputs=[*ASK, _m("assistant", replayed), _m("tool", result), _m("user", _text("And Tokyo?"))])
    assert continues(previous, asking_again) is False  # (the user spoke: a new turn)
