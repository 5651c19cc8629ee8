"""Read a framework's recorded export through the real pipeline stages and compare it with its ground truth.

A recording `tests/data/frameworks/<name>/<task>.jsonl` comes with
`<task>.truth.json`: `{"input", "output", "user_turns", "calls": [{"name",
"arguments", "result", "error"}]}` as the framework itself saw the run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record
from tracejudge.stages.extract.common import maybe_json

FRAMEWORKS = Path(__file__).resolve().parent / "data" / "frameworks"


def extract(path: Path, fmt: str, **options: Any) -> list[Any]:
    """Every result of reading `path` as `fmt`: a `Case`, or `(case_id, ErrorInfo)` for an unreadable record."""
    format_ = registry.format_for(fmt)
    ds = DatasetConfig(path=path, format=fmt, options=options)
    ctx = format_.prepare(ds)
    return [extract_record(raw, format_, ctx) for raw in format_.read(ds)]


def only_case(path: Path, fmt: str, **options: Any) -> Case:
    """The one case a recording of one run holds (fails the test otherwise)."""
    results = extract(path, fmt, **options)
    assert len(results) == 1 and isinstance(results[0], Case), results
    return results[0]


def turn_agents(path: Path, fmt: str) -> list[list[list[str]]]:
    """Each case's turns' agents (`metadata.otel.turns[].agents`), as `path` read as `fmt` lists them (fails the test
    when a record does not read)."""
    cases = extract(path, fmt)
    assert cases and all(isinstance(c, Case) for c in cases), cases
    return [[t["agents"] for t in c.metadata["otel"]["turns"]] for c in cases]


def observed(case: Case) -> dict[str, Any]:
    """What the truth files record, as extracted from `case`."""
    assert case.trace is not None
    calls = [{"name": c.name, "arguments": c.arguments, "result": c.result, "error": c.error} for c in case.trace.tool_calls()]
    return {"input": case.input, "output": case.trace.output, "user_turns": [m.content for m in case.trace.user_messages], "calls": calls}


def assert_truth(case: Case, truth: dict[str, Any]) -> None:
    """Field by field: input, user turns, call names in order, each call's arguments/result/error, output."""
    got = observed(case)
    assert got["input"] == truth["input"]
    if "user_turns" in truth:
        assert got["user_turns"] == truth["user_turns"]
    assert [c["name"] for c in got["calls"]] == [c["name"] for c in truth["calls"]]
    for i, (have, want) in enumerate(zip(got["calls"], truth["calls"])):
        if "arguments" in want:
            assert have["arguments"] == want["arguments"], (i, "arguments", have["arguments"], want["arguments"])
        if "result" in want:
            # JSON text and the value it encodes are one result: frameworks differ in which they keep.
            same = have["result"] == want["result"] or (isinstance(want["result"], str) and maybe_json(want["result"]) == have["result"])
            assert same, (i, "result", have["result"], want["result"])
        if "error" in want:
            # A truth may keep only the error's message where the format adds its type or details ("ValueError: message").
            same = have["error"] == want["error"] or (want["error"] is not None and want["error"] in str(have["error"]))
            assert same, (i, "error", have["error"], want["error"])
    assert got["output"] == truth["output"]


def recording_id(item: tuple[Path, dict[str, Any]]) -> str:
    """A test id for a recording: its file name without `.jsonl`."""
    return item[0].name.removesuffix(".jsonl")


def recordings(name: str, suffix: str = "") -> list[tuple[Path, dict[str, Any]]]:
    """`(export, truth)` of every recording in framework folder `name` (empty when not recorded).

    A task's truth `<task>.truth.json` serves each of its exports (`<task>.jsonl`, `<task>.batch.jsonl`, ...);
    `suffix` keeps only the exports whose name ends so (`.mlflow.jsonl` beside the same run's `.otlp.jsonl`).
    """
    folder = FRAMEWORKS / name
    out = []
    for truth in sorted(folder.glob("*.truth.json")) if folder.is_dir() else []:
        task = truth.name.removesuffix(".truth.json")
        for data in sorted(p for p in folder.iterdir() if p.name.startswith(task + ".") and p.name.endswith(suffix) and not p.name.endswith(".truth.json")):
            out.append((data, json.loads(truth.read_text())))
    return out
