"""Two user messages in a row (context, then the question) are both user messages of their turn (`tests/data/consecutive-users`).

Recorded by `tests/frameworks/record_consecutive_users.py`: a plain OpenAI loop under OpenInference, OpenLLMetry and
openai-v2, and an Agents SDK run under OpenInference and the SDK's own export; `<scenario>.truth.json` is what the
application sent. What was wrong before: a turn's user text was the request's last user message, so
`"My order #W42 arrived broken."` before `"Can I get a refund?"` was in neither `input` nor `trace.user_messages`, and the
judge never saw it. Now every user message the request added since the model last spoke is one, in order, and `input`
is the first, as format `openai-messages` reads the same conversation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _loopback import Loopback, completion
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.stages.extract import extract_record
from tracejudge.stages.extract.openai_messages import adapt as openai_messages
from tracejudge.stages.extract.otel.messages import trailing_user_texts

DATA = Path(__file__).parent / "data" / "consecutive-users"
EXE = os.path.join(os.path.dirname(sys.executable), "tracejudge")
RECORDINGS = [("plain-oi.jsonl", "otel", "plain-oi"), ("plain-tl.jsonl", "otel", "plain-tl"), ("plain-v2.jsonl", "otel", "plain-v2"),
              ("oi-agents.jsonl", "otel", "agents"), ("export-agents.jsonl", "openai-agents", "agents")]


def _cases(path: Path, fmt_name: str) -> list[Any]:
    fmt = registry.format_for(fmt_name)
    ds = DatasetConfig(path=path, format=fmt_name)
    ctx = fmt.prepare(ds)
    return [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]


@pytest.mark.parametrize(("file", "fmt", "truth"), RECORDINGS)
def test_every_user_message_of_a_request_is_one_of_its_turn(file: str, fmt: str, truth: str) -> None:
    [case] = _cases(DATA / file, fmt)
    want = json.loads((DATA / f"{truth}.truth.json").read_text())
    said = [(step, text) for step, texts in enumerate(want["user_messages"]) for text in texts]
    assert [(m.step, m.content) for m in case.trace.user_messages] == said
    assert case.input == said[0][1]
    assert (case.turns or []) == [text for _, text in said[1:]]
    assert case.trace.output == want["answers"][-1]
    assert [s.output for s in case.trace.steps] == want["answers"]


def test_input_and_user_messages_are_what_openai_messages_gives_for_the_same_conversation() -> None:
    [case] = _cases(DATA / "plain-oi.jsonl", "otel")
    want = json.loads((DATA / "plain-oi.truth.json").read_text())
    first, later = want["user_messages"]
    messages = [*({"role": "user", "content": u} for u in first), {"role": "assistant", "content": want["answers"][0]},
                *({"role": "user", "content": u} for u in later), {"role": "assistant", "content": want["answers"][1]}]
    same = openai_messages(json.dumps({"id": "same", "messages": messages}))
    assert (case.input, case.turns) == (same.input, same.turns)
    assert [(m.step, m.content) for m in case.trace.user_messages] == [(m.step, m.content) for m in same.trace.user_messages]


def _m(role: str, *texts: str, result: bool = False) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"type": "text", "content": t} for t in texts]
    if result:
        parts.append({"type": "tool_call_response", "id": "c1", "response": "ok"})
    return {"role": role, "parts": parts}


@pytest.mark.parametrize(("messages", "want"), [
    ([_m("system", "Be brief."), _m("user", "a"), _m("user", "b")], ["a", "b"]),
    ([_m("user", "a"), _m("assistant", "x"), _m("user", "b"), _m("system", "note"), _m("user", "c")], ["b", "c"]),
    ([_m("user", "a"), _m("assistant", "x"), _m("tool", result=True)], []),  # (mid-turn: the request ends on a result)
    ([_m("user", "a"), _m("user", result=True), _m("user", "b")], ["b"]),  # (Anthropic: tool results ride in a user message)
    ([_m("user", "a"), _m("user"), _m("user", "b")], ["a", "b"]),  # (a message with no text, an image alone, is no text)
])
def test_the_trailing_user_texts_are_those_after_the_model_last_spoke(messages: list[dict[str, Any]], want: list[str]) -> None:
    assert trailing_user_texts(messages) == want


def test_the_judge_prompt_shows_both_messages(tmp_path: Path) -> None:
    with Loopback(lambda headers, body: (200, completion("{}"))) as server:  # (shown, never asked: --show-prompt sends nothing)
        cfg = tmp_path / "eval.json"
        cfg.write_text(json.dumps({
            "dataset": {"path": str(DATA / "plain-tl.jsonl"), "format": "otel"},
            "metrics": [{"type": "Rubric", "criteria": "The answer is grounded in what the user said.", "include": "trace"}],
            "judge": {"provider": "openai", "model": "sim", "base_url": server.url + "/v1", "api_key_env": None},
            "cache": {"enabled": False}, "run": {"dir": str(tmp_path / "run")}}))
        [case] = _cases(DATA / "plain-tl.jsonl", "otel")
        proc = subprocess.run([EXE, "estimate", str(cfg), "--show-prompt", case.id], capture_output=True, text=True, timeout=300)
        assert not server.requests
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "User 1: My order #W42 arrived broken.\nUser 2: Can I get a refund?\nStep 1:" in proc.stdout
    assert "User 3: How long will it take?\nStep 2:" in proc.stdout
