"""What the tests of smolagents runs recorded under `mlflow.smolagents.autolog()` share (`tests/data/mlflow-smolagents`,
`tests/data/mlflow-smolagents-no-args`): each scenario's `<name>.truth.json` and its two recordings' readings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from helpers import extract_path
from tracejudge.core.records import Case

FORMATS = [("mlflow", "mlflow"), ("otel", "otlp")]  # (format, recording: `<name>.<ext>.jsonl`)


class MlflowSmolagents:
    """The recordings of the folder `tests/data/<folder>`."""

    def __init__(self, folder: str) -> None:
        self.data = Path(__file__).parent / "data" / folder

    def truth(self, name: str) -> dict[str, Any]:
        return json.loads((self.data / f"{name}.truth.json").read_text())

    def read(self, name: str, fmt: str, ext: str) -> list[Case]:
        """The cases `<name>.<ext>.jsonl` reads as under format `fmt` (all of them cases)."""
        cases = extract_path(self.data / f"{name}.{ext}.jsonl", fmt)
        assert all(isinstance(c, Case) for c in cases), cases
        return cases


def managed_task(name: str, task: str) -> str:
    """The task smolagents gives managed agent `name` when its manager's model passes `task`: `MultiStepAgent.__call__`
    fills its default `managed_agent.task` template (the same in every agent's prompts), as smolagents fills it."""
    from importlib.resources import files

    import yaml
    from smolagents.agents import populate_template

    template = yaml.safe_load(files("smolagents.prompts").joinpath("code_agent.yaml").read_text())["managed_agent"]["task"]
    return populate_template(template, variables={"name": name, "task": task})
