"""Decode one native JSONL line into a `Case` with msgspec, under half pydantic-core's cost, or say it cannot.

`decode(raw)` returns the `Case` that `Case.model_validate_json(raw)` would give, or None when
the line needs pydantic: anything msgspec refuses (an unknown field, a wrong type, invalid JSON,
bytes that are not UTF-8, metadata nested deeper than pydantic reads back, `load.MAX_DEPTH`) and anything pydantic would coerce or check in Python (string
arguments to decode, an id given as a number, an empty id or one holding NUL, user messages out of place;
msgspec itself refuses a boolean where a number goes and any number beyond ±1.8e308). The caller then runs
pydantic's validation, which gives exactly today's case or error message (file, line, field).
msgspec is stricter than pydantic's lax mode and never looser, so a line it accepts is one
pydantic accepts unchanged: the same values, the same defaults.

The typed structs mirror `tracejudge.core.records` field by field, in the same order; the
`Case` is then assembled without a second validation pass (`_model`): about as much CPU again as
msgspec's decode, one pydantic instance at a time (`benchmarks/decode_floor.py`). Without msgspec
installed (or with a pydantic whose instances hold other slots), `decode` always returns None.

`decode_struct` stops before the `Case`: the structs themselves, which also carry the records'
`ToolCall.failed` and `Trace.tool_calls()`, for metrics that read them as records (`struct_score`);
`to_case` then builds the `Case` from them when one is needed after all.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import chain
from operator import attrgetter
from typing import Annotated, Any, Literal

from pydantic import BaseModel

from tracejudge.core.memo import SeenSet
from tracejudge.core.record_fields import tool_name_problem
from tracejudge.core.prompt_list import needs_distinct
from tracejudge.core.records import Case, ExpectedToolCall, Passage, Step, SystemPrompt, ToolCall, Trace, Usage, UserMessage
from tracejudge.stages.load import MAX_DEPTH

__all__ = ["decode", "decode_struct", "to_case"]

try:
    import msgspec
except ImportError:  # pragma: no cover - msgspec is a dependency; without it pydantic decodes every line
    msgspec = None  # type: ignore[assignment]

_new = object.__new__
# The four slots every pydantic instance holds, set through their own setters (which skips `object.__setattr__`'s
# lookup of the name on every call). A pydantic with other slots would leave some unset: pydantic decodes then.
_SLOTS = ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__")
_FAST = msgspec is not None and set(BaseModel.__slots__) == set(_SLOTS)
if _FAST:
    _dict, _fields_set, _extra, _private = (BaseModel.__dict__[slot].__set__ for slot in _SLOTS)


def _model(cls: type, values: dict[str, Any], fields_set: set[str]) -> Any:
    # A pydantic instance from values a stricter validator already checked: what validation builds, except
    # that every field counts as set (as if the line spelled out its defaults; nothing reads a Case's fields set).
    # `fields_set` is copied because assigning a field adds to it.
    inst = _new(cls)
    _dict(inst, values)
    _fields_set(inst, fields_set.copy())
    _extra(inst, None)
    _private(inst, None)
    return inst


class _Fallback(Exception):
    """The line is valid JSON of the right shape but needs pydantic's own handling."""


