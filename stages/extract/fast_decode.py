"""Decode one native JSONL line into a `Case` with msgspec, a third of pydantic-core's cost, or say it cannot.

`decode(raw)` returns the `Case` that `Case.model_validate_json(raw)` would give, or None when
the line needs pydantic: anything msgspec refuses (an unknown field, a wrong type, invalid JSON,
bytes that are not UTF-8, too deep) and anything pydantic would coerce or check in Python (string
arguments to decode, an id given as a number, user messages out of place). The caller then runs
pydantic's validation, which gives exactly today's case or error message (file, line, field).
msgspec is stricter than pydantic's lax mode and never looser, so a line it accepts is one
pydantic accepts unchanged: the same values, the same defaults.

The typed structs mirror `tracejudge.core.records` field by field, in the same order; the
`Case` is then assembled without a second validation pass (`_model`). Without msgspec
installed, `decode` always returns None.
"""

from __future__ import annotations

from typing import Annotated, Any

from tracejudge.core.records import Case, ExpectedToolCall, Passage, Step, ToolCall, Trace, Usage, UserMessage

__all__ = ["decode"]

try:
    import msgspec
except ImportError:  # pragma: no cover - msgspec is a dependency; without it pydantic decodes every line
    msgspec = None  # type: ignore[assignment]

_new = object.__new__
_set = object.__setattr__


def _model(cls: type, values: dict[str, Any], names: frozenset[str]) -> Any:
    # A pydantic instance from values a stricter validator already checked: what validation builds, except
    # that every field counts as set (as if the line spelled out its defaults; nothing reads a Case's fields set).
    inst = _new(cls)
    _set(inst, "__dict__", values)
    _set(inst, "__pydantic_fields_set__", set(names))
    _set(inst, "__pydantic_extra__", None)
    _set(inst, "__pydantic_private__", None)
    return inst


class _Fallback(Exception):
    """The line is valid JSON of the right shape but needs pydantic's own handling."""


if msgspec is not None:
    from msgspec import Meta, Struct, field
    from msgspec.structs import astuple

    class _ToolCall(Struct, forbid_unknown_fields=True, kw_only=True):
        id: str | None = None
        name: str
        arguments: dict[str, Any] | str = field(default_factory=dict)
        arguments_invalid: bool = False
        arguments_missing: bool = False
        result: Any = None
        error: str | None = None

    class _Step(Struct, forbid_unknown_fields=True):
        thought: str | None = None
        tool_calls: list[_ToolCall] = field(default_factory=list)
        output: str | None = None

    class _Usage(Struct, forbid_unknown_fields=True):
        input_tokens: int | None = None
        output_tokens: int | None = None
        requests: int | None = None
        cost_usd: float | None = None
        latency_s: float | None = None

    class _Passage(Struct, forbid_unknown_fields=True):
        id: str | None = None
        content: str = ""
        score: float | None = None
        source: str | None = None

    class _UserMessage(Struct, forbid_unknown_fields=True):
        step: Annotated[int, Meta(ge=0)]
        content: Any = None

    class _Trace(Struct, forbid_unknown_fields=True):
        steps: list[_Step] = field(default_factory=list)
        user_messages: list[_UserMessage] = field(default_factory=list)
        output: str | None = None
        usage: _Usage | None = None
        retrieved: list[_Passage] = field(default_factory=list)

    class _Expected(Struct, forbid_unknown_fields=True):
        name: str
        arguments: dict[str, Any] | None = None
        result: Any = None

    class _Case(Struct, forbid_unknown_fields=True):
        id: str
        input: Any = None
        expected_output: Any = None
        expected_tool_calls: list[_Expected] | None = None
        expected_passages: list[str] | None = None
        context: Any = None
        turns: list[Any] = field(default_factory=list)
        tags: list[str] = field(default_factory=list)
        metadata: dict[str, Any] = field(default_factory=dict)
        metrics: list[dict[str, Any]] = field(default_factory=list)
        trace: _Trace | None = None

    _DECODER = msgspec.json.Decoder(_Case)
    _PAIRS = ((_ToolCall, ToolCall), (_Step, Step), (_Usage, Usage), (_Passage, Passage), (_UserMessage, UserMessage),
              (_Trace, Trace), (_Expected, ExpectedToolCall), (_Case, Case))
    _D = {m: frozenset(m.model_fields) for _, m in _PAIRS}
    # Each struct's fields are its model's in the model's order (so `astuple` zips with the names, and
    # dumps and reprs come out alike).
    _N = {m: tuple(m.model_fields) for _, m in _PAIRS}
    for _s, _m in _PAIRS:
        assert _s.__struct_fields__ == _N[_m], f"{_s.__name__} does not mirror {_m.__name__} field for field"

    def _plain(struct: Any, cls: type) -> dict[str, Any]:
        return dict(zip(_N[cls], astuple(struct)))

    def _call(c: _ToolCall) -> ToolCall:
        if type(c.arguments) is not dict:
            raise _Fallback  # a JSON string of arguments: pydantic decodes it (and flags what does not decode)
        return _model(ToolCall, _plain(c, ToolCall), _D[ToolCall])

    def _step(s: _Step) -> Step:
        values = _plain(s, Step)
        values["tool_calls"] = [_call(c) for c in s.tool_calls]
        return _model(Step, values, _D[Step])

    def _trace(t: _Trace) -> Trace:
        steps = [_step(s) for s in t.steps]
        last = 0
        for msg in t.user_messages:  # `Trace._placed`: pydantic says what is out of place
            if msg.step > len(steps) or msg.step < last:
                raise _Fallback
            last = msg.step
        values = {
            "steps": steps,
            "user_messages": [_model(UserMessage, _plain(m, UserMessage), _D[UserMessage]) for m in t.user_messages],
            "output": t.output,
            "usage": None if t.usage is None else _model(Usage, _plain(t.usage, Usage), _D[Usage]),
            "retrieved": [_model(Passage, _plain(p, Passage), _D[Passage]) for p in t.retrieved],
        }
        return _model(Trace, values, _D[Trace])

    def _case(c: _Case) -> Case:
        values = _plain(c, Case)
        if c.expected_tool_calls is not None:
            values["expected_tool_calls"] = [_model(ExpectedToolCall, _plain(e, ExpectedToolCall), _D[ExpectedToolCall]) for e in c.expected_tool_calls]
        if c.trace is not None:
            values["trace"] = _trace(c.trace)
        return _model(Case, values, _D[Case])


def decode(raw: bytes | str) -> Case | None:
    """The `Case` of one native JSONL line, or None when pydantic must validate it (see the module docstring)."""
    if msgspec is None:
        return None
    try:
        return _case(_DECODER.decode(raw))
    except (msgspec.DecodeError, _Fallback):
        return None
