"""Target kinds `http` (a real aiohttp server on 127.0.0.1) and `command` (real subprocesses)."""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import anyio
import pytest
from aiohttp import web
from live_support import by_key, live_config, read_jsonl
from ray_procs import running
from tracejudge.core.errors import ConfigError
from tracejudge.engine.runner import run
import _forkserver

SECRET = "s3cret-token-value"


def cases() -> list[dict]:
    return [
        {"id": "ok", "input": "hi", "turns": ["again"], "expected_tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}, {"name": "echo", "arguments": {"text": "again"}}]},
        {"id": "busy", "input": "hi", "metadata": {"busy": 2}, "expected_tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}]},
        {"id": "down", "input": "hi", "metadata": {"busy": 99}},
        {"id": "refused", "input": "hi", "metadata": {"status": 422}},
        {"id": "garbage", "input": "hi", "metadata": {"garbage": True}},
    ]


def http_server(seen: list[dict]) -> web.Application:
    attempts: Counter[str] = Counter()

    async def handle(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append({"headers": dict(request.headers), "body": body})
        meta = body["case"]["metadata"]
        attempts[body["case_id"]] += body["turn"] == 0
        if attempts[body["case_id"]] <= meta.get("busy", 0):
            return web.Response(status=503, text="overloaded", headers={"Retry-After": "0"})
        if "status" in meta:
            return web.Response(status=meta["status"], text="no such order")
        if meta.get("garbage"):
            return web.Response(text="<html>oops</html>")
        calls = [{"name": "echo", "arguments": {"text": body["input"]}}]
        return web.json_response({"output": f"{body['input']} ({len(body['history'])})", "trace": {"steps": [{"tool_calls": calls}]}})

    app = web.Application()
    app.router.add_post("/agent", handle)
    return app


def test_http_target_against_a_local_server(tmp_path, monkeypatch):
    monkeypatch.setenv("TJ_TEST_TOKEN", SECRET)
    seen: list[dict] = []

    async def main():
        runner = web.AppRunner(http_server(seen))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        try:
            target = {
                "kind": "http",
                "url": f"http://127.0.0.1:{port}/agent?tok=abc",  # a token in the query: never in a message (README)
                "headers": {"Authorization": "Bearer ${TJ_TEST_TOKEN}", "X-Team": "evals"},
                "retries": 2,
                "backoff_s": 0,
                "concurrency": 3,
            }
            return await run(live_config(tmp_path, cases(), target))
        finally:
            await runner.cleanup()

    outcome = anyio.run(main)
    assert outcome.summary["status"] == {"ok": 2, "target_error": 3}
    results = by_key(read_jsonl(tmp_path / "run" / "results.jsonl"))
    assert results[("ok", 0)]["scores"]["ToolCalls"]["value"] == 1.0
    assert [t["output"] for t in results[("ok", 0)]["metadata"]["turns"]] == ["hi (0)", "again (1)"]
    assert results[("busy", 0)]["status"] == "ok"  # two 503s, then served
    port_url = seen[0]["headers"]["Host"]
    assert results[("down", 0)]["error"]["message"] == f"HTTP 503 from http://{port_url}/agent: overloaded (gave up after 3 attempts)"
    assert results[("refused", 0)]["error"]["message"] == f"HTTP 422 from http://{port_url}/agent: no such order"
    assert results[("garbage", 0)]["error"]["message"].startswith(f"reply from http://{port_url}/agent is not JSON")
    assert not any("tok=abc" in r["error"]["message"] for r in results.values() if r.get("error"))
    per_case = Counter(s["body"]["case_id"] for s in seen)
    assert per_case == {"ok": 2, "busy": 3, "down": 3, "refused": 1, "garbage": 1}
    # The secret is sent, expanded from the environment, and written nowhere.
    assert {s["headers"]["Authorization"] for s in seen} == {f"Bearer {SECRET}"}
    assert {s["headers"]["X-Team"] for s in seen} == {"evals"}
    for f in (tmp_path / "run").iterdir():
        assert SECRET not in f.read_text(encoding="utf-8", errors="replace"), f.name
    assert "${TJ_TEST_TOKEN}" in (tmp_path / "run" / "manifest.json").read_text()


def test_http_header_variable_missing_is_a_config_error(tmp_path, monkeypatch):
    monkeypatch.delenv("TJ_UNSET_TOKEN", raising=False)
    target = {"kind": "http", "url": "http://127.0.0.1:9/agent", "headers": {"Authorization": "Bearer ${TJ_UNSET_TOKEN}"}}
    with pytest.raises(ConfigError, match=r"target.headers.Authorization: environment variable TJ_UNSET_TOKEN is not set"):
        anyio.run(run, live_config(tmp_path, cases()[:1], target))


def test_an_http_target_nobody_listens_on_stops_the_run_with_exit_3_and_resumes_once_it_is_up(tmp_path):
    # It used to fail every case as target_error and exit 1 (the gate), where an unreachable judge exits 3: an agent
    # that is not running says nothing about the agent. Now it is retried, then stops the run marking no case.
    import json
    import socket
    import subprocess
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import yaml

    with socket.socket() as probe:  # a port nobody listens on (until the agent starts below)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(json.dumps({"id": f"c{i}", "input": "hi", "expected_tool_calls": [{"name": "echo"}]}) + "\n" for i in range(3)))
    cfg = tmp_path / "live.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "ToolCalls"}],
                                   "target": {"kind": "http", "url": f"http://127.0.0.1:{port}/agent", "retries": 1, "backoff_s": 0},
                                   "run": {"dir": str(tmp_path / "run")}}))
    tj = [str(Path(sys.executable).with_name("tracejudge")), "run", str(cfg), "--no-progress"]
    got = _forkserver.run(tj, capture_output=True, text=True, timeout=120)
    assert got.returncode == 3, got.stdout + got.stderr
    lines = [line for line in got.stderr.splitlines() if line.startswith("error")]
    assert len(lines) == 1 and f"cannot reach the http target at http://127.0.0.1:{port}/agent after 2 attempts" in lines[0], got.stderr
    assert read_jsonl(tmp_path / "run" / "results.jsonl") == []  # no case marked: nothing for a resume to retry or count

    class Agent(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps({"output": "done", "trace": {"steps": [{"tool_calls": [{"name": "echo"}]}]}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Agent)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        got = _forkserver.run(tj, capture_output=True, text=True, timeout=120)
    finally:
        server.shutdown()
        server.server_close()
    assert got.returncode == 0, got.stdout + got.stderr
    assert [r["status"] for r in read_jsonl(tmp_path / "run" / "results.jsonl")] == ["ok"] * 3


AGENT_SCRIPT = r'''
import json, sys
req = json.load(sys.stdin)
meta = req["case"]["metadata"]
if meta.get("exit"):
    counter = meta.get("counter")
    if counter:
        with open(counter, "a") as fh:
            fh.write("x")
        if len(open(counter).read()) > meta.get("times", 99):
            meta = {}
    if meta.get("exit"):
        sys.stderr.write("agent says no\n")
        sys.exit(meta["exit"])
if meta.get("garbage"):
    print("not json")
    sys.exit(0)
out = {"output": "you said " + req["input"], "trace": {"steps": [{"tool_calls": [{"name": "echo", "arguments": {"text": req["input"], "turn": req["turn"], "history": len(req["history"])}}]}]}}
json.dump(out, sys.stdout)
'''


def test_command_target_runs_a_process_per_turn(tmp_path):
    script = tmp_path / "agent.py"
    script.write_text(AGENT_SCRIPT)
    counter = tmp_path / "counter"
    cases_ = [
        {"id": "ok", "input": "a", "turns": ["b"], "expected_tool_calls": [{"name": "echo", "arguments": {"text": "a", "turn": 0, "history": 0}}, {"name": "echo", "arguments": {"text": "b", "turn": 1, "history": 1}}]},
        {"id": "tempfail", "input": "a", "metadata": {"exit": 75, "counter": str(counter), "times": 1}, "expected_tool_calls": [{"name": "echo"}]},
        {"id": "refuses", "input": "a", "metadata": {"exit": 3}},
        {"id": "garbage", "input": "a", "metadata": {"garbage": True}},
    ]
    target = {"kind": "command", "command": f"{sys.executable} agent.py", "cwd": str(tmp_path), "retries": 2, "backoff_s": 0, "concurrency": 2}
    outcome = anyio.run(run, live_config(tmp_path, cases_, target))
    assert outcome.summary["status"] == {"ok": 2, "target_error": 2}
    results = by_key(read_jsonl(tmp_path / "run" / "results.jsonl"))
    assert results[("ok", 0)]["scores"]["ToolCalls"]["value"] == 1.0
    assert results[("ok", 0)]["metadata"]["turns"][1]["output"] == "you said b"
    assert results[("tempfail", 0)]["status"] == "ok" and counter.read_text() == "xx"  # exit 75 once, retried
    assert results[("refuses", 0)]["error"]["message"] == f"{sys.executable} exited with status 3: agent says no"
    assert results[("garbage", 0)]["error"]["message"] == f"{sys.executable} wrote no JSON reply on stdout: 'not json'"


def test_command_target_that_hangs_is_killed_at_the_timeout(tmp_path):
    script = tmp_path / "sleepy.py"
    script.write_text("import sys, time\nsys.stdin.read()\nprint(open('pidfile','w').write(str(__import__('os').getpid())))\ntime.sleep(60)\n")
    target = {"kind": "command", "command": [sys.executable, "sleepy.py"], "cwd": str(tmp_path), "timeout_s": 1.0}
    outcome = anyio.run(run, live_config(tmp_path, [{"id": "z", "input": "a"}], target))
    assert outcome.summary["status"] == {"target_error": 1}
    pid = int((tmp_path / "pidfile").read_text())
    assert not running(pid)  # killed, not left running


def test_command_not_found_is_a_config_error(tmp_path):
    target = {"kind": "command", "command": ["no-such-agent-binary"]}
    with pytest.raises(ConfigError, match="program 'no-such-agent-binary' not found"):
        anyio.run(run, live_config(tmp_path, [{"id": "z", "input": "a"}], target))
