"""Format `tau-bench`: τ-bench trajectory files (sierra-research/tau-bench).

The dataset `path` is a trajectory file (a JSON array of runs: `task_id`,
`trial`, `reward`, `info`, `traj`); `tasks` is the matching tasks file (a
JSON array of `{task_index, actions, outputs, ...}`). Each run becomes one
case:

- `id` is `"{task_id}-{trial}"`; `metadata` keeps `task_id`, `trial`,
  `reward` (the upstream reward), `source` (the last actor) and
  `step_limit: true` when the run hit its step limit (upstream then has no
  `reward_info` and the reward is 0.0);
- a run whose agent raised (`run.py` records it as `info: {"error",
  "traceback"}` with `traj: []` and reward 0.0) keeps `info.error` as
  `metadata.run_error`: it is scored as recorded (upstream's pass^k counts
  it as a failure) and counted among the run's `run_errors`, not taken for
  an agent that chose to do nothing;
- `input` is the user's first message; `expected_tool_calls` are the task's
  `actions` (`{name, kwargs}` → `{name, arguments}`), taken from the tasks
  file when given, else from the task embedded in the run;
- `metadata.outputs` keeps the task's `outputs` when it has any: strings
  upstream's reward requires in the agent's replies (`calculate_reward` in
  `tau_bench/envs/base.py`: each, lower-cased, inside some reply lower-cased
  with its commas removed). They are not `expected_output`: a list there is
  alternatives (any one will do) and `Contains` reads the final reply only.
  `tracejudge.stages.score.tau_outputs` scores upstream's rule;
- every assistant message is one step: its text is the step's `thought`
  when it also calls a tool, else the step's `output`; its tool calls have
  their JSON-string arguments decoded and are paired with their results by
  `tool_call_id` — first unanswered call first, since upstream reuses ids
  within a conversation — among the calls of the last assistant message
  (upstream answers each right after the message that makes it: one still
  waiting at the next assistant message is the run's `invalid_input`); the
  last message's call with no result keeps `result: null`.
  A call without an id pairs with a result without a `tool_call_id` (upstream
  copies the call's id into its result, so both are null when the provider
  gives none); a result that answers no waiting call is the run's
  `invalid_input` on its `tool_call_id`, never dropped;
- a result starting with `"Error:"` marks a failed call: that prefix is how
  τ-bench's environment reports a tool that raised or refused
  (`tau_bench/envs/base.py`), the format's own error flag; so does
  `"Unknown action <name>"`, its answer to a tool the domain does not have;
- every `user` message is one of `trace.user_messages`, its text as
  recorded (the simulator's closing `###STOP###` included), placed before
  the step that answered it;
- the run's first `system` message (the domain's wiki: the policy the agent must follow; a react or act run's
  also holds the strategy's instructions) is the trace's one `system_prompts` entry;
- the trace's `output` is the last assistant text without tool calls (an
  empty one included: it was the agent's last reply); `usage.requests` counts
  assistant messages (one model request each).

A message, or a task, of a shape upstream never writes (a role it has not,
content that is no text, arguments that are not the JSON text of an object,
`kwargs` that are no object, no `actions`) is the run's `invalid_input`
naming the field (`tau_bench_shapes`), not passed over; the run's own task
is checked beside a tasks file too. A tasks file giving a `task_index`
twice costs the runs of that task (`Tasks.duplicates`).

Runs of upstream's `react` and `act` strategies (no tool calls; each
assistant text ends in `Action:` and its JSON, tools answer in
`API output: …` user messages) are told apart run by run and read as
upstream's agent reads them: `tau_bench_react`. The file may also hold the
runs one per line (JSON Lines): `tau_bench_files`.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from tracejudge.core.log import get_logger
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, NoOptions, register_format
from tracejudge.stages.extract.common import json_type, maybe_json, not_a_list
from tracejudge.stages.extract.system_prompts import distinct_prompts, first_system
from tracejudge.stages.extract.tau_bench_files import TASK_KEY, read_records
from tracejudge.stages.extract.lone_text import mended_case
from tracejudge.stages.load.framing import count_quietly

__all__ = ["Tasks", "Turns", "adapt", "load_tasks", "nameless", "prepare", "settle", "unnamed"]

log = get_logger("tracejudge.extract.tau_bench")

# What τ-bench's environment answers for a call that did nothing (`Env.step`): a tool that raised or
# refused, and a tool name the domain does not have.
_FAILED = ("Error:", "Unknown action ")


class Turns(NamedTuple):
    """What a run's messages make of its trace: `steps` and `users` (`Step` and `UserMessage` fields), the final reply, the model requests."""

    steps: list[dict[str, Any]]
    users: list[dict[str, Any]]
    output: str | None
    requests: int


