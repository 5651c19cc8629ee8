"""Load agent traces into a running MLflow tracking server: the plain OpenAI loop under `mlflow.openai.autolog()`.

`python load_mlflow.py TRACKING_URI EXPERIMENT TASK...` runs each task of `tests/frameworks/tasks.py`
against the loopback fake OpenAI server, inside an `@mlflow.trace` AGENT span with TOOL spans, and
prints the trace ids as one JSON list.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frameworks"))

from fake_openai import FakeOpenAI  # noqa: E402
from run_openai_loop import client_for, run_loop  # noqa: E402
from tasks import TASKS, TOOLS  # noqa: E402


def main(uri: str, experiment: str, tasks: list[str]) -> list[str]:
    """Run `tasks` traced into `experiment` at `uri`; returns their trace ids in order."""
    os.environ.update({"MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false", "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"})
    import mlflow
    from mlflow.entities import SpanType

    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment)
    mlflow.openai.autolog()
    fake = FakeOpenAI()
    ids = []
    try:
        for task in tasks:
            tools = {n: mlflow.trace(TOOLS[n], name=n, span_type=SpanType.TOOL) for n in TASKS[task].tools}

            @mlflow.trace(name="agent", span_type=SpanType.AGENT)
            def agent(question: str, task: str = task, tools: dict[str, Any] = tools) -> str:
                return run_loop(client_for(fake), task, tools)[-1]

            agent(TASKS[task].turns[0])
            ids.append(mlflow.get_last_active_trace_id())
    finally:
        fake.close()
    return ids


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2], sys.argv[3:])))
