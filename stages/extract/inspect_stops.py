"""inspect-ai samples stopped before their agent was done: a tool that raised, a limit (format `inspect`).

What a stopped sample's messages leave out, read from its events (inspect_ai `model/_call_tools.py`, `model/_model.py`,
`util/_limit.py`):

- A tool that raises an exception other than `ToolError` ends the sample with that error (the sample's `error`, the
  case's `metadata.run_error`). The reply's calls stay in the messages with no tool message. The raising call's `tool`
  event says `failed: true`, with an empty result and no error: that call failed with the sample's error, it returned
  nothing. A call of the same reply that no `tool` event records (a later serial call, never started) did not run.
- A token (or cost) limit is checked once a reply's usage is counted, before the reply joins the messages: the reply
  that went past the limit is only in the last `model` event before the `sample_limit` event. It is a step all the same
  (the model made it, `model_usage` counts its tokens, `requests` counts it), read from that event (`late_reply`); its
  calls did not run.
- A limit that stops the sample while a tool runs (`time_limit`, `working_limit`) leaves that call's `tool` event
  `pending`, its result empty: the call did not finish (not a call that returned `""`).
- A sample a limit stopped did not finish (inspect: "unable to finish processing due to a limit"): the limit's reason,
  inspect's own words ("Token limit exceeded. value: 360; limit: 300"), is its `metadata.run_error`, as a framework's
  max-turns error is; `metadata.inspect.limit` keeps the limit, and the output stays the completion inspect scored.

Each call a stop left without a result fails saying why (`unfinished`): the sample's error for the call of its last reply
that raised it (a failed call of an earlier reply was caught, and the sample went on: `inspect_failed`),
`not run: …` for a call of the last reply that no `tool` event records, `did not finish: …` for a pending one, the error
or limit named. A call of an earlier reply that never ran (`generate(tool_calls="none")`) is none of the stop's doing,
and a sample that recorded no events says nothing of its calls: such calls are left as they read.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.inspect_agents import resolved

__all__ = ["late_reply", "stop_reason", "unfinished"]

_NESTED = frozenset({"tool", "scorer", "scorers"})  # a model event under these is a sub-agent's or a scorer's, not the agent's reply


def _events(sample: dict[str, Any]) -> list[dict[str, Any]]:
    events = sample.get("events")
    return [e for e in events if isinstance(e, dict)] if isinstance(events, list) else []


def stop_reason(sample: dict[str, Any]) -> str | None:
    """Why a limit stopped the sample (its `limit.reason`, else the `sample_limit` event's message, else its type and
    value), or None when no limit did."""
    limit = sample.get("limit")
    if not isinstance(limit, dict):
        return None
    reason = limit.get("reason")
    if isinstance(reason, str) and reason.strip():
        return reason
    said = [e.get("message") for e in _events(sample) if e.get("event") == "sample_limit"]
    if said and isinstance(said[-1], str) and said[-1].strip():
        return said[-1]
    value = limit.get("limit")
    return f"{str(limit.get('type') or 'a')} limit exceeded" + (f" (limit: {value:g})" if isinstance(value, (int, float)) else "")


def _nested(event: dict[str, Any], events: list[dict[str, Any]]) -> bool:
    """Whether `event` ran inside a tool's or a scorer's span (a sub-agent's reply, a model-graded scorer's)."""
    spans = {e.get("id"): e for e in events if e.get("event") == "span_begin"}
    seen: set[Any] = set()
    sid = event.get("span_id")
    while sid in spans and sid not in seen:
        seen.add(sid)
        if spans[sid].get("type") in _NESTED:
            return True
        sid = spans[sid].get("parent_id")
    return False


def _kept(message: dict[str, Any], messages: list[Any]) -> bool:
    """Whether `message` is one of the sample's `messages` (by id; a log without message ids: by content and call ids)."""
    if message.get("id") is not None:
        return any(isinstance(m, dict) and m.get("id") == message["id"] for m in messages)
    calls = [c.get("id") for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    return any(isinstance(m, dict) and m.get("role") == "assistant" and m.get("content") == message.get("content")
               and [c.get("id") for c in m.get("tool_calls") or [] if isinstance(c, dict)] == calls for m in messages)


def late_reply(sample: dict[str, Any], messages: list[Any]) -> dict[str, Any] | None:
    """The assistant message of the reply that went past a limit, which the sample's messages never got (module
    docstring), else None."""
    if not isinstance(sample.get("limit"), dict):
        return None
    events = _events(sample)
    stops = [i for i, e in enumerate(events) if e.get("event") == "sample_limit"]
    model = next((e for e in reversed(events[: stops[-1]]) if e.get("event") == "model"), None) if stops else None
    if model is None or _nested(model, events):
        return None
    output = model.get("output")
    choices = output.get("choices") if isinstance(output, dict) else None
    message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    if not isinstance(message, dict) or message.get("role") != "assistant" or _kept(message, messages):
        return None
    calls = message.get("tool_calls")
    if calls is not None and not (isinstance(calls, list) and all(isinstance(c, dict) and isinstance(c.get("function"), str)
                                                                  and c["function"] for c in calls)):
        return None  # (not a reply as inspect writes one: left out rather than failing the sample)
    if not isinstance(message.get("content"), (str, list, type(None))):
        return None
    kept = sample.get("attachments")
    late: dict[str, Any] = resolved(message, kept if isinstance(kept, dict) else {})  # (text a condensed event keeps apart)
    return late


def unfinished(sample: dict[str, Any], steps: list[dict[str, Any]], metadata: dict[str, Any]) -> None:
    """Set the case's `metadata.run_error` to the reason of the limit that stopped the sample (unless its error is already
    there), and give each call of `steps` that a raise or a limit left without a result the error saying why (module
    docstring)."""
    if "run_error" not in metadata and (reason := stop_reason(sample)) is not None:
        metadata["run_error"] = reason
    run_error = metadata.get("run_error")
    waiting = [c for s in steps for c in s.get("tool_calls") or [] if "result" not in c and "error" not in c]
    events = _events(sample)
    failed = bool(sample.get("error"))
    if not waiting or not events or not isinstance(run_error, str) or not run_error.strip() or not (failed or isinstance(sample.get("limit"), dict)):
        return
    tools = {str(e.get("id")): e for e in events if e.get("event") == "tool"}
    first = run_error.strip().splitlines()[0]
    if failed:
        why = f"the sample failed ({first})"
    else:
        kind = sample["limit"].get("type")
        why = f"inspect stopped the sample at its {kind} limit ({first})" if isinstance(kind, str) and kind else f"a limit stopped the sample ({first})"
    last = [id(c) for c in steps[-1].get("tool_calls") or []]  # (an earlier reply's call with no trace of running is none of the stop's doing)
    for call in waiting:
        event = tools.get(str(call.get("id")))
        if event is None and id(call) in last:
            call["error"] = f"not run: {why} before this call ran; no `tool` event records it"
        elif event is not None and event.get("pending"):
            call["error"] = f"did not finish: {why} while this call ran; its `tool` event is still pending"
        elif event is not None and event.get("failed") and failed and id(call) in last:
            call["error"] = run_error  # the tool raised the exception that ended the sample (an earlier reply's was caught: `inspect_failed`)
