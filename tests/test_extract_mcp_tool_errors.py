"""An MCP `CallToolResult` with `isError: true` as a tool's output is a failed call, in every format that carries tool outputs.

Each record goes through `tracejudge extract` (a real process over a real file) and then through `ToolCorrectness`'s
view of the call: the error text is the result's text parts, and the call counts as failed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import _forkserver

EXE = os.path.join(os.path.dirname(sys.executable), "tracejudge")
FAILED = {"content": [{"type": "text", "text": "permission denied: /etc/shadow"}], "isError": True}
OK = {"content": [{"type": "text", "text": "3 files"}], "isError": False}


def _extract(tmp: Path, fmt: str, records: list[dict]) -> list[dict]:
    data = tmp / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    cfg = tmp / "cfg.json"
    cfg.write_text(json.dumps({"dataset": {"path": str(data), "format": fmt}, "metrics": [{"type": "ToolCorrectness"}], "run": {"dir": str(tmp / "run")}}))
    out = tmp / "cases.jsonl"
    proc = _forkserver.run([EXE, "extract", str(cfg), "-o", str(out), "--force"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in out.read_text().splitlines()]


def _calls(case: dict) -> list[dict]:
    return [{"error": None, **c} for s in case["trace"]["steps"] for c in s.get("tool_calls", [])]


@pytest.mark.parametrize("shape", ["object", "json text", "snake_case"])
def test_responses_function_call_output_with_is_error_is_a_failed_call(tmp_path: Path, shape: str) -> None:
    failed = {**{k: v for k, v in FAILED.items() if k != "isError"}, "is_error": True} if shape == "snake_case" else FAILED
    output = json.dumps(failed) if shape == "json text" else failed
    items = [{"type": "message", "role": "user", "content": "read the secrets"},
             {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{\"path\": \"/etc/shadow\"}"},
             {"type": "function_call_output", "call_id": "c1", "output": output},
             {"type": "function_call", "call_id": "c2", "name": "list_dir", "arguments": "{}"},
             {"type": "function_call_output", "call_id": "c2", "output": json.dumps(OK)},
             {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "I could not."}]}]
    (case,) = _extract(tmp_path, "openai-messages", [{"id": "r", "messages": items}])
    read, listed = _calls(case)
    assert read["error"] == "permission denied: /etc/shadow"
    assert listed["error"] is None


def test_a_chat_tool_message_and_an_anthropic_tool_result_holding_is_error_fail_the_call(tmp_path: Path) -> None:
    chat = [{"role": "user", "content": "read it"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "t1", "content": json.dumps(FAILED)},
            {"role": "assistant", "content": "no"}]
    (case,) = _extract(tmp_path, "openai-messages", [{"id": "chat", "messages": chat}])
    assert _calls(case)[0]["error"] == "permission denied: /etc/shadow"
    anth = [{"role": "user", "content": "read it"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "read_file", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1", "content": json.dumps(FAILED)}]},
            {"role": "assistant", "content": [{"type": "text", "text": "no"}]}]
    (case,) = _extract(tmp_path, "anthropic-messages", [{"id": "anth", "messages": anth}])
    assert _calls(case)[0]["error"] == "permission denied: /etc/shadow"


def test_an_openai_agents_function_span_whose_output_is_an_mcp_error_fails_the_call(tmp_path: Path) -> None:
    tid = "trace_00000001"
    lines = [{"object": "trace", "id": tid},
             {"object": "trace.span", "id": "s1", "trace_id": tid, "started_at": "2026-01-01T00:00:01+00:00", "ended_at": "2026-01-01T00:00:02+00:00",
              "span_data": {"type": "function", "name": "read_file", "input": "{}", "output": json.dumps(FAILED)}}]
    (case,) = _extract(tmp_path, "openai-agents", lines)
    assert _calls(case)[0]["error"] == "permission denied: /etc/shadow"
