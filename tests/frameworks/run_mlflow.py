"""The plain OpenAI loop under `mlflow.openai.autolog()` with `@mlflow.trace` agent and tool spans.

MLflow writes each trace to a SQLite tracking store in a temporary directory (read back with
`mlflow.get_trace(...).to_json()`) and, through its dual export, the same spans over OTLP/HTTP to
the fake server (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` + `MLFLOW_TRACE_ENABLE_OTLP_DUAL_EXPORT`).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from common import write_jsonl, write_truth
from fake_openai import FakeOpenAI
from run_openai_loop import ERROR_RESULT, client_for, loop_truth, run_loop
from tasks import TASKS, TOOLS, selected

# Run context MLflow stamps on every trace; replaced so the recordings do not carry this checkout's state.
_CONTEXT = {"mlflow.source.git.commit": "0" * 40, "mlflow.source.git.branch": "main", "mlflow.source.git.repoURL": "", "mlflow.user": "user"}


def _configure(fake: FakeOpenAI, store: str, autolog: str = "openai", experiment: str = "framework-recordings") -> Any:
    """MLflow with a SQLite store in `store`, OTLP dual export to `fake`, `experiment` active and `mlflow.<autolog>.autolog()`
    on; returns the `mlflow` module. Environment first: MLflow reads the OTLP settings when it builds its tracer provider."""
    os.environ.update({
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{fake.url}/v1/traces",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
        "MLFLOW_TRACE_ENABLE_OTLP_DUAL_EXPORT": "true",
        "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false",
        "MLFLOW_DISABLE_TELEMETRY": "true",
        "DO_NOT_TRACK": "true",
    })
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{store}/mlflow.db")
    mlflow.set_experiment(experiment_id=mlflow.create_experiment(experiment, artifact_location=f"{store}/artifacts"))
    getattr(mlflow, autolog).autolog()
    return mlflow


@contextmanager
def langchain_recording(fake: FakeOpenAI, out: Path, name: str) -> Iterator[None]:
    """`mlflow.langchain.autolog()` on (`_configure`: a SQLite store in a temporary folder, experiment `name`); on leaving, the
    experiment's traces, oldest first, go to `out/<name>.mlflow.jsonl` (`Trace.to_json()`, `_clean`ed) and the OTLP `fake`
    received to `out/<name>.otlp.jsonl`."""
    with tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store, autolog="langchain", experiment=name)
        from mlflow.tracing.provider import provider

        yield
        traces = mlflow.search_traces(return_type="list", order_by=["timestamp_ms ASC"])  # (the active experiment's)
        write_jsonl(out / f"{name}.mlflow.jsonl", [_clean(t.to_json(), store) for t in traces])
        provider.get().force_flush()
        write_jsonl(out / f"{name}.otlp.jsonl", fake.take_otlp())


def _clean(trace_json: str, store: str) -> dict[str, Any]:
    doc = json.loads(trace_json.replace(store, "<tmp>"))
    meta = doc["info"].get("trace_metadata", {})
    meta.update({k: v for k, v in _CONTEXT.items() if k in meta})
    return doc


def record(fake: FakeOpenAI, outdir: Path) -> None:
    """`mlflow`: `<task>.mlflow.jsonl` (Trace.to_json(), one per line) and `<task>.otlp.jsonl` (the same spans as OTLP/JSON)."""
    with tempfile.TemporaryDirectory() as store:
        mlflow = _configure(fake, store)
        from mlflow.entities import SpanType
        from mlflow.tracing.provider import provider

        for task in selected():
            tools = {n: mlflow.trace(TOOLS[n], name=n, span_type=SpanType.TOOL) for n in TASKS[task].tools}

            @mlflow.trace(name="agent", span_type=SpanType.AGENT)
            def agent(question: str, task: str = task, tools: dict[str, Any] = tools) -> str:
                """The loop over every user turn (a conversation is one trace); `question` is the first turn."""
                return run_loop(client_for(fake), task, tools)[-1]

            answer = agent(TASKS[task].turns[0])
            trace = mlflow.get_trace(mlflow.get_last_active_trace_id())
            write_jsonl(outdir / f"{task}.mlflow.jsonl", [_clean(trace.to_json(), store)])
            provider.get().force_flush()
            write_jsonl(outdir / f"{task}.otlp.jsonl", fake.take_otlp())
            write_truth(outdir, task, loop_truth(task, [answer]) | {"calls": _calls(task)})


def _calls(task: str) -> list[dict[str, Any]]:
    """The loop's truth, with the raising tool's error as MLflow records it: the TOOL span's exception."""
    calls = loop_truth(task, [""])["calls"]
    return [c | {"error": "order #W999 not found"} if c["result"] == ERROR_RESULT else c for c in calls]
