"""inspect-ai tool calls that failed with no error recorded: a raise a solver caught, an approver's `terminate` (format `inspect`).

A tool that raises an exception other than `ToolError` makes inspect's `execute_tools` raise it (inspect_ai
`model/_call_tools.py`): the call's `tool` event says `failed: true`, with an empty result and no error, no tool message
answers it, and a call of the same reply that would have run after it (a serial tool's calls run one by one, in order)
never starts: no `tool` event records it (a parallel call running beside it is cancelled, its error saying so). The
exception itself is kept nowhere in the sample unless it ends the sample (its `error`, `inspect_stops`). When something
outside the tool catches it — a solver calling `execute_tools` or `generate()` inside `try`/`except` — the sample goes
on, with no error and no limit, and the call would read as a call with no result and no error. An approver deciding
`terminate` raises the same way before the tool runs: the `tool` event says `failed`, the sample stops at an `operator`
limit, and the `approval` event for the call (same call id) holds the approver's name and explanation.

`failed_calls` gives each call of the steps still without a result or an error (after `results_from_events` and
`unfinished`) what the log says of it:

- a `failed` `tool` event whose call an approver terminated: the approver's explanation and decision;
- a `failed` `tool` event in a sample stopped by a limit, at its last reply: `failed: inspect stopped the sample at this
  call (<the limit's reason>)` (a reviewer's or another operator's termination);
- any other `failed` `tool` event (a sample that went on past it, or an earlier reply than the one that ended the
  sample): `failed: ` the tool raised an exception that was caught, with no message kept;
- a call with no `tool` event after a failed call of its reply: `not run: ` that call failed first.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.inspect_stops import stop_reason

__all__ = ["CAUGHT", "failed_calls"]

CAUGHT = ("failed: the tool raised an exception that was caught outside it, and the sample went on; inspect keeps no "
          "message of it (the call's `tool` event says only `failed`)")


def _why(approval: dict[str, Any] | None, sample: dict[str, Any], last: bool) -> str:
    """The error of a call whose `tool` event failed without one (module docstring)."""
    if approval is not None:
        said = approval.get("explanation")
        who = approval.get("approver")
        by = f"the approver `{who}`" if isinstance(who, str) and who else "the approver"
        text = said.strip() if isinstance(said, str) and said.strip() else "refused by the approver"
        return f"{text} ({by} decided `terminate`: the call did not run, and inspect stopped the sample)"
    reason = stop_reason(sample) if last else None
    if reason is not None:
        return f"failed: inspect stopped the sample at this call ({reason.strip().splitlines()[0]})"
    return CAUGHT


def failed_calls(sample: dict[str, Any], steps: list[dict[str, Any]]) -> None:
    """Give each call of `steps` without a result or an error that a failed `tool` event explains its error (module docstring)."""
    events = sample.get("events")
    events = [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []
    tools = {str(e.get("id")): e for e in events if e.get("event") == "tool"}
    if not any(e.get("failed") for e in tools.values()):
        return
    ended = {str(e["call"].get("id")): e for e in events
             if e.get("event") == "approval" and e.get("decision") == "terminate" and isinstance(e.get("call"), dict)}
    for k, step in enumerate(steps):
        first: dict[str, Any] | None = None  # the reply's first call whose `tool` event failed with no error (the raise)
        for call in step.get("tool_calls") or []:
            event = tools.get(str(call.get("id")))
            failed = event is not None and bool(event.get("failed"))
            if failed and first is None and event is not None and not event.get("error"):
                first = call
            if "result" in call or "error" in call:
                continue
            if failed and event is not None and not event.get("pending"):
                call["error"] = _why(ended.get(str(call.get("id"))), sample, k == len(steps) - 1)
            elif event is None and first is not None:
                call["error"] = (f"not run: the call `{first.get('id')}` before it in this reply failed, and inspect ran none of the "
                                 "reply's calls after it (no `tool` event records this one)")
