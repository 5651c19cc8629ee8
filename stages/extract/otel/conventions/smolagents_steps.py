"""smolagents runs under OpenInference: what a run answered, and a step's failure that no call holds.

openinference-instrumentation-smolagents (0.1.43) records an agent run as an `AGENT` span (`CodeAgent.run`), each
step as a `Step n` `CHAIN` span under it holding the step's model request (`LLM`) and the tools its action ran
(`TOOL`, `FinalAnswerTool` for `final_answer`). Two things the span of one kind says are read into another here:

- `answers`: the run's answer. The agent span's `output.value` is the `str()` of what `run` returned, so a
  value that is not text (`final_answer({"city": "Paris"})`) is its Python `repr`, no JSON. The run's
  `final_answer` span recorded the value itself (as JSON, `output.mime_type` `application/json`): when the agent's
  output is that value's `repr`, the answer is the value as JSON text — as format `smolagents` (the same run's
  memory) writes it, so the same run reads the same in both. A value whose `str()` is JSON too (`final_answer(21)`,
  `final_answer([1, 2])`) decoded to no text, and the run read as answering its model's code: its JSON text too.
  A string the run returned is that text as it is, even when it reads as JSON (`final_answer("21")`,
  `final_answer('"Paris"')`): the `final_answer` span recorded it as `text/plain`, and the agent span's output is
  the same text, which decoded as JSON was no text (the run read as answering its model's code) or lost its quotes.
- `given_answers`: the step that gave it. A `CodeAgent`'s code calls `final_answer(value)`; its `final_answer` span
  records the call's Python arguments (`{"args": [value], "kwargs": {}, …}`). A string is the step's output (the
  model's words and code its thought: `assemble._code_answers`), but another value was read as the model's
  arguments (a mapping's keys) or as its Python `str()`: the step answered nothing, its code its output, or the
  answer in Python's notation. The rule: whatever the value, the step's output is the answer, text as it is and any
  other value as JSON — the run's answer (`answers`), the `final_answer` span's own `output.value` and format
  `smolagents`' step output (the memory's `action_output`) say the same; the code stays the step's thought. `None` is
  no output (`_no_text_answer`): the request's words and code are its thought, and the run answered nothing. `""` is
  what the run returned, an empty answer: the words and code are the thought too, and `""` the step's and run's output
  (the request is given an empty text part, which is what it answered), as format `smolagents` reads the memory. A
  `True` or `False` is JSON (`true`): its `final_answer` span's output, which is no number or object, was not read.
- `tool_answers`: a `ToolCallingAgent`'s model calls `final_answer` itself (`{"answer": <value>}`, a tool call part of
  its request), and that part's arguments gave the step's output: a value that is no text as its Python `str()`
  (`True`, `{'city': 'Paris'}`, `None` for no answer) and `""` as no output. They are made to say what the run
  returned as `answers` and format `smolagents` read it: any value that is no text as JSON, `None` no answer (no
  arguments left), and `""` the request's own empty text, its output.
- `step_errors`: a step that failed. smolagents raises inside the step and catches it in the run (the model is
  told the error, and tries again); the instrumentation records that on the `Step n` span only: status ERROR, an
  `exception` event. A `CodeAgent`'s code that raised (`AgentExecutionError: Code execution failed at line …`)
  ran no tool, so no other span holds it, and a parsing error neither. Such a step's error is the error of
  the step's model request (a step is one request and what its answer ran), as `"<type>: <message>"` with the
  type's bare name (the span's status description, as smolagents words it; memory steps say the same).
  When a call of the step failed (a tool span, or a managed agent's run, with an error), the step's failure
  is that call's and is left there; a request that failed itself keeps its own error. A failed step with no
  model request under it has no step to carry its error: a warning names the file, trace and span.
- `max_steps`: a run that ran out of steps. smolagents then asks the model for an answer itself
  (`provide_final_answer`) and adds a memory step holding it, its error `AgentMaxStepsError: Reached max steps.`;
  the instrumentation records that request directly under the agent span (no `Step n` span) and nothing of the
  error. That request is recognised by its closing prompt (`smolagents_inputs` makes it a system message) and gets
  the error (joined after it, when the request failed itself), so its step says what the memory step says. The
  run still returned that answer: no run error, as format `smolagents` reads the same run. When that request failed,
  smolagents catches it and the run returns its stand-in message's content instead (`[{"type": "text", "text": "Error in
  generating final LLM output: …"}]`, the agent span's output as Python text; a string up to 1.16): that is no answer.
  The run has none, and its error (`metadata.run_error`) is `AgentMaxStepsError: Reached max steps.` and that text,
  as format `smolagents` reads the run's memory.
- a run called with `return_full_result=True` returns a `RunResult`, whose `str()` (the agent span's output) holds its
  whole memory: its answer is the `output` in it (`answers`).
- `stored_results`: a tool that returned an image or audio (`AgentImage`, `AgentAudio`). The tool span's output
  is the file smolagents saved it to (a path on the recording machine), but a `ToolCallingAgent`'s model got
  "Stored 'image.png' in memory." (or `'audio.mp3'`) in the step's observation (the `Step n` span's output):
  that line is the call's result, as the model saw it.
"""

