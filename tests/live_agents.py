"""Python targets for the tests. Each behaves as its case's `metadata.mode` says.

Modes: `echo` (default: answers with the turn and history, calls `echo`),
`bad_trace` / `typo` / `trace_text` (malformed replies), `fail_turn` (raises on turn `metadata.turn`), `hang` (on turn `metadata.turn`, default 0), `flaky` (transient
failure the first `metadata.failures` attempts of each trial), `crash`,
`pass_trials` (calls `answer(correct=trial in metadata.pass_trials)`; on the trials in `metadata.judge_refuses` its
output holds `JUDGE-REFUSES`, a marker the judge simulator can be told to refuse).
Every request is appended to `CALLS`, and to the file named by
`LIVE_AGENT_LOG` when set (for runs in another process).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from typing import Any

import anyio
from tracejudge.stages.target import TargetRequest, TransientTargetError

CALLS: list[dict[str, Any]] = []
IN_FLIGHT = {"now": 0, "max": 0}
_ATTEMPTS: Counter[tuple[str, int, str]] = Counter()


def _reply(request: TargetRequest) -> dict[str, Any]:
    meta = request.case.get("metadata") or {}
    mode = meta.get("mode", "echo")
    if mode == "fail_turn" and request.turn == meta["turn"]:
        raise ValueError(f"cannot handle {request.input!r}")
    if mode == "crash":
        raise RuntimeError("agent crashed")
    if mode == "bad_trace":
        return {"output": "x", "trace": {"steps": [{"tool_calls": [{"arguments": {}}]}]}}
    if mode == "typo":
        return {"ouput": "x"}
    if mode == "trace_text":
        return {"output": "x", "trace": "garbage"}
    if mode == "flaky":
        key = (request.case_id, request.trial, "flaky")
        if request.turn == 0:
            _ATTEMPTS[key] += 1
        if _ATTEMPTS[key] <= meta["failures"]:
            raise TransientTargetError("agent busy, try again")
    if mode == "pass_trials":
        call = {"name": "answer", "arguments": {"correct": request.trial in meta["pass_trials"]}}
    else:
        call = {"name": "echo", "arguments": {"turn": request.turn, "text": request.input}, "result": "ok"}
    output = f"turn {request.turn}: {request.input} (after {len(request.history)})"
    if request.trial in meta.get("judge_refuses", []):
        output += " JUDGE-REFUSES"
    return {
        "output": output,
        "trace": {"steps": [{"tool_calls": [call]}], "usage": {"input_tokens": 10, "output_tokens": 5, "requests": 1}},
    }


def _log(request: TargetRequest) -> None:
    CALLS.append(request.model_dump(mode="json"))
    path = os.environ.get("LIVE_AGENT_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"case_id": request.case_id, "trial": request.trial, "turn": request.turn}) + "\n")


def _hangs(request: TargetRequest) -> bool:
    meta = request.case.get("metadata") or {}
    return meta.get("mode") == "hang" and request.turn == meta.get("turn", 0)


async def agent(request: TargetRequest) -> dict[str, Any]:
    """The async test agent."""
    _log(request)
    if _hangs(request):
        await anyio.sleep(60)
    delay = float(os.environ.get("LIVE_AGENT_DELAY") or 0)
    IN_FLIGHT["now"] += 1
    IN_FLIGHT["max"] = max(IN_FLIGHT["max"], IN_FLIGHT["now"])
    try:
        if delay:
            await anyio.sleep(delay)
        return _reply(request)
    finally:
        IN_FLIGHT["now"] -= 1


def sync_agent(request: TargetRequest) -> dict[str, Any]:
    """The same agent, synchronous (runs in a worker thread)."""
    _log(request)
    if _hangs(request):
        time.sleep(3)
    return _reply(request)


def plain_text(request: TargetRequest) -> str:
    """A target that returns only its answer, no trace."""
    _log(request)
    return f"hello {request.input}"


def openai_trace(request: TargetRequest) -> dict[str, Any]:
    """A target whose trace is a raw tau-bench run (OpenAI chat messages), normalized by the adapter."""
    _log(request)
    traj = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": request.input},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_user_details", "arguments": "{\"user_id\": \"u1\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "name": "get_user_details", "content": "{\"name\": \"Ada\"}"},
        {"role": "assistant", "content": "You are Ada."},
    ]
    return {"output": None, "trace": {"task_id": 0, "trial": request.trial, "traj": traj}, "trace_format": "tau-bench"}
