"""Record the LangGraph out-of-steps runs of `record_langgraph_out_of_steps.py` under MLflow's and Langfuse's tracing.

    python tests/frameworks/record_langgraph_out_of_steps_stores.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/langgraph-out-of-steps-stores)

The same runs as `record_langgraph_out_of_steps.py` (user "Weather in Paris, Tokyo, Oslo and Rome?"; the model asks
`get_weather` for Paris, then Tokyo, then Oslo and Rome in one reply, which never runs): `react` is `create_react_agent`
with `recursion_limit=6` (it returns "Sorry, need more steps to process this request."), `graph` an agent node and a
`ToolNode` with `recursion_limit=5` (`invoke` raises `GraphRecursionError`). Traced by:

- `mlflow-<shape>`: `mlflow.langchain.autolog()` (SQLite store in a temporary folder); writes `<scenario>.mlflow.jsonl`
  (`Trace.to_json()` of the run's trace, format `mlflow`) and `<scenario>.otlp.jsonl` (MLflow's OTLP dual export of the
  same spans, format `otel`);
- `lf-<shape>`: Langfuse's LangChain `CallbackHandler` (langfuse 5: the SDK posts OTLP to the fake server); writes
  `<scenario>.otlp.jsonl` (the OTLP the SDK sent, format `otel`) and `<scenario>.json` (the trace as `GET
  /api/public/traces/{id}` returns it, built by `langfuse_api.py` from that OTLP; format `langfuse`).

Each writes `<scenario>.truth.json` as `record_langgraph_out_of_steps.py` does. Each scenario runs in a process of its
own against the project's scripted loopback server (`record_oi_faults.ScriptedOpenAI`; no network).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import MODEL, record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from record_langgraph_out_of_steps import LIMITS, QUESTION, REPLIES, _graph  # noqa: E402
from record_oi_faults import ScriptedOpenAI  # noqa: E402

OUT = HERE.parent / "data" / "langgraph-out-of-steps-stores"


def _invoke(fake: ScriptedOpenAI, shape: str, ran: list[dict[str, Any]], config: dict[str, Any]) -> tuple[Any, str | None]:
    """Run the graph of `shape` against `fake`; (the state `invoke` returned or None, what it raised or None)."""
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(model=MODEL, base_url=fake.base_url, api_key="sk-fake", max_retries=0)
    try:
        return _graph(shape, model, ran).invoke({"messages": [{"role": "user", "content": QUESTION}]}, {**config, "recursion_limit": LIMITS[shape]}), None
    except Exception as exc:  # noqa: BLE001 (what the application saw is the truth)
        return None, f"{type(exc).__name__}: {exc}"


def _truth(out: Path, name: str, state: Any, raised: str | None, ran: list[dict[str, Any]], requests: int) -> Any:
    asked = [{"id": c["id"], "name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
             for r in REPLIES[:requests] for c in r.get("tool_calls") or []]
    messages = None if state is None else [{"type": m.type, "content": m.content, "tool_calls": [c["id"] for c in getattr(m, "tool_calls", [])],
                                            "tool_call_id": getattr(m, "tool_call_id", None)} for m in state["messages"]]
    write_truth(out, name, {"question": QUESTION, "asked": asked, "tool_runs": ran, "messages": messages,
                            "answer": messages[-1]["content"] if messages else None, "raised": raised, "requests": requests})
    return messages[-1]["content"] if messages else raised


def mlflow_run(out: Path, shape: str) -> Any:
    """`mlflow.langchain.autolog()`; the trace as `Trace.to_json()` and as MLflow's OTLP dual export."""
    from run_mlflow import _clean

    name, ran = f"mlflow-{shape}", []
    with ScriptedOpenAI(REPLIES) as fake, tempfile.TemporaryDirectory() as store:
        os.environ.update({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"{fake.url}/v1/traces", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
                           "MLFLOW_TRACE_ENABLE_OTLP_DUAL_EXPORT": "true", "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false",
                           "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"})
        import mlflow
        from mlflow.tracing.provider import provider

        mlflow.set_tracking_uri(f"sqlite:///{store}/mlflow.db")
        experiment = mlflow.create_experiment(name, artifact_location=f"{store}/artifacts")
        mlflow.set_experiment(experiment_id=experiment)
        mlflow.langchain.autolog()
        state, raised = _invoke(fake, shape, ran, {})
        traces = mlflow.search_traces(locations=[experiment], return_type="list", order_by=["timestamp_ms ASC"])
        write_jsonl(out / f"{name}.mlflow.jsonl", [_clean(t.to_json(), store) for t in traces])
        provider.get().force_flush()
        write_jsonl(out / f"{name}.otlp.jsonl", fake.take_otlp())
        requests = fake.n
    return _truth(out, name, state, raised, ran, requests)


def langfuse_run(out: Path, shape: str) -> Any:
    """Langfuse's LangChain `CallbackHandler`; the OTLP the SDK sent and the trace as Langfuse's API returns it."""
    from langfuse import Langfuse
    from langfuse.langchain import CallbackHandler
    from langfuse_api import trace_with_full_details

    name, ran = f"lf-{shape}", []
    with ScriptedOpenAI(REPLIES) as fake:
        langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
        state, raised = _invoke(fake, shape, ran, {"callbacks": [CallbackHandler()]})
        langfuse.flush()
        docs = fake.take_otlp()
        langfuse.shutdown()
        requests = fake.n
    write_jsonl(out / f"{name}.otlp.jsonl", docs)
    write_jsonl(out / f"{name}.json", trace_with_full_details(docs))
    return _truth(out, name, state, raised, ran, requests)


SCENARIOS = {**{f"mlflow-{s}": (lambda out, s=s: mlflow_run(out, s)) for s in LIMITS},
             **{f"lf-{s}": (lambda out, s=s: langfuse_run(out, s)) for s in LIMITS}}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], SCENARIOS))