def settle(call: dict[str, Any], content: Any) -> None:
    """Give `call` (a tool call's fields) the environment's answer `content`: its `result` (JSON text decoded), and its
    `error` when the answer says the call did nothing (`Error: …`, `Unknown action …`)."""
    call["result"] = maybe_json(content)
    if isinstance(content, str) and content.startswith(_FAILED):
        call["error"] = content


class Tasks(dict[int, dict[str, Any]]):
    """`{task_index: task}` of a tasks file, and `unreadable`: `{position in the file: "file:line: why"}` of the tasks
    that could not be read (a byte that is not UTF-8, bad JSON), so a run of such a task says why it has none; and
    `duplicates`: `{task_index: "duplicate task_index 5 at file:line (first at file:line)"}` of an index given twice."""

    def __init__(self) -> None:
        super().__init__()
        self.unreadable: dict[int, str] = {}
        self.duplicates: dict[int, str] = {}


def load_tasks(path: Path | None) -> Tasks | None:
    """Read a τ-bench tasks file into `{task_index: task}` (`Tasks`); `None` without a path."""
    if path is None:
        return None
    # Streamed element by element: a task that cannot be read (too deep, huge numbers, bad JSON, a byte that is not
    # UTF-8) is left out with a warning, and only the runs of that task fail, saying why (`Tasks.unreadable`: a task's
    # index is its position unless it says otherwise, so an unreadable one is told by its position).
    from tracejudge.stages.extract.tau_bench_check import check_not_packed, check_nothing_read, check_task_shape
    from tracejudge.stages.load.framing import quieted

    check_not_packed(Path(path))  # a gzip-compressed file is one config error, not an unreadable "task"
    tasks = Tasks()
    shaped = False
    skipped: list[tuple[str, dict[str, Any]]] = []  # the warnings, given once the file is known to hold tasks
    at: dict[int, str] = {}  # where each task_index was first given
    for i, raw in enumerate(read_records(Path(path), key=TASK_KEY)):
        if not shaped and raw.error is None:  # (the first task that reads: the first line may be cut)
            shaped = True
            check_task_shape(Path(path), raw.payload, raw.line)  # another JSON array (a tools file) is refused whole
        if raw.error is not None or not isinstance(raw.payload, dict):
            why = raw.error or "expected a task object"
            skipped.append(("unreadable task skipped", {"file": raw.file, "line": raw.line, "error": why}))
            tasks.unreadable[i] = f"{raw.file}:{raw.line}: {why}"
            continue
        index = raw.payload.get("task_index", i)
        # (`int()` took "5" and true as tasks 5 and 1; `tau-bench-tasks` refuses them as no integer.)
        if not isinstance(index, int) or isinstance(index, bool):
            skipped.append(("task skipped: task_index is not an integer", {"file": raw.file, "line": raw.line}))
            tasks.unreadable[i] = f"{raw.file}:{raw.line}: task_index is not an integer, got {json_type(index)} {index!r}"
            continue
        if index in at:
            # Taken as it came, the last won: runs of that task were judged against whichever record came last.
            why = f"duplicate task_index {index} at {raw.file}:{raw.line} (first at {at[index]})"
            tasks.duplicates.setdefault(index, why)
            skipped.append(("duplicate task_index", {"file": raw.file, "line": raw.line, "first": at[index]}))
            continue
        at[index] = f"{raw.file}:{raw.line}"
        tasks[index] = raw.payload
    check_nothing_read(Path(path), len(tasks), tasks.unreadable)  # no task read (not a tasks file at all): one config error
    if not quieted():  # (a look at the tasks besides the run's own read, which warns of them: `framing.quiet`)
        for event, fields in skipped:
            log.warning(event, **fields)
    return tasks


