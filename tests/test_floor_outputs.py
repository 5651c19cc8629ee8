"""The floor with every output (`benchmarks/_floor_run.py --outputs`): on a small τ-bench input with a line that is not
a record and a repeated id, it writes each file `tracejudge run` writes, with the rows tracejudge's hold. Real
processes: the floor's script and `tracejudge run` on the same config, their run folders compared."""

from __future__ import annotations

import json
import re
import sys
import zlib
from pathlib import Path

import pytest
import _forkserver

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
import pipeline_throughput as pt  # noqa: E402

FILES = {"checkpoint.json", "configs.jsonl", "cursor.ids", "cursor.json", "junit.xml", "manifest.json", "report.html", "report.md",
         "results.idx", "results.jsonl", "summary.json"}
N = 24  # cases, then a line that is not a record and a repeated id


def _case_rows(run: Path) -> list[dict]:
    page = (run / "report.html").read_text(encoding="utf-8")
    rows = json.loads(re.search(r'<script type="application/json" id="case-data">(.*?)</script>', page, re.S).group(1))["rows"]
    for row in rows:  # (a line no record can be: msgspec's message there, pydantic's here, as `_floor_reasons` says)
        if row["case_id"] == "broken":
            row["error"] = re.sub(r": .*(?= \()", ": …", row["error"])
    return rows


def _worst_rows(run: Path) -> list[str]:
    # The worst cases' rows of report.md: case, trial, value, reason (the summary's CIs differ: every value there, a sample here)
    text = (run / "report.md").read_text(encoding="utf-8")
    return [line for line in text[text.index("## Worst cases"):].splitlines() if line.startswith("| bench-") or line.startswith("### ")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("floor-outputs")
    cases = work / "cases.jsonl"
    pt.write_dataset(cases, N, pt.base_cases())
    with open(cases, "a", encoding="utf-8") as fh:
        first = cases.read_text(encoding="utf-8").splitlines()[0]
        fh.write('{"id": "broken", "trace": 3}\n' + first + "\n")
    out = {}
    for name in ("tracejudge", "floor-1", "floor-2"):
        out[name] = run_dir = work / name
        cfg = work / f"{name}.yaml"
        cfg.write_text(pt.CONFIG.format(cases=cases, run_dir=run_dir))
        cmd = ([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"] if name == "tracejudge" else
               [sys.executable, str(REPO / "benchmarks" / "_floor_run.py"), str(cases), str(run_dir), "--outputs", "--config", str(cfg),
                "--processes", name[-1]])
        proc = _forkserver.run(cmd, capture_output=True, text=True, cwd=work, timeout=300)
        assert proc.returncode == (1 if name == "tracejudge" else 0), proc.stderr  # (tracejudge: the gate fails on invalid input)
    return out


@pytest.mark.parametrize("floor", ["floor-1", "floor-2"])
def test_the_floor_writes_every_file_of_a_run_with_its_rows(runs: dict[str, Path], floor: str) -> None:
    ours, theirs = runs[floor], runs["tracejudge"]
    assert {p.name for p in theirs.iterdir()} == FILES
    assert {p.name for p in ours.iterdir()} == FILES
    lines = (ours / "results.jsonl").read_bytes().splitlines()
    assert len(lines) == N + 2
    # The resume files: the same key hashes and places as tracejudge's.
    assert (ours / "results.idx").read_bytes() == (theirs / "results.idx").read_bytes()
    assert (ours / "cursor.ids").read_bytes() == (theirs / "cursor.ids").read_bytes()
    assert json.loads((ours / "cursor.json").read_text()) == json.loads((theirs / "cursor.json").read_text())
    # The reports' rows and texts: the case table's rows (errors first), the worst cases.
    assert _case_rows(ours) == _case_rows(theirs)
    assert len(_case_rows(ours)) == N + 2
    assert _worst_rows(ours) == _worst_rows(theirs)
    md = (ours / "report.md").read_text(encoding="utf-8")
    assert "**Verdict: FAIL**" in md and "## Errors" in md and "## By tag" in md
    # junit.xml: the gate's suite, then a test case per result and check, each with its duration.
    junit = (ours / "junit.xml").read_text(encoding="utf-8")
    assert junit.count('<testsuite name="tracejudge.gate"') == 1
    assert junit.count("<testcase ") == (theirs / "junit.xml").read_text(encoding="utf-8").count("<testcase ") == 6 * (N + 2) + 1
    assert len(re.findall(r'time="\d+\.\d{6}"', junit)) == 6 * (N + 2)
    # The summary's figures but the CI (and the means' last bit: the fold adds another way).
    mine, want = (json.loads((d / "summary.json").read_text()) for d in (ours, theirs))
    assert mine["status"] == want["status"] and mine["verdict"]["verdict"] == want["verdict"]["verdict"] == "FAIL"
    for key, block in want["metrics"].items():
        got = mine["metrics"][key]
        assert {k: got[k] for k in ("results", "scored", "passed", "histogram", "excluded")} == {
            k: block[k] for k in ("results", "scored", "passed", "histogram", "excluded")}
        assert abs(got["mean"] - block["mean"]) < 1e-12
    assert set(mine["breakdowns"]["tag"]) == set(want["breakdowns"]["tag"])
    # The config as tracejudge reads it, defaults filled; the checkpoint's CRC-32 of the results as written.
    assert json.loads((ours / "configs.jsonl").read_text())["config"] == {
        **json.loads((theirs / "configs.jsonl").read_text())["config"], "run": {**json.loads((theirs / "configs.jsonl").read_text())["config"]["run"], "dir": str(ours)}}
    checkpoint = json.loads((ours / "checkpoint.json").read_text())
    assert checkpoint["results_crc32"] == zlib.crc32((ours / "results.jsonl").read_bytes())
    assert checkpoint["index_crc32"] == zlib.crc32((ours / "results.idx").read_bytes())


def test_a_config_the_floor_cannot_run_is_refused_naming_file_line_and_field(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(pt.CONFIG.format(cases=tmp_path / "cases.jsonl", run_dir=tmp_path / "run").replace("max_calls: 20", "max_calls: -2"))
    (tmp_path / "cases.jsonl").write_text("")
    proc = _forkserver.run([sys.executable, str(REPO / "benchmarks" / "_floor_run.py"), str(tmp_path / "cases.jsonl"), str(tmp_path / "run"),
                            "--outputs", "--config", str(cfg)], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr == f"error: {cfg}:10: metrics[3].max_calls: -2 is not a valid max_calls of MaxToolCalls\n"
