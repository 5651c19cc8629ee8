"""Format `tau-bench-tasks`: τ-bench task definitions as cases for a live target.

The dataset `path` is a τ-bench tasks file (a JSON array of
`{task_index, user_id, instruction, actions, outputs, annotator}`, e.g.
`tasks/tasks_airline_test.json`, or the same tasks one per line:
`tau_bench_files`). Each task becomes one case with no trace
(a live target produces it, so a config without `target:` is refused
when it loads):

- `id` is the `task_index` (its position when absent), as a string;
- `input` is the `instruction` (what τ-bench's user simulator is told);
- `expected_tool_calls` are the `actions` (`{name, kwargs}` →
  `{name, arguments}`, in order), `[]` for a task whose right outcome is
  no change; no `actions` at all, an action without a text `name` or an
  object `kwargs`, `outputs` that are no list of texts, or a `user_id`
  that is no text, is the task's `invalid_input` naming the field, as
  upstream's `Task` refuses it;
- `metadata` keeps `task_id`, `user_id`, `annotator` and the required
  `outputs` strings; `tags` is `["tau-bench"]`.
"""

from __future__ import annotations

from typing import Any

from tracejudge.stages.extract.tau_bench import nameless
from tracejudge.core.records import Case
from tracejudge.core.registry import Format, NoOptions, register_format
from tracejudge.stages.extract.tau_bench_files import TASK_KEY, read_records
from tracejudge.stages.load.framing import count_quietly

__all__ = ["adapt", "unnamed"]


unnamed = nameless("task", "task_index")


def adapt(raw: Any, ctx: Any = None) -> Case:
    """Turn one τ-bench task into a `Case` (see the module docstring).

    Raises `AdapterError` naming the field for a task that is not an object,
    has no `instruction`, or whose `actions` or `outputs` upstream's `Task`
    refuses (`tau_bench_shapes.task_problem`: `actions[0].kwargs`).
    """
    from tracejudge.stages.extract.errors import AdapterError
    from tracejudge.stages.extract.tau_bench_shapes import task_problem

    if (why := unnamed(raw)) is not None:
        raise AdapterError(why, field="task_index" if isinstance(raw, dict) else None)
    index = raw["task_index"]
    case_id = str(index)
    if not isinstance(raw.get("instruction"), str):
        raise AdapterError("instruction: required text is missing", field="instruction", case_id=case_id)
    if (problem := task_problem(raw, "")) is not None:
        raise AdapterError(f"{problem[0]}: {problem[1]}", field=problem[0], case_id=case_id)
    expected = [{"name": action["name"], "arguments": action["kwargs"]} for action in raw["actions"]]
    metadata = {"task_id": index, "user_id": raw.get("user_id"), "annotator": raw.get("annotator"), "outputs": raw.get("outputs") or []}
    return Case.model_validate(
        {"id": case_id, "input": raw["instruction"], "expected_tool_calls": expected, "tags": ["tau-bench"], "metadata": metadata}
    )


register_format(Format("tau-bench-tasks", read=lambda ds: read_records(ds.path, ds.limit, unnamed=unnamed, key=TASK_KEY), adapt=adapt,
                       options=NoOptions, needs_target=True, whole_file=True,
                       count=lambda ds: count_quietly(lambda: read_records(ds.path, ds.limit, key=TASK_KEY))))
