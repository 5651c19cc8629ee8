"""A dataset read with the wrong `dataset.format` is one config error naming the format that reads it, not a result per line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import _forkserver


def _run(tmp_path: Path, data: Path, fmt: str) -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset: {{path: {data}, format: {fmt}}}\nmetrics: [{{type: ToolCalls}}]\nrun: {{dir: run, executor: inprocess}}\n")
    return _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=300)


def _case(i: int) -> dict:
    call = {"name": "lookup", "arguments": {"n": i}}
    return {"id": f"c{i}", "expected_tool_calls": [call], "trace": {"steps": [{"tool_calls": [call]}], "output": "done"}}


def test_a_json_array_read_as_lines_is_refused_with_the_format_that_reads_it(tmp_path: Path) -> None:
    data = tmp_path / "cases.json"
    data.write_text(json.dumps([_case(i) for i in range(40)], indent=2))  # one case spans many lines
    done = _run(tmp_path, data, "openai-messages")
    assert done.returncode == 2
    # (A pretty-printed array is read as its records, each filed at the line it starts on: not one error a line.)
    assert (f"dataset.path: {data}: no record of it reads as format 'openai-messages' (all 40 of its records are invalid, the first: "
            f"{data}:2: messages: required list of messages is missing)" in done.stderr)
    assert "the file is a JSON array; they read as format 'native': set dataset.format" in done.stderr
    assert len(done.stderr.splitlines()) <= 3
    assert not (tmp_path / "run").exists()


def test_invalid_records_before_a_valid_one_still_cost_only_themselves(tmp_path: Path) -> None:
    data = tmp_path / "cases.jsonl"
    data.write_text("".join(f"not json {i}\n" for i in range(99)) + json.dumps(_case(0)) + "\n")
    done = _run(tmp_path, data, "native")
    assert done.returncode == 1  # the gate fails on the invalid share; the run went through
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert len(results) == 100 and [r["status"] for r in results].count("ok") == 1


def test_tau_bench_runs_read_as_chat_lines_suggest_their_format(tmp_path: Path, tau_paths) -> None:
    done = _run(tmp_path, tau_paths[0], "openai-messages")
    assert done.returncode == 2
    assert "the first 100 records are all invalid for format 'openai-messages'" in done.stderr
    assert "they read as format 'tau-bench': set dataset.format" in done.stderr


def _results_file(path: Path, sims: list[dict]) -> Path:
    """A τ²-bench results object holding `sims`, each scored against task `t`."""
    path.write_text(json.dumps({"info": {}, "tasks": [{"id": "t", "evaluation_criteria": {"actions": []}}], "simulations": sims}, indent=1))
    return path


_OTLP = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [
    {"traceId": "t1", "spanId": "a", "name": "invoke_agent", "startTimeUnixNano": "1", "endTimeUnixNano": "2",
     "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}}]}]}]}]}


@pytest.mark.parametrize("given", ["native-as-tau-bench", "tau-bench-as-otel", "tau-bench-as-tau2-bench", "otlp-as-tau-bench", "tau2-bench-as-tau-bench"])
def test_a_file_of_another_format_given_to_a_whole_file_format_is_refused_with_the_format_that_reads_it(tmp_path: Path, tau_paths,
                                                                                                        given: str) -> None:
    # Each was one invalid_input result and exit status 1, as if the data had failed the gate.
    data, fmt, expected, found, other = {
        "native-as-tau-bench": (tmp_path / "cases.jsonl", "tau-bench", "expected a JSON array of records at the top level",
                                "JSON Lines, one value per line (the first: a JSON object with keys id, expected_tool_calls, trace)", "native"),
        "tau-bench-as-otel": (tau_paths[0], "otel", "not an OTLP/JSON export: expected `resourceSpans` or `resourceLogs` at the top level",
                              "a JSON array", "tau-bench"),
        "tau-bench-as-tau2-bench": (tau_paths[0], "tau2-bench", "cannot read a tau2-bench results file", "a JSON array", "tau-bench"),
        "otlp-as-tau-bench": (tmp_path / "export.json", "tau-bench", "expected a JSON array of records at the top level",
                              "a JSON object with keys resourceSpans", "otel"),
        "tau2-bench-as-tau-bench": (tmp_path / "results.json", "tau-bench", "expected a JSON array of records at the top level",
                                    "a JSON object with keys info, tasks, simulations", "tau2-bench"),
    }[given]
    if given == "native-as-tau-bench":
        data.write_text("".join(json.dumps(_case(i)) + "\n" for i in range(3)))
    elif given == "otlp-as-tau-bench":
        data.write_text(json.dumps(_OTLP))
    elif given == "tau2-bench-as-tau-bench":
        _results_file(data, [{"id": "s0", "task_id": "t", "trial": 0, "messages": [{"role": "assistant", "content": "hi"}]}])
    done = _run(tmp_path, data, fmt)
    assert done.returncode == 2, done.stdout + done.stderr
    message = " ".join(done.stderr.split())
    assert f"dataset.path: {data}: no record of it reads as format '{fmt}' ({data}:1: {expected}" in message, message
    assert f"the file is {found};" in message and f"'{other}'" in message and message.endswith("set dataset.format"), message
    assert not (tmp_path / "run").exists()


def test_a_whole_file_format_refuses_a_file_of_bad_records_only_and_runs_one_with_a_good_record(tmp_path: Path) -> None:
    good = {"id": "s9", "task_id": "t", "trial": 0, "messages": [{"role": "assistant", "content": "hi"}]}
    bad = [{"id": f"s{i}", "task_id": f"gone{i}", "trial": 0, "messages": []} for i in range(2)]
    refused = _run(tmp_path, _results_file(tmp_path / "bad.json", bad), "tau2-bench")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert (f"no record of it reads as format 'tau2-bench' (all 2 of its records are invalid, the first: {tmp_path / 'bad.json'}:"
            in " ".join(refused.stderr.split()))
    # One good simulation, even past `dataset.limit`: the file is of the format, its bad records cost only themselves.
    data = _results_file(tmp_path / "mixed.json", [*bad, good])
    (tmp_path / "c.yaml").write_text(f"dataset: {{path: {data}, format: tau2-bench, limit: 2}}\nmetrics: [{{type: ToolCalls}}]\n"
                                     "run: {dir: run, executor: inprocess}\n")
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", "c.yaml", "--no-progress"], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in results] == ["invalid_input", "invalid_input"]


def _opens_and_fails_a_read(path: str) -> bool:
    try:
        fh = open(path, "rb")
    except OSError:
        return False
    with fh:
        try:
            fh.read(1)
        except OSError:
            return True
    return False


@pytest.mark.skipif(not _opens_and_fails_a_read("/proc/self/mem"), reason="needs a /proc/self/mem that opens and fails a read (Linux)")
def test_a_dataset_that_cannot_be_read_is_a_config_error_not_a_crash(tmp_path: Path) -> None:
    # A file that exists but fails every read (an I/O error; a permission refused, for a user other than root) was an
    # internal error with exit 3 and a crash log. Linux's /proc/self/mem opens, and fails a read at offset 0 (EIO).
    data = tmp_path / "cases.jsonl"
    data.symlink_to("/proc/self/mem")
    done = _run(tmp_path, data, "native")
    assert done.returncode == 2, done.stderr
    assert "dataset.path: " in done.stderr and "cannot be read (OSError: [Errno" in done.stderr, done.stderr
    assert "internal error" not in done.stderr and "crash" not in done.stderr
