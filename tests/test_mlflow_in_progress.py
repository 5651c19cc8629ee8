"""Format `mlflow` on a file listing a trace MLflow still held as running (`IN_PROGRESS`), in `tests/data/mlflow-in-progress/`.

Recorded by `tests/frameworks/record_mlflow_in_progress.py`: a LangGraph thread under `mlflow.langchain.autolog()`, listed
by `search_traces` while its second invoke waited on its model: the first trace `OK` (session `thread-1`), the second
`IN_PROGRESS`, its root span missing, its `tools` node's input LangGraph's `Send` payload at the top. Before, format
`mlflow` read that half trace silently as a case, its user turns "And Oslo?", then "tool_call_with_context" (the payload's
`__type`), where format `mlflow-server` skips such a trace with a warning. Now the file reads the same way: the trace
in progress is no case, one warning names its file, line and id; and LangGraph's node input is nobody's message.

When the libraries are installed, the scenario is also re-recorded now into a temporary folder and read the same way.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path, recorded, start_recordings
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract.first_records import no_records

DATA = Path(__file__).parent / "data" / "mlflow-in-progress"
RECORD = Path(__file__).parent / "frameworks" / "record_mlflow_in_progress.py"
NEEDS = ("mlflow", "langgraph", "langchain_openai")


def truth(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "lg-in-progress.truth.json").read_text())


def check(path: Path, want: dict[str, Any], options: dict[str, Any] | None = None) -> None:
    """`path` reads as the finished turn alone: its question, call and answer; no case holds the trace in progress."""
    cases = extract_path(path, "mlflow", options)
    assert all(isinstance(c, Case) for c in cases), cases
    [case] = cases
    assert [m.content for m in case.trace.user_messages] == want["user_turns"]
    assert [[c.name, c.arguments, c.result] for c in case.trace.tool_calls()] == want["calls"]
    assert case.trace.output == want["answers"][-1]
    assert want["in_progress"] not in json.dumps(case.metadata)


@pytest.mark.parametrize("group_by", ["conversation", "trace"])
def test_a_trace_still_in_progress_is_skipped_with_one_warning(group_by: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "lg-in-progress.jsonl"  # (a file of its own: the warning is said once per line in a process)
    shutil.copy(DATA / path.name, path)
    want = truth(DATA)
    with caplog.at_level(logging.WARNING):
        check(path, want, {"group_by": group_by})
        check(path, want, {"group_by": group_by})
    said = [r.getMessage() for r in caplog.records if "still in progress" in r.getMessage()]
    assert len(said) == 1, said
    assert f"{path}:2: trace {want['in_progress']} is still in progress" in said[0]
    assert "skipped" in said[0] and "mlflow-server" in said[0]


def test_a_file_of_traces_in_progress_only_is_refused_saying_why(tmp_path: Path) -> None:
    path = tmp_path / "only.jsonl"
    path.write_text((DATA / "lg-in-progress.jsonl").read_text().splitlines()[1] + "\n")
    assert extract_path(path, "mlflow") == []
    message = no_records(registry.format_for("mlflow"), DatasetConfig(path=path, format="mlflow"))
    assert "reads no record from it: its record was left out (a trace still in progress)" in message


def test_langgraphs_send_payload_is_no_user_turn(tmp_path: Path) -> None:
    """The same half trace from a store that records no state (the line's `state` rewritten): read as a case, its
    `tools` node at the top, the `Send` payload's `__type` is no user message; the question is."""
    line = json.loads((DATA / "lg-in-progress.jsonl").read_text().splitlines()[1])
    assert any('"__type": "tool_call_with_context"' in str(s["attributes"].get("mlflow.spanInputs")) for s in line["data"]["spans"])
    line["info"]["state"] = "OK"
    path = tmp_path / "stateless.jsonl"
    path.write_text(json.dumps(line) + "\n")
    [case] = extract_path(path, "mlflow", {"group_by": "trace"})
    assert isinstance(case, Case), case
    assert [m.content for m in case.trace.user_messages] == ["And Oslo?"]
    assert [c.name for c in case.trace.tool_calls()] == ["get_weather"]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return start_recordings(tmp_path_factory.mktemp("mlflow-in-progress-live"), RECORD, ["lg-in-progress"], NEEDS)


def test_live_recording_reads_the_same(live: Any) -> None:
    out = recorded(live, "lg-in-progress", NEEDS)
    want = truth(out)
    assert {k: v for k, v in want.items() if k != "in_progress"} == {k: v for k, v in truth(DATA).items() if k != "in_progress"}
    check(out / "lg-in-progress.jsonl", want)
