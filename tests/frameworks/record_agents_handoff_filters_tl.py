"""Record the scenarios of `record_agents_handoff_filters.py` under OpenLLMetry's openai-agents instrumentation, behind
`tests/test_agents_handoff_filters.py`.

    python tests/frameworks/record_agents_handoff_filters_tl.py [OUTDIR] [SCENARIO ...]   (OUTDIR: tests/data/agents-handoff-filters)

Each scenario (the same `Triage` -> `Weather` runs, against the same scripted loopback server; no network) runs in a
subprocess of its own (the instrumentor patches the SDK process-wide), recorded by OpenLLMetry's
`opentelemetry-instrumentation-openai-agents` alone (`OpenAIAgentsInstrumentor`, recorded with 0.62.4 and
openai-agents 0.24.0) into `tl-<s>.jsonl` (OTLP/JSON, format `otel`). The run's truth is what
`record_agents_handoff_filters.record` writes for it (`<s>.truth.json`): the runs are scripted, so it is the same;
the recorder stops if it is not. Two Responses API runs are recorded here only, as OpenLLMetry keeps no output of a
Chat Completions request: `unfiltered_responses` (the handoff without a filter: the unfiltered run a filtered
Responses API run reads alike to) and `filtered_after_tool_responses` (`filtered_after_tool` with the Responses API);
their truth is written here. The instrumentation is not among the test requirements: without it the recorder stops,
saying so.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

FRAMEWORKS = Path(__file__).resolve().parent
sys.path.insert(0, str(FRAMEWORKS))

import record_agents_handoff_filters as base  # noqa: E402
from common import otel_provider, record_each_in_subprocess, write_otlp, write_truth  # noqa: E402
from record_oi_faults import ScriptedOpenAI  # noqa: E402

SCENARIOS_RUN: dict[str, tuple[str, list[Any], bool]] = {
    **base.SCENARIOS,
    "unfiltered_responses": ("responses", base.SCENARIOS["filtered_responses"][1], False),
    "filtered_after_tool_responses": ("responses",
                                      [[base._msg(1, "Checking Paris first."), base._fc(2, "call_t1", "get_weather", {"city": "Paris"})],
                                       [base._fc(3, "call_h1", "transfer_to_weather", {})],
                                       [base._fc(4, "call_w2", "get_weather", {"city": "Tokyo"})],
                                       [base._msg(5, base.ANSWER)]], True),
}


def record(name: str, out: Path) -> dict[str, Any]:
    from agents import Runner, set_default_openai_api, set_default_openai_client, set_trace_processors
    from openai import AsyncOpenAI
    from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    api, replies, filtered = SCENARIOS_RUN[name]
    base.RAN.clear()
    base.FILTERED.clear()
    with ScriptedOpenAI(replies) as fake:
        set_default_openai_client(AsyncOpenAI(base_url=fake.base_url, api_key="sk-fake", max_retries=0), use_for_tracing=False)
        set_default_openai_api(api)
        set_trace_processors([])
        provider = otel_provider(fake, "agents-tl")
        OpenAIAgentsInstrumentor(replace_existing_processors=True).instrument(tracer_provider=provider)
        try:
            result = asyncio.run(Runner.run(base._triage(filtered), base.QUESTION))
            write_otlp(provider, fake, out / f"tl-{name}.jsonl")
        finally:
            provider.shutdown()
        truth = {"final_output": result.final_output, "last_agent": result.last_agent.name, "requests": fake.n,
                 "handoffs": base._handoffs(result.new_items) or base._handoffs(base.FILTERED),
                 "handoffs_in_run_items": len(base._handoffs(result.new_items))}
    truth.update(question=base.QUESTION, tools_ran=list(base.RAN), input_filter="remove_all_tools" if filtered else None, api=api)
    stored = out / f"{name}.truth.json"
    if not stored.exists():
        write_truth(out, name, truth)
    elif json.loads(stored.read_text()) != json.loads(json.dumps(truth)):
        raise SystemExit(f"{name}: the run differs from {stored.name}: {truth}")
    return truth


if __name__ == "__main__":
    import importlib.util

    if importlib.util.find_spec("opentelemetry.instrumentation.openai_agents") is None:
        print("not installed: opentelemetry-instrumentation-openai-agents (pip install opentelemetry-instrumentation-openai-agents==0.62.4)",
              file=sys.stderr)
        sys.exit(1)
    args = sys.argv[1:] or [str(base.OUT)]
    if args[0] in SCENARIOS_RUN:
        args.insert(0, str(base.OUT))
    sys.exit(record_each_in_subprocess(__file__, args, {n: (lambda out, n=n: record(n, out)) for n in SCENARIOS_RUN}))