def prepare(dataset: Any) -> dict[int, dict[str, Any]] | None:
    """The tasks of `dataset.tasks` (`load_tasks`), checked to be those of the runs in `dataset.path`.

    Raises `ConfigError` for a tasks file that is not one, or whose tasks are another
    domain's (`tau_bench_check`).
    """
    from tracejudge.stages.extract.tau_bench_check import check_runs_match
    from tracejudge.stages.load.framing import quiet

    tasks = load_tasks(dataset.tasks)
    if tasks:
        with quiet():  # a look at the first runs before the run reads them, and warns of their commas itself
            check_runs_match(Path(dataset.path), Path(dataset.tasks), tasks)
    return tasks


def nameless(what: str, key: str) -> Callable[[Any], str | None]:
    """Why a record names no case (it is no `what` object, or has no integer `key`), or None: an adapter's first
    refusals, which the reader makes itself for a record of a file written on one line (`read_json_array`)."""

    def why(raw: Any) -> str | None:
        if not isinstance(raw, dict):
            return f"expected a {what} object, got {json_type(raw)}"
        value = raw.get(key)
        if not isinstance(value, int) or isinstance(value, bool):
            return f"{key}: required integer is missing or mistyped"
        return None

    return why


unnamed = nameless("run", "task_id")


def adapt(raw: Any, tasks: dict[int, dict[str, Any]] | None) -> Case:
    """Turn one τ-bench run into a `Case` (see the module docstring).

    Raises `AdapterError` naming the field when the run lacks `task_id` or
    `traj`, a message or a task is no shape upstream writes
    (`tau_bench_shapes`: `traj[1].role`, `info.task.actions[0].kwargs`), a
    tool result answers no call (`traj[9].tool_call_id`), the task is not in
    the tasks file or its index is there twice (`task_id`), or the task
    embedded in the run is for another user than the file's
    (`info.task.user_id`).
    """
    from tracejudge.stages.extract.errors import AdapterError
    from tracejudge.stages.extract.tau_bench_check import user_ids
    from tracejudge.stages.extract.tau_bench_react import is_react, react_turns
    from tracejudge.stages.extract.tau_bench_shapes import task_problem, traj_problem

    if (why := unnamed(raw)) is not None:
        raise AdapterError(why, field="task_id" if isinstance(raw, dict) else None)
    task_id = raw["task_id"]
    trial = raw.get("trial", 0)
    if not isinstance(trial, int) or isinstance(trial, bool) or trial < 0:
        # The case id is built from it: `true` would make case `7-True`, -1 case `7--1`.
        raise AdapterError(f"trial: expected a non-negative integer, got {trial!r}", field="trial", case_id=f"{task_id}-?")
    reward = raw.get("reward")
    if reward is not None and (isinstance(reward, bool) or not isinstance(reward, (int, float)) or not math.isfinite(reward)):
        # (NaN too: the generic advice for a metadata value, to write it as text, would be refused here)
        raise AdapterError(f"reward: expected a finite number, got {reward!r}", field="reward", case_id=f"{task_id}-{trial}")
    case_id = f"{task_id}-{trial}"
    traj = raw.get("traj")
    if not isinstance(traj, list):
        why = not_a_list(traj, "traj", "messages") if "traj" in raw else "traj: required message list is missing"
        raise AdapterError(why, field="traj", case_id=case_id)
    if (problem := traj_problem(traj)) is not None:
        raise AdapterError(f"{problem[0]}: {problem[1]}", field=problem[0], case_id=case_id)
    info = raw.get("info") or {}
    if not isinstance(info, dict):
        raise AdapterError(f"info: expected an object, got {json_type(info)}", field="info", case_id=case_id)
    embedded = info.get("task")
    # Checked with a tasks file too: its own task is what the run was made for, and it names the user compared below.
    if embedded is not None and (problem := task_problem(embedded, "info.task.")) is not None:
        raise AdapterError(f"{problem[0]}: {problem[1]}", field=problem[0], case_id=case_id)
    if tasks is not None:
        task = _file_task(tasks, task_id, case_id)
        pair = user_ids(raw, task)
        if pair is not None and pair[0] != pair[1]:
            raise AdapterError(f"info.task.user_id: the run was made for user {pair[0]!r}, but task {task_id} of the tasks file "
                               f"is for user {pair[1]!r}: a tasks file of another domain or split?", field="info.task.user_id",
                               case_id=case_id)
        if (problem := task_problem(task, f"tasks[task_index={task_id}].")) is not None:
            raise AdapterError(f"{problem[0]}: {problem[1]}", field=problem[0], case_id=case_id)
    else:
        task = embedded or {}
    actions = task.get("actions")
    expected = None if actions is None else [{"name": a["name"], "arguments": a.get("kwargs") or {}} for a in actions]
    # The shape is told run by run: nothing in a file says which agent strategy wrote it.
    turns = react_turns(traj) if is_react(traj) else _tool_calling_turns(traj, case_id)

    metadata: dict[str, Any] = {"task_id": task_id, "trial": trial, "reward": reward}
    if info.get("source") is not None:
        metadata["source"] = info["source"]
    if "reward_info" in info and info["reward_info"] is None:
        # Upstream leaves reward_info empty when the run hit its step limit.
        metadata["step_limit"] = True
    if info.get("error") is not None:
        # `run.py` catches what the agent or the user simulator raised and writes the run with an empty traj: without
        # this its case reads as an agent that said and called nothing, and the run's `run_errors` misses it.
        metadata["run_error"] = str(info["error"]) or "the run raised an exception (info.error is empty)"
    if task.get("outputs"):  # (most tasks have none: their metadata stays as it was)
        metadata["outputs"] = task["outputs"]
    users = turns.users
    trace = {"steps": turns.steps, "user_messages": users, "output": turns.output, "usage": {"requests": turns.requests}}
    if prompts := distinct_prompts([(None, first_system(traj))]):
        trace["system_prompts"] = prompts
    body = {
        "id": case_id,
        "input": users[0]["content"] if users else None,
        "expected_tool_calls": expected,
        "tags": ["tau-bench"],
        "metadata": metadata,
        "trace": trace,
    }
    # (its metadata, text of `info` such as the run's error, is read as U+FFFD too: its tags and id are no run's text)
    return Case.model_validate(mended_case(body, f"run {case_id}", fmt="tau-bench", sources=({"traj": traj},), keep=frozenset({"id"})))


