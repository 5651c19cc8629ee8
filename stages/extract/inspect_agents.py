"""What inspect-ai's own agents and limits leave in a sample, read as what happened (format `inspect`).

- `react()` and `basic_agent()` speak in the user's role. When the model replies without calling a tool, they append
  a user message asking it to go on (react's "Please proceed to the next step using your best judgement. If you
  believe you have completed the task, please call the `submit()` tool with your final answer.", its
  no-submit variant, basic_agent's "Please proceed to the next step using your best judgement."); when an attempt's
  answer scored incorrect (`attempts=` / `max_attempts=`), "Your submission was incorrect. Please proceed and
  attempt to find the correct answer.". Such a message carries no `source` and nothing else marks it (inspect_ai
  `agent/_react.py`, `solver/_basic_agent.py`), so it is told by its fixed wording (`agent_prompt`). It is the
  agent speaking, never the user: no user turn (a live re-run would send it as the user's second turn), kept in
  `metadata.inspect.agent_prompts` with the step it came after; the refusal of an answer is that answer's step
  error (`REFUSED`), as a framework's refused answer reads in format `otel`.
- A limit (`message_limit`, `token_limit`, …) can stop a sample after a tool ran and before its tool message was
  kept: the message limit counts the tool message that would exceed it and drops it. The sample's messages then
  show the call unanswered, though the tool ran; its `tool` event (same call id) holds what it returned or its
  error. `results_from_events` gives such a call that result (a `tool` event that failed without an error, as a
  tool raising a non-`ToolError` exception leaves it, or one still pending when a limit stopped the sample, gives none:
  `inspect_stops` and `inspect_failed` say why such a call has no result).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["REFUSED", "agent_prompt", "resolved", "results_from_events"]

REFUSED = "output rejected: "  # how the step error of an answer the agent's scorer refused starts
_CONTINUE = re.compile(r"Please proceed to the next step using your best judgement\."
                       r"(?: If you believe you have completed the task, please call the `[^`\s]+\(\)` tool(?: with your final answer)?\.)?")
_INCORRECT = "Your submission was incorrect. Please proceed and attempt to find the correct answer."
_ATTACHMENT = "attachment://"


def agent_prompt(text: Any) -> str | None:
    """`"continue"` or `"incorrect"` when `text` is one of react()'s / basic_agent()'s own prompts (whitespace aside:
    older releases wrapped them differently), else None."""
    if not isinstance(text, str):
        return None
    said = " ".join(text.split())
    if said == _INCORRECT:
        return "incorrect"
    return "continue" if _CONTINUE.fullmatch(said) else None


def _tool_events(events: Any) -> Iterator[dict[str, Any]]:
    """Every `tool` event of `events`, nested ones too (a sub-agent's, under its tool event), in order."""
    for e in events if isinstance(events, list) else []:
        if isinstance(e, dict):
            if e.get("event") == "tool":
                yield e
            yield from _tool_events(e.get("events"))


def resolved(value: Any, attachments: dict[str, Any]) -> Any:
    """`value` with an `attachment://<hash>` reference (a condensed event's text) replaced by the text it names."""
    if isinstance(value, str) and value.startswith(_ATTACHMENT) and isinstance(attachments.get(value[len(_ATTACHMENT):]), str):
        return attachments[value[len(_ATTACHMENT):]]
    if isinstance(value, list):
        return [resolved(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: resolved(v, attachments) for k, v in value.items()}
    return value


def results_from_events(sample: dict[str, Any], steps: list[dict[str, Any]], set_result: Callable[..., None]) -> None:
    """Give each call of `steps` that no tool message answered the result (or error) of its `tool` event (module doc)."""
    waiting = {c["id"]: c for s in steps for c in s.get("tool_calls") or [] if "result" not in c and "error" not in c and c.get("id")}
    if not waiting:
        return
    kept = sample.get("attachments")
    attachments: dict[str, Any] = kept if isinstance(kept, dict) else {}
    for e in _tool_events(sample.get("events")):
        call = waiting.pop(str(e.get("id")), None)
        if call is None:
            continue
        error = e.get("error")
        said = error.get("message") if isinstance(error, dict) else error
        if error:
            set_result(call, resolved(e.get("result"), attachments), said if isinstance(said, str) and said else "error")
        elif not e.get("failed") and not e.get("pending"):  # (a pending event's call never finished: no result, `inspect_stops`)
            set_result(call, resolved(e.get("result"), attachments))
