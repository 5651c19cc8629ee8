"""The plain OpenAI loop traced by the Langfuse Python SDK (OTel-based): its OTLP export, and the API JSON built from it.

`otel`: `@observe(as_type="agent")` on the loop, `observe(as_type="tool")` on each tool, and
Langfuse's drop-in `langfuse.openai.OpenAI` client (GENERATION observations). The SDK posts
OTLP/HTTP protobuf to `<base_url>/api/public/otel/v1/traces`; with `base_url` the fake server,
each export lands as one OTLP/JSON line. `api` runs the same and converts what was captured into
the public API's JSON (see `langfuse_api.py` and the README for how).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from common import write_jsonl, write_truth
from fake_openai import FakeOpenAI
from run_openai_loop import ERROR_RESULT, loop_truth, run_loop
from tasks import TASKS, TOOLS, selected


def _record(fake: FakeOpenAI) -> dict[str, tuple[list[dict[str, Any]], dict[str, Any]]]:
    """Run every task; per task the OTLP/JSON documents received and the ground truth."""
    from langfuse import Langfuse, observe, propagate_attributes
    from langfuse.openai import OpenAI

    langfuse = Langfuse(public_key="pk-lf-fake", secret_key="sk-lf-fake", base_url=fake.url, environment="recording")
    client = OpenAI(base_url=fake.base_url, api_key="sk-fake")
    out = {}
    for task in selected():
        tools = {n: observe(TOOLS[n], name=n, as_type="tool") for n in TASKS[task].tools}

        @observe(name="agent", as_type="agent")
        def agent(question: str, task: str = task, tools: dict[str, Any] = tools) -> str:
            """The loop over every user turn (a conversation is one trace); `question` is the first turn."""
            with propagate_attributes(session_id=f"session-{task}", user_id="user-1"):
                return run_loop(client, task, tools)[-1]

        answer = agent(TASKS[task].turns[0])
        langfuse.flush()
        if not fake.otlp:
            raise RuntimeError(f"{task}: Langfuse exported no spans")
        calls = [c | {"error": "order #W999 not found"} if c["result"] == ERROR_RESULT else c for c in loop_truth(task, [answer])["calls"]]
        out[task] = fake.take_otlp(), loop_truth(task, [answer]) | {"calls": calls}
    langfuse.shutdown()
    return out


def otel(fake: FakeOpenAI, outdir: Path) -> None:
    """`langfuse-otel`: `<task>.jsonl`, the OTLP/JSON Langfuse's SDK exported."""
    for task, (docs, truth) in _record(fake).items():
        write_jsonl(outdir / f"{task}.jsonl", docs)
        write_truth(outdir, task, truth)


def api(fake: FakeOpenAI, outdir: Path) -> None:
    """`langfuse-api`: `<task>.json` (GET /api/public/traces/{id}) and `<task>.v2.json` (GET /api/public/v2/observations), one trace per line."""
    from langfuse_api import observations_v2, trace_with_full_details

    for task, (docs, truth) in _record(fake).items():
        write_jsonl(outdir / f"{task}.json", trace_with_full_details(docs))
        write_jsonl(outdir / f"{task}.v2.json", observations_v2(docs))
        write_truth(outdir, task, truth)
