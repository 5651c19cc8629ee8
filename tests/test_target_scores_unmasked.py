"""A live target's trace is scored as the agent produced it; what is written of it, and the judge's prompt, are masked.

The target stage masks a live trace before `traces.jsonl`, results and reports see it. The deterministic metrics
scored that masked copy, so an expected argument a mask hides (a password, a value under a name ending in `token`)
never matched the call that passed it: `login({"password": …})` and `list_files({"page_token": "pg2"})` scored 0.5
live where the same trace read from a dataset scored 1.0. A python agent on the real runner; the canaries are fake.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import tracejudge as tj

from live_support import live_config, read_jsonl, run_live
from tracejudge.llm.redact import MASK
from tracejudge.stages.judge.metrics import TaskCompletion

PASSWORD = "Hunt3r" + "Canary-4471"
TOKEN = "tok_" + "9f8e7d6c"

AGENT = f'''
def agent(request):
    calls = [{{"name": "login", "arguments": {{"user": "ann", "password": "{PASSWORD}"}}, "result": "welcome"}},
             {{"name": "list_files", "arguments": {{"page_token": "pg2"}}, "result": {{"files": ["a"], "next_page_token": "pg3"}}}}]
    return {{"output": 'done; token: "{TOKEN}", token: 512', "trace": {{"steps": [{{"tool_calls": calls}}]}}}}
'''

CASE = {"id": "c1", "input": "list my files", "expected_tool_calls": [
    {"name": "login", "arguments": {"user": "ann", "password": PASSWORD}},
    {"name": "list_files", "arguments": {"page_token": "pg2"}}]}


def test_a_live_trace_is_scored_unmasked_and_written_masked(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "files_agent.py").write_text(AGENT, encoding="utf-8")
    prompted: list[str] = []
    plan = TaskCompletion.plan

    def seen(self, case):  # what the judge's prompt is rendered from
        prompted.append(case.trace.model_dump_json())
        return plan(self, case)

    monkeypatch.setattr(TaskCompletion, "plan", seen)
    config = live_config(tmp_path, [CASE], {"kind": "python", "callable": "files_agent:agent", "pythonpath": str(tmp_path), "retries": 0},
                         metrics=[{"type": "ToolCalls", "arguments": "exact"}, {"type": "TaskCompletion"}],
                         judge={"provider": "simulator", "model": "sim"})
    run_live(config)
    run_dir = tmp_path / "run"
    [result] = read_jsonl(run_dir / "results.jsonl")
    assert result["scores"]["ToolCalls"]["value"] == 1.0, result["scores"]["ToolCalls"]
    # What is written is masked: the password and the token, not the page token or the count.
    [line] = read_jsonl(run_dir / "traces.jsonl")
    calls = line["case"]["trace"]["steps"][0]["tool_calls"]
    assert calls[0]["arguments"] == {"user": "ann", "password": MASK}
    assert calls[1]["arguments"] == {"page_token": "pg2"} and calls[1]["result"]["next_page_token"] == "pg3"
    assert line["case"]["trace"]["output"] == f'done; token: "{MASK}", token: 512'
    leaks = [(p.name, s) for p in run_dir.rglob("*") if p.is_file() for s in (PASSWORD, TOKEN) if s.encode() in p.read_bytes()]
    assert leaks == []
    # The judge is sent the masked trace, as the files keep it.
    assert prompted and all(PASSWORD not in p and TOKEN not in p and MASK in p for p in prompted), prompted
    assert json.loads(prompted[0])["steps"][0]["tool_calls"][1]["arguments"] == {"page_token": "pg2"}


SECRET = "plainWords" + "Secret42"  # no credential's shape: only its value, from the environment, says it is secret

ECHO_AGENT = '''
import json, os, sys
json.load(sys.stdin)
secret = os.environ["TJ_ECHO_SECRET"]
calls = [{"name": "search", "arguments": {"query": "connect"}, "result": "ok"},
         {"name": "lookup", "arguments": {"q": "connect with " + secret}, "result": "ok"}]
print(json.dumps({"output": "done", "trace": {"steps": [{"tool_calls": calls}], "output": "done"}}))
'''


@tj.metric
def quoted_secret(case, trace):
    """A custom metric quoting the agent's second call's argument in its reason and details."""
    query = trace.steps[0].tool_calls[1].arguments["q"]
    return tj.Score(value=1.0, reason=f"saw {query!r}", details={query: query})


def test_scores_of_an_unmasked_trace_never_quote_a_target_secret(tmp_path: Path, monkeypatch) -> None:
    # A `${NAME}` value the agent echoes is masked in the copy that is written; the scores are computed on the agent's
    # own trace, and what their reasons and details quote of it is masked by value (it has no credential's shape).
    monkeypatch.setenv("TJ_ECHO_SECRET", SECRET)
    (tmp_path / "echo_agent.py").write_text(ECHO_AGENT, encoding="utf-8")
    case = {"id": "c1", "input": "connect", "expected_tool_calls": [
        {"name": "search", "arguments": {"query": "connect"}}, {"name": "lookup", "arguments": {"q": "other"}}]}
    config = live_config(tmp_path, [case], {"kind": "command", "command": [sys.executable, str(tmp_path / "echo_agent.py"), "${TJ_ECHO_SECRET}"],
                                            "retries": 0},
                         metrics=[{"type": "ToolCalls", "arguments": "exact"}, {"type": "test_target_scores_unmasked:quoted_secret"}])
    run_live(config)
    run_dir = tmp_path / "run"
    [result] = read_jsonl(run_dir / "results.jsonl")
    tool_calls = result["scores"]["ToolCalls"]
    assert tool_calls["value"] == 0.5, tool_calls
    assert MASK in tool_calls["reason"], tool_calls["reason"]
    custom = result["scores"]["quoted_secret"]
    assert custom["reason"] == f"saw 'connect with {MASK}'" and custom["details"] == {f"connect with {MASK}": f"connect with {MASK}"}, custom
    leaks = [p.name for p in run_dir.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert leaks == []
