"""Format `otel` on traces recorded by real agent frameworks' own instrumentation.

Each folder of `tests/data/frameworks/` holds one framework + instrumentation
driven through the same scripted tasks (two calls in sequence, an airline
booking with nested arguments, two parallel calls, a tool that raises, a
two-message conversation) with the ground truth of what the agent did; see
that folder's README for how they were recorded and with which versions.
Extraction must give back, field by field, what the framework recorded.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig
from tracejudge.core.records import Case
from tracejudge.stages.extract import extract_record

FRAMEWORKS = Path(__file__).parent / "data" / "frameworks"

# recording folder -> (file suffix of its OTLP/JSON export, dataset options a user of that framework sets)
OTLP = {
    "openinference-openai": (".jsonl", {"error_prefixes": ["Error:"]}),  # the loop reports a raised tool as "Error: …"
    "openinference-openai-agents": (".jsonl", {}),
    "openinference-langchain": (".jsonl", {}),
    "openinference-smolagents": (".jsonl", {}),
    "traceloop-openai": (".jsonl", {"error_prefixes": ["Error:"]}),
    "traceloop-langchain": (".jsonl", {}),
    "langfuse-otel": (".jsonl", {}),
    "mlflow": (".otlp.jsonl", {}),
}


def _recordings() -> list[tuple[str, str]]:
    out = []
    for folder in OTLP:
        for truth in sorted((FRAMEWORKS / folder).glob("*.truth.json")):
            out.append((folder, truth.name.removesuffix(".truth.json")))
    return out


def extract(path: Path, **options: Any) -> list[Any]:
    """Every case (or `(id, ErrorInfo)`) format `otel` makes of `path`."""
    fmt = registry.format_for("otel")
    ds = DatasetConfig(path=path, format="otel", options=options)
    ctx = fmt.prepare(ds)
    return [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]


def _decoded(value: Any) -> Any:
    """A result compared as data: tools return JSON text that frameworks record once or twice encoded."""
    while isinstance(value, str) and value[:1] in ("[", "{", '"'):
        try:
            value = json.loads(value)
        except ValueError:
            break
    return value


def check_against_truth(case: Any, truth: dict[str, Any]) -> None:
    """Assert `case` holds the recorded input, every user turn, each call (name, arguments, result, failed) and the output."""
    assert isinstance(case, Case), case
    assert case.input == truth["input"]
    assert [m.content for m in case.trace.user_messages] == truth["user_turns"]
    got = [(c.name, c.arguments, _decoded(c.result), c.failed) for c in case.trace.tool_calls()]
    want = [(c["name"], c["arguments"], _decoded(c["result"]), c["error"] is not None) for c in truth["calls"]]
    assert got == want
    assert case.trace.output == truth["output"]


@pytest.mark.parametrize(("folder", "task"), _recordings(), ids=lambda v: v)
def test_recorded_framework_trace_extracts_to_its_truth(folder: str, task: str):
    suffix, options = OTLP[folder]
    truth = json.loads((FRAMEWORKS / folder / f"{task}.truth.json").read_text())
    cases = extract(FRAMEWORKS / folder / f"{task}{suffix}", **options)
    assert len(cases) == 1, [getattr(c, "id", c) for c in cases]
    check_against_truth(cases[0], truth)


def test_every_otlp_recording_is_checked():
    """A folder of recordings that no row of OTLP names would go unchecked."""
    if not FRAMEWORKS.exists():
        pytest.skip("no recordings")
    assert len(_recordings()) >= 5 * len(OTLP) - 2


def _live_cases() -> list[tuple[str, str]]:
    sys.path.insert(0, str(Path(__file__).parent / "frameworks"))
    from live import LIVE_TASKS

    return [(folder, task) for folder in OTLP for task in LIVE_TASKS]


@pytest.mark.parametrize(("folder", "task"), _live_cases(), ids=lambda v: v)
def test_live_framework_trace_extracts_to_its_truth(folder: str, task: str, live_recordings: tuple[Path, dict[str, str]]):
    """The same check on a recording made now by the installed libraries (the `frameworks` extra)."""
    from live import NEEDS, installed

    missing = [m for m in NEEDS[folder] if not installed(m)]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)}")
    out, failures = live_recordings
    assert folder not in failures, failures.get(folder)
    suffix, options = OTLP[folder]
    cases = extract(out / folder / f"{task}{suffix}", **options)
    assert len(cases) == 1, [getattr(c, "id", c) for c in cases]
    check_against_truth(cases[0], json.loads((out / folder / f"{task}.truth.json").read_text()))


@pytest.mark.parametrize("task", ["sequence", "booking", "parallel", "failing", "multiturn"])
def test_smolagents_under_openinference_has_the_steps_of_its_own_memory(task: str) -> None:
    # The request whose only call is `final_answer` was an empty step (no thought, no call, no output) under
    # OpenInference, where smolagents' own memory gives that step the answer as its output.
    def steps(fmt: str, folder: str) -> list[list[tuple[str, list[str], str]]]:
        f = registry.format_for(fmt)
        ds = DatasetConfig(path=FRAMEWORKS / folder / f"{task}.jsonl", format=fmt)
        ctx = f.prepare(ds)
        cases = [extract_record(raw, f, ctx) for raw in f.read(ds)]
        assert all(isinstance(c, Case) for c in cases), cases
        return [[(s.thought or "", [t.name for t in s.tool_calls], s.output or "") for s in c.trace.steps] for c in cases]

    oi, memory = steps("otel", "openinference-smolagents"), steps("smolagents", "smolagents-memory")
    assert oi == memory
    assert all(thought or calls or output for case in oi for thought, calls, output in case)  # no empty step
