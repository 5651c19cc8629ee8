"""Format `inspect`: inspect-ai evaluation logs (`inspect eval`), `.eval` or `.json`, one case per sample and epoch.

Reading the files (`.eval` archives, `.json` logs, folders of them) is `inspect_logs`'s; the log's schema is
inspect-ai's `EvalLog` / `EvalSample` (inspect_ai `log/_log.py`, `model/_chat_message.py`, `tool/_tool_call.py`),
read as JSON: inspect-ai is never imported. A sample becomes a case:

- `id`: the sample's `id` (a string, or an integer as its text), with `#<epoch>` after it unless the log ran one
  epoch (`eval.config.epochs`; when the log does not say, the highest epoch among its samples): `"paris"`,
  `"2#1"`, `"2#2"`. Option `id_prefix: task` puts `<task>/` before it (a folder of several tasks' logs, whose
  sample ids repeat), `id_prefix: log` the log's file name without its suffix (several runs of one task);
- `input`: the sample's `input` as it is when text; a list of chat messages becomes `[{"role", "content"}]`,
  each message's text;
- `expected_output`: `target` (a string or a list of strings; `""` and `[]`, no target, are none);
  `expected_tool_calls`: the sample metadata's `expected_tool_calls` (`[{"name", "arguments"}]`, or tool names),
  when given;
- `trace.steps`: one step per assistant message the agent made: its text (its `text` content blocks) is the
  step's output, or its thought when it calls tools; `reasoning` blocks are thoughts (a redacted one's `summary`);
  `tool_calls` are the calls (`function`, `arguments`, `id`), paired with the `tool` message that answered each
  (`tool_call_id`): its text is the result (JSON text decoded), its `error` (a `ToolCallError`) the call's error,
  its `message`. A server-side tool's `tool_use` block is a call with its own result and error. Images, audio,
  video, documents and data blocks are not read (so the `attachment://` references a sample's messages may hold
  need no resolving: inspect condenses only images there, `log/_condense.py`). A call of an answer tool
  (`answer_tools`, default `[submit]`: `basic_agent`'s, and `react`'s when it keeps it) is the answer, not a
  call: its `answer` argument is the step's output (react() itself takes the call out and appends the answer
  to the message's text);
- the sample's input is the conversation's first request, whole: a live re-run sends `input` (all its messages)
  once, so `turns` are only the user messages said after it (a solver's `user_message`), never the input's own.
  The history the input gives (few-shot or earlier turns, `source: input`) is shown as `multivon` shows a
  `conversation`: each of its user messages is one of `trace.user_messages`, each of its assistant messages with
  text a step whose output is that text (its calls and the tool messages are left out: the agent made none of
  them), before the agent's steps, so a judge reads `q1`, `a1`, then the question the agent answered; `requests`
  and the trace's fallback output count the agent's steps only. System messages are the trace's `system_prompts`. Every user message
  with text is one of `trace.user_messages`, before the step that answered it. A user message carrying a tool's
  payload (`tool_call_id`) is no turn, nor is a prompt react() / basic_agent() add (`inspect_agents`, which also gives a
  call a limit left without its tool message its `tool` event's result). (In a log whose messages have no `source`,
  the input's user messages are the first ones, as many as `input` holds);
- `trace.output`: the sample's `output.completion`, what inspect scored, `""` included (inspect scores an empty
  completion, and one of a sample stopped by a limit, `I`, `no_response`); the last assistant text only when the
  sample has no `output.completion` at all (a log not written by inspect's recorder);
- `trace.usage`: `model_usage` summed over the models: input tokens are inspect's full-rate, cache-read and
  cache-write tokens together, `cost_usd` the sum of `total_cost` (unknown when a model has none); `requests`
  counts the agent's steps; `latency_s` is `total_time` (else `working_time`); a sample inspect retried
  (`retry_on_error`) counts its last attempt's, as inspect does (`inspect_meta`);
- a sample whose `error` is set (it failed in inspect: a tool raised, the model API failed) keeps what it did,
  with the error's message as `metadata.run_error`, as the span formats mark a failed run; its output is null
  unless the agent had answered (the last message is an assistant message without calls: the error came after).
  A limit that stopped a sample is its `run_error` too; the reply past a token limit (only in its `model` event) is
  its last step, and a call a raise or a limit left without a result fails saying why (`inspect_stops`), as does
  a call whose `tool` event failed without an error when the sample went on (a raise a solver caught) or an approver
  ended it, and the calls of its reply that never ran (`inspect_failed`);
- `metadata`: `task` and `model` (the log's), the sample metadata's scalar values (strings, numbers, booleans,
  null) under their own keys, and `inspect`: `{"sample_id", "epoch", "log"}` plus what the sample has of
  `scores` (each scorer's `value`), `limit` (the limit that stopped it), `working_time`, `metadata` (its values
  that are not scalars, or whose key is taken), `unpaired_results` and `error_retries` (the errors of the attempts
  inspect retried); `tags` are the log's tags and the sample
  metadata's `tags` (a list of strings).

A sample that cannot be read — not JSON, not an object, without `id`, `epoch`, `input` or `messages`, a message
that is not one — is one `invalid_input` naming the log (and the member of a `.eval`), the field and, when it
has one, the case id; the other samples score. An id that is empty, or an epoch that is not an integer from 1
(`"2"`, `0`), gives no case id: the sample is filed under its own place (`<log>:<line>`, the member), never
under an id another sample may have.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from tracejudge.core.errors import ConfigError
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, register_format
from tracejudge.stages.extract.common import build_case, fail, json_type, text_of
from tracejudge.stages.extract.inspect_agents import REFUSED, agent_prompt, results_from_events
from tracejudge.stages.extract.inspect_failed import failed_calls
from tracejudge.stages.extract.inspect_logs import Sample, count, log_files, read
from tracejudge.stages.extract.inspect_meta import metadata as _metadata, usage as _usage
from tracejudge.stages.extract.inspect_stops import late_reply, unfinished
from tracejudge.stages.extract.steps import TraceBuilder
from tracejudge.stages.extract.system_prompts import prompt_text
from tracejudge.stages.load import deep_message, loads, too_deep
from tracejudge.stages.load.encoding import strip_bom
from tracejudge.stages.load.framing import quiet

__all__ = ["Options", "adapt", "case_id", "peek_id", "prepare"]

class Options(BaseModel):
    """`dataset.options` of `inspect`.

    `id_prefix`: `none` (the sample id, default), `task` (`<task>/<id>`) or `log` (`<log file stem>/<id>`); the
    reader applies it (`inspect_logs.read`), so the payload's `LogInfo.prefix` already holds it.
    `answer_tools`: tool names whose call is the agent's answer, not a tool call (default `[submit]`).
    """

    model_config = ConfigDict(extra="forbid")

    id_prefix: Literal["none", "task", "log"] = "none"
    answer_tools: list[str] = ["submit"]


def case_id(sample_id: str | int, epoch: int, epochs: int | None, prefix: str | None = None) -> str:
    """The case id of a sample (module docstring): `"<id>"` when the log ran one epoch, else `"<id>#<epoch>"`; `prefix/` before it."""
    text = str(sample_id) if epoch == 1 and (epochs or 1) == 1 else f"{sample_id}#{epoch}"
    return f"{prefix}/{text}" if prefix else text


def _identity(sample: dict[str, Any], payload: Sample) -> str:
    """The sample's case id; raises `AdapterError` for an `id` or `epoch` that is missing or mistyped."""
    sid, epoch = sample.get("id"), sample.get("epoch")
    if isinstance(sid, str) and not sid.strip():
        fail(f"id: the sample id is {'an empty string' if not sid else 'only white space'}", field="id")
    if isinstance(sid, bool) or not isinstance(sid, (str, int)):
        fail(f"id: expected the sample id (a string or an integer), got {json_type(sid) if 'id' in sample else 'nothing'}", field="id")
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
        # (no case id: whichever epoch it meant, it may be another sample's; its place names it)
        fail(f"epoch: expected the epoch (an integer from 1), got {json.dumps(epoch) if 'epoch' in sample else 'nothing'} "
             f"(sample {json.dumps(sid)})", field="epoch")
    return case_id(sid, epoch, payload.log.epochs, payload.log.prefix)


