"""Format `otel`: OTLP/JSON traces of any span convention (OTel GenAI, OpenInference, OpenLLMetry, Vercel AI, Langfuse, MLflow).

Framing: `dataset.path` is one OTLP/JSON export file (a single document, or
JSON Lines of exports as the collector's file exporter writes them; Grafana
Tempo's `{"batches": …}` and `{"trace": …}` answers and Jaeger's JSON export
too, see `otlp_document`; bare spans, one a line, alone or in a JSON array, among
export lines or not, see `export_files.bare_spans`; attributes as a JSON object, flat or
nested, see `values`; ids in base64 or capitals, see `fields`: every shape agentevals'
loader reads) or a
directory searched for `include` globs (default `**/*.json`, `**/*.jsonl`)
minus `exclude` globs. Spans and span-linked log records (`resourceLogs`,
log-event mode; a record naming only its trace, or a span no file holds, belongs to the trace's one
model request, and to none when it has several; a GenAI record naming neither, to the one model request
running at its time: `links`) of every file are read, then grouped into conversations;
**one conversation is one raw record and one case**. Its file and line are
those of its first span; problems name the span id.

Conventions, detected per span (`conventions/`, one reader each): OTel GenAI
(`gen_ai.*`, ADK's `gcp.vertex.agent.*`), pydantic-ai's own keys,
OpenInference (`openinference.span.kind`, `llm.*_messages.*`, `input.value`,
`retrieval.documents.*`), OpenLLMetry/Traceloop (`traceloop.*`,
`gen_ai.prompt.*` / `gen_ai.completion.*`), the Vercel AI SDK (`ai.*`),
Langfuse (`langfuse.observation.*`), MLflow (`mlflow.spanType`,
`mlflow.spanInputs` / `spanOutputs`) and the OpenAI Agents SDK's exported
spans (`openai_agents.span_data`, as format `openai-agents` writes them: the
native formats `mlflow`, `langfuse` and `openai-agents` build their spans in
this model and run the same assembler, see `native`, and by default join the
traces of one conversation by their own keys as `group_by: conversation` does
here, see `conversation_groups`). Each says what a span is — model
request, tool call, agent run, chain, retrieval or noise — and what it
carries; the assembler never looks at raw attributes. `metadata.otel.conventions`
counts the spans each convention recognised (`none`: spans no convention knew).

Grouping (`group_by`): `conversation` (default) groups the traces that carry
the same `gen_ai.conversation.id` (else `session.id`,
`gcp.vertex.agent.session_id`, `langfuse.session.id`; agentevals' `agentevals.session_name`
before them all; each on a span, else on the span's resource: `keys`; a trace with none
stands alone — except that traces holding one model request each, as a
model-only instrumentation writes a plain loop, are joined when a request's
input replays the previous one's input and output (system messages left out, so a
system prompt stamped per request does not split a loop; a trimmed history joins the
one conversation it opens with the end of: `stitch`, `replays`); a parentless model
request repeating, in time and messages, a model span of another trace (OpenInference's
OpenAI instrumentor beside its LangChain one) is that request, read once (`duplicates`);
and a trace of one tool
call alone, which a tool run in a worker thread without the caller's context
writes, joins the one trace whose model asked for that call while it ran:
see `strays`); `trace` makes every
trace its own case; `run` makes every top-level agent run its own case, and
every run started side by side under one span (`concurrent`); a
list of attribute names sets the keys to try. A key is text or a whole
number (its text: `42` and `"42"` are one conversation); a blank one is no
key, and a trace whose key is anything else (`true`, `42.0`, a list) is an
`invalid_input` naming the attribute, the other traces read on (`keys`). The case id is the key's
value (for `run`, `<trace id>:<agent span id>`, or the span id of the run's head). Within one trace a span
belongs to the key value of its topmost ancestor carrying the key.

What a conversation becomes:

- a lone UTF-16 surrogate in a string attribute (an exporter cut the text
  mid-emoji: `"\\ud83c"`), or in JSON text an attribute holds, is read as
  U+FFFD, with a warning naming the span and attribute;
- a span delivered more than once (same trace id and span id: an
  exporter's retry, an export read twice) is read once, and so is a log
  record with a time delivered twice; copies that differ keep the last
  one that ended, and `metadata.otel.duplicates` lists their span ids;
- spans are ordered by start time; the tree is rebuilt from `parentSpanId`
  (a span naming itself as parent is a root, and a loop of parents breaks
  at the span that started first); a span whose parent was not exported
  hangs from the trace's root when it has one, else the spans naming the
  same lost parent hang from a stand-in for it (`links`), with a warning;
- an attribute value that does not decode (`{"intValue": "notanint"}`) is
  left out of its span, with a warning naming file, line, span and key;
- a span that passed the SDK's limit of attributes per span (`droppedAttributesCount`, Jaeger's
  `otel.dropped_attributes_count` tag; the Python SDK evicts the attributes set first: `input.value`,
  `session.id`, the first input messages) is said once per file, with how many spans lost how many
  attributes, which, and `OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT` to keep them; its request is read from its
  first whole message, joined to its conversation by the messages left at the same positions (a
  session whose id was evicted too), and given the ones it lost by the request before it that it
  replays; `metadata.otel.dropped_attributes` counts the case's (`dropped`);
- a model request recorded without its input messages, or with one whose parts were all dropped, is said once per
  file, its case counting it in `metadata.otel.missing_inputs`: its input, results and conversation are left
  unknown, never guessed (`missing_inputs`);
- evaluation results recorded with the trace (`gen_ai.evaluation.result`, span events and log records) are the case's
  `metadata.other_labels`, for `judge.labels.fields` (`conventions.genai_evaluations`);
- model requests are model spans not nested in another model span (the
  same request seen by two instrumentations), one step each; usage sums
  the input / output tokens they recorded, a count that some request of a
  case (or a turn) did not record being `null`, not 0 nor the others' sum
  (no request at all spent 0; a request that failed with none recorded is
  not missing one), and `metadata.requests_without_usage` (per turn
  `usage.requests_without_usage`) counting the requests that recorded none
  (`tally`); the cost is what Langfuse's SDK recorded on its observations
  (`langfuse.observation.cost_details`), unknown when some request carries
  none (`metadata.requests_without_cost`; `conventions.langfuse_cost`), and
  unknown as before when no span carries one. The requests an agent run inside a tool call made (an agent
  called as a tool) follow the step whose call ran them, in the model's
  order of the calls, and `metadata.nested_steps` lists them (`nesting`);
- tool calls are tool spans and the `tool_call` parts of model outputs. When
  the same call is recorded as both, they pair by call id, else by name in
  order: the model's part gives name, id and arguments (exact JSON), the tool
  span gives the result and the error (its own arguments, unwrapped from
  framework payloads, only when the model's part has none). Calls keep the
  model's order, parallel calls included; tool spans no part claims follow
  in start order. A tool span nested in one of the same name is one call;
  ADK's `(merged tools)` wrapper is not a call. Results missing on the span
  (or recorded as `{}`, as ADK does with its own content keys off) come from a
  later `tool_call_response` part: by call id, else, for a response whose id
  names no call or that has none, the next call asked for in order (by name
  when the response names its tool), as agentevals pairs them;
- a failed call has an error: the tool span's ERROR status or exception
  event (`"<type>: <message>"`), a LangChain `ToolMessage` with status
  `error`, an `is_error` tool result, or a result text starting with one of
  `error_prefixes`;
- answer tools are the answer, not calls: `answer_tools` (default
  `final_answer`, smolagents'), pydantic-ai's output tools and output
  functions; the value they were called with is the final output when the
  run recorded no other;
- agent, chain and graph-node spans never become steps; a top-level agent
  span (or the trace root) anchors a turn;
- a LangGraph run that paused at `interrupt(value)` ends its turn on that
  question (the output of its last step, and the turn's final text), and the
  run resumed with `Command(resume=answer)` is a turn whose user text is the
  answer; a tool that paused is one call, its rerun's (`pauses`). The
  interrupt is not an error, whatever status the instrumentation gave it.

Turns: a turn is one user exchange, anchored on a top-level agent span (or,
without agent spans, on the trace root); delegated agents stay inside. The
texts of model requests inside a tool's span (an agent called as a tool, ADK's
`AgentTool`) are that tool's result, not the turn's intermediate or final text
(their usage still counts), unless the turn has no other request.
Consecutive anchors of one trace with the same user text are one turn, and so
is an anchor of another trace of the conversation whose first model request
replays the turn's last request (its input and output) and adds no user
message: a model-only instrumentation inside a session (OpenInference's
`using_session` around a plain loop) writes the request after a tool round as
a trace of its own (`stitch.continues`). The
user text is the anchor's recorded input (an agent's or root chain's
`input.value`, `traceloop.entity.input`, `langfuse.trace.input`, …), else
the last user message of its first model request; when that request sent
several user messages in a row since the model last spoke and the turn's text
is the last of them, each is a user message of the turn (`metadata.otel.turns[].user_texts`).
`trace.user_messages` holds every user turn in order, each placed before the step
that answered it, including user messages a request's history adds mid-turn; one of the
turn's own that holds images is its text and images as OpenAI content parts. The first
user text is the case `input`, the later ones `turns`; `metadata.otel.turns`
lists per turn `user_text`, `final_text`, `intermediate_texts`, `agents`,
`steps` (`[first, end)` indices into `trace.steps`), `calls` (`[first, end)`
into `trace.tool_calls()`), `usage`, and `error` only for a turn whose run
ended in an error: the error of its outermost failed agent span (or failed
root chain) not inside a tool, as "Max turns exceeded" or a raised
exception. The last turn's error is also `metadata.run_error`, which the
judge prompt states under the final output. See `turn_calls(case)`.

A turn's final text is its anchor's recorded output, else its last model
reply's text — except when the run ended in an error (its agent run failed,
so it returned nothing): the text before the failure (a preamble of calls no
reply answered, a reply an output guardrail refused) was never the answer,
so the turn has no final text and the text is intermediate. A run that ended
normally keeps its last text as the final text; so does one a
`KeyboardInterrupt` stopped inside a tool that recorded nothing of it
(Langfuse records such a tool as it records one that returned None). Retrieval spans'
documents become `trace.retrieved`. The leading system messages of every model request, with the agent it ran under,
become `trace.system_prompts`, each distinct one once (`system_prompts`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from tracejudge.core.log import get_logger
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, register_format
from tracejudge.stages.extract.common import build_case, fail
from tracejudge.stages.extract.conversation_groups import Refused
from tracejudge.stages.extract.otel.assemble import assemble
from tracejudge.stages.extract.otel.concurrent import split_runs
from tracejudge.stages.extract.otel.conventions import group_views
from tracejudge.stages.extract.otel.conventions.agents_sdk import unanswered_usage
from tracejudge.stages.extract.otel.conventions.genai_evaluations import evaluation_labels
from tracejudge.stages.extract.otel.conventions.langfuse_cost import langfuse_cost
from tracejudge.stages.extract.otel.dropped import warn_lost
from tracejudge.stages.extract.otel.export_files import bare_where, export_files, not_an_export, otlp_document, warn_blank
from tracejudge.stages.extract.otel.item_ids import link_item_ids
from tracejudge.stages.extract.otel.missing_inputs import HIDDEN, note_unread, unread_requests, warn_unread
from tracejudge.stages.extract.otel.spans import Collector, Group, iter_exports
from tracejudge.stages.extract.otel.stitch import mend_cut, stitch
from tracejudge.stages.extract.otel.runs_on import join_runs_on
from tracejudge.stages.extract.otel.strays import adopt_strays
from tracejudge.stages.extract.otel.value_limit import mark_whole, warn_cut
from tracejudge.stages.extract.otel.value_tails import mend_tails
from tracejudge.stages.load import RawRecord

log = get_logger("tracejudge.extract.otel")

__all__ = ["CONVERSATION_KEYS", "Options", "adapt", "otlp_document", "read", "turn_calls"]

# `agentevals.session_name` is the resource attribute an agentevals session download stamps on every resource: it names
# the session the export was taken from, so it outranks the keys the spans carry, as agentevals reads it
CONVERSATION_KEYS = ["agentevals.session_name", "gen_ai.conversation.id", "session.id", "gcp.vertex.agent.session_id", "langfuse.session.id"]


class Options(BaseModel):
    """`dataset.options` of `otel`.

    `group_by`: `conversation`, `trace`, `run`, or a list of attribute names.
    `error_prefixes`: result texts starting with one of these mark a failed
    call (loops that report a tool's exception as its result, `"Error: …"`).
    `answer_tools`: tool names whose call is the run's answer, not a tool call.
    `argument_keys` / `result_keys`: extra span attributes holding a tool
    span's arguments / result, tried before what the conventions read.
    `include` / `exclude`: file globs when `dataset.path` is a directory.
    """

    model_config = ConfigDict(extra="forbid")

    group_by: Literal["conversation", "trace", "run"] | list[str] = "conversation"
    error_prefixes: list[str] = []
    answer_tools: list[str] = ["final_answer"]
    argument_keys: list[str] = []
    result_keys: list[str] = []
    include: list[str] = ["**/*.json", "**/*.jsonl"]
    exclude: list[str] = []


def read(dataset: Any) -> Iterator[RawRecord]:
    """Read every export under `dataset.path` and yield one `RawRecord` per conversation.

    Unreadable files and documents that are not OTLP exports are yielded as
    records with `error` set (file and line named); `dataset.limit` counts
    conversations.
    """
    opts = Options.model_validate(dataset.options)
    collector = Collector()
    blank: list[str] = []
    broken: list[str] = []  # exports that could not be read: a trace's message events may have been in one (`Group.unread`)
    for path in export_files(Path(dataset.path), opts.include, opts.exclude):
        blank.append(str(path))
        for line, doc, error in iter_exports(path):
            if blank and blank[-1] == str(path):
                blank.pop()  # the file holds something (a document or an error)
            if error is not None:
                broken.append(f"{path.name}:{line}")
                yield RawRecord(str(path), line, error=error)
            elif (export := otlp_document(doc)) is None:
                broken.append(f"{path.name}:{line}")
                yield RawRecord(str(path), line, error=not_an_export(doc))
            else:
                try:
                    collector.add(export, str(path), line)
                except RecursionError:  # attribute values nested past the stack: this export only
                    broken.append(f"{path.name}:{line}")
                    yield RawRecord(str(path), line, error="OTLP export nested too deeply to read")
                except (ValueError, TypeError, AttributeError) as exc:  # not the OTLP shape: this export only
                    broken.append(f"{path.name}:{line}")
                    yield RawRecord(str(path), line, error=f"not a valid OTLP/JSON export: {bare_where(str(exc), doc)}")
    warn_blank(Path(dataset.path), blank)
    warn_lost(s for spans in collector.spans.values() for s in spans)  # spans past the attribute limit: once per file
    mark_whole(collector.spans.values())  # (before any reading: a trace holding a longer value was cut at no such length)
    warn_cut(s for spans in collector.spans.values() for s in spans)  # JSON values past the length limit: once per file
    for file, line, message in collector.orphans:
        yield RawRecord(file, line, error=message)
    keys = None if opts.group_by in ("trace", "run") else (CONVERSATION_KEYS if opts.group_by == "conversation" else list(opts.group_by))
    groups = collector.groups(keys)
    yield from collector.refused  # traces whose conversation key is no key (`true`, `42.0`): each its own invalid_input
    if opts.group_by == "conversation":
        groups = join_runs_on(adopt_strays(stitch(groups)))  # (smolagents runs MLflow recorded on one memory: `runs_on`)
    if opts.group_by == "run":
        groups = (run for trace in groups for run in _runs(trace))
    count = skipped = 0
    unread: list[Any] = []  # the requests recorded without their input messages (`missing_inputs`)
    requests: Counter[str] = Counter()  # every request, by file: the warning says how many of them
    for group in groups:
        if not any(v.role or v.unreadable for v in group_views(group).values()):
            skipped += 1  # a trace of set-up spans only (OpenLLMetry's `create_agent`): nothing was run
            continue
        mend_cut(group)  # requests that lost their first messages to the attribute limit (`dropped`)
        mend_tails(group)  # requests that lost their last messages to the length limit (`value_tails`)
        link_item_ids(group)  # OpenLLMetry's Responses API calls under their item ids, when a replay names their `call_id`
        lost, asked = unread_requests(group)
        unread += lost
        requests.update(r.file for r in asked)
        first, group.unread = group.spans[0], tuple(broken)
        yield RawRecord(first.file, first.line, group)
        count += 1
        if dataset.limit is not None and count >= dataset.limit:
            break
    warn_unread(unread, requests)  # once per file, after the file's groups (or those a limit kept) were all counted
    if dataset.limit is not None and count >= dataset.limit:
        return
    if count == 0 and skipped:
        yield RawRecord(str(dataset.path), 1, error=f"{skipped} trace(s) read, none with a model request, tool call or agent run of a known span convention")


def _runs(trace: Group) -> list[Group]:
    """One trace split into its runs (`group_by: run`): top-level agent runs and runs started side by side (`concurrent.split_runs`)."""
    return split_runs(trace)


def adapt(group: Group | Refused, options: Options | None = None) -> Case:
    """Turn one conversation's spans into a `Case` (see the module docstring).

    Raises `AdapterError` naming the span id when a span's times or
    attributes cannot be decoded, or a messages attribute is not JSON, and
    the refusal of a trace whose conversation key is no key (`keys`).
    """
    from tracejudge.stages.extract.errors import AdapterError

    opts = options or Options()
    if isinstance(group, Refused):
        group.fail()
    if not isinstance(group, Group):
        fail(f"expected a group of spans, got {type(group).__name__}")
    try:
        # (a span no reader could read makes its conversation an invalid_input: `conventions.read_span`)
        if (bad := next((v.unreadable for v in group_views(group).values() if v.unreadable is not None), None)) is not None:
            raise bad
        built = assemble(group, opts)
        unanswered_usage(built, group.spans)  # an Agents SDK run that made no model request: tokens unknown, as its export reads it
        langfuse_cost(built, group.spans)  # the dollars Langfuse's SDK recorded (`langfuse.observation.cost_details`)
        case = build_case(built)
    except AdapterError as exc:
        exc.case_id = exc.case_id or group.case_id
        raise
    if _content_hidden(case, group):
        fail(f"trace {group.traces[0] if group.traces else group.key}: its model requests carry no content that can be read (no input, "
             f"output or call): content capture was off ({HIDDEN}), or its message events name no "
             f"span and could belong to several requests{_lost(group.unread)}; scored, it would pass every budget while the run made calls and requests. "
             "Record with content to evaluate it", case_id=group.case_id)
    note_unread(case.metadata, unread_requests(group)[0])  # requests recorded without their input messages (`missing_inputs`)
    case.metadata.update(evaluation_labels(group))  # evaluation results recorded with the trace (`genai_evaluations`)
    return case


def _lost(unread: tuple[str, ...]) -> str:
    """What a trace without content may have lost: the exports of the input that could not be read, each its own error."""
    if not unread:
        return ""
    more = f" and {len(unread) - 3} more" if len(unread) > 3 else ""
    return f", or they were in an export that could not be read ({', '.join(unread[:3])}{more}: its own error says why)"


def _content_hidden(case: Case, group: Group) -> bool:
    """Whether `case`, read from `group`, holds model requests and nothing they said: no input, no output, no call, no
    text. Every model request has an input, so such a case is not an empty conversation but one recorded without
    content: scored, it passes every budget and limit while the real run made calls (`MaxToolCalls`, `MaxModelRequests`)."""
    if case.input not in (None, "") or case.trace is None or case.trace.output not in (None, ""):
        return False
    steps = case.trace.steps
    if any(s.tool_calls or s.thought or s.output for s in steps):
        return False
    return any(v.role == "model" for v in (group.views or group_views(group)).values())


def turn_calls(case: Case) -> list[list[Any]]:
    """The tool calls of each turn of an `otel` case, using `metadata.otel.turns[].calls`."""
    calls = case.trace.tool_calls() if case.trace else []
    return [calls[a:b] for a, b in (t["calls"] for t in case.metadata["otel"]["turns"])]


register_format(Format("otel", read=read, adapt=adapt, prepare=lambda ds: Options.model_validate(ds.options), options=Options, reads_dirs=True,
                       whole_file=True))
