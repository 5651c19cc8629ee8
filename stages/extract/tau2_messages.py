"""Walk a τ²-bench simulation's messages into the parts of a trace: steps, user turns, the output, the agent's usage.

The messages were checked against upstream's `Message` shapes first (`tau2_shapes.shape_problem`), so every one is an
object with a known role here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from tracejudge.stages.extract.common import maybe_json
from tracejudge.stages.extract.pairing import Pending

__all__ = ["Walked", "walk_messages"]


class Walked(BaseModel):
    """What `walk_messages` read: `steps` and `users` as a trace holds them, the positions of the calls users made in
    the trace's call list, the last assistant text, and the agent's token and request counts."""

    steps: list[dict[str, Any]]
    users: list[dict[str, Any]]
    user_calls: list[int]
    output: str | None
    tokens_in: int | float
    tokens_out: int | float
    requests: int


def walk_messages(messages: list[dict[str, Any]], where: str, case_id: str) -> Walked:
    """Read a simulation's `messages` (named `where`, `simulations[3]`) into a `Walked`; see the `tau2_bench` docstring.

    Raises `AdapterError` naming `{where}.messages[k].tool_calls[j].name` for a tool call with no name.
    """
    from tracejudge.stages.extract.errors import AdapterError

    # A dict of results by id gave every call sharing an id (repeated, or empty: `ToolCall.id` defaults to "") the
    # last result with it; upstream pairs by position (`Environment.set_state` in sierra-research/tau2-bench
    # `src/tau2/environment/environment.py` only checks the ids are equal), which `Pending` keeps among equal ids.
    pending = Pending()
    steps: list[dict[str, Any]] = []
    user_calls: list[int] = []
    n_calls = 0
    users: list[dict[str, Any]] = []
    output: str | None = None
    tokens_in = tokens_out = requests = 0
    for k, msg in enumerate(messages):
        role = msg.get("role")
        if role == "user" and msg.get("content"):
            users.append({"step": len(steps), "content": msg["content"]})
        # (A MultiToolMessage holds its results in order. Keyed by a stand-in holding the id, so the call keeps the id it
        # was recorded with, `""` included.)
        parts = msg.get("tool_messages")
        for part in ([msg] if parts is None else parts) if role == "tool" else []:
            waiting = pending.answer(part.get("id") or None)
            if waiting is not None:
                content = part.get("content")
                waiting["call"]["result"] = maybe_json(content)
                if part.get("error"):
                    waiting["call"]["error"] = content or "error"
        if role not in ("assistant", "user"):
            continue
        if role == "assistant" and msg.get("usage"):
            requests += 1
            tokens_in += msg["usage"].get("prompt_tokens") or 0
            tokens_out += msg["usage"].get("completion_tokens") or 0
        calls = []
        for j, tc in enumerate(msg.get("tool_calls") or []):
            if not tc.get("name"):
                raise AdapterError("tool call has no name", field=f"{where}.messages[{k}].tool_calls[{j}].name", case_id=case_id)
            call = {"id": tc.get("id"), "name": tc["name"], "arguments": tc.get("arguments"), "result": None, "error": None}
            pending.add({"id": tc.get("id") or None, "call": call})
            calls.append(call)
        text = msg.get("content")
        if calls:
            if role == "user":
                user_calls.extend(range(n_calls, n_calls + len(calls)))
            n_calls += len(calls)
            steps.append({"thought": text or None, "tool_calls": calls})
        elif role == "assistant":
            steps.append({"output": text})
            if isinstance(text, str):  # (an empty reply is the agent's last word too, as the tau-bench reader has it)
                output = text

    return Walked(steps=steps, users=users, user_calls=user_calls, output=output, tokens_in=tokens_in, tokens_out=tokens_out,
                  requests=requests)