_ABSENT = object()


def _unanswerable(call_id: Any, pending: dict[Any, deque[dict[str, Any]]]) -> str:
    """Why a tool message answering `call_id` (`_ABSENT`: no `tool_call_id` key) answers no call of the run so far."""
    left = [k for k, queue in pending.items() if queue]
    waiting = f"; calls waiting for a result: {', '.join('null' if k is None else repr(k) for k in left)}" if left else ""
    if call_id is _ABSENT or call_id is None:
        said = "the field is missing" if call_id is _ABSENT else "got null"
        return f"expected the id of the call it answers; {said}, and no earlier call without an id is waiting for a result{waiting}"
    return f"no earlier tool call with id {call_id!r} is waiting for a result{waiting}"


def _file_task(tasks: dict[int, dict[str, Any]], task_id: int, case_id: str) -> dict[str, Any]:
    """Task `task_id` of the tasks file. Raises `AdapterError` naming `task_id` when the file has it not, could not read
    it, or gives its `task_index` twice (`Tasks.duplicates`: which of the two the run was made for cannot be told)."""
    from tracejudge.stages.extract.errors import AdapterError

    duplicates = getattr(tasks, "duplicates", {})
    if task_id in duplicates:
        raise AdapterError(f"task_id: task {task_id} cannot be told in the tasks file: {duplicates[task_id]}", field="task_id",
                           case_id=case_id)
    task = tasks.get(task_id)
    if task is not None:
        return task
    unread = getattr(tasks, "unreadable", {}).get(task_id)
    if unread is not None:  # the file's task at that position could not be read: say why, not "not in the file"
        raise AdapterError(f"task_id: task {task_id} could not be read from the tasks file ({unread})", field="task_id",
                           case_id=case_id)
    unreadable = getattr(tasks, "unreadable", {})
    if unreadable:  # (a task that says its own index may be among them: not claimed missing)
        first = next(iter(unreadable.values()))
        raise AdapterError(f"task_id: task {task_id} is not among the tasks read from the tasks file, {len(unreadable)} of "
                           f"which could not be read (the first: {first})", field="task_id", case_id=case_id)
    # (A task whose record gives another's task_index is missing: the duplicate says which record that was.)
    dup = f"; it gives a task_index twice: {next(iter(duplicates.values()))}" if duplicates else ""
    raise AdapterError(f"task_id: task {task_id} is not in the tasks file{dup}", field="task_id", case_id=case_id)