from __future__ import annotations

from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.stages.extract.common import python_literal
from tracejudge.stages.extract.otel.conventions.graph_state import value_text
from tracejudge.stages.extract.otel.conventions.scopeless import from_instrumentation, smolagents_span
from tracejudge.stages.extract.otel.messages import text_parts
from tracejudge.stages.extract.otel.spans import Span
from tracejudge.stages.extract.otel.view import MISSING, View, present, unjson

__all__ = ["MAX_STEPS", "NO_FINAL", "answers", "given_answers", "max_steps", "ran_out", "step_errors", "stored_results", "tool_answers"]

log = get_logger("tracejudge.extract.otel")

SCOPE = "openinference.instrumentation.smolagents"
_FINAL = "final_answer"
_MAX_TEXT = 1_000_000  # longer output is not parsed as a literal: no repr smolagents wrote of an answer
MAX_STEPS = "AgentMaxStepsError: Reached max steps."
NO_FINAL = "Error in generating final LLM output:"  # smolagents' stand-in answer when its own final-answer request failed
_RUN_RESULT = "RunResult(output="  # `str()` of the `RunResult` a run called with `return_full_result=True` returns
_STORED = {"image.png": "Stored 'image.png' in memory.", "audio.mp3": "Stored 'audio.mp3' in memory."}
_AUDIO = (".wav", ".mp3", ".ogg", ".flac", ".m4a", ".aac", ".opus")


def _ours(span: Span) -> bool:
    return from_instrumentation(span, SCOPE, smolagents_span)  # (without a scope: what the instrumentation writes)


def _below(span: Span, index: dict[str, Span], views: dict[str, View], stop: set[str]) -> bool:
    """Whether `span` hangs under a span of role in `stop` before reaching the top (a loop of parents ends too)."""
    node, hops = span, 0
    while node.parent_id in index and hops < 10_000:
        node, hops = index[node.parent_id], hops + 1
        if views[node.span_id].role in stop:
            return True
    return False


def _owner(span: Span, index: dict[str, Span], views: dict[str, View], roles: tuple[str, ...]) -> Span | None:
    """The nearest ancestor of `span` whose view has one of `roles`, else `None`."""
    node, hops = span, 0
    while node.parent_id in index and hops < 10_000:
        node, hops = index[node.parent_id], hops + 1
        if views[node.span_id].role in roles:
            return node
    return None


