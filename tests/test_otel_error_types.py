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
