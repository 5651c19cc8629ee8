"""The end of a run's `judge errors: …` line names the error that decided the run's judging, over real HTTP on 127.0.0.1.

Before, it named the first judge error by case id: for a judge that froze, a timeout from before it was given up as
unavailable, while the give-up failed the cases after it; for a server that failed one case one way and every other
another, the odd one. Now it leads with the give-up when there was one (its scores carry `details.given_up`), else
with the kind that failed the most scores; when that is the first error anyway, the line reads as before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from _loopback import Loopback, answers_then_hangs, completion
from test_judge_frozen_server import JUDGED, _cases
from test_judge_servers import TWO, cases, config, results, tj, write


def _line(stdout: str) -> str:
    (line,) = [x for x in stdout.splitlines() if x.startswith("judge errors: ")]
    return line


def _padded(path: Path) -> Path:
    # (ids that sort as they were made: case-02 before case-10)
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for case in lines:
        case["id"] = f"case-{int(case['id'].split('-')[1]):02d}"
    path.write_text("".join(json.dumps(c) + "\n" for c in lines))
    return path


def test_a_judge_given_up_after_timeouts_is_named_not_the_first_timeout(tmp_path: Path) -> None:
    with Loopback(answers_then_hangs(2)) as server:
        data = config(tmp_path, server.url, _padded(_cases(tmp_path / "c.jsonl", 30)), metrics=JUDGED, api_key_env=None,
                      timeout_s=0.3, max_retry_wait_s=1)
        data["limits"] = {"max_in_flight": 2}
        proc = tj("run", str(write(tmp_path, data)), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = sorted(((r["case_id"], s) for r in results(tmp_path) if r["status"] == "judge_error"
                     for s in r["scores"].values() if (s.get("details") or {}).get("error_kind")), key=lambda x: x[0])
    given_up = [(c, s) for c, s in failed if s["details"].get("given_up")]
    assert given_up and failed[0][1]["details"]["error_kind"] == "timeout", failed[:3]  # (the first error is a timeout)
    assert all(s["details"]["error_kind"] == "provider_error" for _, s in given_up)
    line = _line(proc.stdout)
    assert f"; the judge was given up, failing {len(given_up)} (the first: case {given_up[0][0]} trial 0, " in line, line
    assert "given up as unavailable after judge.max_retry_wait_s 1" in line, line


def test_the_kind_that_failed_most_scores_is_named_and_one_kind_reads_as_before(tmp_path: Path) -> None:
    def respond(headers: dict[str, str], body: dict[str, Any]) -> Any:
        if "Find item 0" in json.dumps(body):  # one case: the server's error; every other: a reply with no verdict
            return 500, {"error": {"message": "boom", "type": "server_error"}}
        return 200, completion("It went fine, I think.")

    with Loopback(respond) as server:
        data = config(tmp_path, server.url, cases(tmp_path / "c.jsonl", 4), metrics=TWO, api_key_env=None, max_attempts=1)
        proc = tj("run", str(write(tmp_path, data)), "--no-progress", cwd=tmp_path)
        line = _line(proc.stdout)
        assert line.startswith("judge errors: ") and "provider_error 2" in line, line  # (the kinds in the order met)
        assert "; most are parse_error (6) (the first: case case-1 trial 0, " in line, line
        # One kind: the first error, said as it always was.
        data = config(tmp_path, server.url, cases(tmp_path / "d.jsonl", 3), metrics=TWO, api_key_env=None, max_attempts=1, run="one")
        data["dataset"]["path"] = str(tmp_path / "d.jsonl")
        (tmp_path / "d.jsonl").write_text("".join(x + "\n" for x in (tmp_path / "d.jsonl").read_text().splitlines()
                                                  if "Find item 0" not in x))
        proc = tj("run", str(write(tmp_path, data)), "--no-progress", cwd=tmp_path)
    assert _line(proc.stdout).startswith("judge errors: parse_error 4; the first (case case-1 trial 0, "), proc.stdout
