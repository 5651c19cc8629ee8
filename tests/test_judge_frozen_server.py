"""A judge that accepts connections and never answers (a frozen model server), over real sockets on 127.0.0.1: once it
has given no reply at all for `judge.max_retry_wait_s`, a judge that has answered nothing in the run stops it as one
refusing connections does (exit 3, one line naming the URL, no case marked), and one that answered before it froze
is given up as a refused connection mid-run is (the run finishes, its gate says); a judge that answers slowly,
within `judge.timeout_s`, is never given up.

Before, a frozen judge was tried one request at a time, one `judge.timeout_s` per wave of waiting cases, whatever
`judge.max_retry_wait_s` said: the demo's 200 cases took over 3 minutes to fail, a large run hours.
"""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

import anyio
from anyio import wait_all_tasks_blocked
from _loopback import Loopback, answers_then_hangs
from test_judge_servers import cases, config, results, tj, write
from tracejudge.llm.providers import ProviderError
from tracejudge.simulator.server import SimConfig, SimulatorThread
from tracejudge.stages.judge.calls.gate import SLOW_AFTER, Gate

JUDGED = [{"type": "ToolCalls"}, {"type": "TaskCompletion"}, {"type": "ToolCallNecessity"}]
GIVEN_UP = "given up as unavailable"


class Frozen:
    """A server frozen solid: it accepts every TCP connection on 127.0.0.1 and never reads a byte or answers.

    `accepted` counts the connections; `stop()` closes them all and the listening socket.
    """

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.1)  # (so `stop` is seen between connections)
        self.port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.accepted = 0
        self._held: list[socket.socket] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            self._held.append(conn)  # held open, unread: the client waits for a reply that never comes

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(10)
        for conn in self._held:
            conn.close()
        self._sock.close()

    def __enter__(self) -> Frozen:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _cases(path: Path, n: int) -> Path:
    """`cases(path, n)`, each expecting the one call it made: its deterministic ToolCalls score is 1.0."""
    lines = [json.loads(x) for x in cases(path, n).read_text().splitlines()]
    for case in lines:
        case["expected_tool_calls"] = [{"name": c["name"], "arguments": c["arguments"]} for c in case["trace"]["steps"][0]["tool_calls"]]
    path.write_text("".join(json.dumps(case) + "\n" for case in lines))
    return path


def _gave_up(stderr: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in stderr.splitlines() if x.startswith("{") and GIVEN_UP in x]


def test_a_frozen_judge_that_never_replied_stops_the_run_exit_3_and_a_resume_judges_the_cases(tmp_path: Path) -> None:
    with Frozen() as frozen:
        data = config(tmp_path, frozen.url, _cases(tmp_path / "c.jsonl", 30), metrics=JUDGED, api_key_env=None,
                      timeout_s=0.3, max_retry_wait_s=1)
        data["limits"] = {"max_in_flight": 2}
        cfg = write(tmp_path, data)
        first = tj("run", str(cfg), "--no-progress", cwd=tmp_path)  # (finishing at all is the point: tj's bound is 300 s)
        port, asked = frozen.port, frozen.accepted
    # Stopped as a judge refusing connections stops it (before: the run finished, every case judge_error, exit 1, which
    # CI reads as the agent regressing): exit 3, one line naming the URL, no case marked.
    assert first.returncode == 3, first.stdout + first.stderr
    assert asked >= SLOW_AFTER, asked  # (connections it accepted and never answered: no refusal, no reset)
    lines = [x for x in first.stderr.splitlines() if "cannot reach the judge" in x]
    assert len(lines) == 1, first.stderr
    assert f"{frozen.url}/v1/chat/completions" in lines[0], lines[0]
    assert "it accepted connections but never replied within judge.timeout_s 0.3 s" in lines[0], lines[0]
    assert "judge.max_retry_wait_s 1" in lines[0] and "nothing of the run was answered" in lines[0], lines[0]
    assert "stopped without marking any unjudged case" in lines[0], lines[0]
    assert not _gave_up(first.stderr), first.stderr  # (the stop says it all: no warning of cases given up)
    assert results(tmp_path) == []

    # The server comes back (another one on the same port): the same command judges every case.
    sim = SimulatorThread(SimConfig(), port=port)
    try:
        again = tj("run", str(cfg), "--no-progress", cwd=tmp_path)
    finally:
        sim.stop()
    assert again.returncode == 0, again.stdout + again.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == {"ok": 30}, summary["status"]


