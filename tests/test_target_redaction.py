"""A live target that echoes its credentials: the token never reaches the run directory or the console.

A real aiohttp server on 127.0.0.1 echoes the `Authorization` header back,
once in a 500 body and once in a 200 reply's output and trace; the run goes
through the real CLI in a child process.
"""

from __future__ import annotations

import json
import os
import sys

import anyio
import yaml
from aiohttp import web
from live_support import write_cases
from tracejudge.llm.redact import MASK, env_secrets, redact_data

CANARY = "sk-canary-123456789"
# Shaped like no known credential, so only the `${VAR}` rule can catch it.
PLAIN = "plaincanary4242"


def echo_server() -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        body = await request.json()
        echo = f"{request.headers['Authorization']} {request.headers['X-Team']}"
        if body["case_id"] == "fails":
            return web.Response(status=500, text=f"upstream rejected headers: {echo}")
        calls = [{"name": "lookup", "arguments": {"header": echo}, "result": echo}]
        return web.json_response({"output": f"you sent {echo}", "trace": {"steps": [{"tool_calls": calls, "thought": "plain step"}]}})

    app = web.Application()
    app.router.add_post("/agent", handle)
    return app


def test_echoed_target_token_is_redacted_everywhere(tmp_path):
    cases = [{"id": "fails", "input": "hi"}, {"id": "echoes", "input": "hi", "turns": ["again"]}]
    data = write_cases(tmp_path / "cases.jsonl", cases)
    run_dir = tmp_path / "run"

    async def main():
        runner = web.AppRunner(echo_server())
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        config = {
            "dataset": {"path": str(data), "format": "native"},
            "metrics": [{"type": "ToolCalls", "arguments": "exact"}],
            "target": {
                "kind": "http",
                "url": f"http://127.0.0.1:{port}/agent",
                "headers": {"Authorization": "Bearer ${AGENT_TOKEN}", "X-Team": "${TEAM_TOKEN}"},
                "retries": 1,
                "backoff_s": 0,
            },
            "run": {"dir": str(run_dir), "flush_every": 1},
        }
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        env = {**os.environ, "AGENT_TOKEN": CANARY, "TEAM_TOKEN": PLAIN}
        try:
            return await anyio.run_process([sys.executable, "-m", "tracejudge", "run", str(path)], env=env, cwd=tmp_path, check=False)
        finally:
            await runner.cleanup()

    proc = anyio.run(main)
    out = proc.stdout.decode() + proc.stderr.decode()
    assert "target_error" in out or (run_dir / "results.jsonl").exists(), out
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"results.jsonl", "traces.jsonl", "report.md", "report.html", "junit.xml"} <= names, names
    for secret in (CANARY, PLAIN, "sk-canary"):
        assert secret not in out
        leaks = [p.name for p in files if secret.encode() in p.read_bytes()]
        assert leaks == [], (secret, leaks)
    traces = {json.loads(line)["case_id"]: json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()}
    assert traces["fails"]["status"] == "target_error" and "HTTP 500" in traces["fails"]["error"]["message"]
    assert MASK in traces["fails"]["error"]["message"]
    ok = traces["echoes"]
    assert ok["status"] == "ok"
    assert ok["case"]["trace"]["output"] == f"you sent Bearer {MASK} {MASK}"
    assert ok["case"]["trace"]["steps"][0]["thought"] == "plain step"  # text without a secret is left as the agent wrote it
    assert [t["output"] for t in ok["turns"]] == [f"you sent Bearer {MASK} {MASK}"] * 2


def test_env_secrets_and_redact_data():
    environ = {"A": "value-one", "B": "xy", "C": "value-three"}
    assert env_secrets(["Bearer ${A}", "${B} ${UNSET}", None, "${A}/${C}"], environ) == ("value-one", "value-three")
    data = {"keep": "plain", "hit": ["has value-one inside", 3, None]}
    assert redact_data(data, ["value-one"], only_with_secret=True) == {"keep": "plain", "hit": [f"has {MASK} inside", 3, None]}
    assert redact_data({"e": "Bearer abcdefgh"}) == {"e": f"Bearer {MASK}"}


def test_python_agent_exception_with_a_dsn_password_is_redacted(tmp_path):
    # The password sits in a module constant: the traceback's source line names it, never shows it.
    password = "dsn" + "Pa55word-xyz"
    (tmp_path / "dsn_agent.py").write_text(
        f"DSN = 'postgresql://app:{password}@db.internal:5432/orders'\n\n"
        "def agent(request):\n    raise RuntimeError(f'could not connect to {DSN}: timeout expired')\n", encoding="utf-8")
    data = write_cases(tmp_path / "cases.jsonl", [{"id": "db", "input": "hi"}])
    config = {"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "ToolCalls"}],
              "target": {"kind": "python", "callable": "dsn_agent:agent", "pythonpath": str(tmp_path), "retries": 0},
              "run": {"dir": str(tmp_path / "run")}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    proc = anyio.run(lambda: anyio.run_process([sys.executable, "-m", "tracejudge", "run", str(path)], cwd=tmp_path, check=False))
    assert password not in proc.stdout.decode() + proc.stderr.decode()
    files = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    assert "results.jsonl" in {p.name for p in files}
    assert [p.name for p in files if password.encode() in p.read_bytes()] == []
    (result,) = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert result["status"] == "target_error"
    assert f"postgresql://app:{MASK}@db.internal:5432/orders: timeout expired" in result["error"]["message"]
    assert f"app:{MASK}@db.internal" in result["error"]["details"]["traceback"]
