"""A judge that quotes a trace's credential back alone, without the name it stood after, has it masked too.

A tool result held `"aws_secret_access_key": "<secret>"` and `"db_password": "<password>"`: masked in every quote of
the trace, but a judge's reason saying "the secret <secret> was exposed" has no shape a pattern can tell from other
text, and it reached results.jsonl, the reports and the judge cache. The judge now masks, in each reply, the values
its request's prompt held as credentials (`reply_secrets.prompt_secrets`). A real `tracejudge run` against the simulator
behind a loopback proxy that rewrites every reason to quote the values bare.

The canaries are assembled at run time (no credential-shaped literal in the source); the AWS one is AWS's documented
example.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from tracejudge.llm.redact import MASK
from tracejudge.llm.reply_secrets import prompt_secrets, quoted_values
from tracejudge.llm.wire.records import JudgeRequest
import _forkserver

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
DB_PASSWORD = "hunter2" + "hunter2"
BEARER = "Zx81" + "qWertyUiop4455"
SPACED = "correct horse " + "battery staple 42"  # a passphrase: spaces in it
QUOTED = 'Tr0ub4dor"&' + "3\\x"  # a quote and a backslash: a JSON string in the prompt, escaped
SAID = f"The tool exposed the secret {AWS_SECRET}, the passwords {DB_PASSWORD}, {SPACED} and {QUOTED}, token {BEARER}."


class _QuotingProxy:
    """A loopback server forwarding to `upstream`, each reply's `reason` fields replaced by text quoting the canaries bare."""

    def __init__(self, upstream: str, refuse: bool = False) -> None:
        import asyncio

        from aiohttp import ClientSession, web

        self.upstream, self.url = upstream, ""
        ready = threading.Event()

        async def handle(req: web.Request) -> web.Response:
            body = await req.read()
            async with ClientSession() as s, s.request(req.method, self.upstream + req.path_qs, data=body or None,
                                                       headers={"content-type": "application/json"}) as r:
                data, status = await r.read(), r.status
            if req.method == "POST" and req.path.endswith("/chat/completions") and status == 200:
                reply = json.loads(data)
                message = reply["choices"][0]["message"]
                if refuse:  # a refusal quoting them (OpenAI's `message.refusal`, HTTP 200, billed)
                    message["content"], message["refusal"] = None, f"I will not repeat this. {SAID}"
                else:
                    message["content"] = json.dumps(_reasons(json.loads(message["content"]), SAID))
                data = json.dumps(reply).encode()
            return web.Response(body=data, status=status, content_type="application/json")

        async def main() -> None:
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", handle)
            runner = web.AppRunner(app)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
            self._stop = asyncio.Event()
            ready.set()
            await self._stop.wait()
            await runner.cleanup()

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=lambda: self._loop.run_until_complete(main()), daemon=True)
        self._thread.start()
        assert ready.wait(30)

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)


def _reasons(value: Any, said: str) -> Any:
    if isinstance(value, dict):
        # (every answer "no": a question that fails is quoted in the score's reason with its own reason)
        return {k: said if k == "reason" else "no" if k == "answer" else _reasons(v, said) for k, v in value.items()}
    if isinstance(value, list):
        return [_reasons(v, said) for v in value]
    return value


def test_prompt_secrets_are_the_credentials_the_prompt_quotes() -> None:
    prompt = (f'result: {{"aws_secret_access_key": "{AWS_SECRET}", "db_password": "{DB_PASSWORD}", "password": "required"}}\n'
              f"Authorization: Bearer {BEARER}")
    request = JudgeRequest(model="m", messages=({"role": "system", "content": "Judge."}, {"role": "user", "content": prompt}),
                           schema={}, schema_name="v", max_tokens=10)
    assert set(prompt_secrets(request)) == {AWS_SECRET, DB_PASSWORD, BEARER}  # not "required": no secret's shape
    assert quoted_values("no credential here: the password field is required") == ()


def test_the_data_fence_is_no_credential_hint() -> None:
    """Every judge prompt holds the data fence's `BEGIN` (the system prompt names it too), which the credential
    pre-check took for a PEM block's `-----BEGIN`: each request then ran the whole credential search over its prompt
    (about 3 ms for a short trace, more for a long one) to find nothing. A PEM block is still found and masked."""
    from tracejudge.llm.redact import redact
    from tracejudge.llm.redact_patterns import _HINT
    from tracejudge.stages.judge.base import SYSTEM

    fenced = f"{SYSTEM}\n==== DATA 7306a6320faf BEGIN ====\n## Trace\nStep 1:\n call 1: search({{day:0}})\n==== DATA 7306a6320faf END ===="
    assert _HINT.search(fenced) is None and quoted_values(fenced) == ()
    pem = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq2\n-----END RSA PRIVATE KEY-----"
    assert _HINT.search(pem) is not None and "MIIEpAIBAAKCAQEA" not in redact(f"{fenced}\n{pem}")


@pytest.mark.parametrize("refuse", [False, True], ids=["reasons", "refusal"])
def test_a_judge_quoting_trace_credentials_bare_has_them_masked_everywhere(tmp_path: Path, simulator: Any, refuse: bool) -> None:
    sim = simulator()
    proxy = _QuotingProxy(sim.url, refuse)
    try:
        case = {"id": "acct", "input": "Look up my account.",
                "trace": {"steps": [{"tool_calls": [{"name": "get_account", "arguments": {"user": "bob", "authorization": f"Bearer {BEARER}"},
                                                     "result": {"status": "ok", "aws_secret_access_key": AWS_SECRET, "db_password": DB_PASSWORD,
                                                                "wifi_password": SPACED, "admin_password": QUOTED}}]}],
                          "output": "Your account is fine."}}
        (tmp_path / "cases.jsonl").write_text(json.dumps(case) + "\n")
        (tmp_path / "run.yaml").write_text(yaml.safe_dump({
            "dataset": {"path": "cases.jsonl", "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
            "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": proxy.url + "/v1", "api_key_env": None},
            "cache": {"dir": "cache"}, "run": {"dir": "run"}}))
        got = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "run.yaml", "--no-progress"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=180)
        assert got.returncode in (0, 1), got.stderr
    finally:
        proxy.stop()
    (result,) = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    reason = result["scores"]["TaskCompletion"]["reason"]
    assert f"secret {MASK}, the passwords {MASK}, {MASK} and {MASK}, token {MASK}" in reason, reason  # read, and masked
    written = [p for p in [*(tmp_path / "run").rglob("*"), *(tmp_path / "cache").rglob("*")] if p.is_file()]
    for path in written:
        text = path.read_bytes().decode("utf-8", "replace")
        for canary in (AWS_SECRET[8:], DB_PASSWORD, BEARER[4:], SPACED, "Tr0ub4dor"):
            assert canary not in text, (path.name, canary)
    assert not any(c in got.stdout + got.stderr for c in (AWS_SECRET, DB_PASSWORD, BEARER, SPACED, "Tr0ub4dor"))