def test_a_judge_that_answered_then_froze_is_given_up_after_the_wait_and_the_run_finishes(tmp_path: Path) -> None:
    with Loopback(answers_then_hangs(2)) as server:
        data = config(tmp_path, server.url, _cases(tmp_path / "c.jsonl", 30), metrics=JUDGED, api_key_env=None,
                      timeout_s=0.3, max_retry_wait_s=1)
        data["limits"] = {"max_in_flight": 2}
        proc = tj("run", str(write(tmp_path, data)), "--no-progress", cwd=tmp_path)
        asked = len(server.requests)
    # It answered: a judge that froze since is given up (judge errors), the run finishes, and its gate fails it, exit 1.
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert asked > 2, asked
    assert not [x for x in proc.stderr.splitlines() if "cannot reach the judge" in x], proc.stderr
    got = results(tmp_path)
    assert len(got) == 30 and {r["status"] for r in got} <= {"ok", "judge_error"}, {r["status"] for r in got}
    assert 1 <= sum(r["status"] == "ok" for r in got) <= 2, [r["status"] for r in got]  # (what it answered, no more)
    assert all(r["scores"]["ToolCalls"]["value"] == 1.0 for r in got)  # the deterministic metric is scored
    judged = [s for r in got for name, s in r["scores"].items() if name != "ToolCalls" and s["value"] is None]
    silent = [s for s in judged if GIVEN_UP in s["reason"]]
    assert silent, [s["reason"] for s in judged]
    for s in judged:
        assert s["details"]["error_kind"] in ("timeout", "provider_error"), s
    for s in silent:
        assert s["details"]["error_kind"] == "provider_error", s
        assert s["reason"].startswith("provider_error: the judge gave no reply at all for "), s["reason"]
        assert "judge.max_retry_wait_s 1 (raise it to wait longer" in s["reason"], s["reason"]
        assert f"{server.url}/v1/chat/completions" in s["reason"], s["reason"]
    # One warning says why, naming the URL and the setting.
    (line,) = _gave_up(proc.stderr)
    assert line["level"] == "warning" and line["url"] == f"{server.url}/v1/chat/completions", line
    assert line["max_retry_wait_s"] == 1 and line["silent_s"] >= 1, line
    assert line["event"].startswith("the judge gave no reply at all for "), line
    assert "(judge.max_retry_wait_s 1): it is given up as unavailable" in line["event"], line


def test_a_slow_judge_that_answers_within_the_timeout_is_never_given_up(tmp_path: Path) -> None:
    # Each reply comes 0.3 s after its request, and later under load (past one request in flight the server shares its
    # capacity, as a GPU server does: 1.2 s with four): far past a max_retry_wait_s of 0.1 s between a request and its
    # reply, and well within timeout_s.
    sim = SimulatorThread(SimConfig(latency_ms=300, max_concurrency=1))
    try:
        data = config(tmp_path, sim.url, _cases(tmp_path / "c.jsonl", 12), metrics=JUDGED, api_key_env=None,
                      timeout_s=30, max_retry_wait_s=0.1)
        data["limits"] = {"max_in_flight": 4}
        proc = tj("run", str(write(tmp_path, data)), "--no-progress", cwd=tmp_path)
    finally:
        sim.stop()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not _gave_up(proc.stderr), proc.stderr
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["status"] == {"ok": 12} and summary["judge"]["timeouts"] == 0, summary["status"]


def _timed_out_thrice(gate: Gate) -> Gate:
    """`gate` closed as slow: `SLOW_AFTER` requests sent, none answered within judge.timeout_s."""
    for _ in range(SLOW_AFTER):
        gate.sent()
    for _ in range(SLOW_AFTER):
        gate.done(False, ProviderError("timeout", "no reply within 0.5 s"))
    return gate


async def _enter(gate: Gate, got: dict[str, Any], name: str, first: bool) -> None:
    """`gate.enter(first, …)`, its answer or the `ProviderError` it raised kept in `got[name]`."""
    try:
        got[name] = await gate.enter(first, lambda: False)
    except ProviderError as exc:
        got[name] = exc


