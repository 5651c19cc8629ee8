"""`tracejudge compare --json` (and `compare --judge --json`) on input it cannot compare: exit 2, the message on stderr,
and one JSON object on stdout saying it — not an empty stdout, which a CI step piping it into `jq` fails to parse.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from _runs import result_line
from tracejudge.core.config import validate_config
from tracejudge.engine import runner
from tracejudge.entrypoints.cli import main


def _results(tmp: Path, name: str, ids: list[str]) -> Path:
    run = tmp / name
    run.mkdir()
    (run / "results.jsonl").write_text("".join(result_line(i, 0, {"m": (1.0, "r")}) + "\n" for i in ids))
    return run


def _failed(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    """`compare` with `argv`: exit 2; its stdout's one JSON object and its stderr."""
    capsys.readouterr()
    assert main(["compare", *argv]) == 2
    got = capsys.readouterr()
    assert got.out.strip(), f"nothing on stdout; stderr: {got.err}"
    return json.loads(got.out), " ".join(got.err.split())


def test_an_input_error_is_a_json_object_on_stdout_and_a_line_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _results(tmp_path, "a", ["x"]), _results(tmp_path, "b", ["y"])
    missing = tmp_path / "missing"
    got, err = _failed([str(a), str(missing), "--json"], capsys)
    assert got == {"error": f"{missing}: no such run directory (nor missing-shard-I-of-N directories beside it)", "run_a": str(a),
                   "run_b": str(missing), "metrics": {}}
    assert f"error: {got['error']}" in err
    got, err = _failed([str(a), str(b), "--metric", "nope", "--json"], capsys)
    assert got["error"] == "--metric nope: no result of either run scores it; the runs' metrics: m" and f"error: {got['error']}" in err
    got, err = _failed([str(a), "--json"], capsys)
    assert got["error"].startswith("compare takes two runs") and (got["run_a"], got["run_b"]) == (None, None) and got["error"] in err
    # A path that cannot be used as given (`failures.unusable_path`: exit 2 as well).
    odd = tmp_path / "odd"
    (odd / "results.jsonl").mkdir(parents=True)
    got, err = _failed([str(odd), str(a), "--json"], capsys)
    assert got["error"] == f"{odd / 'results.jsonl'}: Is a directory" and f"error: {got['error']}" in err
    # Shards named with --vs are named as the comparison names them.
    got, _ = _failed([str(a), str(b), "--vs", str(missing), "--json"], capsys)
    assert (got["run_a"], got["run_b"]) == (f"{a} (+1 shards)", str(missing))
    # Without --json, stdout stays empty: the message is stderr's.
    assert main(["compare", str(a), str(missing)]) == 2
    assert capsys.readouterr().out == ""


def _traced_run(tmp: Path, name: str, ids: list[str]) -> Path:
    data = tmp / f"{name}.jsonl"
    data.write_text("".join(json.dumps({"id": i, "input": f"Book a flight for {i}", "trace": {"steps": [{"output": f"booked {i}"}]}}) + "\n"
                            for i in ids))
    anyio.run(lambda: runner.run(validate_config({"dataset": {"path": str(data)}, "metrics": [{"type": "Contains"}],
                                                  "run": {"dir": str(tmp / name)}})))
    return tmp / name


def test_a_pairwise_comparison_of_runs_sharing_no_case_says_so_on_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _traced_run(tmp_path, "a", ["c0", "c1"]), _traced_run(tmp_path, "b", ["d0"])
    cfg = tmp_path / "judge.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(tmp_path / "a.jsonl")}, "metrics": [{"type": "TaskCompletion"}],
                                   "judge": {"provider": "simulator", "model": "gpt-4o-mini"},
                                   "cache": {"dir": str(tmp_path / "cache")}, "run": {"dir": str(tmp_path / "judge-run")}}))
    got, err = _failed([str(a), "--vs", str(b), "--judge", str(cfg), "--min-win-rate", "0.5", "--json"], capsys)
    assert got["error"].startswith(f"no (case, trial) has a trace in both {a} and {b}: nothing to compare"), got
    assert {k: got[k] for k in ("run_a", "run_b", "verdict", "pairs", "cases", "win_rate", "checks")} == {
        "run_a": str(a), "run_b": str(b), "verdict": "ERROR", "pairs": 0, "cases": 0, "win_rate": None, "checks": []}
    assert f"error: {got['error']}" in err
    # A config that cannot be used, and runs that are not two: the same.
    got, err = _failed([str(a), str(b), "--judge", str(tmp_path / "none.yaml"), "--json"], capsys)
    assert got["verdict"] == "ERROR" and got["error"] == f"{tmp_path / 'none.yaml'}: config file not found" and got["error"] in err
    got, _ = _failed([str(a), str(b), str(a), "--judge", str(cfg), "--json"], capsys)
    assert got["error"].startswith("compare --judge takes two runs") and got["verdict"] == "ERROR"


def test_runs_sharing_no_case_are_an_error_naming_both_and_what_to_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # It said "0 paired" over a row of dashes and exited 0: a CI gate comparing against the wrong baseline passed.
    a, b = _results(tmp_path, "a", ["x1", "x2", "x3"]), _results(tmp_path, "b", ["y1"])
    for run, data in ((a, "tasks-a.jsonl"), (b, "tasks-b.jsonl")):
        (run / "manifest.json").write_text(json.dumps({"config": {"dataset": {"path": data}}}))
    got, err = _failed([str(a), str(b), "--json"], capsys)
    assert got["error"] == (
        f"{a} and {b} share no (case, trial): none of {a}'s 3 results pairs with one of {b}'s 1 ({a} has x1, x2, …; {b} has "
        f"y1); {a} read tasks-a.jsonl, {b} read tasks-b.jsonl. compare pairs results by case id and trial: check that the "
        "baseline is a run of the same dataset (not another dataset's run, nor one from before its case ids changed)")
    assert (got["run_a"], got["run_b"], got["metrics"]) == (str(a), str(b), {}) and f"error: {got['error']}" in err
    assert main(["compare", str(a), str(b)]) == 2  # (without --json too)
    assert capsys.readouterr().out == ""
    # A run holding no result yet (killed before its first) has nothing to pair either.
    empty = _results(tmp_path, "empty", [])
    got, _ = _failed([str(empty), str(a), "--json"], capsys)
    assert got["error"] == (f"nothing to compare between {empty} and {a}: {empty} holds no result (check that the run wrote its "
                            "results: `tracejudge report RUN` says how far it got)")
    # A side whose every line is unreadable says which line.
    junk = _results(tmp_path, "junk", [])
    (junk / "results.jsonl").write_text("{not json\n")
    got, _ = _failed([str(junk), str(a), "--json"], capsys)
    assert got["error"].startswith(f"nothing to compare between {junk} and {a}: {junk} holds no result (1 line(s) of its "
                                   f"results.jsonl are not results: {junk / 'results.jsonl'}:1: (root): invalid JSON: "), got
    # One shared case is enough: the comparison is made, and says what is unpaired.
    c = _results(tmp_path, "c", ["x1", "z"])
    capsys.readouterr()
    assert main(["compare", str(a), str(c), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["paired"] == 1
