"""The records every stage speaks: cases in, results out.

A `Case` is one line of native JSONL (README, "Input formats", `native`); its `trace`
is the normalized `Trace` that every metric and judge sees, whatever format
the input came in. A `CaseResult` is one line of `RUN_DIR/results.jsonl`.

All models are pydantic v2. Input models ignore nothing silently: unknown
keys on a `Case` are refused so that a typo in a hand-written dataset
(`expected_tool_call`) is an `invalid_input`, not a metric that quietly
scores against nothing. The field types that refuse a boolean, a non-finite
number or an empty tool name are in `tracejudge.core.record_fields`.
"""

from __future__ import annotations

from enum import Enum
from functools import cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer, model_validator
from pydantic_core import PydanticCustomError

from tracejudge.core.prompt_list import distinct, none_as_empty
from tracejudge.core.record_fields import Measure, MetaValue, Spent, SpentUsd, ToolName, arguments_text, decode_arguments, empty_list, no_bool

__all__ = [
    "Case",
    "CaseResult",
    "ErrorInfo",
    "ExpectedToolCall",
    "JudgeInfo",
    "Passage",
    "Score",
    "Status",
    "Step",
    "SystemPrompt",
    "ToolCall",
    "Trace",
    "Usage",
    "UserMessage",
    "bare_case",
    "decode_arguments",
    "score_counts",
]


class _Strict(BaseModel):
    # The input models' validators are built on first use: the struct path scores native cases without them
    # (`tracejudge.stages.extract.struct_score`), and building them cost every run's start-up.
    model_config = ConfigDict(extra="forbid", defer_build=True)


def _flagged_blank(data: dict[str, Any]) -> bool:
    """Blank arguments text a reader flagged `arguments_invalid`: kept as recorded, not read as `{}`. A tool span's
    arguments text is JSON by definition and empty text is none (pydantic-evals' ArgumentCorrectness fails it), where a
    provider's `""` is a call without arguments (`decode_arguments`)."""
    args = data["arguments"]
    return data.get("arguments_invalid") is True and isinstance(args, str) and not args.strip()


class ToolCall(_Strict):
    """One tool call the agent made, with what it returned.

    `arguments` is a mapping after validation: a JSON-string payload is
    decoded (blank text is `{}`, a provider's call without arguments, unless a
    reader flagged it `arguments_invalid`: a tool span's empty JSON text). When
    the string is not a JSON object it is kept raw in `arguments` and
    `arguments_invalid` is set; such arguments compare
    unequal to any mapping. `arguments_missing` marks a call whose arguments
    the recording did not keep (some tracers drop them): `arguments` is then
    `{}` but says nothing about what the agent sent. A call with a non-null
    `error` is a *failed* call (the tool raised, or the provider flagged the
    result as an error).
    """

    id: str | None = None
    name: ToolName
    arguments: dict[str, Any] | str = Field(default_factory=dict)
    arguments_invalid: bool = False
    arguments_missing: bool = False
    result: Any = None
    error: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _decode(cls, data: Any) -> Any:
        if isinstance(data, dict) and "arguments" in data and not isinstance(data["arguments"], dict) and not _flagged_blank(data):
            decoded, ok = decode_arguments(data["arguments"])
            data = {**data, "arguments": decoded if ok else arguments_text(data["arguments"])}
            if not ok:
                data["arguments_invalid"] = True
        return data

    @property
    def failed(self) -> bool:
        """True when the call ended in an error."""
        return self.error is not None


class Step(_Strict):
    """One agent step: an optional thought, the calls it made, optional output text.

    `error` is set when the step ended in an error as the trace recorded it: its model request failed (an LLM
    span with status ERROR: `"<error.type>: <message>"`, such as a 500 the application then retried; such a step
    usually has no output and no calls), or the framework recorded the step's failure (smolagents' parsing error,
    its `AgentMaxStepsError` on the step that then asked for the answer). A failed *tool call* is `ToolCall.error`, not this.
    """

    thought: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    output: str | None = None
    error: str | None = None


class Usage(_Strict):
    """What the recorded run consumed. Tokens are counts, `cost_usd` dollars, `latency_s` seconds; counts and dollars are never negative."""

    input_tokens: Spent = None
    output_tokens: Spent = None
    requests: Spent = None
    cost_usd: SpentUsd = None
    latency_s: Measure = None


class Passage(_Strict):
    """A passage the agent's retrieval surfaced, in the order it came."""

    id: str | None = None
    content: str = ""
    score: Measure = None
    source: str | None = None


class UserMessage(_Strict):
    """One thing the user said, placed in the trace: `content` was said before `steps[step]`.

    `step` is an index into `Trace.steps`; `step == len(steps)` places a message
    after the last step (a reply the agent never answered, such as tau-bench's
    closing `###STOP###`). Content is text, or the provider's content parts as
    recorded when they are not plain text. `content` is required (`null` when
    the format recorded none): a user message holds nothing else, so one
    without it is a mistake in the record, never a turn the judge should see as empty.
    """

    step: Annotated[int, no_bool("int"), Field(ge=0)]
    content: Any


