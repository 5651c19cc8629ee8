"""Target kind `python`: sync and async callables, plain answers, raw traces through an adapter."""

from __future__ import annotations

import re

import live_agents
import pytest
from live_support import TESTS, by_key, live_config, read_jsonl, run_live
from tracejudge.core.errors import ConfigError
import _forkserver


def py_target(name: str, **extra):
    return {"kind": "python", "callable": f"live_agents:{name}", "pythonpath": str(TESTS), "retries": 0, **extra}


def echo_case(cid: str, text: str) -> dict:
    return {"id": cid, "input": text, "expected_tool_calls": [{"name": "echo", "arguments": {"turn": 0, "text": text}}], "metadata": {"team": "a"}}


@pytest.mark.parametrize("fn", ["agent", "sync_agent"])
def test_python_target_sync_and_async(tmp_path, fn):
    live_agents.CALLS.clear()
    config = live_config(tmp_path, [echo_case("a", "hi"), echo_case("b", "yo")], py_target(fn))
    outcome = run_live(config)
    results = by_key(read_jsonl(tmp_path / "run" / "results.jsonl"))
    assert outcome.summary["status"] == {"ok": 2}
    assert results[("a", 0)]["scores"]["ToolCalls"]["value"] == 1.0
    assert results[("b", 0)]["scores"]["ToolCalls"]["value"] == 1.0
    # The agent sees the case but never its expectations.
    assert len(live_agents.CALLS) == 2
    seen = {c["case_id"]: c for c in live_agents.CALLS}
    assert seen["a"]["case"] == {"id": "a", "input": "hi", "context": None, "turns": [], "tags": [], "metadata": {"team": "a"}}
    assert seen["a"]["turn"] == 0 and seen["a"]["history"] == [] and seen["a"]["input"] == "hi"
    assert seen["a"]["conversation_id"] != seen["b"]["conversation_id"]
    # The live trace is kept beside the results, as a native case.
    traces = {(t["case_id"], t["trial"]): t for t in read_jsonl(tmp_path / "run" / "traces.jsonl")}
    rec = traces[("a", 0)]
    assert rec["status"] == "ok" and rec["attempts"] == 1 and rec["turns"] is None
    assert rec["case"]["expected_tool_calls"] == [{"name": "echo", "arguments": {"turn": 0, "text": "hi"}}]
    trace = rec["case"]["trace"]
    assert trace["output"] == "turn 0: hi (after 0)"
    assert trace["steps"][0]["tool_calls"][0]["name"] == "echo"
    assert trace["usage"]["input_tokens"] == 10 and trace["usage"]["latency_s"] >= 0  # latency measured when not reported


def test_plain_string_answer_has_an_empty_trace(tmp_path):
    config = live_config(tmp_path, [{"id": "x", "input": "Ada", "expected_tool_calls": []}], py_target("plain_text"))
    run_live(config)
    (result,) = read_jsonl(tmp_path / "run" / "results.jsonl")
    assert result["status"] == "ok"
    assert result["scores"]["ToolCalls"]["value"] == 1.0  # expected no call, made none
    (rec,) = read_jsonl(tmp_path / "run" / "traces.jsonl")
    assert rec["case"]["trace"]["output"] == "hello Ada"
    assert rec["case"]["trace"].get("steps", []) == []


def test_raw_trace_is_normalized_by_its_format_adapter(tmp_path):
    case = {"id": "t", "input": "who am I?", "expected_tool_calls": [{"name": "get_user_details", "arguments": {"user_id": "u1"}}]}
    run_live(live_config(tmp_path, [case], py_target("openai_trace")))
    (result,) = read_jsonl(tmp_path / "run" / "results.jsonl")
    assert result["status"] == "ok" and result["scores"]["ToolCalls"]["value"] == 1.0
    (rec,) = read_jsonl(tmp_path / "run" / "traces.jsonl")
    (call,) = [c for s in rec["case"]["trace"]["steps"] for c in s.get("tool_calls", [])]
    assert call == {"id": "c1", "name": "get_user_details", "arguments": {"user_id": "u1"}, "result": {"name": "Ada"}}
    assert rec["case"]["trace"]["output"] == "You are Ada."