def peek_id(payload: Any) -> str | None:
    """The id `adapt` gives a `.json` log's sample, told without reading its messages; None otherwise (a `.eval` member is bytes)."""
    if not isinstance(payload, Sample) or not isinstance(payload.data, dict):
        return None
    sid, epoch = payload.data.get("id"), payload.data.get("epoch")
    if isinstance(sid, bool) or not isinstance(sid, (str, int)) or not str(sid).strip():
        return None
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
        return None
    return case_id(sid, epoch, payload.log.epochs, payload.log.prefix)


def _decode(payload: Any) -> dict[str, Any]:
    if not isinstance(payload, Sample):
        fail(f"expected an inspect sample, got {type(payload).__name__}")
    data = payload.data
    if isinstance(data, bytes):
        if too_deep(data):  # (refused before the decoder recurses: extract_record checks only line payloads)
            fail(deep_message())
        try:
            data = loads(strip_bom(data))
        except ValueError as exc:
            fail(str(exc))
    if not isinstance(data, dict):
        fail(f"expected a sample object, got {json_type(data)}")
    return data


def _texts(content: Any, where: str, cid: str) -> list[dict[str, Any]]:
    """A message's content as blocks: a string is one text block; anything but a list of objects is refused."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if content is None:
        return []
    if not isinstance(content, list):
        fail(f"{where}.content: expected a string or a list of content blocks, got {json_type(content)}", field=f"{where}.content", case_id=cid)
    return [b for b in content if isinstance(b, dict)]


def _assistant(b: TraceBuilder, msg: dict[str, Any], where: str, cid: str, opts: Options, answered: dict[int, Any]) -> set[str]:
    """Add the step of an assistant message; returns the ids of its answer-tool calls (their tool messages are no results)."""
    step = b.new_step()
    for block in _texts(msg.get("content"), where, cid):
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str) and block["text"]:
            step["texts"].append(block["text"])
        elif kind == "reasoning":
            said = block.get("summary") if block.get("redacted") else block.get("reasoning")
            if isinstance(said, str) and said:
                step["thoughts"].append(said)
        elif kind == "tool_use" and isinstance(block.get("name"), str) and block["name"]:  # a server-side tool: done in the reply
            call = b.call(step, block.get("id"), block["name"], block.get("arguments"), expects_result=False)
            b.set_result(call, block.get("result"), block.get("error") or None)
    calls = msg.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        fail(f"{where}.tool_calls: expected a list of tool calls, got {json_type(calls)}", field=f"{where}.tool_calls", case_id=cid)
    answer_ids: set[str] = set()
    for j, tc in enumerate(calls or []):
        name = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(name, str) or not name:
            fail(f"{where}.tool_calls[{j}].function: a tool call needs the name of the function it called",
                 field=f"{where}.tool_calls[{j}].function", case_id=cid)
        if name in opts.answer_tools:
            args = tc.get("arguments")
            answer = args.get("answer", args) if isinstance(args, dict) else args
            answered[len(b.steps) - 1] = answer if isinstance(answer, str) or answer is None else json.dumps(answer)
            answer_ids.add(str(tc.get("id")))
            continue
        b.call(step, tc.get("id"), name, tc.get("arguments"))
    b.close_step()
    return answer_ids


class _Walk:
    """What `_steps` found: the builder, its trace mapping, whether the agent answered last, the later turns, the history steps."""

    def __init__(self, b: TraceBuilder, trace: dict[str, Any], answered: bool, turns: list[str], history: int, prompts: list[Any]) -> None:
        self.b, self.trace, self.answered, self.turns, self.history, self.prompts = b, trace, answered, turns, history, prompts


def _input_users(sample: dict[str, Any]) -> int:
    """How many user messages the sample's input holds (the first of `messages`, in a log whose messages have no `source`)."""
    given = sample.get("input")
    if isinstance(given, list):
        return sum(1 for m in given if isinstance(m, dict) and m.get("role") == "user")
    return 1


