"""Record plain OpenAI chat loops inside OpenInference's `using_session` that resend their history with the assistant's
texts stripped, behind `tests/test_otel_stripped_history.py`.

    python tests/frameworks/record_otel_stripped_history.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/stripped-history)

A hand-written `client.chat.completions.create` loop (tool `get_weather`; no span around it, so each request is a trace
of its own) under openinference-instrumentation-openai, every request inside `using_session("chat-1")` (OpenInference's
context manager: each span gets `session.id` `chat-1`), against a scripted loopback server (`record_otel_loop_faults.Scripted`,
request n gets `history_loop_common.REPLIES[kind][n]`; no network). The model says a few words beside its calls ("Checking
Paris.") and answers each question; the application does not send the assistant's words back:

- `oi-texts-round`: one question, two tool rounds; each request's history keeps the assistant's calls but not its text
  (`{"role": "assistant", "content": None, "tool_calls": […]}`), as applications that drop the model's chatter do;
- `oi-texts-turns`: two questions; the same, and an answer (an assistant message with no calls) is not sent back at all,
  so the second question's request holds the first question, its calls and results, and the second question;
- `oi-users-turns`: two questions; the application stores only the user's turns, so the second question's request
  holds the two questions (each turn's own tool rounds are sent whole while it lasts);
- `oi-tools-turns`: two questions; the application stores the user's turns and the tool results (the assistant's
  messages dropped: a server that does not check that a tool message follows its call accepts it, as this one does).

`tl-texts-round` is `oi-texts-round` under opentelemetry-instrumentation-openai (OpenLLMetry), without a session (it
has no `using_session`). Writes `OUTDIR/<scenario>.jsonl` (OTLP/JSON) and `OUTDIR/<scenario>.truth.json` (what the
application sent and got: its user turns, every call it ran with its result, each turn's answer and the last, token
usage). Each scenario runs in its own subprocess.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "data" / "stripped-history"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import record_each_in_subprocess  # noqa: E402
from history_loop_common import QUESTIONS, REPLIES, SYSTEM, loop_truth, no_usage, record_loop, request, run_calls  # noqa: E402


def _no_texts(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The assistant's messages without their text; one that then says and asks nothing is left out."""
    out = []
    for m in messages:
        if m["role"] == "assistant":
            if not m.get("tool_calls"):
                continue
            m = {**m, "content": None}
        out.append(m)
    return out


STRIP = {  # strip name -> (what a request sends of its own turn, what the application keeps of a finished turn)
    "texts": (_no_texts, _no_texts),
    "users": (lambda ms: ms, lambda ms: [m for m in ms if m["role"] in ("system", "user")]),
    "tools": (lambda ms: ms, lambda ms: [m for m in ms if m["role"] in ("system", "user", "tool")]),
}


def app(client: Any, kind: str, strip: str) -> dict[str, Any]:
    sent, kept_of = STRIP[strip]
    calls: list[dict[str, Any]] = []
    spent = no_usage()
    kept: list[dict[str, Any]] = [SYSTEM]  # what the application stores of the turns before
    answers = []
    for text in QUESTIONS[kind]:
        turn: list[dict[str, Any]] = [{"role": "user", "content": text}]
        while True:
            msg = request(client, kept + sent(turn), spent)
            turn.append(msg)
            if not msg.get("tool_calls"):
                answers.append(msg["content"])
                break
            turn += run_calls(msg, calls)
        kept += kept_of(turn)
    return loop_truth(QUESTIONS[kind], answers, calls, spent)


def record(out: Path, name: str) -> Any:
    """Scenario `name` (`<instrumentation>-<strip>-<kind>`); OpenInference's loops run in a session."""
    inst, strip, kind = name.split("-")
    return record_loop(out, name, inst, REPLIES[kind], lambda client: app(client, kind, strip), session=inst == "oi")


SCENARIOS = {n: (lambda out, n=n: record(out, n)) for n in ("oi-texts-round", "oi-texts-turns", "oi-users-turns", "oi-tools-turns", "tl-texts-round")}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], SCENARIOS))