def test_unknown_callable_is_a_config_error_before_any_case(tmp_path):
    config = live_config(tmp_path, [echo_case("a", "hi")], py_target("no_such_function"))
    with pytest.raises(ConfigError, match="live_agents.*no attribute 'no_such_function'"):
        run_live(config)
    assert not (tmp_path / "run" / "results.jsonl").exists() or (tmp_path / "run" / "results.jsonl").read_text() == ""


def test_target_section_is_validated_with_file_and_key(tmp_path):
    from tracejudge.core.config import load_config

    cfg = tmp_path / "c.yaml"
    (tmp_path / "d.jsonl").write_text("")
    cfg.write_text("dataset: {path: d.jsonl}\ntarget:\n  kind: python\n  callable: no_colon_here\n")
    with pytest.raises(ConfigError) as err:
        load_config(cfg)
    assert f"{cfg}:2: target:" in str(err.value) and "package.module:function" in str(err.value)


def test_cli_reports_a_bad_target_as_a_config_error(tmp_path, capsys):
    from tracejudge.entrypoints.cli import main

    (tmp_path / "d.jsonl").write_text('{"id": "a", "input": "x"}\n')
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: d.jsonl}}\ntarget: {{kind: python, callable: 'live_agents:nope', pythonpath: {TESTS}}}\n"
                   "metrics: [{type: ToolCalls}]\nrun: {dir: run}\n")
    assert main(["run", str(cfg), "--no-progress"]) == 2
    assert "target.callable: 'live_agents' has no attribute 'nope'" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # a config error leaves nothing behind


def test_a_config_error_leaves_nothing_and_a_fixed_config_runs(tmp_path, monkeypatch, capsys):
    """An unimportable target or an unset key creates no run directory; one left with 0 results never blocks a changed config."""
    from tracejudge.entrypoints.cli import main

    (tmp_path / "d.jsonl").write_text('{"id": "a", "input": "x", "expected_tool_calls": []}\n')
    cfg = tmp_path / "c.yaml"
    body = "dataset: {path: d.jsonl}\nmetrics: [{type: ToolCalls}]\nrun: {dir: run}\n"
    cfg.write_text(body + "target: {kind: python, callable: 'no_such_agent_module:respond'}\n")
    assert main(["run", str(cfg), "--no-progress"]) == 2
    assert "cannot import module 'no_such_agent_module'" in capsys.readouterr().err
    assert main(["run", str(cfg), "--no-progress", "--fresh"]) == 2  # nor a new, empty one with --fresh
    capsys.readouterr()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg.write_text(body + "target: {kind: python, callable: 'live_agents:agent', pythonpath: " + str(TESTS) + "}\n"
                   "judge: {model: 'openai:gpt-4o-mini'}\n")
    assert main(["run", str(cfg), "--no-progress"]) == 2
    assert "OPENAI_API_KEY is not set" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
    # a directory an older version left behind (manifest, no results) does not block the fixed config
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "manifest.json").write_text('{"config_hash": "0", "config": {"metrics": [{"type": "Contains"}]}, "dataset": {}}')
    cfg.write_text(body + "target: {kind: python, callable: 'live_agents:agent', pythonpath: " + str(TESTS) + "}\n")
    assert main(["run", str(cfg), "--no-progress"]) == 0


def test_a_python_target_imports_from_the_config_folder(tmp_path, monkeypatch):
    """`callable: my_agent:respond` with my_agent.py beside the config, run from another directory: no `pythonpath` needed."""
    from tracejudge.entrypoints.cli import main

    folder = tmp_path / "cfgdir"
    folder.mkdir()
    (folder / "my_agent_beside_config.py").write_text("def respond(request):\n    return 'hello ' + request.input\n")
    (folder / "d.jsonl").write_text('{"id": "a", "input": "x", "expected_output": "hello x"}\n')
    cfg = folder / "c.yaml"
    cfg.write_text("dataset: {path: d.jsonl}\ntarget: {kind: python, callable: 'my_agent_beside_config:respond'}\nmetrics: [{type: ExactMatch}]\n")
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(cfg), "--no-progress"]) == 0
    assert (folder / "runs" / "c" / "results.jsonl").exists()  # the default run directory: runs/<stem> beside the config