def test_the_silent_gate_fails_the_waiting_requests_unsent_while_one_tries_and_a_reply_opens_it() -> None:
    # A wait of 0 s: the server is silent past it as soon as the slow gate closes, so no clock is needed.
    async def main() -> dict[str, Any]:
        gate = _timed_out_thrice(Gate(0.0, 0.5, lambda: "http://127.0.0.1:9/v1/chat/completions"))
        got: dict[str, Any] = {}
        await _enter(gate, got, "try", True)  # the next request never sent tries it
        gate.sent()
        with anyio.fail_after(60):  # (a gate that never gives up would hold them for ever: fail, not hang)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_enter, gate, got, "new", True)
                tg.start_soon(_enter, gate, got, "retry", False)
                await wait_all_tasks_blocked()
        shown = gate.activity(2, gate.quiet_since or 0.0)
        gate.done(True, None)  # the try is answered: the server is alive again
        gate.end_try(True)
        return {"got": got, "shown": shown, "state": gate.state, "quiet": gate.quiet_since}

    out = anyio.run(main)
    got = out["got"]
    assert got["try"] is True, got
    for name in ("new", "retry"):  # neither waited for the try
        exc = got[name]
        assert isinstance(exc, ProviderError) and exc.kind == "unreachable" and exc.no_reply, (name, exc)
        assert exc.unsent == (name == "new"), (name, exc.unsent)
        assert str(exc).startswith("the judge gave no reply at all for 0 s (3 requests in a row got none within "
                                   "judge.timeout_s 0.5 s, and none since): given up as unavailable after "
                                   "judge.max_retry_wait_s 0"), str(exc)
    # The progress line says so, with the setting.
    assert out["shown"].endswith("one request trying it, given up: no reply at all for 0 s (judge.max_retry_wait_s 0 s)"), out["shown"]
    assert out["state"] is None and out["quiet"] is None, out


def test_before_any_reply_the_slow_gate_ends_no_request_on_timeouts_and_any_may_try_it() -> None:
    # A wait of an hour: nothing here ends for the silence, so no clock is needed.
    async def main() -> dict[str, Any]:
        replied = [False]
        gate = _timed_out_thrice(Gate(3600.0, 0.5, lambda: "http://127.0.0.1:9/v1/chat/completions", lambda: replied[0]))
        got: dict[str, Any] = {}
        await _enter(gate, got, "retry", False)  # a request that timed out tries it (a run of one case has no other)
        gate.sent()
        seen: dict[str, Any] = {}
        with anyio.fail_after(60):  # (a gate that never lets them go would hold them for ever: fail, not hang)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_enter, gate, got, "new", True)
                tg.start_soon(_enter, gate, got, "again", False)
                await wait_all_tasks_blocked()
                seen["while_tried"] = dict(got)
                gate.done(True, ProviderError("timeout", "no reply within 0.5 s"))  # the try got no reply either
                gate.end_try(True)
                await wait_all_tasks_blocked()
                seen["after_failed_try"] = dict(got)
                gate.sent()  # the next try goes out, and is answered: all go on
                replied[0] = True
                gate.done(True, None)
                gate.end_try(True)
        return {"got": got, **seen}

    out = anyio.run(main)
    assert out["while_tried"] == {"retry": True}, out
    # A try that got no reply ends no request: one of them tries next (sent before or not), the other waits.
    after = out["after_failed_try"]
    assert set(after) in ({"retry", "new"}, {"retry", "again"}) and all(v is True for v in after.values()), after
    assert out["got"] == {**after, ({"new", "again"} - set(after)).pop(): False}, out  # the answer let it go on


def test_a_judge_silent_since_the_runs_start_fails_every_request_as_unreachable_with_no_try() -> None:
    # A wait of 0 s: silent past it as soon as the slow gate closes. Even the one request of a one-case run, which may
    # try the gate while the judge never replied, ends: else it would try for ever.
    async def main() -> list[Any]:
        gate = _timed_out_thrice(Gate(0.0, 0.5, lambda: "http://127.0.0.1:9/v1/chat/completions", lambda: False))
        got: dict[str, Any] = {}
        for first in (False, True):
            await _enter(gate, got, str(first), first)
        return [got["False"], got["True"]]

    for first, exc in zip((False, True), anyio.run(main), strict=True):
        assert isinstance(exc, ProviderError) and exc.kind == "unreachable" and exc.no_reply and exc.unsent == first, exc
        assert str(exc) == "it accepted connections but never replied within judge.timeout_s 0.5 s: no reply at all for 0 s, " \
                           "judge.max_retry_wait_s 0", str(exc)
