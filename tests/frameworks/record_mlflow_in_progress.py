"""Record a LangGraph thread whose second invoke MLflow still holds as running, behind `tests/test_mlflow_in_progress.py`.

    python tests/frameworks/record_mlflow_in_progress.py OUTDIR [SCENARIO ...]   (OUTDIR: tests/data/mlflow-in-progress)

`mlflow.langchain.autolog()` (SQLite store in a temporary folder) over a `create_react_agent` with a `MemorySaver`, against
the project's scripted loopback OpenAI server (`record_otel_loop_faults.Scripted`; no network). On thread `thread-1`
the agent is asked "Weather in Paris?" (one `get_weather` call, then the answer), then, in a thread of its own, "And
Oslo?": the server holds the request after Oslo's tool round until `mlflow.search_traces` has listed the traces, so the
second trace is listed `IN_PROGRESS`: logged when it began, the spans that had ended (its `tools` node, whose input is
LangGraph's `Send` payload `{"__type": "tool_call_with_context", …}`), no root span and no session yet. Then the
request is answered and the run ends.

Scenario `lg-in-progress` writes `lg-in-progress.jsonl` (`Trace.to_json()` a line, as `search_traces` listed them
while the second ran: the first trace `OK`, the second `IN_PROGRESS`) and `lg-in-progress.truth.json` (the first
turn's question, call and answer, and the id of the trace that was in progress).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from common import record_each_in_subprocess, write_jsonl, write_truth  # noqa: E402
from record_otel_loop_faults import Scripted, call, chat  # noqa: E402

ASKED = ["Weather in Paris?", "And Oslo?"]


def in_progress(out: Path) -> dict[str, Any]:
    from run_mlflow import _clean

    held, release = threading.Event(), threading.Event()
    truth: dict[str, Any] = {"user_turns": ASKED[:1], "calls": [], "answers": []}

    def reply(body: dict[str, Any], headers: Any) -> tuple[dict[str, Any], dict[str, int]]:
        msgs = body["messages"]
        last = max(i for i, m in enumerate(msgs) if m["role"] == "user")
        step = sum(1 for m in msgs[last:] if m["role"] == "assistant")
        city = "Paris" if msgs[last]["content"] == ASKED[0] else "Oslo"
        usage = {"prompt_tokens": 100 + len(msgs), "completion_tokens": 10, "total_tokens": 110 + len(msgs)}
        if step == 0:
            return chat(None, call(f"c_{city.lower()}", "get_weather", {"city": city})), usage
        if city == "Oslo":
            held.set()
            release.wait(120)  # (the trace is listed while this request waits)
        return chat(f"{city} is mild."), usage

    with Scripted(reply) as fake, tempfile.TemporaryDirectory() as store:
        os.environ.update({"MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false", "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"})
        import mlflow
        from langchain_core.tools import tool
        from langchain_openai import ChatOpenAI
        from langgraph.checkpoint.memory import MemorySaver
        from langgraph.prebuilt import create_react_agent

        mlflow.set_tracking_uri(f"sqlite:///{store}/mlflow.db")
        experiment = mlflow.create_experiment("in-progress", artifact_location=f"{store}/artifacts")
        mlflow.set_experiment(experiment_id=experiment)
        mlflow.langchain.autolog()

        @tool
        def get_weather(city: str) -> str:
            """Weather of a city."""
            result = f"{city}: mild, 14 C"
            truth["calls"].append(["get_weather", {"city": city}, result])
            return result

        model = ChatOpenAI(model="gpt-4o-mini", base_url=fake.base_url, api_key="sk-fake", max_retries=0)
        agent = create_react_agent(model, [get_weather], checkpointer=MemorySaver())
        config = {"configurable": {"thread_id": "thread-1"}}
        truth["answers"].append(agent.invoke({"messages": [("user", ASKED[0])]}, config)["messages"][-1].content)
        second = threading.Thread(target=agent.invoke, args=({"messages": [("user", ASKED[1])]}, config))
        second.start()
        try:
            if not held.wait(120):
                raise RuntimeError("the second invoke never reached its second request")
            traces = mlflow.search_traces(locations=[experiment], return_type="list", order_by=["timestamp_ms ASC"])
        finally:
            release.set()
            second.join(120)
        lines = [_clean(t.to_json(), store) for t in traces]
        states = [line["info"]["state"] for line in lines]
        if states != ["OK", "IN_PROGRESS"]:
            raise RuntimeError(f"expected a finished trace, then one in progress; listed {states}")
        truth["in_progress"] = lines[1]["info"]["trace_id"]
        write_jsonl(out / "lg-in-progress.jsonl", lines)
    truth["calls"] = truth["calls"][:1]  # (the first turn's: the second's call is in the trace in progress)
    write_truth(out, "lg-in-progress", truth)
    return truth


SCENARIOS = {"lg-in-progress": in_progress}

if __name__ == "__main__":
    sys.exit(record_each_in_subprocess(__file__, sys.argv[1:], SCENARIOS))