if _FAST:
    from msgspec import Meta, Struct, field
    from msgspec.structs import asdict


    # `gc=False`: the structs are not tracked by the cycle collector. They hold only what the decoder made (JSON
    # values and other structs), nothing assigns to them afterwards, so no cycle can run through one; untracked,
    # the ~30 structs of a case neither count towards nor are traversed by collections (5% of a struct-path case).
    class _ToolCall(Struct, forbid_unknown_fields=True, kw_only=True, gc=False):
        id: str | None = None
        # A blank name or one holding NUL is refused after the decode (`_named`): pydantic says what is wrong with it. (As a
        # `Meta(pattern=…)` constraint msgspec called `re` for every name, ~3% of a struct-path case.)
        name: str
        # A JSON string of arguments is refused here: pydantic decodes it (and flags what does not decode).
        arguments: dict[str, Any] = field(default_factory=dict)
        arguments_invalid: bool = False
        arguments_missing: bool = False
        # Decoded though few metrics read it (~40% of a τ-bench line's decode). Kept as `msgspec.Raw` it would be
        # skipped, and skipping checks neither UTF-8 inside strings nor numbers past ±1.8e308, which decoding
        # refuses: finding those in Python (`bytes.translate` and `find` over the results) cost as much CPU as
        # decoding them (35.0 against 34.5 µs a line), and without it a line pydantic refuses would score.
        result: Any = None
        error: str | None = None

        # The records' own properties and methods, with their semantics, for code that reads the structs as records
        # (`struct_score`): `ToolCall.failed` and `Trace.tool_calls()` (`tracejudge.core.records`).
        @property
        def failed(self) -> bool:
            """True when the call ended in an error (`ToolCall.failed`)."""
            return self.error is not None

    class _Step(Struct, forbid_unknown_fields=True, gc=False):
        thought: str | None = None
        tool_calls: list[_ToolCall] = field(default_factory=list)
        output: str | None = None
        error: str | None = None

    class _Usage(Struct, forbid_unknown_fields=True, gc=False):
        input_tokens: Annotated[int, Meta(ge=0)] | None = None
        output_tokens: Annotated[int, Meta(ge=0)] | None = None
        requests: Annotated[int, Meta(ge=0)] | None = None
        cost_usd: Annotated[float, Meta(ge=0)] | None = None
        latency_s: float | None = None

    class _Passage(Struct, forbid_unknown_fields=True, gc=False):
        id: str | None = None
        content: str = ""
        score: float | None = None
        source: str | None = None

    class _UserMessage(Struct, forbid_unknown_fields=True, gc=False):
        step: Annotated[int, Meta(ge=0)]
        content: Any

    class _SystemPrompt(Struct, forbid_unknown_fields=True, gc=False):
        text: str
        agent: str | None = None

    class _Trace(Struct, forbid_unknown_fields=True, gc=False):
        steps: list[_Step] = field(default_factory=list)
        user_messages: list[_UserMessage] = field(default_factory=list)
        output: str | None = None
        usage: _Usage | None = None
        retrieved: list[_Passage] = field(default_factory=list)
        system_prompts: list[_SystemPrompt] = field(default_factory=list)

        def tool_calls(self) -> list[_ToolCall]:
            """Every tool call of the trace, in order, failed ones included (`Trace.tool_calls()`)."""
            return [call for step in self.steps for call in step.tool_calls]

    class _Expected(Struct, forbid_unknown_fields=True, gc=False):
        name: str  # (blank: refused by `_named`)
        arguments: dict[str, Any] | None = None
        result: Any = None
        argument_keys: Literal["call", "expected"] | None = None

    class _Case(Struct, forbid_unknown_fields=True, gc=False):
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
              (_SystemPrompt, SystemPrompt), (_Trace, Trace), (_Expected, ExpectedToolCall), (_Case, Case))
    # Each struct's fields are its model's in the model's order, so `asdict` gives the model's `__dict__`
    # as validation orders it (dumps and reprs come out alike).
    for _s, _m in _PAIRS:
        assert _s.__struct_fields__ == tuple(_m.model_fields), f"{_s.__name__} does not mirror {_m.__name__} field for field"
    _SET = {m: set(m.model_fields) for _, m in _PAIRS}
    _SET_CALL, _SET_STEP, _SET_USER, _SET_EXPECTED = _SET[ToolCall], _SET[Step], _SET[UserMessage], _SET[ExpectedToolCall]

    def _step(s: _Step) -> Step:
        values = asdict(s)
        if s.tool_calls:  # an empty list is the struct's own fresh one, kept as is
            values["tool_calls"] = [_model(ToolCall, asdict(c), _SET_CALL) for c in s.tool_calls]
        return _model(Step, values, _SET_STEP)

    def _placed(t: _Trace) -> None:
        last = 0
        for msg in t.user_messages:  # `Trace._placed`: pydantic says what is out of place
            if msg.step > len(t.steps) or msg.step < last:
                raise _Fallback
            last = msg.step

    def _trace(t: _Trace) -> Trace:
        values = asdict(t)
        values["steps"] = [_step(s) for s in t.steps]
        if t.user_messages:
            values["user_messages"] = [_model(UserMessage, asdict(m), _SET_USER) for m in t.user_messages]
        if t.usage is not None:
            values["usage"] = _model(Usage, asdict(t.usage), _SET[Usage])
        if t.retrieved:
            values["retrieved"] = [_model(Passage, asdict(p), _SET[Passage]) for p in t.retrieved]
        if t.system_prompts:
            values["system_prompts"] = [_model(SystemPrompt, asdict(p), _SET[SystemPrompt]) for p in t.system_prompts]
        return _model(Trace, values, _SET[Trace])

    def _case(c: _Case) -> Case:
        values = asdict(c)
        if c.expected_tool_calls:
            values["expected_tool_calls"] = [_model(ExpectedToolCall, asdict(e), _SET_EXPECTED) for e in c.expected_tool_calls]
        if c.trace is not None:
            values["trace"] = _trace(c.trace)
        return _model(Case, values, _SET[Case])


