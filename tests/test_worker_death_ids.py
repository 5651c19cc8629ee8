"""A dead worker's results go under the ids the records' own results get, so the resume replaces every one.

A line that is not a readable record (JSON cut short, UTF-16 text) is reported under its file and
line; its dead worker's `worker_error` used to go under an id read from the line's first bytes
(`badjson`, `u16`), which no later run writes again: the run then held six results for four
records, and every resume retried the two phantoms (real processes, a metric that exits its worker).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
import _forkserver

TRACEJUDGE = Path(sys.executable).with_name("tracejudge")

METRIC = textwrap.dedent("""\
    import os
    import tracejudge as tj

    @tj.metric
    def crash_all(case: tj.Case, trace: tj.Trace) -> bool:
        if os.environ.get("CRASH") == "1":
            os._exit(9)  # the worker process dies on every case
        return True
""")


def _workspace(root: Path) -> None:
    root.mkdir()
    (root / "crashall.py").write_text(METRIC)
    good = '{{"id": "{}", "input": "x", "trace": {{"steps": []}}}}\n'
    (root / "d.jsonl").write_bytes(good.format("ok1").encode() + b'{"id": "badjson", "input": \n'
                                   + '{"id":"u16"}\n'.encode("utf-16-be") + good.format("ok2").encode())
    (root / "w.yaml").write_text('dataset: {path: d.jsonl, format: native}\nmetrics: [{type: "crashall:crash_all"}]\n'
                                 "run: {dir: out, processes: 2}\nassertions: {max_invalid_share: 1.0}\n")


def _run(root: Path, crash: bool) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root), "CRASH": "1" if crash else "0"}
    return _forkserver.run([str(TRACEJUDGE), "run", "w.yaml", "--no-progress"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=240)


def _state(root: Path) -> tuple[dict[str, tuple[str, str | None]], dict, int]:
    """(each case id's last result as (status, error kind), summary counts, junit test cases), places made relative."""
    last: dict[str, tuple[str, str | None]] = {}
    for line in (root / "out" / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        last[r["case_id"].replace(str(root), "")] = (r["status"], (r.get("error") or {}).get("kind"))
    summary = json.loads((root / "out" / "summary.json").read_text())
    cases = len(ET.parse(root / "out" / "junit.xml").getroot().findall(".//testcase"))
    return last, {"results": summary["results"], "status": summary["status"]}, cases


def _healthy_and_crashed(tmp_path: Path) -> tuple[tuple[dict[str, tuple[str, str | None]], dict, int], Path, subprocess.CompletedProcess[str]]:
    """(the state of a run whose workers lived, a workspace whose first run's workers all died, that run)."""
    healthy, crashed = tmp_path / "healthy", tmp_path / "crashed"
    _workspace(healthy)
    _workspace(crashed)
    assert _run(healthy, crash=False).returncode == 0
    want = _state(healthy)
    assert want[0] == {"ok1": ("ok", None), "/d.jsonl:2": ("invalid_input", "invalid_input"),
                       "/d.jsonl:3": ("invalid_input", "invalid_input"), "ok2": ("ok", None)}, want
    return want, crashed, _run(crashed, crash=True)


def test_a_resume_after_workers_died_on_unreadable_lines_ends_as_a_run_without_the_deaths(tmp_path: Path) -> None:
    want, crashed, first = _healthy_and_crashed(tmp_path)
    assert "worker process" in first.stderr + first.stdout, first.stderr[-2000:]
    died = _state(crashed)[0]
    assert set(died) == set(want[0]) and all(kind == "worker_error" for _, kind in died.values()), died

    _run(crashed, crash=False)
    assert _state(crashed) == want
    again = _run(crashed, crash=False)
    assert again.returncode == 0 and "worker process scoring them died" not in again.stderr + again.stdout, again.stderr[-2000:]
    assert _state(crashed) == want


def _current(root: Path) -> dict[str, tuple[str, str | None]]:
    """Each standing result's (status, error kind) by case id (places made relative), as every listing reads them."""
    from tracejudge.engine import store

    out = {}
    for line in store.iter_current_result_lines(root / "out" / "results.jsonl"):
        r = json.loads(line)
        out[r["case_id"].replace(str(root), "")] = (r["status"], (r.get("error") or {}).get("kind"))
    return out


def _as_earlier_versions_filed(root: Path) -> None:
    # Earlier versions filed a dead worker's unreadable line under an id read from its first bytes; results.idx holds
    # each line's key. (The checkpoint of another version is never reused: the resume rebuilds from results.jsonl.)
    from tracejudge.engine.keyset import result_key

    sniffed = {f"{root / 'd.jsonl'}:2": "badjson", f"{root / 'd.jsonl'}:3": "u16"}
    lines = []
    for line in (root / "out" / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        r["case_id"] = sniffed.get(r["case_id"], r["case_id"])
        lines.append(r)
    assert sorted(r["case_id"] for r in lines) == ["badjson", "ok1", "ok2", "u16"]
    (root / "out" / "results.jsonl").write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in lines))
    (root / "out" / "results.idx").write_bytes(b"".join(result_key(r["case_id"], 0).to_bytes(8, "little") for r in lines))
    (root / "out" / "checkpoint.json").unlink()


def test_a_resume_sets_aside_a_dead_workers_result_filed_by_an_earlier_version_under_a_sniffed_id(tmp_path: Path) -> None:
    # Such a result (`badjson`) is provisional and its key is never written again: it stood beside the line's final
    # result, in the results, the counts and junit.xml, and every resume said it retried it. The final result of its
    # file and line now supersedes it.
    from tracejudge.engine.retries import pending_retries

    want, crashed, first = _healthy_and_crashed(tmp_path)
    assert first.returncode != 0
    _as_earlier_versions_filed(crashed)

    resumed = _run(crashed, crash=False)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert _current(crashed) == want[0] and _state(crashed)[1:] == want[1:]
    again = _run(crashed, crash=False)
    assert again.returncode == 0 and "retried" not in again.stdout and "not reused" not in again.stderr, again.stdout + again.stderr[-2000:]
    assert _current(crashed) == want[0] and _state(crashed)[1:] == want[1:]
    assert pending_retries(crashed / "out") == 0  # (what `tracejudge report` over shards reads)
    report = _forkserver.run([str(TRACEJUDGE), "report", "out"], cwd=crashed, capture_output=True, text=True, timeout=240)
    assert report.returncode == 0, report.stderr[-2000:]
    assert _current(crashed) == want[0] and _state(crashed)[1:] == want[1:]
