"""A run that talks: what a stalled run waits on, a stop draining its cases, a bar and a summary laid out for 80 columns."""

from __future__ import annotations

import io
import os
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console
from tracejudge.core.records import CaseResult, Score
from tracejudge.engine.live import LiveStatus
from tracejudge.engine.progress import RichProgress
from tracejudge.stages.reports.terminal import print_summary
import _forkserver


def test_a_stalled_run_says_what_it_waits_on_and_a_stop_shows_the_drain(tmp_path: Path, tau_paths) -> None:
    # Three cases; the simulator answers after 4 s and admits one request a minute, so the other
    # two get a 429 with a 60-second retry-after: the run stalls on a slow reply and on back-off.
    trajectories, tasks = tau_paths
    cfg = tmp_path / "stall.yaml"
    cfg.write_text(
        f"dataset: {{path: {json.dumps(str(trajectories))}, format: tau-bench, tasks: {json.dumps(str(tasks))}, limit: 3}}\n"
        "metrics: [{type: TaskCompletion}]\n"
        "judge: {provider: simulator, model: gpt-4o-mini, stop_grace_s: 5, simulator: {latency_ms: 4000, rpm: 1}}\n"
        "cache: {enabled: false}\nrun: {dir: run}\n")
    proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "run", str(cfg), "--progress-every", "0.2"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[dict] = []
    text: list[str] = []
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        for raw in proc.stderr:  # the JSON progress lines (not a terminal)
            text.append(raw)
            if raw.startswith("{"):
                lines.append(json.loads(raw))
                if "waiting_on" in lines[-1] and not lines[-1].get("stopping"):
                    break
            assert time.monotonic() < deadline, "".join(text)
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=60)
    finally:
        proc.kill()
    stalled = lines[-1]
    assert stalled["done"] == 0
    assert re.fullmatch(r"judge: 1 reply pending \(slowest \d+ s\), 2 in back-off after 429 \(next retry in \d+ s\)", stalled["waiting_on"][0]), stalled
    assert proc.returncode == 130, rest
    assert re.search(r"SIGINT: no new cases; the [23] in flight get 5 s to finish, then the run stops \(again to abort\)", rest), rest
    drain = [json.loads(x) for x in rest.splitlines() if x.startswith('{"') and '"stopping"' in x]
    stopping = [x for x in drain if x["event"] == "stopping"]
    assert len(stopping) >= 3
    # The count drains (the slow reply lands, the two in back-off are cut when the grace runs out) and the grace counts down.
    assert [x["in_flight"] for x in stopping] == sorted((x["in_flight"] for x in stopping), reverse=True)
    assert stopping[0]["in_flight"] in (2, 3) and 2 in [x["in_flight"] for x in stopping]  # 3 unless the reply beat the signal
    graces = [x["grace_left_s"] for x in stopping]
    assert graces == sorted(graces, reverse=True) and graces[0] <= 5 and graces[-1] < graces[0]
    assert drain[-1]["event"] == "progress_done" and drain[-1]["done"] == 1 and drain[-1]["in_flight"] == 0
    assert "verdict: INTERRUPTED" in out


def test_requests_held_by_the_in_flight_cap_are_not_said_to_wait_at_the_rate_limit(tmp_path: Path, tau_paths) -> None:
    # One request at a time and a slow judge: the others wait for the slot, not for RPM/TPM (it said "at the rate limit").
    trajectories, tasks = tau_paths
    cfg = tmp_path / "cap.yaml"
    cfg.write_text(
        f"dataset: {{path: {json.dumps(str(trajectories))}, format: tau-bench, tasks: {json.dumps(str(tasks))}, limit: 3}}\n"
        "metrics: [{type: TaskCompletion}]\nlimits: {max_in_flight: 1}\n"
        "judge: {provider: simulator, model: gpt-4o-mini, stop_grace_s: 1, simulator: {latency_ms: 4000}}\n"
        "cache: {enabled: false}\nrun: {dir: run}\n")
    proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "run", str(cfg), "--progress-every", "0.2"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    text: list[str] = []
    waiting = None
    try:
        assert proc.stderr is not None
        for raw in proc.stderr:
            text.append(raw)
            if raw.startswith("{") and "queued" in raw:
                waiting = json.loads(raw)["waiting_on"][0]
                break
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    assert waiting is not None, "".join(text)
    assert re.search(r"[12] queued behind the in-flight cap \(1 sent at a time\)", waiting), waiting


