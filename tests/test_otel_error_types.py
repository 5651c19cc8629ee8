"""An error whose status text already names its type (`tests/data/error-types/`, see its README).

pydantic-ai 2.62.0 ends a run past `UsageLimits(request_limit=3)` with `UsageLimitExceeded`: the agent span's status
text starts with the short name (`UsageLimitExceeded: The next request…`), its `exception` event holds the qualified
type. `metadata.run_error` read `pydantic_ai.exceptions.UsageLimitExceeded: UsageLimitExceeded: The next request…`,
the type said twice; now the qualified name once, then the message as the application raised it.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers import extract_path
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "error-types"


def test_a_usage_limit_names_its_type_once_and_reads_the_run_as_it_was() -> None:
    want = json.loads((DATA / "pai-limit.truth.json").read_text())["cases"][0]
    [case] = extract_path(DATA / "pai-limit.jsonl", "otel")
    assert isinstance(case, Case), case
    raised = want["raised"]
    assert case.metadata["run_error"] == f"{raised['type']}: {raised['message']}"
    assert case.metadata["run_error"].count("UsageLimitExceeded") == 1
    assert case.metadata["otel"]["turns"][-1]["error"] == case.metadata["run_error"]
    assert [case.input, *case.turns] == want["user_turns"]
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments, "result": c.result} for c in case.trace.tool_calls()]
    assert calls == want["calls"]
    assert case.trace.output == want["output"]
    usage = case.trace.usage
    assert {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "requests": usage.requests} == want["usage"]


def test_an_error_type_written_as_a_class_repr_names_the_class(tmp_path: Path) -> None:
    # OTel's openai-v2 2.4b0 writes `error.type` as `str(type(exc))`; the step's error named the type so, verbatim.
    trace, start = "7c2e3f405162738495a6b7c8d9e0f1a2", 1760000000000000000

    def attrs(pairs: dict) -> list:
        return [{"key": k, "value": {"stringValue": v}} for k, v in pairs.items()]

    user = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]}])
    answer = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Sunny."}], "finish_reason": "stop"}])
    base = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4.1-mini",
            "gen_ai.input.messages": user}
    failed = {"traceId": trace, "spanId": "a" * 16, "name": "chat gpt-4.1-mini", "kind": 3,
              "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 1000),
              "attributes": attrs({**base, "error.type": "<class 'openai.InternalServerError'>"}),
              "status": {"code": 2, "message": "Error code: 500 - upstream overloaded"}}
    retried = {**failed, "spanId": "b" * 16, "startTimeUnixNano": str(start + 2000), "endTimeUnixNano": str(start + 3000),
               "attributes": attrs({**base, "gen_ai.output.messages": answer}), "status": {}}
    path = tmp_path / "export.jsonl"
    path.write_text(json.dumps({"resourceSpans": [{"resource": {"attributes": attrs({"service.name": "agent"})},
                                                   "scopeSpans": [{"scope": {"name": "opentelemetry.instrumentation.openai_v2"},
                                                                   "spans": [failed, retried]}]}]}) + "\n")
    [case] = extract_path(path, "otel")
    assert isinstance(case, Case), case
    errors = [s.error for s in case.trace.steps if s.error]
    assert errors == ["openai.InternalServerError: Error code: 500 - upstream overloaded"], errors
