"""Traces sent to a real `phoenix serve` (SQLite, 127.0.0.1) read by format `phoenix` as format `otel` reads their file.

- OpenLLMetry's MCP client spans: Phoenix keeps no instrumentation scope, by which alone they were told apart (their
  `{"tool_name", "arguments"}` wrapper was read as the call's arguments, `{"result": …}` as its result);
- the shared OTel GenAI traces (`../shared/data/otel_genai`): Claude Code's spans write `session.id` beside their
  `gen_ai.*` keys, which kept the OpenInference keys Phoenix makes up from those (calls and requests read twice, the
  token counts lost).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import DATA as SHARED

from stores.phoenix_recordings import file_and_server
from stores.servers import phoenix_installed

if not phoenix_installed():
    pytest.skip("arize-phoenix (the stores extra) is not installed", allow_module_level=True)

DATA = Path(__file__).resolve().parents[1] / "data"
GENAI = sorted(p for p in (SHARED / "otel_genai").rglob("*.json") if not p.name.endswith(".truth.json"))


def test_openllmetry_mcp_calls_read_as_in_their_file(phoenix_url):
    from_file, from_phoenix = file_and_server(phoenix_url, "readings-mcp", DATA / "openllmetry-mcp" / "tl-mcp-stdio.jsonl")
    calls = [(c["name"], c["arguments"], c["result"]) for case in from_phoenix.values() for s in case["trace"]["steps"] for c in s["tool_calls"]]
    assert ("order_status", {"order_id": "#W1"}, "shipped on 2026-01-02") in calls
    assert from_phoenix == from_file


@pytest.mark.parametrize("path", GENAI, ids=lambda p: str(p.relative_to(SHARED / "otel_genai")))
def test_the_shared_otel_genai_traces_read_as_in_their_files(phoenix_url, tmp_path, path):
    one_line = tmp_path / "trace.jsonl"  # (the file holds one export, pretty-printed: sent and read as one line)
    one_line.write_text(json.dumps(json.loads(path.read_text())) + "\n")
    project = "readings-" + str(path.relative_to(SHARED / "otel_genai")).replace("/", "-")
    from_file, from_phoenix = file_and_server(phoenix_url, project, one_line)
    assert sorted(from_phoenix) == sorted(from_file)
    for case_id, case in from_file.items():
        assert from_phoenix[case_id] == case, case_id
