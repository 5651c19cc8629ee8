"""Checks that a τ-bench tasks file is one, and is the one of the runs it is given with.

A wrong but plausible file scored quietly: the tools schema file read as tasks gave
"ok" results with nothing compared, and the retail tasks given with airline runs
scored every run against another domain's tasks. The user id is what is compared:
every run embeds its task (`info.task`), and upstream edited the instruction texts
after the runs were recorded, so they differ for most runs of the right file too.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Any

from tracejudge.core.errors import ConfigError
from tracejudge.stages.extract.tau_bench_files import read_records

__all__ = ["TASK_SHAPE", "check_nothing_read", "check_not_packed", "check_runs_match", "check_task_shape", "user_ids"]

TASK_SHAPE = "{task_index, user_id, instruction, actions: [{name, kwargs}], outputs}"

# Runs read before scoring to tell a tasks file of another domain from a few odd runs.
_PEEK = 20


_HEAD = 4096  # bytes looked at to tell a compressed tasks file
_TASK_KEYS = {"user_id", "instruction"}  # a τ-bench task's own keys, which no tools file's element has


def check_not_packed(path: Path) -> None:
    """Raise `ConfigError` naming `dataset.tasks` when the tasks file is compressed or an archive (`encoding.compressed`):
    read as tasks, it was one unreadable "task" and every run "task N is not in the tasks file"."""
    import codecs

    from tracejudge.stages.load.encoding import compressed

    try:
        with open(path, "rb") as fh:
            head = fh.read(_HEAD)
    except OSError:
        return  # (the reader says why it cannot open it)
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)  # (a character cut by the end is no fault)
        return  # text: a file may start with `BZh`
    except UnicodeDecodeError:
        pass
    why = compressed(head)
    if why is not None:
        raise ConfigError(f"dataset.tasks: {path}: {why}")


def check_nothing_read(path: Path, read: int, unreadable: dict[int, str]) -> None:
    """Raise `ConfigError` naming `dataset.tasks` when no task of the file could be read (`read` is 0) and the reader said
    why (`unreadable`: `{position: "file:line: why"}`): a file that is no tasks array is one error, not a "task N is not in
    the tasks file" for every run."""
    if read or not unreadable:
        return
    first = next(iter(unreadable.values()))
    more = f" (and {len(unreadable) - 1} other unreadable record(s))" if len(unreadable) > 1 else ""
    raise ConfigError(f"dataset.tasks: no task of {path} could be read: {first}{more}; a tasks file is a JSON array of {TASK_SHAPE} "
                      f"(or the same tasks one per line)")


def check_task_shape(path: Path, first: Any, line: int) -> None:
    """Raise `ConfigError` when the tasks file's first element is not a τ-bench task: no `actions` list, and not a task
    whose `actions` is wrong (`"actions": null` beside its `user_id` or `instruction`), which only its runs fail
    for (`invalid_input` naming `tasks[task_index=N].actions`), as they do for a later task."""
    if isinstance(first, dict) and (isinstance(first.get("actions"), list) or ("actions" in first and _TASK_KEYS & first.keys())):
        return
    if isinstance(first, dict):
        got = "keys " + ", ".join(map(str, list(first)[:6])) if first else "an empty object"
        hint = " (a tool schema, as in a tools file)" if "function" in first or "parameters" in first else ""
    else:
        got, hint = type(first).__name__, ""
    raise ConfigError(f"dataset.tasks: {path}:{line}: actions: a τ-bench task needs an `actions` list, this element has "
                      f"{got}{hint}; a tasks file is a JSON array of {TASK_SHAPE}")


def user_ids(raw: dict[str, Any], task: dict[str, Any]) -> tuple[str, str] | None:
    """`(the user id of the task embedded in run raw, task's user id)`, or None when either is not recorded."""
    info = raw.get("info")
    embedded = info.get("task") if isinstance(info, dict) else None
    ran = embedded.get("user_id") if isinstance(embedded, dict) else None
    want = task.get("user_id")
    return (ran, want) if isinstance(ran, str) and isinstance(want, str) else None


def check_runs_match(runs: Path, tasks_path: Path, tasks: dict[int, dict[str, Any]]) -> None:
    """Raise `ConfigError` when each of the first runs that can be compared was made for another task than the file's.

    One config error instead of every case `invalid_input`: such a tasks file is of
    another domain (or split), so no run of it can be scored.
    """
    compared, first = 0, None
    records = read_records(runs)
    try:
        for rec in islice(records, _PEEK):
            payload = rec.payload
            if rec.error is not None or not isinstance(payload, dict) or not isinstance(payload.get("task_id"), int):
                continue
            task = tasks.get(payload["task_id"])
            if task is None:
                continue
            pair = user_ids(payload, task)
            if pair is None:
                continue
            if pair[0] == pair[1]:
                return  # one run agrees: the file is the right one, odd runs fail on their own
            compared += 1
            first = first or (rec.line, payload["task_id"], *pair)
    finally:
        records.close()
    if first is not None:
        line, task_id, ran, want = first
        raise ConfigError(f"dataset.tasks: {tasks_path}: not the tasks of these runs: the first {compared} run(s) that name their user "
                          f"were made for another user than the file's task (run at {runs}:{line}: info.task.user_id {ran!r}, "
                          f"task {task_id} of the tasks file: user_id {want!r}); give the tasks file of the runs' domain")
