"""What the tests of recorded inspect-ai logs share (`tests/data/inspect-failures`, `tests/data/inspect-stops`, each written
by its `tests/frameworks/record_inspect_*.py` with a `truth.json`: task -> sample id -> what the sample did): the
recorded samples' readings and documents, and the reading of a one-sample log a test makes up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from framework_truth import extract
from tracejudge.core.records import Case, ToolCall


class InspectLogs:
    """The logs of the folder `tests/data/<folder>`: `truth` (its `truth.json`) and `samples`, every `(task, sample id)` it
    holds, in order."""

    def __init__(self, folder: str) -> None:
        self.data = Path(__file__).parent / "data" / folder
        self.truth: dict[str, dict[str, Any]] = json.loads((self.data / "truth.json").read_text())
        self.samples = [(task, sid) for task in sorted(self.truth) for sid in sorted(self.truth[task])]

    def reading(self, task: str, sid: str) -> Case:
        """The case sample `sid` of `<task>.eval` reads as (the log reads as one case for each sample of its truth)."""
        cases = {c.id: c for c in extract(self.data / f"{task}.eval", "inspect") if isinstance(c, Case)}
        assert set(cases) == set(self.truth[task]), cases
        return cases[sid]

    def sample_of(self, task: str, sid: str) -> dict[str, Any]:
        """The recorded sample as inspect wrote it (read through the format's own reader)."""
        from tracejudge.core.config import DatasetConfig
        from tracejudge.stages.extract.inspect_logs import read

        (raw,) = [r for r in read(DatasetConfig(path=self.data / f"{task}.eval", format="inspect")) if r.file.endswith(f"/samples/{sid}_epoch_1.json")]
        return json.loads(raw.payload.data)


def assert_replies_are_steps(case: Case, want: dict[str, Any]) -> None:
    """Each reply of the sample (`want["replies"]`: its text and its calls' ids) is a step of `case`, in order: its thought
    when it made calls, else its output. (The asserts name what they compared: pytest rewrites the asserts of test modules
    only.)"""
    assert case.trace is not None, case
    steps = [(s.thought if s.tool_calls else s.output, [c.id for c in s.tool_calls]) for s in case.trace.steps]
    replies = [(r["text"], r["calls"]) for r in want["replies"]]
    assert steps == replies, (steps, replies)


def calls_as_listed(case: Case, want: dict[str, Any]) -> list[tuple[dict[str, Any], ToolCall]]:
    """`(call of the truth, call read)` for each call the sample's truth lists (`want["calls"]`), after checking that `case`
    reads those calls, in that order, with their names and arguments."""
    assert case.trace is not None, case
    got = {c.id: c for c in case.trace.tool_calls()}
    ids = [c["id"] for c in want["calls"]]
    assert list(got) == ids, (list(got), ids)
    for call in want["calls"]:
        c = got[call["id"]]
        assert (c.name, c.arguments) == (call["name"], call["arguments"]), (c.id, c.name, c.arguments, call)
    return [(call, got[call["id"]]) for call in want["calls"]]


def read_one_sample_log(tmp_path: Path, sample: dict[str, Any]) -> Case:
    """The one case a JSON log (`tmp_path/t.json`: task `t`, model `m`, one epoch) holding only `sample` reads as."""
    log = tmp_path / "t.json"
    log.write_text(json.dumps({"version": 2, "status": "success", "eval": {"task": "t", "model": "m", "config": {"epochs": 1}}, "samples": [sample]}))
    (case,) = extract(log, "inspect")
    return case
