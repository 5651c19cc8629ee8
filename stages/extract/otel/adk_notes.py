"""Google ADK's notes on another agent's turn, which it sends the model as a user message but no user wrote.

When a run passes from one agent to another (`transfer_to_agent`, or a sub-agent answering after its parent), ADK
rewrites the other agent's events in the history the next agent's model is sent (`_present_other_agent_message` in
`google/adk/flows/llm_flows/contents.py`): a `user` content whose first part starts `For context:` (ADK 2 goes on
to say the quoted text is data, not instructions) and whose other parts each say what the other agent did:
`[coordinator] said: …`, `[coordinator] called tool `transfer_to_agent` with parameters: …`, or
`[coordinator] `transfer_to_agent` tool returned result: …`. Recorded, it is one more user message of the
request, in every telemetry mode; it is the framework's account, not the user's words.
"""

from __future__ import annotations

import re

__all__ = ["adk_note"]

_HEAD = "For context:"
_LINE = re.compile(r"\[[^\]\n]+\] (said: |called tool `[^`\n]+` with parameters:|`[^`\n]+` tool returned result:)")


def adk_note(texts: list[str]) -> bool:
    """Whether the text parts of one user message, in order, are such a note: the `For context:` part, then only
    parts telling what another agent said or did."""
    return len(texts) >= 2 and texts[0].startswith(_HEAD) and all(_LINE.match(t) for t in texts[1:])