def answers(spans: list[Span], views: dict[str, View]) -> None:
    """Give each smolagents agent run whose recorded answer is the `repr` of its `final_answer` value that value as JSON."""
    index = {s.span_id: s for s in spans}
    for span in spans:
        v = views[span.span_id]
        if v.role == "agent" and _ours(span) and isinstance(v.answer, str) and v.answer.startswith(_RUN_RESULT):
            value = _run_result_output(v.answer)
            if value is not MISSING:
                v.answer = value if isinstance(value, str) or value is None else value_text(value)
    finals: dict[str, Span] = {}  # agent span id -> its run's last final_answer span
    for span in spans:
        v = views[span.span_id]
        if v.role == "tool" and v.tool_name == _FINAL and _ours(span):
            run = _owner(span, index, views, ("agent",))
            if run is not None and (run.span_id not in finals or finals[run.span_id].start <= span.start):
                finals[run.span_id] = span
    for agent_id, final in finals.items():
        v = views[agent_id]
        value = _final_value(final)
        said = v.answer if isinstance(v.answer, str) else index[agent_id].attrs.get("output.value") if v.answer is None else None
        if isinstance(value, (dict, list, int, float)) and isinstance(said, str) and len(said) < _MAX_TEXT \
                and value_text(python_literal(said, None)) == value_text(value):  # (`True` is no `1`: compared as JSON)
            v.answer = value_text(value)
        given = final.attrs.get("output.value")
        raw = index[agent_id].attrs.get("output.value")
        if given == "null" and final.attrs.get("output.mime_type") == "application/json" and raw == "None":
            v.answer = None  # `final_answer(None)`: the run returned `None`, no answer (its `str()` is no text it said)
        if final.attrs.get("output.mime_type") == "text/plain" and isinstance(given, str) and given and raw == given:
            # a string answer (`final_answer("21")`, `'{"city": …}'`, `'"Paris"'`) is the agent span's output as it is:
            # decoded as JSON it was no text (the model's code read as the answer) or lost its quotes
            v.answer = given


def given_answers(spans: list[Span], views: dict[str, View]) -> None:
    """Make the arguments of each smolagents `final_answer` span given a value that is no text `{"answer": <its JSON>}`, the
    answer the step gave (module docstring)."""
    for span in spans:
        v = views[span.span_id]
        if v.role != "tool" or v.tool_name != _FINAL or not _ours(span):
            continue
        given = unjson(span.attrs.get("input.value"))
        if not isinstance(given, dict) or not isinstance(given.get("args"), list) or not isinstance(given.get("kwargs"), dict):
            continue  # (not the `Tool.__call__` arguments the instrumentation records)
        values = [*given["args"], *given["kwargs"].values()]
        if len(values) == 1 and values[0] is not None and not isinstance(values[0], str):
            v.args = {"answer": value_text(values[0])}
        elif len(values) == 1 and values[0] in (None, ""):
            if values[0] is None:
                v.args = {}  # (no answer: its `str()`, "None", is no text the run returned)
            _no_text_answer(span, spans, views, empty=values[0] == "")


def _no_text_answer(final: Span, spans: list[Span], views: dict[str, View], empty: bool = False) -> None:
    """The request whose code gave `final_answer(None)` or `final_answer("")` said no answer text: its words and code are
    its thought, as format `smolagents` reads its memory step (the model's reply), not the step's output. `empty`
    (`final_answer("")`): the run returned `""`, which is then the request's only text, its step's and run's output."""
    asked = [s for s in spans if s.parent_id is not None and s.parent_id == final.parent_id and s.start <= final.start
             and views[s.span_id].role == "model" and _ours(s)]
    if not asked:
        return
    mv = views[max(asked, key=lambda s: (s.start, s.span_id)).span_id]
    parts = [p for m in mv.outputs or [] for p in m.get("parts") or [] if isinstance(p, dict)]
    if not parts or any(p.get("type") == "tool_call" for p in parts):
        return  # (a `ToolCallingAgent` called the tool itself: its call is the answer)
    mv.outputs = [{**m, "parts": [{"type": "reasoning", "content": p.get("content")} if isinstance(p, dict) and p.get("type") == "text" else p
                                  for p in m.get("parts") or []] + ([{"type": "text", "content": ""}] if empty else [])}
                  if m.get("role") == "assistant" and isinstance(m.get("parts"), list) else m
                  for m in mv.outputs or []]


def tool_answers(spans: list[Span], views: dict[str, View]) -> None:
    """Make each smolagents request's own `final_answer` call give the answer as the run returned it (module docstring)."""
    for span in spans:
        v = views[span.span_id]
        if v.role != "model" or not _ours(span) or not v.outputs:
            continue
        v.outputs = [_answer_parts(m) for m in v.outputs]


