"""Format `smolagents`: smolagents runs as `agent.memory.get_full_steps()` writes them.

Framing: JSONL, one run per line: the step list itself, or an object with
that list under `steps` and native case keys beside it (`id`, `tags`,
`metadata`, `expected_tool_calls`, ...), which pass through; `id`
defaults to `"<file>:<line>"`.

What counts, by the step's shape (`smolagents.memory`):

- a task step (`task`) is what the user asked: the first is the case
  `input`, every one is a `trace.user_messages` entry before the next step,
  the later ones are `turns`;
- a planning step (`plan`) is a model request whose thought is the plan: the
  model's own text (`model_output_message.content`), as the same request reads
  under OpenInference, not smolagents' wrapper around it in `plan` ("Here are
  the facts I know and the plan of action…", repeating the task in an
  update), which is read only when the message was not kept as a mapping
  (1.13-1.15 wrote its `repr()`). A plan is never the step's output nor the answer;
- an action step (`step_number`, `tool_calls`, `model_output_message`) is a
  model request and one step. Its calls are the model's own tool calls
  (`model_output_message.tool_calls`, in the order the model made them,
  also from the message's `repr()` that smolagents 1.13-1.15 runs hold;
  `tool_calls` when the message is absent — smolagents sorts that list by
  call id, and leaves it empty when a call raised). `final_answer` is the
  run's answer (`trace.output`), not a call;
- results: the step's `observations` is the result of its call when it
  made one. smolagents keeps no result per call: with several calls it
  joins their stripped results with newlines in call id order, trailing
  newlines cut off (1.20+; 1.18-1.19 in the order the calls finished). A
  call gets its own part only where that text can be cut one way
  (`smolagents_observations`); otherwise every call gets the whole text
  and `metadata.smolagents.shared_results` lists `{step, calls, reason}`
  — a result may span lines or be empty, so a line count proves nothing.
  A call the model made but the step's own `tool_calls` leaves out (older
  smolagents ran only a message's first call) gets no result;
- a step whose `error` is set (`{type, message}`) keeps its calls, the
  failed one with the error message: a call whose quoted name (`'boom'`)
  the message names — of several calls of that tool, those whose
  arguments it names (`with arguments {'city': 'Atlantis'}`) — else every
  call of the step. An error on a step
  without calls (a parsing or generation error) is the step's own `error`
  (`"<type>: <message>"`) and is listed in `metadata.smolagents.errors`;
- a CodeAgent's `python_interpreter` call keeps its code as
  `arguments.code`; a step marked `is_final_answer` gives its
  `action_output` as the answer when no `final_answer` call did. A code
  step that only hands over the answer — its code is one
  `final_answer(<value>)` statement with no other call in it — is that
  answer, not a call; code that also does work (`x = f()` before it, or
  `final_answer(f())`) stays a `python_interpreter` call;
- a run that reached `max_steps` ends with the step smolagents adds then
  (error `AgentMaxStepsError`, no calls; every version since memory steps
  exist): its `action_output`, the reply to smolagents' own "give a final
  answer" request and what `agent.run` returned, is the run's answer and
  that step's output, while the step keeps its error. When that request
  failed, smolagents holds `Error in generating final LLM output: ...`
  there instead (a string up to 1.16, a list of text parts since 1.20):
  the run has no answer, that text joins the step's error, and that error
  is the run's (`metadata.run_error`, as format `otel` reads the same run
  under OpenInference) unless a later task's run came after it;
- `token_usage` is summed (1.13-1.15: the OpenAI usage in the message's
  `repr()`), `timing` gives the latency (first start to last
  end; smolagents 1.13 wrote `start_time`/`end_time` on the step itself);
  model requests are the planning and action steps;
- a memory of several runs (`agent.run(task, reset=False)`) answers with its
  last run's answer: a last run that raised (smolagents re-raises a model
  request's failure and records no error on the step) or was stopped before
  answering has none, not an earlier run's;
- a run that raised: smolagents re-raises a failed model request
  (`AgentGenerationError`) out of `run` with no error on the step, but keeps
  the action step it had begun as it was: no message, output, calls or usage.
  Such a step, last in its run, is where the run raised: it gets the error
  `AgentGenerationError: …` (the memory keeps no message; format `otel` has
  the exception's) and, in the last run, that is `metadata.run_error`. A run
  whose planning request failed, or that raised another way, leaves no such
  step: its memory cannot tell it from a run stopped, and it has no error;
- an answer that is no text (`final_answer(True)`, a dict) is its JSON
  (`true`), `""` is `""` and `None` no answer, as format `otel` reads the run;
  a step with an error gave no answer of the run's: one a final-answer check
  refused (`AgentError: Check … failed with error: …`) is that step's output
  (a code step's `action_output` too), and the run went on;
- the system messages a planning or action step's `model_input_messages` opens with, and a `system_prompt`
  step (`memory.system_prompt` dumped with the steps), are the trace's `system_prompts`.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from typing import Any

from tracejudge.core.records import Case
from tracejudge.core.registry import Format, NoOptions, register_format
from tracejudge.stages.extract.common import JsonLine, build_case, case_fields, fail, json_type, maybe_json, read_lines, text_of
from tracejudge.stages.extract.smolagents_observations import split_observations
from tracejudge.stages.extract.smolagents_repr import message_tool_calls, message_usage
from tracejudge.stages.load import RawRecord, loads_line
from tracejudge.stages.extract.system_prompts import distinct_prompts, leading_system

__all__ = ["adapt"]

FINAL = "final_answer"
CODE_TOOL = "python_interpreter"
MAX_STEPS = "AgentMaxStepsError"  # the step smolagents adds when a run reaches max_steps; its action_output is what `run` returns
CALLED = "Called Tool: '"  # smolagents 1.18-1.19 overwrote a step's model_output with one such line per call
NO_FINAL = "Error in generating final LLM output:"  # what that step holds instead when smolagents' final-answer request failed
GENERATION = "AgentGenerationError"  # what smolagents re-raises out of `run` when a step's model request failed
RAISED = "the step's model request failed and the run raised it (smolagents keeps no error message in memory)"


def _decode(payload: Any) -> tuple[Any, str]:
    if not isinstance(payload, JsonLine):
        return payload, "run"
    try:
        return loads_line(payload.data), payload.default_id
    except ValueError as exc:
        fail(str(exc), case_id=payload.default_id)


def _calls(step: dict[str, Any], where: str, cid: str) -> list[dict[str, Any]]:
    message = step.get("model_output_message")
    listed = message.get("tool_calls") if isinstance(message, dict) else message_tool_calls(message)
    field = f"{where}.model_output_message.tool_calls"
    if not listed:
        listed, field = step.get("tool_calls") or [], f"{where}.tool_calls"
    if not isinstance(listed, list):
        fail("tool_calls must be a list", field=field, case_id=cid)
    calls = []
    for j, tc in enumerate(listed):
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict) or not isinstance(fn.get("name"), str) or not fn["name"]:
            fail("a tool call needs `function.name`", field=f"{field}[{j}].function.name", case_id=cid)
        args = fn.get("arguments")
        if fn["name"] == CODE_TOOL and isinstance(args, str):
            args = {"code": args}
        calls.append({"id": None if tc.get("id") is None else str(tc["id"]), "name": fn["name"], "arguments": args})
    return calls


def _only_final_answer(call: dict[str, Any]) -> bool:
    """Whether a CodeAgent's `python_interpreter` call runs nothing but `final_answer(...)`.

    True for code that is one `final_answer(<value>)` statement with no other call in it (names, literals,
    f-strings, attributes and subscripts only): that code only hands over the answer (the step's
    `action_output`). Code that also does work (`x = f(); final_answer(x)`, `final_answer(f())`), or that
    does not parse, stays a call.
    """
    if call["name"] != CODE_TOOL or not isinstance(call["arguments"], dict) or not isinstance(call["arguments"].get("code"), str):
        return False
    try:
        tree = ast.parse(call["arguments"]["code"])
    except (SyntaxError, ValueError):
        return False
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.Expr):
        return False
    invoked = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    return len(invoked) == 1 and invoked[0] is tree.body[0].value and isinstance(invoked[0].func, ast.Name) and invoked[0].func.id == FINAL


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    # (`True` is JSON `true`, as format `otel` reads the same answer; a number's `str()` is its JSON already)
    return json.dumps(value, default=str) if isinstance(value, (dict, list, bool)) else str(value)


def _unanswered(step: dict[str, Any]) -> bool:
    """Whether an action step holds nothing but its number and timing: its model request never answered.

    smolagents (1.20+) re-raises a failed model request (`AgentGenerationError`) out of `run` and records no error: the
    step it had begun is kept as it was (no message, no output, no calls, no usage). Such a step last in its run is the
    run raising there (module docstring).
    """
    keys = ("model_output_message", "model_output", "error", "tool_calls", "observations", "action_output", "token_usage", "code_action")
    return "model_output_message" in step and not any(step.get(k) for k in keys) and not step.get("is_final_answer")


def _ran(step: dict[str, Any], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calls of `calls` that the step ran: those its own `tool_calls` lists, when it lists some by id.

    Older smolagents (1.17) ran only the first call of a message that made several; its step's
    `tool_calls` then holds that one call, and `observations` is that call's result alone.
    """
    listed = step.get("tool_calls")
    ids = {str(tc["id"]) for tc in listed if isinstance(tc, dict) and tc.get("id") is not None} if isinstance(listed, list) else set()
    if not ids:
        return calls
    return [c for c in calls if c["id"] is None or c["id"] in ids]