class SystemPrompt(_Strict):
    """An instruction the agent was given (its system or developer prompt), as recorded; `agent` names the agent it was
    given to when the recording says (a multi-agent run), else `None`."""

    text: str
    agent: str | None = None

    @field_validator("agent")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        # (`"agent": ""` names no agent: a judge was shown `System prompt of agent ""`)
        return value if value is None or value.strip() else None


class Trace(_Strict):
    """The normalized record of what an agent did.

    `steps` are in the order they happened. `output` is the final answer the
    user saw. `usage` is the run's own consumption (not the judge's).
    `user_messages` is the whole conversation's user side, every user turn in
    order, each placed before the step that answered it (empty when the
    format recorded none; the case's `input` is then the only request).
    User messages are not steps: step counts (model requests) exclude them.
    `system_prompts` are the distinct instructions the agent(s) were given, one per (agent, text), in order of first
    appearance (empty when the format recorded none); a judge sees them only with `include_system_prompt`.
    """

    steps: list[Step] = Field(default_factory=list)
    user_messages: list[UserMessage] = Field(default_factory=list)
    output: str | None = None
    usage: Usage | None = None
    retrieved: list[Passage] = Field(default_factory=list)
    system_prompts: list[SystemPrompt] = Field(default_factory=list)

    _prompts_none = field_validator("system_prompts", mode="before")(classmethod(none_as_empty))
    _prompts_distinct = field_validator("system_prompts")(classmethod(distinct))

    @model_validator(mode="after")
    def _placed(self) -> Trace:
        last = 0
        for i, msg in enumerate(self.user_messages):
            if msg.step > len(self.steps):
                raise ValueError(f"user_messages[{i}].step is {msg.step}, past the trace's {len(self.steps)} steps")
            if msg.step < last:
                raise ValueError(f"user_messages[{i}].step is {msg.step}, before the previous message's step {last}: keep them in order")
            last = msg.step
        return self

    def tool_calls(self) -> list[ToolCall]:
        """Every tool call of the trace, in order, failed ones included."""
        return [call for step in self.steps for call in step.tool_calls]


class ExpectedToolCall(_Strict):
    """A call the case expects. `arguments=None` means "match on the name alone".

    `result` is the expected tool output; only `DeepEvalToolCorrectness` with
    `evaluation_params: [output]` reads it (deepeval's `expected_tools[].output`).
    `argument_keys: "call"` makes `ToolCalls` compare the top-level keys the *call* carries, not the expectation's:
    one the call omits is not compared, one it adds fails (τ²-bench's rule for an action without `compare_args`);
    `"expected"`, the expectation's only, a key only the call has never compared, in `exact` too (its rule with them).
    """

    name: ToolName
    arguments: dict[str, Any] | None = None
    result: Any = None
    argument_keys: Literal["call", "expected"] | None = None

    @field_validator("arguments", mode="before")
    @classmethod
    def _decode(cls, value: Any) -> Any:
        if value is None or isinstance(value, dict):
            return value
        decoded, ok = decode_arguments(value)
        if not ok:
            raise ValueError("expected arguments must be a JSON object or a mapping")
        return decoded


