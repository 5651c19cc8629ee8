"""A turn's agents (`metadata.otel.turns[].agents`) of a smolagents run: the agents' own names, under
openinference-instrumentation-smolagents and `mlflow.smolagents.autolog()` alike.

smolagents names an agent by its `name`: `None` for a top-level agent left unnamed, a managed agent's always. Both
instrumentations name an agent's run after a method: OpenInference `<name or class>.run` (`ToolCallingAgent.run`,
`manager.run`), MLflow `<class>.run` with the agent's `name` recorded beside it. Those spans were listed as agents
(`ToolCallingAgent.run`, `CodeAgent.run`, OpenInference's `manager.run` where MLflow read `manager`), and a managed
agent, read as its manager's call, not at all. `smolagents-managed-calls/tool-named-manager` (recorded by
`tests/frameworks/record_smolagents_managed_calls.py`) is a named manager's run under both.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from framework_truth import turn_agents

DATA = Path(__file__).parent / "data"
MANAGED = DATA / "smolagents-managed-calls"
# how each recorder names a reading of one run: OpenInference's OTLP, MLflow's `Trace.to_json()` and its OTLP dual export
READINGS = [("oi", "otel"), ("mlflow", "mlflow"), ("otlp", "otel")]


def _recordings() -> list[tuple[Path, str]]:
    """Every recording of a smolagents run in `tests/data` a span reader reads, with its format (a run's memory,
    `*.memory.jsonl`, is format `smolagents`: no spans, no turns)."""
    out = []
    for path in sorted(DATA.rglob("*.jsonl")):
        text = path.read_text(errors="replace")
        if "smolagents" not in text or path.name.endswith(".memory.jsonl"):
            continue
        if '"resourceSpans"' in text:
            out.append((path, "otel"))
        elif '"trace_location"' in text or '"request_time"' in text:
            out.append((path, "mlflow"))
    return out


RECORDINGS = _recordings()


def test_the_recordings_are_all_found() -> None:
    # (a pattern that stopped matching would test nothing)
    assert len(RECORDINGS) >= 100
    assert {fmt for _, fmt in RECORDINGS} == {"otel", "mlflow"}


@pytest.mark.parametrize(("path", "fmt"), RECORDINGS, ids=[str(p.relative_to(DATA)) for p, _ in RECORDINGS])
def test_no_turn_lists_a_run_method_as_an_agent(path: Path, fmt: str) -> None:
    """No agent is a span's method name (`ToolCallingAgent.run`, `CodeAgent.run`, `manager.run`): every unnamed agent in
    these recordings lists nothing."""
    listed = {a for case in turn_agents(path, fmt) for turn in case for a in turn}
    assert not {a for a in listed if a.endswith(".run") or a in ("ToolCallingAgent", "CodeAgent", "MultiStepAgent")}, listed


@pytest.mark.parametrize(("ext", "fmt"), READINGS)
@pytest.mark.parametrize("name", ["tool-two-managed", "tool-managed-twice", "code-two-managed", "tool-named-manager"])
def test_a_turn_lists_the_managed_agents_and_a_named_manager(name: str, ext: str, fmt: str) -> None:
    """A manager's turn lists the agents that ran by their names, the same under either instrumentation: its managed
    agents (each read as the manager's call that ran it), and the manager when it was named (`tool-named-manager`)."""
    truth = json.loads((MANAGED / f"{name}.{'oi' if ext == 'oi' else 'mlflow'}.truth.json").read_text())
    want = sorted(truth.get("agents") or {m["name"] for m in truth["managed"]})
    assert turn_agents(MANAGED / f"{name}.{ext}.jsonl", fmt) == [[want]]


def test_a_named_managers_turn_reads_alike_under_both() -> None:
    truth = json.loads((MANAGED / "tool-named-manager.oi.truth.json").read_text())
    assert truth["agents"] == ["manager", "researcher", "writer"]
    got = {ext: turn_agents(MANAGED / f"tool-named-manager.{ext}.jsonl", fmt) for ext, fmt in READINGS}
    assert got == {ext: [[["manager", "researcher", "writer"]]] for ext, _ in READINGS}