def _results(calls: list[dict[str, Any]], step: dict[str, Any], error: str | None) -> str | None:
    """Set each call's result or error; returns why the calls share one result text, when they do."""
    failed = _failed(calls, error)
    for call in failed:
        call["error"] = error
    ok = [c for c in calls if not any(c is f for f in failed)]
    observations = step.get("observations")
    if observations is None or not ok:
        return None
    text = observations if isinstance(observations, str) else _text(observations)
    parts, why = _split(observations, ok, step) if len(ok) > 1 else ([text], None)
    if parts is None:  # a wrong pairing would read as fact: every call keeps the whole text, and the case says why
        parts = [text] * len(ok)
    else:
        ok = sorted(ok, key=lambda c: c["id"] or "")  # smolagents' order of the results
    for call, part in zip(ok, parts):
        call["result"] = part
    return why


def _failed(calls: list[dict[str, Any]], error: str | None) -> list[dict[str, Any]]:
    """The calls of a step the step's `error` is about: every call when it names none, `[]` without an error.

    smolagents' message names the tool in quotes and then the arguments it ran with (`Error executing tool
    'get_weather' with arguments {'city': 'Atlantis'}: …`, their `str()`): of several calls of that tool
    (parallel calls, one of which raised) only those whose arguments it names failed. When it names no
    call's arguments as they were recorded (smolagents put state variables in them first), every call of
    the tool keeps the error: nothing tells them apart.
    """
    if not error:
        return []
    named = [c for c in calls if f"'{c['name']}'" in error]
    if len(named) < 2:
        return named or calls
    exact = [c for c in named if f"'{c['name']}' with arguments {_args_text(c['arguments'])}:" in error]
    return exact or named


