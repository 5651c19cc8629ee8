"""The same OpenAI Agents SDK run reads the same errors, whichever convention recorded it.

The SDK's error is `{"message": …, "data": {…}}`. Its own export (format `openai-agents`) reads it as
`"<message>: <data.error>"` (other data as JSON). OpenInference's `OpenAIAgentsInstrumentor` writes the span status
`f"{message}: {data}"`, the data a Python repr (`Error running tool: {'tool_name': 'lookup_order', 'error': "Tool
'lookup_order' timed out after 0.3 seconds."}`, `Error in agent run: {'error': …}`, `Max turns exceeded: {'max_turns':
1}`), and OpenLLMetry's openai-agents instrumentation `str()` of the whole object (`{'message': 'Error in agent run',
'data': {'error': …}}`, a tool's error already read as the export's). Before, a call's error and the run's
`metadata.run_error` were those texts; now each is read (with `ast`, nothing evaluated) as the export reads it.

Recordings of the same runs under each convention, made by the real SDK (0.24.0) against the project's loopback fake
server: `agents-tool-timeout` (`timeout_behavior="raise_exception"`: a failed tool and a failed run, all three),
`agents-sdk-faults` (a tool the agent lacks, tripped guardrails), `openai-agents-stop` (max turns; a failing tool in a
run stopped at it) and `frameworks/openinference-openai-agents/failing` (its truth file now holds the export's form).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data"
TIMEOUT = "Tool 'lookup_order' timed out after 0.3 seconds."


def read(path: Path, fmt: str) -> Case:
    (case,) = extract_path(path, fmt)
    assert isinstance(case, Case) and case.trace is not None, case
    return case


def errors(case: Case) -> tuple[Any, list[tuple[str, str | None]]]:
    """The run's error and each call's (name, error)."""
    return case.metadata.get("run_error"), [(c.name, c.error) for c in case.trace.tool_calls()]  # type: ignore[union-attr]


def test_a_timeout_that_raised_reads_alike_under_all_three() -> None:
    got = {kind: errors(read(DATA / "agents-tool-timeout" / f"{kind}-timeout_raise.jsonl", fmt))
           for kind, fmt in [("export", "openai-agents"), ("oi", "otel"), ("tl", "otel")]}
    assert got["export"] == (f"Error in agent run: {TIMEOUT}", [("lookup_order", f"Error running tool: {TIMEOUT}")])
    assert got["oi"] == got["export"] and got["tl"] == got["export"]


@pytest.mark.parametrize("folder, scenario", [("agents-sdk-faults", "hallucinated_tool"), ("agents-sdk-faults", "input_guardrail"),
                                              ("agents-sdk-faults", "output_guardrail"), ("openai-agents-stop", "max_turns_preamble"),
                                              ("openai-agents-stop", "stop_failing")])
def test_openinference_reads_the_errors_the_export_reads(folder: str, scenario: str) -> None:
    oi = errors(read(DATA / folder / f"oi-{scenario}.jsonl", "otel"))
    export = errors(read(DATA / folder / f"export-{scenario}.jsonl", "openai-agents"))
    assert oi == export
    assert not any("{'" in (e or "") for e in [oi[0], *(e for _, e in oi[1])])  # no Python repr left


def test_a_failed_tool_reads_as_the_export_reads_it() -> None:
    oi = read(DATA / "frameworks" / "openinference-openai-agents" / "failing.jsonl", "otel")
    export = read(DATA / "frameworks" / "openai-agents-export" / "failing.jsonl", "openai-agents")
    (mine,), (theirs,) = oi.trace.tool_calls(), export.trace.tool_calls()  # type: ignore[union-attr]
    assert mine.error == theirs.error == "Error running tool (non-fatal): Tool execution failed. Error details are redacted."


def test_the_repr_is_read_never_evaluated() -> None:
    from tracejudge.stages.extract.otel.conventions.agents_sdk import repr_error

    assert repr_error("Max turns exceeded: None") == "Max turns exceeded"
    assert repr_error("Tool not found: {'tool_name': 'get_wether'}") == 'Tool not found: {"tool_name": "get_wether"}'
    assert repr_error("A: b: {'error': 'c: {d}'}") == "A: b: c: {d}"  # (the first split after which a mapping reads)
    for text in ["plain text", "Error: {'a': __import__('os').getcwd()}", "Error: {a: 1}", ": None", "Error: ['a']", "Error: 'x'"]:
        assert repr_error(text) is None, text