def _bar_text(live: LiveStatus | None = None, width: int = 80) -> str:
    buf = io.StringIO()
    p = RichProgress(Console(file=buf, force_terminal=True, width=width, color_system=None), total=200)
    if live is not None:
        p.attach(live)
    for i in range(197):
        p.state.add(CaseResult(case_id=str(i), scores={"m": Score(value=1.0)}))
    p.state.errors.update({"judge_error": 12, "invalid_input": 3, "skipped_budget": 40})
    p.state.judge_in, p.state.judge_out, p.state.judge_calls = 12_345_678, 98_765, 400
    p.tick()
    p._p.refresh()
    text = buf.getvalue()
    p.close()
    return text


def test_the_bar_keeps_count_elapsed_and_eta_whole_at_80_columns() -> None:
    text = _bar_text()
    frame = text.split("\x1b[2K")[-1] if "\x1b[2K" in text else text
    assert "197/200" in frame and "ETA" in frame and re.search(r"\d:\d\d:\d\d ETA [-\d]:[-\d]{2}:[-\d]{2}", frame), frame
    # The variable text goes on its own line below the figures, whole, not cut to an ellipsis.
    assert "errors invalid_input 3, judge_error 12, skipped_budget 40" in frame and "…" not in frame
    for line in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).splitlines():
        assert len(line.rstrip()) <= 80


def test_the_bar_shows_a_stop_draining_with_the_grace_left() -> None:
    live = LiveStatus(in_flight=81, working=7, grace_s=10.0, probes=[lambda: "judge: 7 replies pending (slowest 12 s)"])
    live.mark_stop()
    frame = " ".join(re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", _bar_text(live)).split())  # the status line wraps at 80 columns
    assert "stopping" in frame
    assert re.search(r"stopping: 7 cases in flight, cut in (9|10) s \(Ctrl-C again to abort\)", frame), frame
    assert "waiting on judge: 7 replies pending (slowest 12 s)" in frame


def test_the_summary_keeps_metric_names_whole_at_80_columns(tmp_path: Path) -> None:
    m = {"scored": 200, "not_computed": 123, "excluded": {"judge_error": 12}, "mean": 0.524, "std": 0.468, "ci95": [0.461, 0.589],
         "pass_rate": 0.435, "passed": 87, "pass_at_k": {"1": {"value": 0.5}, "3": {"value": 0.75}}}
    names = ["writes_exact", "ToolCallNecessity", "TrajectoryEfficiency", "pass@3(writes_exact)", "DeepEvalToolCorrectness"]
    summary = {"results": 200, "status": {"ok": 188, "judge_error": 12}, "metrics": {n: dict(m) for n in names}}
    for width in (80, 100, 160):
        buf = io.StringIO()
        print_summary(summary, Console(file=buf, width=width, color_system=None))
        text = buf.getvalue()
        assert "…" not in text
        rows = {line.split()[0]: line for line in text.splitlines() if line.strip() and line.split()[0] in names}
        assert set(rows) == set(names)  # every name whole, at the start of its row
        for row in rows.values():
            assert "200/200" in row and "0.524" in row and "0.461–0.589" in row and "43.5%" in row
        assert max(len(line.rstrip()) for line in text.splitlines() if line.startswith(" ")) <= width  # the table's lines
        assert "@1 0.500, @3 0.750" in text  # in the table when it fits, else on a line below it


def test_a_run_waiting_on_a_slow_agent_says_so(tmp_path: Path) -> None:
    (tmp_path / "slow_agent.py").write_text("import anyio\n\nasync def respond(request):\n    await anyio.sleep(3)\n    return 'done'\n")
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "input": "hi"}) + "\n" for i in range(2)))
    (tmp_path / "c.yaml").write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: MaxToolCalls, max_calls: 5}]\n"
                                     "target: {kind: python, callable: 'slow_agent:respond', pythonpath: ., concurrency: 2}\nrun: {dir: run}\n")
    proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "c.yaml", "--progress-every", "0.2"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    waits = [json.loads(x)["waiting_on"] for x in proc.stderr.splitlines() if x.startswith("{") and "waiting_on" in x]
    assert waits and all(re.fullmatch(r"target: (2 cases|1 case) at the agent \(slowest \d s\)", w[0]) for w in waits), waits
    assert waits[0][0].startswith("target: 2 cases at the agent (slowest ")


