"""Judge requests in flight when a run is SIGKILLed count in the resumed run's spend (`judge_spend.jsonl` journals each
attempt as it is sent, then settles it when answered).

A real `tracejudge run` process judges 40 cases against the judge simulator over HTTP on 127.0.0.1, four requests in
flight at most. The simulator answers the first requests and holds every later one unanswered (a `timeout` fault that
hangs for 600 s), so once four are held the run can send nothing more: the kill comes then, the server's own counts
(requests received, answered) standing still, and none of its answers still on the way to the client (each answer is
journaled before the request's slot frees for another). The resume, against a server that answers everything, must
count every request the server received over both segments, and say how many were in flight at the kill.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from _runs import sigkill_when
import _forkserver

TJ = Path(sys.executable).with_name("tracejudge")
IN_FLIGHT = 4  # limits.max_in_flight of the runs
ANSWERED = 6  # the requests the simulator answers before it holds the rest


def _config(tmp: Path, url: str, n: int = 40) -> Path:
    cases = tmp / "cases.jsonl"
    with open(cases, "w") as fh:
        for i in range(n):
            steps = [{"tool_calls": [{"id": "c1", "name": "lookup", "arguments": {"q": f"item {i}"}, "result": f"found {i}"}]}]
            fh.write(json.dumps({"id": f"case-{i}", "input": f"Find item {i}", "trace": {"steps": steps, "output": f"Item {i} is found."}}) + "\n")
    cfg = {"dataset": {"path": str(cases), "format": "native"}, "metrics": [{"type": "TaskCompletion"}],
           # timeout_s: the held requests never time out on the client's side before the kill, however loaded the machine.
           "judge": {"provider": "openai", "model": "gpt-4o-mini", "base_url": url + "/v1", "group": "none", "timeout_s": 900},
           "limits": {"max_in_flight": IN_FLIGHT}, "cache": {"dir": str(tmp / "cache")},
           "run": {"dir": str(tmp / "run"), "max_resume_retries": 0}}
    path = tmp / "run.json"
    path.write_text(json.dumps(cfg))
    return path


def _paid_lines(journal: Path) -> int:
    """The journal's lines that bill an answer (output tokens), in the old format or the new."""
    if not journal.exists():
        return 0
    n = 0
    for line in journal.read_bytes().splitlines():
        try:
            n += int(json.loads(line).get("output_tokens") or 0) > 0
        except (ValueError, AttributeError):
            continue
    return n


def _kill_with_requests_held(tmp: Path, sim: Any, unanswered: int) -> tuple[list[str], int, int]:
    """Start the run, SIGKILL it once the simulator holds `IN_FLIGHT` requests unanswered (`unanswered`: how many of the
    requests it received it does not answer, held or failed), every answer it gave journaled by the client; then let the
    simulator answer everything. (the command, requests received before the kill, those answered or failed before it)."""
    args = [str(TJ), "run", str(_config(tmp, sim.url)), "--no-progress"]
    journal = tmp / "run" / "judge_spend.jsonl"
    st = sim.stats

    def held() -> bool:
        return (st.requests - st.answered - st.server_errors == IN_FLIGHT and st.answered == ANSWERED
                and _paid_lines(journal) == ANSWERED)

    proc = _forkserver.popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sigkill_when(proc, held, f"{IN_FLIGHT} requests held by the simulator after {ANSWERED} answered")
    received, replied = st.requests, st.answered + st.server_errors
    assert received - replied == IN_FLIGHT and received == ANSWERED + unanswered + IN_FLIGHT
    sim.set_script([])  # the resume's requests are all answered
    return args, received, replied


def _summary(tmp: Path) -> dict[str, Any]:
    return json.loads((tmp / "run" / "summary.json").read_text())


def _check(tmp: Path, sim: Any, args: list[str], received: int, replied: int) -> None:
    resumed = _forkserver.run(args, capture_output=True, text=True, timeout=300)
    assert resumed.returncode in (0, 1), resumed.stderr
    summary = _summary(tmp)
    j = summary["judge"]
    assert summary["complete"]
    total = sim.stats.requests  # every request the server received, both segments
    assert total > received  # (the resume sent the cases not answered before the kill)
    # Every request the server received counts, the ones in flight at the kill included.
    assert j["requests"] == total
    stopped = j["in_flight_at_stop"]
    assert stopped["requests"] == received - replied == IN_FLIGHT
    # The answered requests' tokens as the server counted them, plus the estimated prompts of those in flight at the kill.
    assert stopped["input_tokens_estimated"] > 0
    assert j["input_tokens"] == sim.stats.input_tokens + stopped["input_tokens_estimated"]
    assert j["output_tokens"] == sim.stats.output_tokens
    from tracejudge.llm.prices import price_for

    price = price_for("gpt-4o-mini")
    assert price is not None
    assert abs(stopped["cost_usd_estimated"] - price.cost(stopped["input_tokens_estimated"], 0)) <= 1e-6
    # report.md says it where it shows the judge's spend, and so does the terminal.
    report = (tmp / "run" / "report.md").read_text()
    assert f"{IN_FLIGHT} judge requests were in flight at a stop" in report
    assert f"{IN_FLIGHT} judge requests were in flight at a stop" in resumed.stdout + resumed.stderr


def test_requests_in_flight_at_a_kill_count_after_the_resume(simulator, tmp_path):
    sim = simulator(hang_s=600, script=["ok"] * ANSWERED + ["timeout"] * 10_000)
    args, received, replied = _kill_with_requests_held(tmp_path, sim, 0)
    _check(tmp_path, sim, args, received, replied)
    # A finished run resumed again sends nothing, writes nothing to the journal and changes no figure.
    journal = tmp_path / "run" / "judge_spend.jsonl"
    before, summary = journal.read_bytes(), (tmp_path / "run" / "summary.json").read_bytes()
    again = _forkserver.run(args, capture_output=True, text=True, timeout=300)
    assert again.returncode in (0, 1), again.stderr
    assert journal.read_bytes() == before and (tmp_path / "run" / "summary.json").read_bytes() == summary


def test_requests_that_failed_before_a_kill_count_as_requests_not_paid(simulator, tmp_path):
    # Two requests get a 500 (retried), the next ones are answered, the rest held: the failed attempts were sent (the
    # summary counts them as requests, as a live segment does) but not paid, and are not in flight at the kill.
    sim = simulator(hang_s=600, script=["500", "500"] + ["ok"] * ANSWERED + ["timeout"] * 10_000)
    args, received, replied = _kill_with_requests_held(tmp_path, sim, 2)
    assert sim.stats.server_errors == 2
    _check(tmp_path, sim, args, received, replied)
