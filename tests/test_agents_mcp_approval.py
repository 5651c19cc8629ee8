"""OpenAI Agents SDK runs paused for approval of an MCP server's tool (`require_approval`): the right setting is named.

Recorded by the real SDK (0.24.0) against the project's loopback fake server, with a real MCP server over stdio declared
`require_approval={"always": {"tool_names": ["refund_order"]}}`, under OpenInference's `OpenAIAgentsInstrumentor`
(`oi-<s>.jsonl`, format `otel`) and the SDK's own export (`export-<s>.jsonl`, format `openai-agents`) at once:
`tests/frameworks/record_agents_mcp_approval.py` (the folder's README says what each scenario did; `<s>.truth.json` is
what the application saw). Such a run reads as a run paused for approval (the held call not run, no output), as one
held by a function tool's `needs_approval` does; but the warning that a run was read so, and the run's error, named
`needs_approval` for the MCP server's tool too. Now they name the server's `require_approval` (and the server, where
the trace names it: the export's `mcp_tools` span does, OpenInference's does not), and each tool's setting when a run
held tools of both kinds.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from helpers import extract_path
from tracejudge.core.records import Case
from tracejudge.stages.extract import said_once
from tracejudge.stages.extract.otel.conventions.agents_approval import AWAITING

DATA = Path(__file__).parent / "data" / "agents-mcp-approval"
KINDS = [("export", "openai-agents"), ("oi", "otel")]
SETTING = {  # what held the calls, as each convention can tell it (OpenInference's tool list names no server)
    ("mcp", "export"): "MCP server `orders`'s `require_approval`",
    ("mcp", "oi"): "an MCP server's `require_approval`",
    ("mixed", "export"): "refund_order: MCP server `orders`'s `require_approval`; refund: `needs_approval`",
    ("mixed", "oi"): "refund_order: an MCP server's `require_approval`; refund: `needs_approval`",
}


def truth(scenario: str) -> dict[str, Any]:
    return json.loads((DATA / f"{scenario}.truth.json").read_text())


@pytest.mark.parametrize("scenario", ["mcp", "mixed"])
@pytest.mark.parametrize("kind, fmt", KINDS)
def test_a_run_held_by_an_mcp_servers_require_approval_says_so(scenario: str, kind: str, fmt: str, caplog: pytest.LogCaptureFixture,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    want = truth(scenario)
    assert want["final_output"] is None and [c["call_id"] for c in want["outputs"]] == ["call_s1"]
    monkeypatch.setattr(said_once, "_SAID", set())  # (the warning is said once per file, the export's once per process)
    with caplog.at_level(logging.WARNING):
        (case,) = extract_path(DATA / f"{kind}-{scenario}.jsonl", fmt)
    assert isinstance(case, Case) and case.trace is not None
    calls = case.trace.tool_calls()
    held = [c for c in calls if c.error == AWAITING]
    assert [(c.name, c.arguments) for c in held] == [(i["name"], i["arguments"]) for i in want["interruptions"]]
    assert [(c.name, c.result, c.error) for c in calls if c not in held] == [("order_status", "shipped", None)]
    assert case.trace.output is None
    setting = SETTING[(scenario, kind)]
    assert case.metadata["run_error"].startswith(f"Run paused for approval ({setting}) of the tool calls")
    (said,) = [r.getMessage() for r in caplog.records if "read as a run paused for approval" in r.getMessage()]
    assert f"read as a run paused for approval ({setting})," in said
    if scenario == "mcp":
        assert "needs_approval" not in said and "needs_approval" not in case.metadata["run_error"]


def test_a_function_tools_pause_still_says_needs_approval(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(said_once, "_SAID", set())
    with caplog.at_level(logging.WARNING):
        (case,) = extract_path(Path(__file__).parent / "data" / "agents-approval" / "paused.export.jsonl", "openai-agents")
    assert isinstance(case, Case)
    assert case.metadata["run_error"].startswith("Run paused for approval (`needs_approval`) of the tool calls")
    assert [r for r in caplog.records if "read as a run paused for approval (`needs_approval`)," in r.getMessage()]