def decode_struct(raw: bytes | str) -> Any:
    """The typed struct of one native JSONL line (`_Case`: the `Case`'s fields, values and defaults, with the
    records' `failed` and `tool_calls()`), or None when pydantic must validate the line (see the module docstring)."""
    if not _FAST:
        return None
    try:
        c = _DECODER.decode(raw)
        if c.metadata and _nests_beyond(c.metadata, MAX_DEPTH - 2):
            # Written back into the result line (the line one level, the metadata the next): pydantic decides such a
            # line, naming the column when it refuses it, so the line written is one pydantic reads back (a model counts
            # nested objects a level deeper than `MAX_DEPTH`'s parser: at 201 levels in all the struct path wrote a line
            # `CaseResult` could not read). (msgspec's only limit is the interpreter's stack: RecursionError, below.)
            raise _Fallback
        if not c.id or c.id.isspace() or "\x00" in c.id:
            raise _Fallback  # `Case._usable_id`: pydantic says what is wrong with it
        t = c.trace
        if t is not None:
            # Every call's name, in C; a set of names seen named answers for nearly all of them.
            if not _NAMED.issuperset(map(_NAME, _chain(map(_CALLS, t.steps)))):
                _named(map(_NAME, _chain(map(_CALLS, t.steps))))
            if t.user_messages:
                _placed(t)
            if t.system_prompts and needs_distinct(t.system_prompts):
                raise _Fallback  # (`prompt_list.distinct`: pydantic keeps each (agent, text) once)
        if c.expected_tool_calls and not _NAMED.issuperset(map(_NAME, c.expected_tool_calls)):
            _named(map(_NAME, c.expected_tool_calls))
        return c
    except (msgspec.DecodeError, _Fallback, RecursionError):  # (RecursionError: nested deeper than the stack allows)
        return None


_NAME, _CALLS, _chain = attrgetter("name"), attrgetter("tool_calls"), chain.from_iterable
_NAMED: SeenSet[str] = SeenSet()  # tool names seen to hold a non-space character (`core.memo`: bounded, per process)


def _named(names: Iterable[str]) -> None:
    """Raise `_Fallback` at a tool name the records refuse (`record_fields.tool_name_problem`: pydantic says why);
    remember the others in `_NAMED`."""
    for name in names:
        if tool_name_problem(name) is not None:
            raise _Fallback
        _NAMED.remember_one(name)


def _nests_beyond(value: Any, levels: int) -> bool:
    """True when the JSON value `value` nests objects and arrays more than `levels` levels deep (itself one level).

    Only the metadata is walked: it alone of a record's free-form values is copied into its result line. It is
    small (a few keys) where the whole line runs to kilobytes, so this costs far less than scanning the line.
    """
    if type(value) is dict:
        items: Any = value.values()
    elif type(value) is list:
        items = value
    else:
        return False
    if levels <= 0:
        return True
    for v in items:
        t = type(v)
        if (t is dict or t is list) and _nests_beyond(v, levels - 1):
            return True
    return False


def to_case(struct: Any) -> Case:
    """The `Case` of a struct `decode_struct` returned: what `Case.model_validate_json` gives for its line."""
    return _case(struct)


def decode(raw: bytes | str) -> Case | None:
    """The `Case` of one native JSONL line, or None when pydantic must validate it (see the module docstring)."""
    struct = decode_struct(raw)
    return None if struct is None else _case(struct)
