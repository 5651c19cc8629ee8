"""A tiny python target for `examples/live_target.yaml`: a stand-in for the agent under test.

It answers every τ-bench airline task by looking up the user named in the request,
so a live sweep runs in seconds with no model behind it. Replace it with your agent.
"""

from __future__ import annotations

import re

from tracejudge import TargetRequest


def respond(request: TargetRequest) -> dict:
    """One turn: `request.input` is the user's message; returns the reply text and the trace of what was done."""
    user = re.search(r"\b([a-z]+_[a-z]+_\d+)\b", request.input or "")
    calls = [{"name": "get_user_details", "arguments": {"user_id": user.group(1)}, "result": "{}"}] if user else []
    return {"output": "Let me look into that for you.", "trace": {"steps": [{"tool_calls": calls}], "output": "Let me look into that for you."}}
