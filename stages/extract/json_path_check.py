"""Did a `json-path` mapping match anything? Checked as the records are read, warned once at the end of the read.

A mistyped path (`tool_calls: steps.*.calsl`) is not an error per record: an
absent key is "no value", so every case silently scored against no calls, and
an `id` path that matches nothing silently named every case `file:line`.
`MappingCheck` follows each mapped field's path over the records the reader
yields (in the run's own process, before extraction) and `report` logs one
warning per field that matched in no record, naming the option, the path and
the nearest path the first record has; and one warning with how many records
fell back to a `file:line` id. A field may legitimately be empty for some
records, so nothing fails. A path whose value is an empty list matched (`gold:
[]` is "no calls expected"); one that only met empty lists to map over
(`steps.*.calls` where every `steps` is `[]`) is said as that, not as a path
that found nothing.

Cost: a record is decoded here only while some mapped field has not matched
yet (usually the first record alone), or, when `id` is mapped, for every
record, to count the fallbacks.
"""

from __future__ import annotations

import json
from typing import Any

from tracejudge.core import suggest
from tracejudge.core.log import get_logger
from tracejudge.stages.extract.json_path_syntax import MISSING, Each, Step, parse_path, walk
from tracejudge.stages.load import JSON_ERRORS

__all__ = ["FIELDS", "MappingCheck"]

log = get_logger("tracejudge.load")

# The case fields a record-level path maps (`Options`); call sub-paths are checked by adapt (a call without a name fails).
FIELDS = ("id", "input", "output", "expected_output", "expected_tool_calls", "expected_passages", "context", "tags",
          "metadata", "tool_calls", "system_prompt")
_MAX_PATHS = 2000  # of the first record, for the nearest-path hint: a huge record costs no more


def _matches(record: Any, steps: tuple[Step, ...], *, empty_list: bool) -> bool:
    try:
        value = walk(record, steps)
    except ValueError:
        return True  # a path into a scalar is adapt's invalid_input, already said per record
    return value is not MISSING and value is not None and (empty_list or value != [])


def _reaches(node: Any, steps: tuple[Step, ...]) -> bool | None:
    """Whether `steps` lead from `node` to a value (an empty list at its end is one: `gold: []` is "no calls
    expected"); None when the path only met empty lists to map over (`steps.*.calls` in a record with `steps: []`),
    where nothing tells a typo from a record without items. Raises `ValueError` as `walk` does."""
    for i, step in enumerate(steps):
        if isinstance(step, Each) and step.pick is None:
            items = walk(node, (step,))  # the list's items that meet the filters, null ones left out
            if items is MISSING:
                return False
            found = [_reaches(item, steps[i + 1:]) for item in items]
            return True if True in found else False if False in found else None
        node = walk(node, (step,))
        if node is MISSING:
            return False
    return node is not None


def _reached(record: Any, steps: tuple[Step, ...]) -> bool | None:
    try:
        return _reaches(record, steps)
    except ValueError:
        return True  # a path into a scalar is adapt's invalid_input, already said per record


def _paths_of(record: Any) -> list[str]:
    """The dotted paths of `record`, list items as `*` (`steps.*.calls`), breadth first, at most `_MAX_PATHS`."""
    out: list[str] = []
    queue: list[tuple[str, Any]] = [("", record)]
    while queue and len(out) < _MAX_PATHS:
        prefix, node = queue.pop(0)
        if isinstance(node, dict):
            items = [(str(k), v) for k, v in node.items()]
        elif isinstance(node, list):
            items = [("*", v) for v in node[:20]]
        else:
            continue
        for key, value in items:
            path = f"{prefix}.{key}" if prefix else key
            if path not in out:
                out.append(path)
            queue.append((path, value))
    return out


class MappingCheck:
    """Which of `options`' mapped fields (a json-path `Options`) matched in the records seen; see the module docstring."""

    def __init__(self, options: Any, source: str) -> None:
        self.source = source
        self.paths = {name: getattr(options, name) for name in FIELDS if getattr(options, name) is not None}
        self.steps = {name: parse_path(path) for name, path in self.paths.items()}
        self.unmatched = set(self.paths) - {"id"}
        self.missed: set[str] = set()  # fields a record lacked, not only held no item for
        self.first: Any = None
        self.records = self.id_fallbacks = 0

    def see(self, line: bytes | str) -> None:
        """Follow the mapped paths over one JSONL line; a line that is not a JSON object is adapt's to report."""
        if not self.unmatched and "id" not in self.steps:
            return
        try:
            record = json.loads(line)
        except JSON_ERRORS:  # not JSON, or nested too deep: adapt's invalid_input
            return
        if not isinstance(record, dict):
            return
        if self.first is None:
            self.first = record
        self.records += 1
        for name in list(self.unmatched):
            reached = _reached(record, self.steps[name])
            if reached:
                self.unmatched.discard(name)
            elif reached is False:
                self.missed.add(name)
        if "id" in self.steps and not _matches(record, self.steps["id"], empty_list=True):
            self.id_fallbacks += 1

    def _nearest(self, path: str) -> str | None:
        near = suggest.closest(path, _paths_of(self.first), n=1) if self.first is not None else []
        return near[0] if near else None

    def report(self) -> None:
        """Log one warning per mapped field that matched in no record, and one for `id` fallbacks."""
        if not self.records:
            return
        for name in sorted(self.unmatched):
            # (A path that met only empty lists matched no key either way: said as it is, not as a path that found nothing.)
            event = ("a json-path mapping matched nothing in any record; the field is empty in every case" if name in self.missed else
                     "a json-path mapping met only empty lists in every record, so nothing it names was found; the field is empty "
                     "in every case")
            log.warning(event,
                        option=f"dataset.options.{name}", path=self.paths[name], records=self.records,
                        file=self.source, nearest_in_first_record=self._nearest(self.paths[name]))
        if self.id_fallbacks:
            log.warning("the json-path id mapping matched nothing in some records; they are named file:line",
                        option="dataset.options.id", path=self.paths["id"], fell_back=self.id_fallbacks,
                        records=self.records, file=self.source,
                        nearest_in_first_record=self._nearest(self.paths["id"]) if self.id_fallbacks == self.records else None)