def test_a_stop_counts_the_results_it_still_writes(tmp_path: Path) -> None:
    # No stage after extract and scoring: a stop drops the chunks still computing, but what was scored already is on its
    # way to results.jsonl and is written all the same. The stop message said "the 0 in flight" while hundreds more came.
    import anyio
    from tracejudge.core.config import load_config
    from tracejudge.engine import runner

    case = {"trace": {"steps": [{"tool_calls": [{"name": "get"}]}]}, "expected_tool_calls": [{"name": "get"}]}
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"id": f"c{i}", **case}) + "\n" for i in range(3000)))
    (tmp_path / "c.yaml").write_text("dataset: {path: cases.jsonl}\nmetrics: [{type: ToolCalls}]\nrun: {dir: run, processes: 1}\n")
    config = load_config(tmp_path / "c.yaml")
    live, seen = LiveStatus(), []

    async def main() -> None:
        stop = anyio.Event()

        def on_result(result: CaseResult) -> None:
            seen.append(result.case_id)
            if len(seen) == 1:  # as the CLI's signal handler does on the first SIGTERM
                live.mark_stop()
                seen.append(live.stop_text())
                stop.set()

        await runner.run(config, run_dir=tmp_path / "run", stop=stop, on_result=on_result, live=live)

    anyio.run(main)
    written_after = len(seen) - 2
    assert written_after > 0 and seen[1].startswith(f"the {written_after} in flight get "), (seen[1], written_after)


def test_requests_held_while_the_judge_is_unreachable_say_so_from_the_gate_as_it_is_now(tmp_path: Path, tau_paths) -> None:
    # A judge URL nobody listens on: every request waits at the server's gate. The line said "3 in back-off after
    # connection refused (next retry in 0 s)" for as long as the wait lasted (each request's own wake time, taken once).
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    trajectories, tasks = tau_paths
    cfg = tmp_path / "down.yaml"
    cfg.write_text(
        f"dataset: {{path: {json.dumps(str(trajectories))}, format: tau-bench, tasks: {json.dumps(str(tasks))}, limit: 3}}\n"
        "metrics: [{type: TaskCompletion}]\n"
        f"judge: {{provider: openai, model: gpt-4o-mini, base_url: 'http://127.0.0.1:{port}/v1', max_retry_wait_s: 6}}\n"
        "cache: {enabled: false}\nrun: {dir: run}\n")
    proc = _forkserver.popen([sys.executable, "-m", "tracejudge", "run", str(cfg), "--progress-every", "0.2"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "OPENAI_API_KEY": "sk-test"})
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    held = [json.loads(x)["waiting_on"][0] for x in err.splitlines() if x.startswith("{") and '"waiting_on"' in x]
    assert held, err
    line = re.compile(r"judge: (\d) held: connection refused for (\d+) s, (?:next try in \d+ s, |a try in flight, )?gives up in (\d+) s "
                      r"\(judge\.max_retry_wait_s 6 s\)")
    got = [line.fullmatch(h) for h in held]
    assert all(got), held
    assert {m.group(1) for m in got} <= {"1", "2", "3"}
    waited = [int(m.group(2)) for m in got]
    assert waited == sorted(waited) and waited[-1] >= 3  # the wait counts up as it lasts, and the time left down
    assert all(int(m.group(2)) + int(m.group(3)) in (5, 6, 7) for m in got)
    assert "back-off" not in err
    assert proc.returncode == 3 and "judge.max_retry_wait_s 6" in err
