"""Record plain OpenAI chat loops that compact their history before a request, behind `tests/test_otel_compacted_history.py`.

    python tests/frameworks/record_otel_compacted_history.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/compacted-history)

A hand-written `client.chat.completions.create` loop (tool `get_weather`; no span around it, so each request is a trace
of its own) under opentelemetry-instrumentation-openai (OpenLLMetry, `tl-…`) or openinference-instrumentation-openai
(`oi-…`), against a scripted loopback server (`record_otel_loop_faults.Scripted`, request n gets `SCRIPT[kind][n]`;
no network). Before some requests the application compacts its history, as chat applications do to stay within the
context window: it keeps the system prompt and the user's question(s) and drops the tool rounds between (their calls and
results), so a request replays neither the whole history nor a suffix of it. Writes `OUTDIR/<scenario>.jsonl`
(OTLP/JSON) and `OUTDIR/<scenario>.truth.json` (what the application sent and got: its user turns, every call it ran with
its result, each turn's answer and the last, token usage). Each scenario runs in its own subprocess.

- `tl-compact-round`, `oi-compact-round`: one question; a call (Paris), its result, another call (Tokyo), its result;
  before the last request the Paris round is dropped (system prompt, question, the Tokyo round); then the answer.
- `oi-compact-round-session`: the same inside OpenInference's `using_session("chat-1")` (the requests share a session id).
- `tl-compact-turns`, `oi-compact-turns`: two questions; each turn's tool round is dropped once the turn is answered
  (the application stores the user's and the assistant's texts only), so the second question's first request sends
  the system prompt, the first question, its answer and the second question.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "data" / "compacted-history"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import record_each_in_subprocess  # noqa: E402
from history_loop_common import QUESTIONS, REPLIES, SYSTEM, loop_truth, no_usage, quiet, record_loop, request, run_calls  # noqa: E402

SCRIPT = {"round": REPLIES["round"], "turns": quiet(REPLIES["turns"])}  # (the round's calls come with a few words, the turns' with none)


def _turn(client: Any, messages: list[dict[str, Any]], calls: list[dict[str, Any]], spent: dict[str, int], compact_at: int | None) -> str:
    """One user turn: requests until a reply calls no tool; before request `compact_at` of the turn the tool rounds
    before the latest one are dropped. Returns the answer; `messages` ends with it."""
    n = 0
    while True:
        if n == compact_at:
            first_tool_round = next(i for i, m in enumerate(messages) if m.get("tool_calls"))
            latest = max(i for i, m in enumerate(messages) if m.get("tool_calls"))
            messages[first_tool_round:latest] = []
        msg = request(client, messages, spent)
        n += 1
        messages.append(msg)
        if not msg.get("tool_calls"):
            return msg["content"]
        messages.extend(run_calls(msg, calls))


def app(client: Any, kind: str) -> dict[str, Any]:
    calls: list[dict[str, Any]] = []
    spent = no_usage()
    if kind == "round":
        messages = [SYSTEM, {"role": "user", "content": QUESTIONS["round"][0]}]
        return loop_truth(QUESTIONS["round"], [_turn(client, messages, calls, spent, compact_at=2)], calls, spent)
    kept: list[dict[str, Any]] = [SYSTEM]  # what the application stores: the user's and the assistant's texts
    answers = []
    for text in QUESTIONS["turns"]:
        kept.append({"role": "user", "content": text})
        answers.append(_turn(client, list(kept), calls, spent, compact_at=None))
        kept.append({"role": "assistant", "content": answers[-1]})
    return loop_truth(QUESTIONS["turns"], answers, calls, spent)


def record(out: Path, name: str, inst: str, kind: str, session: bool = False) -> Any:
    return record_loop(out, name, inst, SCRIPT[kind], lambda client: app(client, kind), session)


SCENARIOS = {
    "tl-compact-round": lambda out: record(out, "tl-compact-round", "tl", "round"),
    "oi-compact-round": lambda out: record(out, "oi-compact-round", "oi", "round"),
    "oi-compact-round-session": lambda out: record(out, "oi-compact-round-session", "oi", "round", session=True),
    "tl-compact-turns": lambda out: record(out, "tl-compact-turns", "tl", "turns"),
    "oi-compact-turns": lambda out: record(out, "oi-compact-turns", "oi", "turns"),
}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], SCENARIOS))