def _args_text(arguments: Any) -> str:
    """The arguments as smolagents' error message writes them: `str()` of the mapping it ran the tool with."""
    decoded = maybe_json(arguments) if isinstance(arguments, str) else arguments
    return str(decoded)


def _split(observations: Any, calls: list[dict[str, Any]], step: dict[str, Any]) -> tuple[list[str] | None, str | None]:
    """Each call's part of the step's `observations` (in call id order), or None and why the calls share the whole text."""
    out = step.get("model_output")
    if isinstance(out, str) and out.startswith(CALLED):
        return None, "smolagents 1.18-1.19 joined the results in the order the calls finished, which the step does not record"
    if not isinstance(observations, str):
        return None, "the observations are not text"
    if len({c["id"] for c in calls}) < len(calls):
        return None, "calls share an id, and smolagents keeps one result per id"
    return split_observations(observations, len(calls))


def _plan(step: dict[str, Any]) -> str | None:
    """A planning step's thought: the plan as the model wrote it, else smolagents' `plan` text (module docstring)."""
    message = step.get("model_output_message")
    content = message.get("content") if isinstance(message, dict) else None
    said = text_of(content) if isinstance(content, list) else content
    return said if isinstance(said, str) and said.strip() else _text(step["plan"])


def _tokens(usage: Any, totals: list[int]) -> None:
    if isinstance(usage, dict):
        for k, key in enumerate(("input_tokens", "output_tokens")):
            if isinstance(usage.get(key), int) and not isinstance(usage[key], bool):
                totals[k] += usage[key]


