"""A turn's agents (`metadata.otel.turns[].agents`) of a pydantic-ai run under `mlflow.pydantic_ai.autolog()`: the agents
pydantic-ai's own instrumentation lists for the same run.

`tests/data/mlflow-agents/pydantic-named` and `pydantic-unnamed` (made by
`tests/frameworks/record_mlflow_pydantic_names.py`) hold one run recorded at once by MLflow (`.mlflow.jsonl`, and its
OTLP dual export `.otlp.jsonl`) and by pydantic-ai's own `Instrumentation` (`.pydantic-ai.jsonl`). MLflow names an
agent's run after the method it patched (`Agent.run_sync` around `Agent.run`), which the MLflow reading listed as two
agents; pydantic-ai lists the agent's name, or its default `agent` for an agent without one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from framework_truth import extract
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "mlflow-agents"
MLFLOW = [("mlflow", "mlflow"), ("otel", "otlp")]


def _turn_agents(path: Path, fmt: str) -> list[list[str]]:
    """The turns' agents of the one case `path` read as `fmt` holds."""
    (case,) = extract(path, fmt)
    assert isinstance(case, Case), case
    return [t["agents"] for t in case.metadata["otel"]["turns"]]


@pytest.mark.parametrize("name", ["pydantic-named", "pydantic-unnamed"])
@pytest.mark.parametrize(("fmt", "ext"), MLFLOW)
def test_a_turn_lists_the_agents_pydantic_ai_lists(name: str, fmt: str, ext: str) -> None:
    """The same run, read from MLflow's spans and from pydantic-ai's: the same agents (the unnamed one listed
    `Agent.run, Agent.run_sync`)."""
    truth = json.loads((DATA / f"{name}.truth.json").read_text())
    own = _turn_agents(DATA / f"{name}.pydantic-ai.jsonl", "otel")
    assert own == [[truth["agent_name"] or "agent"]]
    assert _turn_agents(DATA / f"{name}.{ext}.jsonl", fmt) == own


@pytest.mark.parametrize("name", ["pydantic-tools", "pydantic-retry"])
@pytest.mark.parametrize(("fmt", "ext"), MLFLOW)
def test_an_unnamed_agents_run_is_pydantic_ais_agent(name: str, fmt: str, ext: str) -> None:
    """An agent given no name (`Agent(model, instructions=…)`), run by `run_sync`: pydantic-ai's default name, once."""
    assert _turn_agents(DATA / f"{name}.{ext}.jsonl", fmt) == [["agent"]]