def _answer_parts(message: Any) -> Any:
    """`message` (a request's output message) with its `final_answer` calls' arguments as `tool_answers` reads them (a copy)."""
    parts = message.get("parts") if isinstance(message, dict) else None
    if not isinstance(parts, list):
        return message
    out, said = [], any(isinstance(p, dict) and p.get("type") == "text" for p in parts)
    for part in parts:
        args = part.get("arguments") if isinstance(part, dict) and part.get("type") == "tool_call" and part.get("name") == _FINAL else None
        args = unjson(args) if isinstance(args, str) else args
        if not isinstance(args, dict) or set(args) != {"answer"}:
            out.append(part)  # (not the one `answer` argument smolagents' `final_answer` takes)
        elif args["answer"] is None:
            out.append({**part, "arguments": {}})  # `final_answer(None)`: the run returned `None`, no answer (its `str()` is no text it said)
        elif not isinstance(args["answer"], str):
            out.append({**part, "arguments": {"answer": value_text(args["answer"])}})  # (its `str()` was Python's: `True`, `{'city': …}`)
        else:
            out.append(part)
            if args["answer"] == "" and not said:
                out.append({"type": "text", "content": ""})  # the run returned `""`: the request's output, as its memory reads
                said = True
    return {**message, "parts": out}


def _run_result_output(text: str) -> Any:
    """The `output` a `RunResult`'s `str()` holds when it is a Python literal (`MISSING` otherwise): the text up to the first
    `, state='` after which a literal ends (the memory after it holds enums' reprs, no literal)."""
    at = text.find(", state='", len(_RUN_RESULT))
    while at != -1 and at - len(_RUN_RESULT) < _MAX_TEXT:
        value = python_literal(text[len(_RUN_RESULT):at], MISSING)
        if value is not MISSING:
            return value
        at = text.find(", state='", at + 1)
    return MISSING


def _final_value(span: Span) -> Any:
    """The value a `final_answer` span recorded: its output as JSON when the instrumentation wrote JSON, else `None`."""
    raw = span.attrs.get("output.value")
    if not isinstance(raw, str) or span.attrs.get("output.mime_type") != "application/json":
        return None
    if raw.strip() in ("true", "false"):  # (JSON `unjson` leaves as text: `final_answer(True)`)
        return raw.strip() == "true"
    decoded = unjson(raw)
    return decoded if decoded is not raw else None


def step_errors(spans: list[Span], views: dict[str, View]) -> None:
    """Give the model request of each failed smolagents step the step's error, unless a call of the step holds it."""
    index = {s.span_id: s for s in spans}
    steps = {s.span_id: s for s in spans if _ours(s) and views[s.span_id].role == "chain" and views[s.span_id].error
             and _owner(s, index, views, ("agent",)) is not None}
    if not steps:
        return
    requests: dict[str, list[Span]] = {}
    failed_call: set[str] = set()
    for span in spans:
        v = views[span.span_id]
        step = _owner(span, index, views, ("chain", "agent", "tool"))
        if step is None or step.span_id not in steps:
            continue
        if v.role == "model":
            requests.setdefault(step.span_id, []).append(span)
        elif v.role == "tool" and v.error:
            failed_call.add(step.span_id)  # (a managed agent's failed run is a tool view too: `smolagents`)
    for sid, step in steps.items():
        if sid in failed_call:
            continue
        asked = sorted(requests.get(sid, []), key=lambda s: (s.start, s.span_id))
        if not asked:
            log.warning(f"otel: {step.file}:{step.line}: trace {step.trace_id}: smolagents step span {step.span_id} ({step.name}) failed "
                        f"({_step_error(step, views[sid])}) with no model request under it, so no step of the case carries that error")
            continue
        mv = views[asked[-1].span_id]
        if mv.error is None:
            mv.error = _step_error(step, views[sid])


