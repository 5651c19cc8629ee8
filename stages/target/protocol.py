"""What a target is sent and what it answers, whatever its kind.

Every kind (python, http, command) gets the same request, once per turn:

```json
{"case_id": "c1", "trial": 0, "turn": 1, "conversation_id": "c1/0/3f2a…",
 "input": "and the second one?",
 "history": [{"input": "Cancel my order #W123", "output": "Done."}],
 "case": {"id": "c1", "input": "Cancel my order #W123", "context": null,
          "turns": ["and the second one?"], "tags": [], "metadata": {}}}
```

`case` never carries the expectations (`expected_*`), the recorded trace or
case-level metrics: the agent under test must not see the answers.

It answers with a `TargetReply` (`{"output": ..., "trace": ..., "trace_format": ...}`;
a python target may also return a plain string, a `Trace`, or a mapping of
that shape). `trace` is optional: our `Trace` record, or one raw record of any
registered input format (`trace_format`, else the config's), normalized
through that format's adapter.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from tracejudge.core import registry, suggest
from tracejudge.core.records import Case, Trace

__all__ = [
    "HistoryItem",
    "TargetError",
    "TargetReply",
    "TargetRequest",
    "TransientTargetError",
    "agent_view",
    "normalize_reply",
]


class TargetError(Exception):
    """The target failed for good on this call (no retry): bad reply, agent exception, 4xx.

    `traceback` is the agent's own traceback when a python target raised
    (already redacted), else `None`; the result keeps it in `error.details`.
    """

    traceback: str | None = None


class TransientTargetError(TargetError):
    """A failure worth retrying: connection refused, 429/5xx, a transient exit status.

    A python target raises it (or `ConnectionError` / `TimeoutError`) to ask
    for a retry. `retry_after` (seconds) is a server's hint, honoured as the
    minimum wait before the next attempt. `unreachable` is set by the http
    target when no connection could be made and the target never answered
    this run: after the retries it stops the run (exit 3), as an unreachable
    judge does, instead of failing every case.
    """

    def __init__(self, message: str, retry_after: float | None = None, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.unreachable = unreachable


class HistoryItem(BaseModel):
    """One earlier turn of the conversation: what the user said, what the agent answered."""

    input: Any = None
    output: str | None = None


class TargetRequest(BaseModel):
    """One call to the target: turn `turn` (0 = the case's `input`) of one (case, trial) conversation.

    `conversation_id` is fresh for every trial and every attempt, so a retry
    or a new trial starts the conversation over.
    """

    case_id: str
    trial: int
    turn: int
    conversation_id: str
    input: Any = None
    history: list[HistoryItem] = Field(default_factory=list)
    case: dict[str, Any] = Field(default_factory=dict)


class TargetReply(BaseModel):
    """A target's answer to one turn.

    `output` is the text the user sees (a non-string value is JSON-encoded).
    `trace` is what the agent did on this turn (optional). `metadata` is
    free-form and ignored by scoring. Unknown keys are refused so a typo
    (`ouput`) is an error, not an empty answer.
    """

    model_config = ConfigDict(extra="forbid")

    output: Any = None
    trace: Any = None
    trace_format: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


def agent_view(case: Case) -> dict[str, Any]:
    """The part of a case the agent may see: id, input, context, turns, tags, metadata."""
    return case.model_dump(mode="json", include={"id", "input", "context", "turns", "tags", "metadata"})


def coerce_reply(value: Any) -> TargetReply:
    """Turn whatever a target returned into a `TargetReply`.

    Accepts a `TargetReply`, a `Trace` (its output is the answer), a string
    (the answer, no trace), `None` (no answer), or a mapping of the reply's
    shape. Raises `TargetError` for anything else or an invalid mapping.
    """
    if isinstance(value, TargetReply):
        return value
    if isinstance(value, Trace):
        return TargetReply(output=value.output, trace=value, trace_format="native")
    if value is None or isinstance(value, str):
        return TargetReply(output=value)
    if isinstance(value, dict):
        try:
            return TargetReply.model_validate(value)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(map(str, err["loc"])) or "reply"
            msg = "unknown key" if err["type"] == "extra_forbidden" else suggest.message(err)
            raise TargetError(f"invalid reply: {where}: {msg}") from None
    raise TargetError(f"invalid reply: expected a string, a Trace or a mapping with `output`, got {type(value).__name__}")


def _as_text(output: Any) -> str | None:
    if output is None or isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, default=str)


def normalize_reply(reply: TargetReply, default_format: str, contexts: dict[str, Any]) -> tuple[str | None, Trace]:
    """`(output, trace)` of one turn, the trace in our normalized form.

    A raw trace in another format goes through that format's adapter
    (`adapt(raw, ctx)` with `contexts.get(format)`), exactly as stage
    `extract` would read it from a file. When only one of the reply's
    `output` and the trace's `output` is given, both take it.

    Raises `TargetError` for an unknown format, a trace its adapter
    cannot read (the message names the format and the field), or a reply
    holding a lone surrogate (naming the field).
    """
    output = _as_text(reply.output)
    raw = reply.trace
    if raw is None:
        _writable(output, None)
        return output, Trace(output=output)
    name = reply.trace_format or default_format
    try:
        if isinstance(raw, Trace):
            trace = raw
        elif name == "native":
            trace = Trace.model_validate(raw)
        else:
            fmt = registry.formats().get(name)
            if fmt is None:
                raise TargetError(f"trace_format {name!r} is not a known format")
            case = fmt.adapt(raw, contexts.get(name))
            if case.trace is None:
                raise TargetError(f"the {name} adapter found no trace in the reply")
            trace = case.trace
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(map(str, err["loc"])) or "trace"  # (no field: the trace itself is of the wrong type)
        raise TargetError(f"reply trace ({name}) is invalid: {where}: {suggest.message(err)}") from None
    except TargetError:
        raise
    except Exception as exc:  # an adapter's AdapterError or bug: the reply is unreadable
        field = getattr(exc, "field", None)
        raise TargetError(f"reply trace ({name}) could not be read" + (f" at {field}" if field else "") + f": {exc}") from None
    if trace.output is None and output is not None:
        trace = trace.model_copy(update={"output": output})
    elif output is None:
        output = trace.output
    _writable(output, trace)
    return output, trace


def _writable(output: str | None, trace: Trace | None) -> None:
    """Raise `TargetError` naming the field when the reply holds a lone surrogate (a JSON `\\ud800` escape decodes to
    one; a python agent may return one): no results, traces or report file can carry it."""
    from tracejudge.stages.extract.surrogates import surrogate_field

    dumped = trace.model_dump(mode="python", exclude_defaults=True) if trace is not None else None
    field = surrogate_field({"output": output, "trace": dumped})
    if field is not None:
        raise TargetError(f"invalid reply: {field}: holds a lone surrogate (half of a UTF-16 pair, no character on its own), "
                          "which UTF-8 cannot carry")