def _steps(sample: dict[str, Any], cid: str, opts: Options) -> _Walk:
    """Walk the sample's `messages` (module docstring)."""
    messages = sample.get("messages")
    if not isinstance(messages, list):
        what = json_type(messages) if "messages" in sample else "nothing"
        fail(f"messages: expected the sample's list of chat messages, got {what}", field="messages", case_id=cid)
    b = TraceBuilder()
    answered: dict[int, Any] = {}
    skip: set[str] = set()
    answered_last = False
    turns: list[str] = []
    prompts: list[dict[str, Any]] = []  # react()'s / basic_agent()'s own user-role prompts (`inspect_agents`)
    history, users, input_users = 0, 0, _input_users(sample)
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(msg, dict):
            fail(f"{where}: expected a chat message object, got {json_type(msg)}", field=where, case_id=cid)
        role = msg.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            fail(f"{where}.role: unknown message role {role!r}", field=f"{where}.role", case_id=cid)
        if role == "system":
            b.system.append((None, prompt_text(msg.get("content"))))
            continue
        if msg.get("source") == "input" and role != "user":  # the input's history: said, not done by the agent
            said = text_of(msg.get("content")) if role == "assistant" else None
            if said:
                b.new_step()["texts"].append(said)
                b.close_step()
                history += 1
            continue
        if role == "user":
            if not msg.get("tool_call_id"):  # (else a tool's payload sent as a user message: no turn)
                said = text_of(msg.get("content"))
                if msg.get("source") != "input" and (kind := agent_prompt(said)) is not None:  # the agent's, not the user's
                    b.close_step()
                    prompts.append({"step": len(b.steps), "content": said.strip(), "refused": kind == "incorrect"})  # type: ignore[union-attr]
                    answered_last = False
                    continue
                b.user_text(said)
                given = msg["source"] == "input" if "source" in msg else users < input_users
                users += 1
                if not given and said:
                    turns.append(said)
        elif role == "assistant":
            made = _assistant(b, msg, where, cid, opts, answered)
            skip |= made
            answered_last = not b.steps[-1]["calls"] and not made
        elif str(msg.get("tool_call_id")) not in skip:
            error = msg.get("error")
            said = error.get("message") if isinstance(error, dict) else error
            content = msg.get("content")
            b.result(msg.get("tool_call_id"), text_of(content) if isinstance(content, list) else content,
                     (said if isinstance(said, str) and said else "error") if error else None)
        if role in ("user", "tool"):
            answered_last = False
    if (late := late_reply(sample, messages)) is not None:  # the reply past a limit, only in its model event (`inspect_stops`)
        _assistant(b, late, "events", cid, opts, answered)
    trace = b.trace()
    for k, answer in answered.items():  # an answer tool's argument is its step's output; the step's own text is its thought
        step = trace["steps"][k]
        text = step.pop("output", None)
        step["thought"] = "\n".join(t for t in (step.get("thought"), text) if t) or None
        step["output"] = answer
    for p in prompts:  # an answer the agent's scorer refused: its step's error (`inspect_agents`)
        if p.pop("refused") and p["step"] > history:
            trace["steps"][p["step"] - 1]["error"] = REFUSED + p["content"]
    if history:  # (the last text the agent said, not the history's)
        trace["output"] = next((s["output"] for s in reversed(trace["steps"][history:]) if s.get("output")), None)
    return _Walk(b, trace, answered_last or bool(answered), turns, history, prompts)