def adapt(payload: Any, options: Any = None) -> Case:
    """Turn one run (a step list, or `{"steps": [...], ...}`) into a `Case` (see the module docstring).

    Raises `AdapterError` naming the field (`steps[2].tool_calls[0].function.name`)
    for a step that is not a smolagents memory step.
    """
    record, default_id = _decode(payload)
    if isinstance(record, list):
        record = {"steps": record}
    if not isinstance(record, dict):
        fail(f"expected a step list or an object with `steps`, got {json_type(record)}", case_id=default_id)
    fields = case_fields(record, default_id)
    cid = str(fields["id"])
    raw_steps = record.get("steps")
    if "steps" not in record:
        fail("steps: required list of memory steps is missing", field="steps", case_id=cid)
    if not isinstance(raw_steps, list):
        fail(f"steps: expected a list of memory steps, got {json_type(raw_steps)}", field="steps", case_id=cid)
    if not raw_steps:
        fail("steps: the run recorded no step (an empty memory says nothing the agent did)", field="steps", case_id=cid)
    steps: list[dict[str, Any]] = []
    users: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    shared: list[dict[str, Any]] = []
    tokens, times = [0, 0], []
    told: list[tuple[str | None, str | None]] = []  # (agent, text) of each system prompt a request was sent
    output: str | None = None
    run_error: str | None = None  # the last run's, when its final-answer request failed (see the module docstring)
    pending: dict[str, Any] | None = None  # the last step made, while it may be a run's failed request (`_unanswered`)
    for i, step in enumerate(raw_steps):
        where = f"steps[{i}]"
        if not isinstance(step, dict):
            fail(f"expected a memory step object, got {json_type(step)}", field=where, case_id=cid)
        timing = step.get("timing") if isinstance(step.get("timing"), dict) else step  # smolagents 1.13: on the step itself
        times += [t for t in (timing.get("start_time"), timing.get("end_time")) if isinstance(t, (int, float)) and not isinstance(t, bool)]
        _tokens(step["token_usage"] if "token_usage" in step else message_usage(step.get("model_output_message")), tokens)
        told += [(None, text) for text in leading_system(step.get("model_input_messages"))]
        if "task" in step:
            _raised(pending, errors)
            pending = None
            users.append({"step": len(steps), "content": step["task"]})
            run_error = None  # a new run (`agent.run(task, reset=False)`): the error of an earlier one is not the case's
            output = None  # nor its answer: a later run that raised (or was stopped) before answering answered nothing
        elif "plan" in step:
            steps.append({"thought": _plan(step)})
        elif "step_number" in step or "model_output_message" in step or "tool_calls" in step:
            calls = _calls(step, where, cid)
            finals = [c for c in calls if c["name"] == FINAL]
            handed = any(_only_final_answer(c) for c in calls)  # code that only gave the answer (`action_output`)
            calls = [c for c in calls if c["name"] != FINAL and not _only_final_answer(c)]
            err = step.get("error")
            kind = err.get("type") if isinstance(err, dict) else None
            message = (err.get("message") or kind) if isinstance(err, dict) else (str(err) if err else None)
            shared_why = _results(_ran(step, calls), step, message)
            if shared_why:
                shared.append({"step": len(steps), "calls": [c["id"] for c in calls if "result" in c], "reason": shared_why})
            out = step.get("model_output")
            thought = text_of(out) if not isinstance(out, str) else out
            answer, failed_final = None, False
            ended = kind == MAX_STEPS and not calls and not finals  # the run's last step: its action_output is what `run` returned
            if finals:
                args = finals[-1]["arguments"]
                args = maybe_json(args)
                answer = _text(args.get("answer", args) if isinstance(args, dict) else args)
            elif (step.get("is_final_answer") or handed and err) and step.get("action_output") is not None:
                answer = _text(step["action_output"])  # (with an error: the answer a final-answer check refused, below)
            elif ended:
                value = step.get("action_output")
                answer = text_of(value) if isinstance(value, list) else _text(value)
                if answer is not None and answer.startswith(NO_FINAL):  # smolagents' stand-in when that request failed: no answer
                    message, answer, failed_final = f"{message}\n{answer}", None, True
            # A step that failed did not end the run with its answer (a final-answer check refused it, and the run went on):
            # the answer is the step's output, not the run's, as format `otel` reads it.
            output = answer if (answer is not None and not err) or ended else output
            made = {"thought": thought, "tool_calls": calls, "output": answer}
            if message and not calls:  # the model's step itself failed (parsing, generation, max steps): the step says so
                errors.append({"step": len(steps), "type": kind, "message": message})
                said = f"{kind}: {message}" if kind and not message.startswith(f"{kind}:") else message
                made["error"] = said
                if failed_final:
                    run_error = said
            steps.append(made)
            pending = made if _unanswered(step) else None
            if pending is not None:
                pending["_number"] = len(steps) - 1
        elif "output" in step and len(step) == 1:  # a FinalAnswerStep
            output = _text(step["output"])
            pending = None
        elif "system_prompt" in step:  # (`memory.system_prompt`, dumped beside the steps)
            told.append((None, step["system_prompt"] if isinstance(step["system_prompt"], str) else None))
        else:
            fail("not a smolagents memory step (expected task, plan, step_number or system_prompt)", field=where, case_id=cid)
    if _raised(pending, errors):
        run_error = pending["error"]  # type: ignore[index]
    usage: dict[str, Any] = {"requests": len(steps)}
    if any(tokens):
        usage.update(input_tokens=tokens[0], output_tokens=tokens[1])
    if times:
        usage["latency_s"] = max(times) - min(times)
    texts = [u["content"] for u in users]
    defaults: dict[str, Any] = {"input": texts[0] if texts else None, "turns": texts[1:]}
    notes = {k: v for k, v in (("errors", errors), ("shared_results", shared)) if v}
    if notes or run_error is not None:
        meta = dict(fields.get("metadata") or {})
        if notes:
            meta["smolagents"] = notes
        if run_error is not None:
            meta.setdefault("run_error", run_error)
        fields["metadata"] = meta
    trace = {"steps": steps, "user_messages": users, "output": output, "usage": usage}
    if prompts := distinct_prompts(told):
        trace["system_prompts"] = prompts
    return build_case({**defaults, **fields, "trace": trace})


def _raised(step: dict[str, Any] | None, errors: list[dict[str, Any]]) -> bool:
    """Give the step a run's model request left unanswered, last in that run (`_unanswered`), the error the run raised."""
    if step is None:
        return False
    number = step.pop("_number")
    step["error"] = f"{GENERATION}: {RAISED}"
    errors.append({"step": number, "type": GENERATION, "message": RAISED})
    return True


def _read(dataset: Any) -> Iterator[RawRecord]:
    # A record may be a bare step list (`json.dump(agent.memory.get_full_steps(), f, indent=2)`): one run, not one a step.
    return read_lines(dataset, arrays=False)


register_format(Format("smolagents", read=_read, adapt=adapt, options=NoOptions))
