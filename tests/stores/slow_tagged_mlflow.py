"""A traced agent run whose tag reaches MLflow only when the trace ends, still running until the test lets it finish.

`python slow_tagged_mlflow.py TRACKING_URI EXPERIMENT RELEASE_FILE`: one trace that ends at once, then one that tags
itself `env=prod` (`mlflow.update_current_trace`, sent with the trace's end) and waits for RELEASE_FILE to exist before
it ends. Prints `fast ID`, `running`, then `slow ID`, a line each.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path


def main(uri: str, experiment: str, release: Path) -> None:
    os.environ.update({"MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false", "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"})
    import mlflow
    from mlflow.entities import SpanType

    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment(experiment)

    @mlflow.trace(name="get_weather", span_type=SpanType.TOOL)
    def get_weather(city: str) -> str:
        return "sunny"

    @mlflow.trace(name="agent", span_type=SpanType.AGENT)
    def agent(question: str, wait: bool) -> str:
        mlflow.update_current_trace(tags={"env": "prod"})
        get_weather("Paris")
        if wait:
            print("running", flush=True)
            while not release.exists():  # the test's go-ahead: the run lasts as long as the test needs
                time.sleep(0.05)
        return "It is sunny."

    agent("Weather in Paris?", False)
    print("fast", mlflow.get_last_active_trace_id(), flush=True)
    agent("Weather in Oslo?", True)
    print("slow", mlflow.get_last_active_trace_id(), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