def _input(sample: dict[str, Any], cid: str) -> Any:
    value = sample.get("input")
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        what = json_type(value) if "input" in sample else "nothing"
        fail(f"input: expected the sample's input (a string or a list of chat messages), got {what}", field="input", case_id=cid)
    return [{"role": m.get("role"), "content": text_of(m.get("content"))} for m in value if isinstance(m, dict)]


def _target(sample: dict[str, Any], cid: str) -> Any:
    target = sample.get("target")
    if target in (None, "", []):
        return None
    if isinstance(target, str) or (isinstance(target, list) and all(isinstance(t, str) for t in target)):
        return target
    fail(f"target: expected a string or a list of strings, got {json_type(target)}", field="target", case_id=cid)


def adapt(payload: Any, options: Options | None = None) -> Case:
    """Turn one inspect sample (an `inspect_logs.Sample`) into a `Case` (see the module docstring).

    Raises `AdapterError` naming the member or `samples[i]` and the field (`messages[3].tool_calls[0].function`)
    for a sample that is not JSON or not an object, lacks `id`, `epoch`, `input` or `messages`, or holds a message
    or usage that cannot be read.
    """
    opts = options or Options()
    sample = _decode(payload)
    cid = _identity(sample, payload)
    walk = _steps(sample, cid, opts)
    trace = walk.trace
    results_from_events(sample, trace["steps"], walk.b.set_result)  # calls a limit left without their tool message
    output = sample.get("output")
    completion = output.get("completion") if isinstance(output, dict) else None
    if not isinstance(completion, str):  # (no `output`: a log not written by inspect's own recorder)
        completion = trace["output"]
    trace["output"] = None if sample.get("error") and not walk.answered else completion
    trace["usage"] = _usage(sample, walk.b.responses - walk.history, cid)
    metadata, tags = _metadata(sample, payload, walk.b.unpaired)
    unfinished(sample, trace["steps"], metadata)  # a limit's reason as the run error; calls a raise or a limit left without a result
    failed_calls(sample, trace["steps"])  # calls whose `tool` event failed with no error: a raise caught, an approver's terminate
    if walk.prompts:
        metadata["inspect"]["agent_prompts"] = walk.prompts
    data: dict[str, Any] = {"id": cid, "input": _input(sample, cid), "expected_output": _target(sample, cid),
                            "turns": walk.turns, "tags": list(dict.fromkeys([*payload.log.tags, *tags])),
                            "metadata": metadata, "trace": trace}
    own = sample.get("metadata")
    expected = own.get("expected_tool_calls") if isinstance(own, dict) else None
    if expected is not None:  # (tool names alone stand for calls checked by name)
        data["expected_tool_calls"] = [{"name": e} if isinstance(e, str) else e for e in expected] if isinstance(expected, list) else expected
    return build_case(data)


def prepare(dataset: Any) -> Options:
    """`dataset.options` read. A folder holding no log is refused here, with the config error of an empty dataset
    (`first_records.no_records`): the check of a dataset's first records before a run reads no folder, so the run went
    on to fail on having no results while `tracejudge extract` refused it."""
    opts = Options.model_validate(dataset.options)
    path = getattr(dataset, "path", None)
    if path is not None and Path(path).is_dir():
        with quiet():  # (the run's own read says what the folder holds that is not read)
            empty = not log_files(Path(path))
        if empty:
            from tracejudge.core.registry import format_for
            from tracejudge.stages.extract.first_records import no_records

            raise ConfigError(no_records(format_for("inspect"), dataset))
    return opts


register_format(Format("inspect", read=read, adapt=adapt, prepare=prepare, options=Options,
                       peek_id=peek_id, reads_dirs=True, count=count, whole_file=True))
