"""OpenAI Agents SDK runs an input guardrail stopped while the tools of the first reply ran: each call that did not
return reads as failed, saying so, alike under the SDK's export and OpenInference.

Recorded by the real SDK (0.24.0) against the project's loopback fake server under OpenInference's
`OpenAIAgentsInstrumentor` (`oi-<s>.jsonl`, format `otel`) and the SDK's own export (`export-<s>.jsonl`, format
`openai-agents`) at once: `tests/frameworks/record_agents_guardrail_cancel.py`, whose docstring says what each scenario
did; `<s>.truth.json` is what the application saw (which tool bodies started and returned, what the run raised).

Before: a call the tripwire cancelled (its tool span ended with no output and no error) read as a call that returned
nothing, with no error, beside the run's guardrail error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _agents_recordings import KINDS, only_case, truth_in

HERE = Path(__file__).parent / "data" / "agents-guardrail-cancel"
SCENARIOS = ["slow_tool", "slow_tool_responses"]


def truth(scenario: str) -> dict[str, Any]:
    return truth_in(HERE, scenario)


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("kind, fmt", KINDS)
def test_calls_the_tripwire_cancelled_read_failed_and_the_run_has_no_output(kind: str, fmt: str, scenario: str) -> None:
    want = truth(scenario)
    case = only_case(HERE / f"{kind}-{scenario}.jsonl", fmt)
    returned = {t["name"]: t["returned"] for t in want["tools"] if t["returned"] is not None}
    calls = case.trace.tool_calls()
    assert [(c.name, c.arguments) for c in calls] == [(a["name"], a["arguments"]) for a in want["asked"]]
    assert [c.id for c in calls] == ([None, None] if (kind, scenario) == ("export", "slow_tool_responses")  # (no request output kept)
                                     else [a["id"] for a in want["asked"]])
    for c in calls:
        if c.name in returned:
            assert (c.result, c.error) == (returned[c.name], None)
        else:  # its body never returned: cancelled by the tripwire (or never started)
            assert c.result is None and c.error is not None and "input guardrail tripped" in c.error, (c.name, c.error)
    assert "slow_forecast" not in returned  # the 3 s tool never returns before the 0.8 s guardrail trips
    assert want["raised"].startswith("InputGuardrailTripwireTriggered")
    assert case.trace.output is None and case.metadata["run_error"].startswith("Guardrail tripwire triggered")