def test_malformed_replies_are_target_errors_naming_the_field(tmp_path):
    cases = [{"id": "bad", "input": "x", "metadata": {"mode": "bad_trace"}}, {"id": "typo", "input": "x", "metadata": {"mode": "typo"}},
             {"id": "text", "input": "x", "metadata": {"mode": "trace_text"}}, echo_case("fine", "x")]
    outcome = run_live(live_config(tmp_path, cases, py_target("agent")))
    assert outcome.summary["status"] == {"ok": 1, "target_error": 3}
    results = by_key(read_jsonl(tmp_path / "run" / "results.jsonl"))
    assert results[("bad", 0)]["error"]["message"] == "reply trace (native) is invalid: steps.0.tool_calls.0.name: Field required"
    assert results[("typo", 0)]["error"]["message"] == "invalid reply: ouput: unknown key"
    # (the trace as a whole: named, where it was an empty field name, `is invalid: : Input should be …`)
    assert results[("text", 0)]["error"]["message"] == "reply trace (native) is invalid: trace: Input should be a valid dictionary or instance of Trace"


@pytest.mark.parametrize("cap", [1, 3])
def test_concurrency_caps_cases_in_flight_at_the_target(tmp_path, monkeypatch, cap):
    monkeypatch.setenv("LIVE_AGENT_DELAY", "0.03")
    live_agents.IN_FLIGHT.update(now=0, max=0)
    outcome = run_live(live_config(tmp_path, [echo_case(f"c{i}", "x") for i in range(9)], py_target("agent", concurrency=cap)))
    assert outcome.summary["status"] == {"ok": 9}
    assert live_agents.IN_FLIGHT["max"] == cap


def _agent_workspace(root, module: str, ids: list[str], source: str) -> None:
    # An agent module `module` (`source`), cases `ids` and `c.yaml` running it as the target (no retries), in `root`.
    (root / f"{module}.py").write_text(source)
    (root / "d.jsonl").write_text("".join(f'{{"id": "{i}", "input": "x"}}\n' for i in ids))
    (root / "c.yaml").write_text(f"dataset: {{path: d.jsonl}}\ntarget: {{kind: python, callable: '{module}:respond', retries: 0}}\n"
                                 "metrics: [{type: ToolCalls}]\nrun: {dir: run}\n")


