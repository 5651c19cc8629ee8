"""Format `tau2-bench`: τ²-bench results files (sierra-research/tau2-bench).

A results file is one JSON object `{"info", "tasks", "simulations"}`; the
dataset `path` names it. Each simulation becomes one case, scored against
the task embedded in the *same* file (the current task files differ from the
ones many results were recorded with). When a simulation's own
`reward_info.action_checks` checked the actions of another task of the file
than its `task_id` names (a submission that renumbered its simulations), it
is scored against that task, named in `metadata.checked_task_id`, with one
warning per file:

- a simulation τ²-bench ended with `termination_reason: infrastructure_error`
  never ran (no messages, no reward: its retries ran out); upstream leaves it
  out of its average reward and pass^k, so it is one `invalid_input` naming
  the field and its `info.error`, not a case scored as an agent that did
  nothing (which would count it as a failed trial in pass^k). It is filed
  under `"{task_id}-{trial}@infrastructure_error"`, never the case id: a
  simulation of the same task and trial that did run (a file that kept
  both, as one merged from a resumed run) is that case, as upstream counts
  it, wherever it stands in the file;
- `id` is `"{task_id}-{trial}"`; `metadata` keeps `task_id`, `trial`,
  `simulation_id`, `domain`, `reward`, `termination_reason`, the upstream
  per-action verdicts as `action_checks` (`[{"action_id", "action_match"}]`)
  and `user_call_indices` (see below);
- `input` is the user's first message (the first message of a simulation is
  the agent's fixed greeting); `expected_tool_calls` are the task's
  `evaluation_criteria.actions`, each restricted to its `compare_args` when
  that is set (`argument_keys: "expected"`: a key of the call it leaves out
  is not compared, in `exact` too, as upstream ignores it): a key listed there
  but absent from the expected arguments becomes `{"$absent": true}` (upstream
  compares it as missing on both sides), and `compare_args: []` means the name
  alone (`arguments: null`);
  without `compare_args` the keys compared are the call's, as upstream
  compares them (`argument_keys: "call"`). Each value is compared with
  Python's `==`, as upstream compares it (`{"$python_eq": value}` where the
  project's rules could differ: `expected_from_action`).
  A task without `evaluation_criteria.actions` gives no expectation (`null`);
- a message is read as upstream's `Message` (`tau2_shapes`): another role,
  a `content` neither text nor null, a tool result's or call's `id` that is
  not text or a call's `arguments` not an object is the simulation's `invalid_input`,
  said at the line the message starts on (`tau2_places`);
- every assistant message is one step (its text is the `thought` when it
  also calls tools, else the step's `output`); a user message that calls
  tools (τ²'s dual-control telecom domain) is a step too, because upstream
  checks expected actions against every call of the simulation whoever made
  it. The positions of those user calls in the trace's call list are in
  `metadata.user_call_indices`, so `include_tools`-style filtering by
  requestor stays possible downstream;
- every user message with text is one of `trace.user_messages`, placed
  before the step that answered it (a user message that only calls tools
  is a step, not a turn);
- tool results pair with their call by `id`, the earliest unanswered call
  with that id first: τ²-bench writes a message's results right after it in
  the order of its calls, and the id is the provider's (`""` when it gave
  none; some servers repeat one id in a response or across responses), so
  among calls sharing an id the order decides (`pairing.Pending`; an empty
  id counts as none). A result with `"error": true` marks the call failed
  (`error` holds the result text);
- the domain policy the agent was given (`info.environment_info.policy`; a `system` message of the simulation
  instead, when one is recorded) is the trace's one `system_prompts` entry: upstream's agent wraps it in its fixed
  instructions, which the file does not keep;
- `usage`: input/output tokens and requests summed over the agent's model
  calls (assistant messages that carry `usage`; the scripted greeting has
  none), `cost_usd` = `agent_cost`, `latency_s` = `duration`;
  the trace's `output` is the last assistant text.

The results file is read whole (τ²-bench writes one JSON object, which
cannot be streamed element by element with the standard library); the
largest upstream files are a few MB.

τ²-bench's other layout ("dir", its default for voice runs, `Results.save(path,
"dir")`) writes `results.json` without `simulations` and one file per
simulation in a `simulations/` folder beside it. `path` may name that
`results.json` or the folder holding both (which the run's fingerprint then
covers whole; naming the file, the fingerprint covers the `simulations/` folder
beside it too: `Format.beside`); the simulations are read in the order of their file names,
as upstream loads them, each one's records named by its own file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracejudge.core.log import get_logger
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, NoOptions, register_format
from tracejudge.stages.extract.common import json_type, not_a_list
from tracejudge.stages.extract.lone_text import mended_case
from tracejudge.stages.extract.system_prompts import distinct_prompts, first_system
from tracejudge.stages.extract.tau2_results import NotResults, skip_ws, split_results
from tracejudge.stages.extract.tau2_expected import expected_from_action
from tracejudge.stages.extract.tau2_messages import walk_messages
from tracejudge.stages.extract.tau2_places import message_line
from tracejudge.stages.extract.tau2_shapes import criteria_actions, shape_problem
from tracejudge.stages.load import JSON_ERRORS, NotUtf8, RawRecord, json_error
from tracejudge.stages.load.encoding import BOM, ESCAPED, file_encoding_problem
from tracejudge.stages.load.framing import LineStarts, Notes, count_quietly, quieted

__all__ = ["adapt", "expected_from_action", "read_results"]

log = get_logger("tracejudge.extract.tau2_bench")

# The file of a dir-layout folder `path` that holds the tasks and info, beside its `simulations/` folder.
RESULTS = "results.json"
# The `termination_reason` of a simulation that never ran (its retries exhausted, its worker lost): `run_with_retry` in
# sierra-research/tau2-bench `src/tau2/runner/batch.py` writes it with no messages and no reward, and
# `src/tau2/metrics/agent_metrics.py` (`get_metrics_df`, `compute_metrics`) leaves it out of every figure.
INFRASTRUCTURE_ERROR = "infrastructure_error"


def read_results(path: Path, limit: int | None = None) -> Iterator[RawRecord]:
    """Yield one record per simulation: `{"index", "simulation", "task", "domain", "checked_task", "place", "policy"}`.

    Each record's line is the line of the file where its simulation starts,
    so a duplicate simulation is reported at its own place. `task` is the
    task of the same file whose `id` equals the simulation's `task_id`
    (`None` when there is none, which the adapter reports), or the one its
    action checks name (`checked_task`, see `_checked_task`). A simulation
    that cannot be decoded yields one record with `error` at its line; a
    file that is not a τ²-bench results object yields one record with `error`.
    `place` is the id (`file:line:column`) a simulation that names no case goes under, when another record
    started on its line before it (None: under `file:line`).
    `start` is where the simulation starts (`tau2_places.Place`), for an error about one of its messages to be said at
    the message's own line.
    """
    path = Path(path)
    folder = path / "simulations" if path.is_dir() else path.parent / "simulations"
    path = path / RESULTS if path.is_dir() else path
    name = str(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
        # A byte-order mark is no part of the object; a byte that is not UTF-8 is its simulation's error (`split_results`).
        base = len(BOM) if raw.startswith(BOM) else 0
        text = raw[base:].decode("utf-8", "surrogateescape")
        del raw
        if ESCAPED.match(text, skip_ws(text, 0)):  # not UTF-8 from its start (UTF-16, say): what the file is
            raise NotUtf8(f"file is not valid UTF-8: {file_encoding_problem(path)}")
        data, sims, warnings = split_results(text, base)
    except (OSError, *JSON_ERRORS) as exc:
        why = str(exc) if isinstance(exc, (OSError, NotUtf8, NotResults)) else json_error(exc, "file")
        yield RawRecord(name, 1, error=f"cannot read a tau2-bench results file: {why}")
        return
    if data.get("simulations") is not True and not folder.is_dir():
        yield RawRecord(name, 1, error="expected a tau2-bench results object with a `simulations` list (or, in τ²-bench's "
                                       f"dir layout, a `simulations/` folder beside it: there is none at {folder})")
        return
    listed = data.get("tasks")
    tasks = {str(t.get("id")): t for t in (listed if isinstance(listed, list) else []) if isinstance(t, dict)}
    info = data.get("info")
    env = info.get("environment_info") if isinstance(info, dict) else None
    domain = env.get("domain_name") if isinstance(env, dict) else None
    policy = env.get("policy") if isinstance(env, dict) and isinstance(env.get("policy"), str) else None
    by_actions: dict[str, list[str]] = {}
    for tid, t in tasks.items():
        by_actions.setdefault(_actions_key(criteria_actions(t)), []).append(tid)
    relabelled = 0
    notes = Notes(name)
    found = _in_file(name, text, sims, base) if data.get("simulations") is True else _in_folder(folder)
    for i, (where, line, place, sim, error, offset) in enumerate(found):
        if limit is not None and i >= limit:
            break
        if error is not None:
            yield RawRecord(where, line, None if place is None else {"id": place}, error=error)
        else:
            task = tasks.get(str(sim.get("task_id"))) if isinstance(sim, dict) else None
            checked = _checked_task(sim, task, by_actions)
            if checked is not None:
                relabelled += 1
                task = tasks[checked]
            yield RawRecord(where, line, {"index": i, "simulation": sim, "task": task, "domain": domain, "checked_task": checked, "place": place,
                                          "no_tasks": not tasks, "policy": policy, "start": {"file": where, "offset": offset, "line": line}})
    # The commas' warnings, of the simulations read: said when the read ends by itself (`Notes`), not by a look at the first.
    for before, event, at_line in warnings:
        if limit is None or before < limit:
            notes.add(event, at_line)
    notes.say()
    if relabelled and not quieted():  # (a count for the progress bar reads the file too: the run's own read says it)
        log.warning("tau2-bench: simulations scored against the task their own action checks name, not their task_id",
                    file=name, simulations=relabelled)


def _in_file(name: str, text: str, sims: list[Any], base: int) -> Iterator[tuple[str, int, str | None, Any, str | None, int]]:
    """`(file, line, place, simulation, error, byte offset)` of each simulation of a results file's `simulations` list
    (`split_results`); `base` is the byte offset `text` starts at."""
    line, at, byte = 1, 0, base
    starts = LineStarts(name)
    for offset, sim, error in sims:
        line += text.count("\n", at, offset)
        # (The byte offset, for an error to find a message's own line in the file again: `tau2_places`.)
        byte += len(text[at:offset].encode("utf-8", "surrogateescape"))
        at = offset
        # Not `file:line` for a simulation that names no case of its own, when one started on its line before (`LineStarts`).
        place = f"{name}:{line}:{offset - text.rfind(chr(10), 0, offset)}" if starts.see(line) else None
        yield name, line, place, sim, error, byte


def _in_folder(folder: Path) -> Iterator[tuple[str, int, str | None, Any, str | None, int]]:
    """`(file, 1, None, simulation, error, byte offset)` of each `*.json` of a dir-layout `simulations/` folder, by file name as upstream
    loads them; a file that cannot be read or is not one JSON object is its own error, and the others are read."""
    for f in sorted(folder.glob("*.json")):
        try:
            raw = f.read_bytes()
            if not raw.removeprefix(BOM).strip():  # (not JSON's "Expecting value at line 1 column 1")
                yield str(f), 1, None, None, "cannot read a tau2-bench simulation file: the file is empty", 0
                continue
            sim = json.loads(raw[len(BOM):] if raw.startswith(BOM) else raw)
        except (OSError, *JSON_ERRORS) as exc:
            yield str(f), 1, None, None, f"cannot read a tau2-bench simulation file: {exc if isinstance(exc, OSError) else json_error(exc, 'file')}", 0
            continue
        if not isinstance(sim, dict):
            yield str(f), 1, None, None, f"expected a tau2-bench simulation object, got {json_type(sim)}", 0
        else:
            yield str(f), 1, None, sim, None, len(BOM) if raw.startswith(BOM) else 0


def _actions_key(actions: Any) -> str:
    return json.dumps(actions or [], sort_keys=True, default=str)


def _checked_task(sim: Any, task: dict[str, Any] | None, by_actions: dict[str, list[str]]) -> str | None:
    """The id of the task a simulation's `reward_info.action_checks` checked, when that is not its `task_id`'s task.

    τ²-bench writes the actions it checked into each simulation's reward; a
    file whose simulations were renumbered afterwards (a leaderboard
    submission gives every simulation its list position as `task_id`) names
    the wrong task, and its expectations would be another task's. `None`
    when the checks agree with the named task, are absent or empty, or match
    no single task of the file.
    """
    reward = sim.get("reward_info") if isinstance(sim, dict) else None
    checks = reward.get("action_checks") if isinstance(reward, dict) else None
    if not isinstance(checks, list) or not checks:
        return None
    key = _actions_key([c.get("action") if isinstance(c, dict) else None for c in checks])
    if task is not None and key == _actions_key(criteria_actions(task)):
        return None
    found = by_actions.get(key, [])
    return found[0] if len(found) == 1 else None


def _never_ran(sim: dict[str, Any], where: str) -> str:
    """Why a simulation τ²-bench ended with `infrastructure_error` is no case: what its `info.error` says, and what upstream does with it."""
    info = sim.get("info")
    said = info.get("error") if isinstance(info, dict) else None
    why = f" ({str(said)[:200]})" if said else ""
    return (f"{where}.termination_reason: infrastructure_error: the simulation never ran{why}; τ²-bench leaves such a "
            "simulation out of every metric (its average reward and pass^k count only the others) and runs it again when "
            "the run is resumed, so it is no case to score")


def adapt(raw: Any, ctx: Any = None) -> Case:
    """Turn one simulation record (from `read_results`) into a `Case`; see the module docstring.

    Raises `AdapterError` naming the field (`simulations[i].…`) when the
    simulation lacks `task_id` or `messages`, its task is not in the file,
    a tool call has no name, or a part of it or of its task's actions has a
    JSON type the adapter cannot read (`tau2_shapes.shape_problem`).
    """
    from tracejudge.stages.extract.errors import AdapterError

    index, sim, task = raw.get("index", 0), raw.get("simulation"), raw.get("task")
    where = f"simulations[{index}]"
    if not isinstance(sim, dict):
        raise AdapterError(f"{where}: expected a simulation object, got {json_type(sim)}", field=where, case_id=raw.get("place"))
    task_id = sim.get("task_id")
    if task_id is None or not isinstance(task_id, (str, int)) or isinstance(task_id, bool):  # (not Python's `{'a': 1}` as a case id)
        why = "required field is missing" if "task_id" not in sim else f"expected a task id (text or a whole number), got {json_type(task_id)}"
        raise AdapterError(f"{where}.task_id: {why}", field=f"{where}.task_id", case_id=raw.get("place"))
    trial = sim.get("trial", 0)
    if not isinstance(trial, int) or isinstance(trial, bool) or trial < 0:
        raise AdapterError(f"{where}.trial: expected a non-negative integer, got {trial!r}", field=f"{where}.trial", case_id=f"{task_id}-?")
    case_id = f"{task_id}-{trial}"
    if sim.get("termination_reason") == INFRASTRUCTURE_ERROR:
        # Not under the case id: first in the file it took the id from a run of the same trial, then refused as its duplicate.
        raise AdapterError(_never_ran(sim, where), field=f"{where}.termination_reason", case_id=f"{case_id}@{INFRASTRUCTURE_ERROR}")
    messages = sim.get("messages")
    if not isinstance(messages, list):
        ticks = sim.get("ticks")
        # A full-duplex (voice) run stores `ticks` (what each side said and called per time slice) in place of messages.
        if isinstance(ticks, list) and messages is None:
            why = (f"{where}.messages: required message list is missing: a full-duplex (voice) simulation ({len(ticks)} ticks), "
                   "whose `ticks` tracejudge does not read")
        elif "messages" in sim:  # (a string or an object there is the wrong type, not a missing list: τ²-bench's is a list)
            why = not_a_list(messages, f"{where}.messages", "messages")
        else:
            why = f"{where}.messages: required message list is missing"
        raise AdapterError(why, field=f"{where}.messages", case_id=case_id)
    if task is None:
        # A file with no `tasks` at all (a submission that kept only its simulations) is said as such, not as a bad id.
        none = " (the file has no `tasks`: a results file holds the tasks its simulations ran)" if raw.get("no_tasks") else ""
        raise AdapterError(f"{where}.task_id: task {task_id!r} is not in the file's tasks{none}", field=f"{where}.task_id", case_id=case_id)

    if (problem := shape_problem(sim, task, where)) is not None:  # (a hand edit's wrong type: named, not Python's error)
        raise AdapterError(f"{problem[0]}: {problem[1]}", field=problem[0], case_id=case_id, line=message_line(raw.get("start"), problem[0]))
    actions = criteria_actions(task)
    expected = None if actions is None else [expected_from_action(a) for a in actions]

    try:
        walked = walk_messages(messages, where, case_id)
    except AdapterError as exc:
        exc.line = message_line(raw.get("start"), exc.field)
        raise

    reward_info = sim.get("reward_info") or {}
    metadata: dict[str, Any] = {
        "task_id": task_id,
        "trial": trial,
        "simulation_id": sim.get("id"),
        "domain": raw.get("domain"),
        "reward": reward_info.get("reward"),
        "termination_reason": sim.get("termination_reason"),
        "action_checks": [
            {"action_id": (c.get("action") or {}).get("action_id"), "action_match": c.get("action_match")}
            for c in reward_info.get("action_checks") or []
        ],
        "user_call_indices": walked.user_calls,
    }
    if raw.get("checked_task") is not None:
        metadata["checked_task_id"] = raw["checked_task"]
    usage = {
        "input_tokens": walked.tokens_in,
        "output_tokens": walked.tokens_out,
        "requests": walked.requests,
        "cost_usd": sim.get("agent_cost"),
        "latency_s": sim.get("duration"),
    }
    trace = {"steps": walked.steps, "user_messages": walked.users, "output": walked.output, "usage": usage}
    if prompts := distinct_prompts([(None, first_system(messages) or raw.get("policy"))]):
        trace["system_prompts"] = prompts
    body = {
        "id": case_id,
        "input": walked.users[0]["content"] if walked.users else None,
        "expected_tool_calls": expected,
        "tags": ["tau2-bench"] + ([raw["domain"]] if raw.get("domain") else []),
        "metadata": metadata,
        "trace": trace,
    }
    return Case.model_validate(mended_case(body, f"simulation {case_id}", fmt="tau2-bench", sources=({where: sim},)))


register_format(Format("tau2-bench", read=lambda ds: read_results(ds.path, ds.limit), adapt=adapt, options=NoOptions, whole_file=True,
                       reads_dirs=True, beside="simulations", folder_file=RESULTS,  # τ²-bench's dir layout: both in one folder
                       count=lambda ds: count_quietly(lambda: read_results(ds.path, ds.limit))))