def _tool_calling_turns(traj: list[Any], case_id: str) -> Turns:
    """The `Turns` of a tool-calling run's messages (OpenAI chat format, as the module docstring says).

    Raises `AdapterError` naming the field for a tool call without a function name.
    """
    from tracejudge.core.suggest import missing_key_typo, unknown_key_message
    from tracejudge.stages.extract.errors import AdapterError

    # Upstream reuses tool_call ids within a conversation (49 of the 200 GPT-4o runs),
    # so a result answers the oldest unanswered call with its id, not any call with it.
    pending: dict[Any, deque[dict[str, Any]]] = {}
    steps: list[dict[str, Any]] = []
    users: list[dict[str, Any]] = []
    final_output: str | None = None
    requests = 0
    calls: list[dict[str, Any]] = []
    made_at = 0
    for i, msg in enumerate(traj):
        role = msg.get("role")
        if role == "user":
            users.append({"step": len(steps), "content": msg.get("content")})
        if role == "tool":
            queue = pending.get(msg.get("tool_call_id"))
            if not queue:  # passed over, the result was lost with no word; upstream answers each call it makes
                raise AdapterError(f"traj[{i}].tool_call_id: {_unanswerable(msg.get('tool_call_id', _ABSENT), pending)}",
                                   field=f"traj[{i}].tool_call_id", case_id=case_id)
            settle(queue.popleft(), msg.get("content"))
            continue
        if role != "assistant":
            continue
        # Upstream answers each call right after the message that made it; one still waiting when the next message
        # comes lost its result, and with ids reused a later result of its id would have been taken for it.
        if (lost := next(((k, c) for k, c in enumerate(calls) if any(c is w for q in pending.values() for w in q)), None)) is not None:
            where = f"traj[{made_at}].tool_calls[{lost[0]}]"
            raise AdapterError(f"{where}: the call's result is missing (no tool message answers it before traj[{i}]; "
                               "upstream answers each call right after the message that makes it)", field=where, case_id=case_id)
        pending.clear()
        made_at = i
        requests += 1
        text = msg.get("content")
        calls = []
        for j, tc in enumerate(msg.get("tool_calls") or []):
            fn = tc.get("function") or {}
            if "name" not in fn:
                typo = missing_key_typo("name", fn) if isinstance(fn, dict) else None
                where = f"traj[{i}].tool_calls[{j}].function"
                if typo is not None:
                    raise AdapterError(f"{where}.{typo}: {unknown_key_message(typo, 'name')}", field=f"{where}.{typo}", case_id=case_id)
                raise AdapterError("tool call has no function name", field=f"{where}.name", case_id=case_id)
            call = {"id": tc.get("id"), "name": fn["name"], "arguments": fn.get("arguments"), "result": None, "error": None}
            pending.setdefault(tc.get("id"), deque()).append(call)
            calls.append(call)
        if calls:
            steps.append({"thought": text or None, "tool_calls": calls})
        else:
            steps.append({"output": text})
            if isinstance(text, str):  # an empty reply too: it was the agent's last word (no text at all is none)
                final_output = text
    return Turns(steps, users, final_output, requests)


register_format(
    Format(
        "tau-bench",
        read=lambda ds: read_records(ds.path, ds.limit, unnamed=unnamed),
        count=lambda ds: count_quietly(lambda: read_records(ds.path, ds.limit)),  # (the progress total: its warnings are the run's)
        adapt=adapt,
        prepare=prepare,
        options=NoOptions,
        whole_file=True,
    )
)
