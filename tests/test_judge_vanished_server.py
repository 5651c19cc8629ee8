"""A judge server that answered and then stopped listening (its port refuses every connection), over real sockets on
127.0.0.1: once `judge.max_retry_wait_s` of refusals is spent it is given up, and one warning says so, naming the URL
and the refusal; the run finishes (its gate fails it, exit 1) and the same command, once a server listens there again,
judges the cases it left.

Before, the give-up was silent: the warning that the judge could not serve came when requests began to wait, and
nothing when the wait ran out and every case after it failed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiohttp import web
from _loopback import Loopback, completion, verdict
from test_judge_frozen_server import JUDGED, _cases
from test_judge_servers import config, results, tj, write
from tracejudge.simulator.server import SimConfig, SimulatorThread

GIVEN_UP = "it is given up as unavailable"


class Vanishing(Loopback):
    """Answers the first `answered` requests with a verdict, then stops listening and drops the connection that asked:
    every later request is refused a connection, as a server whose process ended is."""

    def __init__(self, answered: int) -> None:
        self.answered = answered
        super().__init__(lambda headers, body: (200, completion(json.dumps(verdict(body)))))
        self.port = int(self.url.rsplit(":", 1)[1])

    async def _handle(self, request: web.Request) -> web.Response:
        if len(self.requests) < self.answered:
            return await super()._handle(request)
        await self._site.stop()  # (stops listening; a connection kept alive is dropped here, unanswered)
        assert request.transport is not None
        request.transport.close()
        return web.Response(status=503)


def _warnings(stderr: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in stderr.splitlines() if x.startswith("{") and json.loads(x).get("level") == "warning"]


def test_a_judge_that_stopped_listening_is_given_up_with_one_warning_and_the_same_command_resumes(tmp_path: Path) -> None:
    server = Vanishing(2)
    try:
        data = config(tmp_path, server.url, _cases(tmp_path / "c.jsonl", 12), metrics=JUDGED, api_key_env=None, max_retry_wait_s=1)
        data["limits"] = {"max_in_flight": 2}
        cfg = write(tmp_path, data)
        first = tj("run", str(cfg), "--no-progress", cwd=tmp_path)
        port = server.port
    finally:
        server.stop()
    # It answered: given up, not a stop; the run finishes and its gate fails it (as before).
    assert first.returncode == 1, first.stdout + first.stderr
    got = results(tmp_path)
    assert len(got) == 12 and {r["status"] for r in got} <= {"ok", "judge_error"}, [r["status"] for r in got]
    failed = [s for r in got for s in r["scores"].values() if (s.get("details") or {}).get("error_kind")]
    assert failed and any(s["details"].get("given_up") for s in failed), failed[:2]
    # One warning when the wait runs out, naming the URL and what the server did.
    url = f"{server.url}/v1/chat/completions"
    told = [w for w in _warnings(first.stderr) if GIVEN_UP in w["event"]]
    assert len(told) == 1, first.stderr
    (line,) = told
    assert line["url"] == url and line["max_retry_wait_s"] == 1, line
    assert line["event"].startswith("the judge could not serve for ") and "(judge.max_retry_wait_s 1)" in line["event"], line
    assert "cannot connect" in line["answer"] and "Connect call failed" in line["answer"], line
    assert "judge errors: provider_error " in first.stdout and "Connect call failed" in first.stdout, first.stdout

    # A server listens there again: the same command judges the cases left.
    with SimulatorThread(SimConfig(), port=port):
        again = tj("run", str(cfg), "--no-progress", cwd=tmp_path)
    assert again.returncode == 0 and not [w for w in _warnings(again.stderr) if GIVEN_UP in w["event"]], again.stdout + again.stderr
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["status"] == {"ok": 12}