class Case(_Strict):
    """One evaluation case (one line of native JSONL).

    `trace` is absent when a live target produces it. `metrics` are extra
    metric specs applied to this case only (same shape as the config's).
    `expected_tool_calls=None` means "no expectation" (tool-call metrics
    report `value: null`), while `[]` means "expects no call". Refused (a
    `ValidationError` naming the field): an empty `id` or one holding NUL, a
    non-finite number in `metadata`, `true`/`false` where a number goes.
    """

    id: str
    input: Any = None
    expected_output: Any = None
    expected_tool_calls: list[ExpectedToolCall] | None = None
    expected_passages: list[str] | None = None
    context: Any = None
    turns: list[Any] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, MetaValue] = Field(default_factory=dict)
    metrics: list[dict[str, Any]] = Field(default_factory=list)
    trace: Trace | None = None

    @field_validator("id", mode="before")
    @classmethod
    def _id_to_str(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value

    @field_validator("id")
    @classmethod
    def _usable_id(cls, value: str) -> str:
        # Results, resume, reports and JUnit key cases by id: "" tells no case apart, and a NUL cannot be in a
        # file name or XML. (`fast_decode.decode_struct` hands such a line to this check.)
        if not value or value.isspace():
            raise PydanticCustomError("id_empty", "the case id is empty or only whitespace: give every case a distinct, non-empty id")
        if "\x00" in value:
            raise PydanticCustomError("id_nul", "the case id holds a NUL character (\\u0000), which file names and XML cannot carry")
        return value


@cache
def bare_case() -> Case:
    """The `Case` of id "-" and nothing else, one for the process: a template whose `model_copy(update=...)`
    gives a light case (an id, tags, metadata) without validating them again. Built on first call, not on
    import, as `Case`'s validator is."""
    return Case(id="-")


class Status(str, Enum):
    """How a (case, trial) ended. Only `ok` results enter means and pass rates."""

    ok = "ok"
    target_error = "target_error"
    invalid_input = "invalid_input"
    judge_error = "judge_error"
    skipped_budget = "skipped_budget"
    rate_limited = "rate_limited"


# Results that a resumed run redoes (up to `run.max_resume_retries` times for the failures):
# a budget skip, and failures that say nothing about the case (a judge, target or provider
# fault). `invalid_input` is final: the same record fails the same way again.
RETRYABLE_STATUSES = frozenset({"judge_error", "target_error", "rate_limited"})
PROVISIONAL_STATUSES = RETRYABLE_STATUSES | {"skipped_budget"}
# An `invalid_input` whose error has this kind says nothing about the record either: the worker
# process computing it died (killed, out of memory). It is retried like the statuses above.
WORKER_ERROR = "worker_error"
# An `invalid_input` whose error has this kind is a JSONL file's last line without its newline: a
# writer may still be finishing it, so the result stands only until a resume reads the line again.
UNTERMINATED_LINE = "unterminated_line"


# A judge failure or a budget skip happens after the deterministic metrics ran: their
# scores stand and count; only the metrics left without a value are excluded.
LATE_STATUSES = frozenset({"judge_error", "skipped_budget", "rate_limited"})


def score_counts(status: str, value: float | None) -> bool:
    """Does a score with `value` on a result with `status` count toward means and pass rates?

    True when it has a value and the result is `ok`, or failed only at the
    judge (`judge_error`, `skipped_budget`), which leaves the deterministic
    scores of the case standing.
    """
    return value is not None and (status == "ok" or status in LATE_STATUSES)


class JudgeInfo(BaseModel):
    """Provenance of a judge verdict.

    `cached` is true when every request of the metric was a cache hit (`cached_requests` of `requests`); tokens are
    what this score cost (all attempts and repairs; 0 for hits), `cached_input_tokens` the part of `input_tokens` the
    provider read from its prompt cache, `cost_usd` the dollars billed (cached tokens at the cached rate; 0 for hits;
    None when a judge model without a price billed tokens for it: unknown, not free); `latency_s` is wall time for the
    metric, queueing included; `cache_miss` says why a request missed the cache (only with `cache.explain`). `model`,
    `prompt_version` (the metric's prompt template) and `structured_output` (how the verdict schema was sent)
    identify the judge, so `compare` can warn when two runs' judges differ.
    `extra_body` is `sha256:<hex>` of the request fields `judge.extra_body` added, as summary.json shows them
    (credentials masked; a panel whose members send other fields: its `extra_body_by_model`), so a result line
    alone says what was sent (`tracejudge.core.extra_body.digest`); absent, not null, when none were, so a line
    of a run without them reads as before. `served_model`: the weights a self-hosted judge server said it serves
    (`llm.served_model.describe`: `llama.cpp b.gguf (weights 6af963fdc1d3)`), absent alike when not known.
    """

    model: str
    cached: bool = False
    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cached_requests: int = 0
    cached_input_tokens: int = 0
    cost_usd: float | None = 0.0
    latency_s: float | None = None
    cache_miss: str | None = None
    prompt_version: str | None = None
    structured_output: str | None = None
    extra_body: str | None = None
    served_model: str | None = None

    @model_serializer(mode="wrap")
    def _without_unset_extra_body(self, handler: Any) -> Any:
        out = handler(self)
        for k in ("extra_body", "served_model"):
            if isinstance(out, dict) and out.get(k, "") is None:
                del out[k]  # (a run without them writes the block it always wrote)
        return out


class Score(BaseModel):
    """One metric's verdict on one case.

    `value` is in [0, 1] (or `None` when the metric could not be computed;
    the `reason` then says why). `passed` applies the metric's threshold.
    `details` is machine-readable support for the reason.
    """

    value: float | None
    passed: bool | None = None
    reason: str = ""
    details: dict[str, Any] | None = None
    judge: JudgeInfo | None = None


class ErrorInfo(BaseModel):
    """Why a case could not be scored: the kind, a message, and where it came from.

    `details` (optional) carries what the message cannot: for a python
    target that raised, `{"traceback": "..."}` (redacted like every text
    copied into a result).
    """

    kind: str
    message: str
    file: str | None = None
    line: int | None = None
    field: str | None = None
    details: dict[str, Any] | None = None


class CaseResult(BaseModel):
    """One line of `results.jsonl`: a (case, trial) with its scores."""

    case_id: str
    trial: int = 0
    status: Status = Status.ok
    tags: list[str] = Field(default_factory=empty_list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    scores: dict[str, Score] = Field(default_factory=dict)
    error: ErrorInfo | None = None
    duration_s: float = 0.0