def test_an_agent_that_raises_is_named_as_a_bug_and_retried_by_the_same_command(tmp_path):
    """A ZeroDivisionError in the agent is its bug: the terminal says the agent raised it, never "transient", and
    (as README documents for every target_error) the same command retries it; a transient failure keeps its word."""
    import subprocess
    import sys

    _agent_workspace(tmp_path, "buggy_agent", ["a", "b"],
                     "from tracejudge import TransientTargetError\n\n"
                     "def respond(request):\n"
                     "    if request.case_id == 'flaky':\n"
                     "        raise TransientTargetError('503 from the model gateway')\n"
                     "    return 1 / 0\n")

    def run() -> subprocess.CompletedProcess[str]:
        return _forkserver.run([sys.executable, "-m", "tracejudge", "run", "c.yaml", "--no-progress"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)

    first = run()
    assert first.returncode == 1, first.stdout + first.stderr
    err = " ".join(first.stderr.split())
    assert "ended in a transient failure" not in err
    assert "2 results ended because the agent raised ZeroDivisionError: division by zero" in err
    assert "the same command retries them" in err and "tracejudge run c.yaml --no-progress" in err
    again = run()
    assert "(2 new results, 0 already finished, 2 retried after the agent raised)" in " ".join(again.stdout.split())
    assert "after a transient failure" not in again.stdout and "ended in a transient failure" not in again.stderr

    (tmp_path / "d.jsonl").write_text('{"id": "a", "input": "x"}\n{"id": "flaky", "input": "y"}\n')
    mixed = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "c.yaml", "--no-progress", "--fresh"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    err = " ".join(mixed.stderr.split())
    assert "1 results ended in a transient failure (judge, target or provider); 1 results ended because the agent raised" in err


def test_an_agent_raising_inside_a_task_group_is_named_by_what_failed_and_a_dropped_connection_stays_transient(tmp_path):
    """Agents that run tools concurrently raise what failed inside an exception group. A dropped connection there
    was filed as the agent's bug (not retried, as a ConnectionError raised alone is), and every failure read
    "ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)"."""
    import subprocess
    import sys

    _agent_workspace(tmp_path, "group_agent", ["net", "bug"],
                     "import anyio\n\n"
                     "async def respond(request):\n"
                     "    async def tool():\n"
                     "        if request.case_id == 'net':\n"
                     "            raise ConnectionResetError('peer reset the connection')\n"
                     "        raise ValueError('no such flight')\n"
                     "    async with anyio.create_task_group() as tg:\n"
                     "        tg.start_soon(tool)\n")
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "c.yaml", "--no-progress"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    err = " ".join(done.stderr.split())
    assert "1 results ended in a transient failure (judge, target or provider); 1 results ended because the agent raised ValueError: no such flight" in err, err
    assert "TaskGroup" not in err
    results = {r["case_id"]: r for r in read_jsonl(tmp_path / "run" / "results.jsonl")}
    assert "ConnectionResetError: peer reset the connection" in results["net"]["error"]["message"]
    assert results["bug"]["error"]["message"].endswith("ValueError: no such flight")


def test_an_agent_whose_reply_cannot_be_read_is_named_as_a_bug_not_a_transient_failure(tmp_path):
    """An agent returning `42`, or text holding a lone surrogate, was counted among "results ended in a transient
    failure (judge, target or provider)": nothing transient failed, the agent's reply could not be read."""
    import subprocess
    import sys

    _agent_workspace(tmp_path, "odd_agent", ["a", "b", "flaky"],
                     "from tracejudge import TransientTargetError\n\n"
                     "def respond(request):\n"
                     "    if request.case_id == 'flaky':\n"
                     "        raise TransientTargetError('503 from the model gateway')\n"
                     "    return 42 if request.case_id == 'a' else {'output': 'half \\ud800'}\n")
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "c.yaml", "--no-progress"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    err = " ".join(done.stderr.split())
    # (Which reply is named first depends on which finished first.)
    assert ("1 results ended in a transient failure (judge, target or provider); 2 results ended because the agent's reply could "
            "not be read (invalid reply: ") in err, err
    assert re.search(r"\(invalid reply: (expected a string, a Trace or a mapping with `output`, got int|output: holds a lone surrogate .*), "
                     r"the first; a bug in the agent, not a transient failure\)", err), err


def test_the_retry_line_says_how_many_results_the_named_exception_ended():
    # "3 results ended because the agent raised ValueError: x; 2 other error(s)" read as three ValueErrors.
    from tracejudge.entrypoints.commands.run import _pending

    line = _pending(3, ["ValueError: x", "KeyError: 'y'", "KeyError: 'y'"], 0)
    assert line.startswith("3 results ended because the agent raised exceptions: ValueError: x in 1, 1 other kind in the rest (")
    assert _pending(2, ["ValueError: x"] * 2, 0).startswith("2 results ended because the agent raised ValueError: x (a bug")


_HALF_SURROGATES = '''
def answers(request):
    return "half \\ud800 here"


def raises(request):
    raise ValueError("agent \\udfff broke")
'''


@pytest.mark.parametrize(("fn", "message"), [
    ("answers", "invalid reply: output: holds a lone surrogate (half of a UTF-16 pair, no character on its own), which UTF-8 cannot carry"),
    ("raises", "ValueError: agent \\udfff broke"),
])
def test_an_agent_text_holding_a_lone_surrogate_is_its_case_target_error_saying_so(tmp_path, fn, message):
    # Unwritable, the text made the write of traces.jsonl fail: the case's error was that UnicodeEncodeError, in
    # place of the agent's own, and it read as a transient failure for a resume to retry.
    (tmp_path / "halves.py").write_text(_HALF_SURROGATES)
    target = {"kind": "python", "callable": f"halves:{fn}", "pythonpath": str(tmp_path), "retries": 0}
    run_live(live_config(tmp_path, [{"id": "x", "input": "hi"}], target))
    (result,) = read_jsonl(tmp_path / "run" / "results.jsonl")
    assert result["status"] == "target_error" and result["error"]["message"] == message, result["error"]
    (rec,) = read_jsonl(tmp_path / "run" / "traces.jsonl")
    assert rec["error"]["message"] == message
