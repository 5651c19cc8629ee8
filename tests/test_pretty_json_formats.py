"""Real framework recordings written as JSON over several lines (pretty-printed) read as their one-line form does.

MLflow's `Trace.to_json(pretty=True)`, `json.dump(export, f, indent=2)` of an OpenAI Agents SDK trace, an OTLP export
made readable: each was read a line at a time, hundreds of "invalid JSON" records (356 for one MLflow trace). Each
recording here (`tests/data/frameworks`, one JSON document a line) is written pretty-printed and must give the cases
its JSON Lines file gives, field for field, at the line each document starts on.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from framework_truth import extract, recordings
from tracejudge.core.records import Case
from tracejudge.stages.load import read_jsonl

# (format, recordings folder, the end of the names of its exports in that format)
SOURCES = [
    ("mlflow", "mlflow", ".mlflow.jsonl"),
    ("openai-agents", "openai-agents-export", ".jsonl"),  # `{trace, spans}` per trace, and the SDK's `{data: [...]}` batches
    ("otel", "mlflow", ".otlp.jsonl"),  # two OTLP posts per run
    ("otel", "openinference-openai", ".jsonl"),
    ("otel", "openinference-langchain", ".jsonl"),
    ("langfuse", "langfuse-api", ".json"),
]
IDS = [f"{fmt}-{folder}" for fmt, folder, _ in SOURCES]


def pretty(line: str, fmt: str) -> str:
    """One recorded line written over several lines as its framework (or a user's `json.dump(..., indent=2)`) writes it."""
    if fmt == "mlflow":
        try:
            from mlflow.entities import Trace
        except ImportError:
            pass
        else:
            return Trace.from_json(line).to_json(pretty=True)
    return json.dumps(json.loads(line), indent=2)


def lines_of(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def same(got: list[Any], want: list[Any], paths: tuple[Path, Path]) -> None:
    """`got` (from the pretty file) and `want` (from the recording) are the same cases, the file names aside; an error
    of the recording itself (two recordings of one conversation key in one file) must be the same error."""
    def text(results: list[Any], path: Path) -> list[str]:
        return [(r.model_dump_json() if isinstance(r, Case) else f"{r[0]} {r[1].message} {r[1].field}").replace(str(path), "FILE")
                for r in results]

    assert any(isinstance(r, Case) for r in want)
    assert text(got, paths[0]) == text(want, paths[1])


def exports_of(folder: str, suffix: str) -> list[Path]:
    """The recordings' exports, one of each run (not the SDK's batches of the same traces beside them, nor Langfuse's v2 bodies)."""
    return [export for export, _ in recordings(folder, suffix) if ".batch." not in export.name and ".v2." not in export.name]


@pytest.mark.parametrize(("fmt", "folder", "suffix"), SOURCES, ids=IDS)
def test_each_recording_pretty_printed_gives_the_cases_of_its_json_lines(tmp_path: Path, fmt: str, folder: str, suffix: str) -> None:
    found = recordings(folder, suffix)
    assert found, f"no recording in {folder}"
    for export, _ in found:
        # (in a `.jsonl` file: format `otel` reads any other file as one JSON document, a `.jsonl` file a line at a time)
        path = tmp_path / export.name
        path.write_text("".join(pretty(line, fmt) + "\n" for line in lines_of(export)), encoding="utf-8")
        got, want = extract(path, fmt), extract(export, fmt)
        assert len(got) == 1 and isinstance(got[0], Case)
        same(got, want, (path, export))


@pytest.mark.parametrize(("fmt", "folder", "suffix"), SOURCES, ids=IDS)
def test_every_recording_of_a_framework_pretty_printed_one_after_another_reads_as_the_same_lines(
        tmp_path: Path, fmt: str, folder: str, suffix: str) -> None:
    lines = [line for export in exports_of(folder, suffix) for line in lines_of(export)]
    jsonl = tmp_path / "all.jsonl"
    jsonl.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    documents = [pretty(line, fmt) for line in lines]
    starts = [1]
    for doc in documents[:-1]:
        starts.append(starts[-1] + doc.count("\n") + 1)
    for name in ("all.pretty.jsonl", "all.pretty.json"):
        path = tmp_path / name
        path.write_text("".join(doc + "\n" for doc in documents), encoding="utf-8")
        same(extract(path, fmt), extract(jsonl, fmt), (path, jsonl))
        if fmt != "otel":
            assert [r.line for r in read_jsonl(path)] == starts  # each record at the line its document starts on


@pytest.mark.parametrize("fmt", ["mlflow", "openai-agents"])
def test_an_array_of_recordings_written_with_an_indent_reads_as_its_records(tmp_path: Path, fmt: str) -> None:
    folder, suffix = {"mlflow": ("mlflow", ".mlflow.jsonl"), "openai-agents": ("openai-agents-export", ".jsonl")}[fmt]
    lines = [line for export in exports_of(folder, suffix) for line in lines_of(export)]
    assert len(lines) >= 5
    jsonl = tmp_path / "all.jsonl"
    jsonl.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    path = tmp_path / "all.json"
    path.write_text(json.dumps([json.loads(line) for line in lines], indent=2), encoding="utf-8")
    same(extract(path, fmt), extract(jsonl, fmt), (path, jsonl))


def test_a_field_error_in_a_pretty_printed_document_names_the_file_the_line_it_starts_on_and_the_field(tmp_path: Path) -> None:
    good, bad = (json.loads(lines_of(export)[0]) for export, _ in recordings("mlflow", ".mlflow.jsonl")[:2])
    bad["data"]["spans"] = "lost"
    first = json.dumps(good, indent=2)
    path = tmp_path / "traces.json"
    path.write_text(first + "\n" + json.dumps(bad, indent=2) + "\n", encoding="utf-8")
    got = extract(path, "mlflow", group_by="trace")
    assert isinstance(got[0], Case) and len(got) == 2
    _, error = got[1]
    assert (error.file, error.line, error.field) == (str(path), first.count("\n") + 2, "data.spans")


def test_native_cases_pretty_printed_as_an_array_or_one_by_one_are_each_a_case_at_their_line(tmp_path: Path) -> None:
    cases = [{"id": f"c{i}", "input": f"question {i}", "expected_tool_calls": [{"name": "lookup"}],
              "trace": {"steps": [{"tool_calls": [{"name": "lookup", "arguments": {"n": i}}]}], "output": "done"}} for i in range(4)]
    array = tmp_path / "cases.json"
    array.write_text(json.dumps(cases, indent=2), encoding="utf-8")
    objects = tmp_path / "cases.jsonl"
    objects.write_text("".join(json.dumps(c, indent=4) + "\n" for c in cases), encoding="utf-8")
    for path in (array, objects):
        got = extract(path, "native")
        assert [c.id for c in got] == ["c0", "c1", "c2", "c3"], got
        text = path.read_text().splitlines()
        starts = [r.line for r in read_jsonl(path)]
        assert [text[n - 1].strip() for n in starts] == ["{"] * 4  # each at the line its `{` is on
    from tracejudge.stages.load import count_jsonl

    assert (count_jsonl(array), count_jsonl(array, limit=2), count_jsonl(objects)) == (4, 2, 4)  # the progress bar's total


def test_a_smolagents_step_list_dumped_with_an_indent_is_one_run(tmp_path: Path) -> None:
    # `json.dump(agent.memory.get_full_steps(), f, indent=2)`: the list is the record (one run), not a record a step.
    for export, _ in recordings("smolagents-memory", ".jsonl"):
        for n, line in enumerate(lines_of(export)):
            record = json.loads(line)
            steps = record["steps"] if isinstance(record, dict) else record
            flat, indented = (tmp_path / kind / f"{export.stem}-{n}.json" for kind in ("flat", "indented"))  # (one name: the default id is it)
            flat.parent.mkdir(exist_ok=True)
            indented.parent.mkdir(exist_ok=True)
            flat.write_text(json.dumps(steps) + "\n")
            indented.write_text(json.dumps(steps, indent=2))
            want = extract(flat, "smolagents")
            assert len(want) == 1 and isinstance(want[0], Case)
            same(extract(indented, "smolagents"), want, (indented, flat))
