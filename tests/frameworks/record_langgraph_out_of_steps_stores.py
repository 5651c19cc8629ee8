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

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import record_each_in_subprocess, write_jsonl  # noqa: E402
from record_langgraph_out_of_steps import LIMITS, REPLIES, run_graph, write_run_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI  # noqa: E402

OUT = HERE.parent / "data" / "langgraph-out-of-steps-stores"


def mlflow_run(out: Path, shape: str) -> Any:
    """`mlflow.langchain.autolog()`; the trace as `Trace.to_json()` and as MLflow's OTLP dual export."""
    from run_mlflow import langchain_recording

    name, ran = f"mlflow-{shape}", []
    with ScriptedOpenAI(REPLIES) as fake:
        with langchain_recording(fake, out, name):
            state, raised = run_graph(fake, shape, ran, {})
        requests = fake.n
    return write_run_truth(out, name, state, raised, ran, requests)


def langfuse_run(out: Path, shape: str) -> Any:
    """Langfuse's LangChain `CallbackHandler`; the OTLP the SDK sent and the trace as Langfuse's API returns it."""
    from langfuse import Langfuse
    from langfuse.langchain import CallbackHandler
    from langfuse_api import trace_with_full_details

    name, ran = f"lf-{shape}", []
    with ScriptedOpenAI(REPLIES) as fake:
        langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
        state, raised = run_graph(fake, shape, ran, {"callbacks": [CallbackHandler()]})
        langfuse.flush()
        docs = fake.take_otlp()
        langfuse.shutdown()
        requests = fake.n
    write_jsonl(out / f"{name}.otlp.jsonl", docs)
    write_jsonl(out / f"{name}.json", trace_with_full_details(docs))
    return write_run_truth(out, name, state, raised, ran, requests)


SCENARIOS = {**{f"mlflow-{s}": (lambda out, s=s: mlflow_run(out, s)) for s in LIMITS},
             **{f"lf-{s}": (lambda out, s=s: langfuse_run(out, s)) for s in LIMITS}}


if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:] or [str(OUT)], SCENARIOS))
