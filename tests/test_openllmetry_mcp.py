"""Format `otel` on a plain OpenAI chat loop whose tools ran on an MCP server, under OpenLLMetry (`tests/data/openllmetry-mcp`).

Recorded by `tests/frameworks/record_openllmetry_mcp.py` with opentelemetry-instrumentation-openai and
opentelemetry-instrumentation-mcp; `<scenario>.truth.json` is what the application itself sent and got.
What was wrong before: the MCP instrumentation writes a call's arguments as `{"tool_name", "arguments"}` and its result as
`{"result": …, "is_error": …}`, so each `tools/call` span (a trace of its own in a plain loop) matched no call the model
asked for and became a case of its own, with the wrapper as arguments and result, and the call the server failed
(`isError`) read as a success in the conversation. Now the spans join the conversation, and the failed call's error is
the server's text, as the Agents SDK reader reads the same server's failure.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers import extract_path
from test_otel_loop_faults import facts  # (the same facts of a conversation)
from tracejudge.core.records import Case

DATA = Path(__file__).parent / "data" / "openllmetry-mcp"


def test_loop_reads_as_its_truth() -> None:
    cases = extract_path(DATA / "tl-mcp-stdio.jsonl", "otel")
    assert all(isinstance(c, Case) for c in cases), cases
    (truth,) = json.loads((DATA / "tl-mcp-stdio.truth.json").read_text())["cases"]
    expected = {**truth, "calls": [{k: v for k, v in c.items() if k != "is_error"} for c in truth["calls"]]}
    assert [facts(c) for c in cases] == [expected]


def test_failed_mcp_call_is_failed() -> None:
    """The call the server answered with `isError` failed, its error the server's text; the others did not."""
    (case,) = extract_path(DATA / "tl-mcp-stdio.jsonl", "otel")
    (truth,) = json.loads((DATA / "tl-mcp-stdio.truth.json").read_text())["cases"]
    assert [(c.id, c.error) for c in case.trace.tool_calls()] == [(c["id"], c["result"] if c["is_error"] else None) for c in truth["calls"]]
    assert case.trace.steps[0].tool_calls[1].error == "Error executing tool refund_order: order #W1 is past its refund window"
