"""Traces sent to a real `phoenix serve` (SQLite, 127.0.0.1) read by format `phoenix` as format `otel` reads their file.

- OpenLLMetry's MCP client spans: Phoenix keeps no instrumentation scope, by which alone they were told apart (their
  `{"tool_name", "arguments"}` wrapper was read as the call's arguments, `{"result": …}` as its result).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from stores.phoenix_recordings import file_and_server
from stores.servers import phoenix_installed

if not phoenix_installed():
    pytest.skip("arize-phoenix (the stores extra) is not installed", allow_module_level=True)

DATA = Path(__file__).resolve().parents[1] / "data"


def test_openllmetry_mcp_calls_read_as_in_their_file(phoenix_url):
    from_file, from_phoenix = file_and_server(phoenix_url, "readings-mcp", DATA / "openllmetry-mcp" / "tl-mcp-stdio.jsonl")
    calls = [(c["name"], c["arguments"], c["result"]) for case in from_phoenix.values() for s in case["trace"]["steps"] for c in s["tool_calls"]]
    assert ("order_status", {"order_id": "#W1"}, "shipped on 2026-01-02") in calls
    assert from_phoenix == from_file