def _step_error(step: Span, view: View) -> str:
    """The step's error as smolagents words it: `"<type>: <message>"` with the exception type's bare name."""
    said = step.status_message
    if isinstance(said, str) and said.strip() and present(said):
        return said
    error = view.error or ""
    head, sep, rest = error.partition(": ")
    return f"{head.rsplit('.', 1)[-1]}{sep}{rest}" if sep and " " not in head else error


def max_steps(spans: list[Span], views: dict[str, View]) -> None:
    """Give the request a smolagents run made when its steps ran out the error of the step smolagents added for it.

    Such a request hangs directly under the run's agent span (smolagents' other requests there are planning ones,
    which end in a user message) and its last message is the closing prompt `smolagents_inputs.memory_inputs`
    made a system message: a text ending in the run's task (the agent span's `task`, when recorded).
    """
    index = {s.span_id: s for s in spans}
    for span in spans:
        v = views[span.span_id]
        if v.role != "model" or not _ours(span) or not v.inputs or v.inputs[-1].get("role") != "system":
            continue
        run = _owner(span, index, views, ("chain", "agent", "tool"))
        if run is None or views[run.span_id].role != "agent" or not _ours(run):
            continue
        given = unjson(run.attrs.get("input.value"))
        task = given.get("task") if isinstance(given, dict) else None
        if isinstance(task, str) and task and not "\n".join(text_parts(v.inputs[-1])).endswith(task):
            continue
        said = _stand_in(views[run.span_id].answer)
        if not (v.error or "").startswith(MAX_STEPS):
            v.error = f"{MAX_STEPS}\n{v.error or said}" if v.error or said else MAX_STEPS
        if said is not None:  # that request failed: the run returned smolagents' stand-in, no answer, and ended in that error
            rv = views[run.span_id]
            rv.answer, rv.error = None, rv.error or f"{MAX_STEPS}\n{said}"


def ran_out(view: View) -> bool:
    """Whether a model request is the one a smolagents run made when its steps ran out (`max_steps` marked it).

    A later run on the same memory (`reset=False`) replays the run's steps, not that request: its own prompt, a system
    message, is in no memory step, so a conversation is joined on the request before it (`stitch`)."""
    return (view.error or "").startswith(MAX_STEPS)


def _stand_in(answer: Any) -> str | None:
    """The text of smolagents' stand-in for the answer its failed final-answer request did not give, when `answer` (a run's
    recorded output: text, a list of text parts as Python or JSON text) is that, else `None`."""
    if not isinstance(answer, str) or len(answer) > _MAX_TEXT:
        return None
    value = answer if answer.startswith(NO_FINAL) else unjson(answer) if answer.startswith("[{\"") else python_literal(answer, None)
    if isinstance(value, list):
        value = "".join(p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)) if all(
            isinstance(p, dict) and p.get("type") == "text" for p in value) else None
    return value if isinstance(value, str) and value.startswith(NO_FINAL) else None


def stored_results(spans: list[Span], views: dict[str, View]) -> None:
    """Make the result of each smolagents tool span that returned an image or audio what its step's observation says."""
    index = {s.span_id: s for s in spans}
    for span in spans:
        v = views[span.span_id]
        if v.role != "tool" or not _ours(span) or span.attrs.get("output.mime_type") != "application/json":
            continue
        saved = unjson(span.attrs.get("output.value"))
        if not isinstance(saved, str) or not saved.strip() or saved is span.attrs.get("output.value"):
            continue  # (an agent type's output is `str()` of it, its file, written as a JSON string)
        step = _owner(span, index, views, ("chain", "agent", "tool"))
        seen = step.attrs.get("output.value") if step is not None and views[step.span_id].role == "chain" and _ours(step) else None
        if not isinstance(seen, str) or saved.strip() in seen:
            continue  # the model saw the text itself (a `Path`, an object whose `str` it is): that is the result
        lines = seen.split("\n")
        stored = [line for line in _STORED.values() if line in lines]
        if len(stored) > 1:
            stored = [_STORED["audio.mp3" if saved.strip().lower().endswith(_AUDIO) else "image.png"]]
        if stored:
            v.result = stored[0]
