"""Hostile records (JSON nested 20k–100k deep, 5,000-digit integers) cost one result each, in every format.

Each test writes real dataset files and runs the real pipeline (`runner.run`
in-process for the fuzz test, the `tracejudge` CLI in a subprocess for the
resume fast path): the run finishes, every record has exactly one result
per (case, trial), and the hostile record's result is `invalid_input`
naming its file and line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tracejudge.core.config import RunConfig
from tracejudge.core.errors import ConfigError
from tracejudge.engine import runner
import _forkserver

pytestmark = pytest.mark.usefixtures("fresh_log")

GOOD = 3  # good records around the hostile one


def _otel_export(i: int) -> dict[str, Any]:
    span = {"traceId": f"t{i}", "spanId": f"s{i}", "name": "chat", "kind": 1, "startTimeUnixNano": "1000", "endTimeUnixNano": "2000",
            "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                           {"key": "gen_ai.input.messages", "value": {"stringValue": '[{"role": "user", "parts": [{"type": "text", "content": "hi %d"}]}]' % i}}]}
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"scope": {"name": "x"}, "spans": [span]}]}]}


MESSAGES = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "done"}]

# format → (framing, good record i, dataset options)
FORMATS: dict[str, tuple[str, Any, dict[str, Any]]] = {
    "native": ("jsonl", lambda i: {"id": f"g{i}", "trace": {"steps": [], "output": "done"}}, {}),
    "openai-messages": ("jsonl", lambda i: {"id": f"g{i}", "messages": MESSAGES}, {}),
    "anthropic-messages": ("jsonl", lambda i: {"id": f"g{i}", "messages": MESSAGES}, {}),
    "multivon": ("jsonl", lambda i: {"id": f"g{i}", "input": "hi", "agent_trace": [{"output": "done"}]}, {}),
    "json-path": ("jsonl", lambda i: {"id": f"g{i}", "out": "done"}, {"id": "id", "output": "out"}),
    "bfcl": ("jsonl", lambda i: {"id": f"live_relevance_{i}", "question": [[{"role": "user", "content": "hi"}]]}, {}),
    "otel": ("jsonl", _otel_export, {}),
    "tau-bench": ("array", lambda i: {"task_id": i, "trial": 0, "traj": MESSAGES}, {}),
    "tau-bench-tasks": ("array", lambda i: {"task_index": i, "instruction": "hi", "actions": []}, {}),
    "tau2-bench": ("tau2", lambda i: {"id": f"sim{i}", "task_id": f"t{i}", "trial": 0, "messages": MESSAGES}, {}),
    "smolagents": ("jsonl", lambda i: {"id": f"g{i}", "steps": [{"task": "hi"}, {"step_number": 1, "tool_calls": [], "model_output": "done"}]}, {}),
    "openai-agents": ("jsonl", lambda i: {"trace": {"object": "trace", "id": f"trace_{i}"}, "spans": []}, {}),
    "langfuse": ("jsonl", lambda i: {"id": f"g{i}", "observations": []}, {}),
    "mlflow": ("jsonl", lambda i: {"info": {"trace_id": f"g{i}"}, "data": {"spans": []}}, {}),
}


def _hostile(kind: str, depth: int, digits: int) -> str:
    if kind == "deep_array":
        return "[" * depth + "]" * depth
    if kind == "deep_object":
        return '{"a":' * depth + "1" + "}" * depth
    return "9" * digits


def _with(record: dict[str, Any], value: str, first: bool) -> str:
    body = json.dumps(record)
    return '{"x": ' + value + ", " + body[1:] if first else body[:-1] + ', "x": ' + value + "}"


def write_dataset(folder: Path, fmt: str, hostile_at: int, value: str, first: bool) -> tuple[Path, int]:
    """Write GOOD good records and one hostile one at position `hostile_at`; return (path, its line)."""
    framing, good, _ = FORMATS[fmt]
    texts = [json.dumps(good(i)) for i in range(GOOD)]
    texts.insert(hostile_at, _with(good(GOOD), value, first))
    if framing == "jsonl":
        path = folder / "data.jsonl"
        path.write_text("\n".join(texts) + "\n")
        return path, hostile_at + 1
    body = "[\n" + ",\n".join(texts) + "\n]\n"
    if framing == "tau2":
        tasks = json.dumps([{"id": f"t{i}"} for i in range(GOOD + 1)])
        body = '{"info": {},\n "tasks": ' + tasks + ',\n "simulations": ' + body[:-1] + "}\n"
        path = folder / "results.json"
        path.write_text(body)
        return path, 3 + hostile_at + 1
    path = folder / "data.json"
    path.write_text(body)
    return path, hostile_at + 2


def run_config(path: Path, fmt: str, run_dir: Path, **extra: Any) -> RunConfig:
    """A config scoring `path` with a metric every case can take (the trace's request count)."""
    return RunConfig.model_validate({
        "dataset": {"path": str(path), "format": fmt, "options": FORMATS[fmt][2], **extra},
        "metrics": [{"type": "MaxModelRequests", "max_requests": 30}],
        "run": {"dir": str(run_dir)},
    })


def results_of(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(["deep_array", "deep_object", "huge_int"]),
    depth=st.integers(20_000, 100_000),
    digits=st.integers(4_400, 6_000),
    hostile_at=st.integers(0, GOOD),
    first=st.booleans(),
)
def test_fuzzed_hostile_record_costs_one_invalid_result(tmp_path_factory: pytest.TempPathFactory, fmt: str, kind: str, depth: int,
                                                        digits: int, hostile_at: int, first: bool) -> None:
    folder = tmp_path_factory.mktemp(fmt)
    path, line = write_dataset(folder, fmt, hostile_at, _hostile(kind, depth, digits), first)
    config = run_config(path, fmt, folder / "run")
    outcome = anyio.run(lambda: runner.run(config))
    again = anyio.run(lambda: runner.run(config))  # the resume reads the same hostile record again
    assert again.new_results == 0
    results = results_of(outcome.run_dir)
    keys = Counter((r["case_id"], r["trial"]) for r in results)
    assert all(n == 1 for n in keys.values()), keys
    assert len(results) == GOOD + 1, [(r["case_id"], r["status"], r["error"]) for r in results]
    bad = [r for r in results if r["error"] and r["error"].get("line") == line and r["error"].get("file") == str(path)]
    assert len(bad) == 1 and bad[0]["status"] == "invalid_input" and bad[0]["error"]["message"], results


def test_bfcl_unreadable_answer_costs_its_question_only(tmp_path: Path) -> None:
    (tmp_path / "possible_answer").mkdir()
    questions = tmp_path / "BFCL_v3_simple.json"
    questions.write_text("".join(json.dumps({"id": f"simple_{i}", "question": [[{"role": "user", "content": "hi"}]]}) + "\n" for i in range(3)))
    answers = [json.dumps({"id": f"simple_{i}", "ground_truth": [{"f": {"a": [1]}}]}) for i in range(3)]
    answers[1] = '{"id": "simple_1", "ground_truth": ' + "[" * 50_000 + "]" * 50_000 + "}"
    (tmp_path / "possible_answer" / questions.name).write_text("\n".join(answers) + "\n")
    outcome = anyio.run(lambda: runner.run(run_config(questions, "bfcl", tmp_path / "run")))
    by_id = {r["case_id"]: r for r in results_of(outcome.run_dir)}
    assert sorted(by_id) == ["simple_0", "simple_1", "simple_2"]
    # The others read their answers (they fail later only for want of a trace: BFCL questions need a target).
    assert all("ground_truth" not in json.dumps(by_id[k]["error"]) for k in ("simple_0", "simple_2"))
    err = by_id["simple_1"]["error"]
    assert by_id["simple_1"]["status"] == "invalid_input" and f"{questions.name}:2" in err["message"] and "deeply" in err["message"]


def test_native_resume_fast_path_survives_hostile_lines(tmp_path: Path) -> None:
    """A resumed run peeks each line's id to skip finished ones: hostile lines must not stop it."""
    lines = [json.dumps({"id": f"g{i}", "trace": {"steps": [], "output": "done"}}) for i in range(3)]
    lines.insert(1, '{"x": ' + "[" * 60_000 + "]" * 60_000 + ', "id": "deep"}')
    lines.insert(3, '{"x": ' + "9" * 5_000 + ', "id": "big"}')
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(lines) + "\n")
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps({"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "MaxModelRequests", "max_requests": 30}],
                                  "run": {"dir": str(tmp_path / "run")}, "assertions": {"max_invalid_share": 0.4}}))  # 2 of 5 on purpose
    cmd = [sys.executable, "-m", "tracejudge", "run", str(config)]
    first = _forkserver.run(cmd, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    again = _forkserver.run(cmd, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    results = results_of(tmp_path / "run")
    assert len(results) == 5
    bad = {r["error"]["line"]: r for r in results if r["status"] == "invalid_input"}
    assert sorted(bad) == [2, 4] and all(r["error"]["file"] == str(data) for r in bad.values())


def _deep_native(folder: Path, depth: int, good: int) -> Path:
    """`good` cases expecting no tool call, then one whose metadata nests `depth` arrays (its line is `good + 1`)."""
    lines = [json.dumps({"id": f"g{i}", "trace": {"steps": []}, "expected_tool_calls": []}) for i in range(good)]
    lines.append('{"id":"deep","trace":{"steps":[]},"metadata":{"x":' + "[" * depth + "]" * depth + "}}")
    path = folder / "data.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("processes", [1, 2])
@pytest.mark.parametrize("depth", [230, 500, 2_000, 20_000])
def test_deep_native_metadata_costs_its_case_only_on_either_executor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     depth: int, processes: int) -> None:
    """Metadata nested past what pydantic reads back: one `invalid_input` naming file, line and cause; the rest scored.

    Such a line used to stop the run (msgspec recursing into 2,000 levels), or to be refused as a lone surrogate
    without file or line (500 levels: decoded, then not writable), or to be written unreadably (230 levels).
    """
    from tracejudge.engine.executors import processes as processes_mod

    monkeypatch.setattr(processes_mod, "INLINE_RECORDS", 0)  # the records go to the worker processes
    monkeypatch.setattr(processes_mod, "INLINE_BYTES", 0)
    path = _deep_native(tmp_path, depth, 130)  # more than one trip's chunk
    config = RunConfig.model_validate({"dataset": {"path": str(path), "format": "native"}, "metrics": [{"type": "ToolCalls"}],
                                       "run": {"dir": str(tmp_path / "run"), "processes": processes}})
    outcome = anyio.run(lambda: runner.run(config))
    results = results_of(outcome.run_dir)
    assert len(results) == 131
    assert all(r["status"] == "ok" and r["scores"]["ToolCalls"]["value"] == 1.0 for r in results[:-1])
    deep = results[-1]
    assert deep["case_id"] == "deep" and deep["status"] == "invalid_input", deep
    assert deep["error"]["file"] == str(path) and deep["error"]["line"] == 131
    assert deep["error"]["message"].startswith("JSON nested too deeply") and "201 at most" in deep["error"]["message"], deep["error"]



@pytest.mark.parametrize("processes", [1, 2])
def test_native_metadata_objects_at_the_limit_are_read_back_or_refused_never_written_unreadably(tmp_path: Path, processes: int) -> None:
    """Metadata of nested objects up to the limit: a record of 200 levels is scored and its result line read back (by
    `tracejudge report` and the result model); one of 201 is refused where it is read, as the pydantic path refuses it.

    Before, the struct path took the 201-level record (it counted as pydantic-core's parser does, a level more than a
    model reads for objects) and wrote a result line that `report` then called damaged, left out and failed on.
    """
    from tracejudge.core.records import CaseResult

    for levels, ok in ((200, True), (201, False)):
        folder = tmp_path / f"{levels}-{processes}"
        folder.mkdir()
        inner = "1"
        for _ in range(levels - 1):  # inside the record (level 1): the metadata (2) and the objects inside it
            inner = '{"n":' + inner + "}"
        lines = [json.dumps({"id": f"g{i}", "trace": {"steps": []}, "expected_tool_calls": []}) for i in range(3)]
        lines.append('{"id":"deep","trace":{"steps":[]},"expected_tool_calls":[],"metadata":' + inner + "}")
        path = folder / "data.jsonl"
        path.write_text("\n".join(lines) + "\n")
        cfg = folder / "c.yaml"
        cfg.write_text(json.dumps({"dataset": {"path": str(path), "format": "native"}, "metrics": [{"type": "ToolCalls"}],
                                   "run": {"dir": str(folder / "run"), "processes": processes}}))
        run = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=120)
        deep = results_of(folder / "run")[-1]
        if ok:
            assert run.returncode == 0 and deep["status"] == "ok", run.stdout + run.stderr
            assert CaseResult.model_validate_json((folder / "run" / "results.jsonl").read_text().splitlines()[-1]).case_id == "deep"
        else:
            assert deep["status"] == "invalid_input" and deep["error"]["line"] == 4, deep
            assert deep["error"]["message"].startswith("JSON nested too deeply"), deep["error"]
            # 201 levels of objects are not "more than 201": the model counts the value inside the innermost one.
            assert "more than 201" not in deep["error"]["message"] and "201 at most" in deep["error"]["message"], deep["error"]
        report = _forkserver.run([sys.executable, "-m", "tracejudge", "report", str(folder / "run")], capture_output=True, text=True, timeout=120)
        assert "not a valid result" not in report.stdout + report.stderr, report.stdout + report.stderr
        assert report.returncode == run.returncode, report.stdout + report.stderr

def test_deep_native_line_exits_as_any_invalid_input(tmp_path: Path) -> None:
    """From the command line: the good case is written and the exit status is an invalid record's, not a crash's."""
    exits = {}
    for name, bad in (("deep", None), ("broken", '{"id": "broken", ')):
        folder = tmp_path / name
        folder.mkdir()
        path = _deep_native(folder, 2_000, 1)
        if bad is not None:
            path.write_text(path.read_text().splitlines()[0] + "\n" + bad + "\n")
        config = folder / "c.yaml"
        config.write_text(json.dumps({"dataset": {"path": str(path), "format": "native"}, "metrics": [{"type": "ToolCalls"}],
                                      "run": {"dir": str(folder / "run")}}))
        proc = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(config)], capture_output=True, text=True, timeout=120)
        assert "internal error" not in proc.stderr, proc.stderr
        assert [r["status"] for r in results_of(folder / "run")] == ["ok", "invalid_input"]
        exits[name] = proc.returncode
    assert exits["deep"] == exits["broken"] != 3


def test_deep_record_of_any_jsonl_format_is_refused_when_read(tmp_path: Path) -> None:
    """A format decoding with `json.loads` reads 500 levels; the record is refused before, naming the cause."""
    path, line = write_dataset(tmp_path, "json-path", 1, _hostile("deep_array", 500, 0), False)
    outcome = anyio.run(lambda: runner.run(run_config(path, "json-path", tmp_path / "run")))
    bad = [r for r in results_of(outcome.run_dir) if r["status"] == "invalid_input"]
    assert len(bad) == 1 and bad[0]["error"]["line"] == line and "nested too deeply" in bad[0]["error"]["message"], bad


def test_a_case_from_memory_too_deep_to_write_says_so(tmp_path: Path) -> None:
    """A case built in Python is never decoded: the writer refuses its metadata, naming depth, not a lone surrogate."""
    import tracejudge

    deep: list[Any] = []
    for _ in range(300):
        deep = [deep]
    cases = [{"id": "ok", "trace": {"steps": []}, "expected_tool_calls": []}, {"id": "deep", "trace": {"steps": []}, "metadata": {"x": deep}}]
    tracejudge.evaluate(cases, [{"type": "ToolCalls"}], run_dir=tmp_path / "run")
    ok, bad = results_of(tmp_path / "run")
    assert ok["status"] == "ok" and bad["case_id"] == "deep" and bad["status"] == "invalid_input"
    assert bad["error"]["message"].startswith("JSON nested too deeply"), bad["error"]


SAVE_AS_UTF8 = "the file looks UTF-16 encoded; save it as UTF-8"


@pytest.mark.parametrize("fmt", sorted(f for f, (framing, _, _) in FORMATS.items() if framing == "jsonl"))
def test_a_line_that_is_not_utf8_says_so_at_its_place_and_the_rest_score(tmp_path: Path, fmt: str) -> None:
    # `json.loads` guessed UTF-16 from a leading FF FE: the line was "invalid JSON at column 1", or "not valid UTF-8"
    # at an offset of that UTF-16 decode.
    good = [json.dumps(FORMATS[fmt][1](i)).encode() for i in range(8)]
    latin1 = json.dumps(FORMATS[fmt][1](9)).encode()
    at = latin1.index(b'"', latin1.index(b":") + 1) + 1  # the first value's first character
    lines = [good[0], b"\xff\xfe" + json.dumps(FORMATS[fmt][1](10)).encode(), *good[1:4], latin1[:at] + b"\xe9" + latin1[at:],
             *good[4:], ("\ufeff" + json.dumps(FORMATS[fmt][1](11)) + "\r\n").encode("utf-16-le").rstrip(b"\n\x00")]
    path = tmp_path / "data.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    outcome = anyio.run(lambda: runner.run(run_config(path, fmt, tmp_path / "run")))
    results = results_of(outcome.run_dir)
    bad = {r["error"]["line"]: r["error"]["message"] for r in results if r["error"] and "UTF" in r["error"]["message"]}
    assert bad == {
        2: f"line is not valid UTF-8: it starts with FF FE, a UTF-16 LE byte-order mark: {SAVE_AS_UTF8}",
        6: f"line is not valid UTF-8: byte 0xE9 at column {at + 1} (byte offset {at}) starts no UTF-8 character "
           "(invalid continuation byte); save the file as UTF-8",
        11: f"line is not valid UTF-8: it starts with FF FE, a UTF-16 LE byte-order mark: {SAVE_AS_UTF8}",
    }, results
    assert all(r["error"]["file"] == str(path) for r in results if r["error"] and "UTF" in r["error"]["message"])
    assert len(results) == len(lines), results  # every good line around them is read too (these formats' own checks aside)


@pytest.mark.parametrize("encoding,why", [
    ("utf-16", f"it starts with FF FE, a UTF-16 LE byte-order mark: {SAVE_AS_UTF8}"),
    ("utf-16-be", f"bytes are NUL: {SAVE_AS_UTF8}"),  # no mark: half its bytes are NUL
    ("utf-32", "it starts with FF FE 00 00, a UTF-32 LE byte-order mark: the file looks UTF-32 encoded; save it as UTF-8"),
])
def test_a_file_saved_in_utf16_is_one_error_naming_its_encoding(tmp_path: Path, encoding: str, why: str) -> None:
    text = "".join(json.dumps(FORMATS["native"][1](i)) + "\n" for i in range(5))
    (tmp_path / "data.jsonl").write_bytes(text.encode(encoding))
    results = results_of(anyio.run(lambda: runner.run(run_config(tmp_path / "data.jsonl", "native", tmp_path / "run"))).run_dir)
    assert len(results) == 1 and results[0]["status"] == "invalid_input", results
    assert results[0]["error"]["message"].startswith("not a text JSONL file (") and why in results[0]["error"]["message"], results
    body = "[" + ",\n".join(json.dumps(FORMATS["tau-bench"][1](i)) for i in range(5)) + "]\n"
    (tmp_path / "data.json").write_bytes(body.encode(encoding))
    with pytest.raises(ConfigError) as refused:  # a JSON array file is refused whole, before the run
        anyio.run(lambda: runner.run(run_config(tmp_path / "data.json", "tau-bench", tmp_path / "run-array")))
    assert "data.json:1: file is not valid UTF-8: " in str(refused.value) and why in str(refused.value)


def test_a_json_array_names_the_file_offset_of_a_byte_that_is_not_utf8(tmp_path: Path) -> None:
    # The text reader's error named an offset in its own 8 KiB buffer, not in the file. (It also made the one
    # record's bad byte the whole file's; now the record is its own invalid_input: tests/test_input_bytes.py.)
    records = [json.dumps(FORMATS["tau-bench"][1](i)) for i in range(400)]
    body = ("[" + ",\n".join(records) + "]\n").encode()
    at = body.index(b'"user"', len(body) - 200) + 1
    path = tmp_path / "data.json"
    path.write_bytes(body[:at] + b"\xe9" + body[at:])
    results = results_of(anyio.run(lambda: runner.run(run_config(path, "tau-bench", tmp_path / "run"))).run_dir)
    line = body.count(b"\n", 0, at) + 1
    column = at - body.rfind(b"\n", 0, at)
    message = (f"record is not valid UTF-8: byte 0xE9 at line {line} column {column} (byte offset {at}) starts no UTF-8 character "
               "(invalid continuation byte); save the file as UTF-8")
    bad = [r["error"] for r in results if r["status"] == "invalid_input"]
    assert [(e["line"], e["message"]) for e in bad] == [(line, message)] and len(results) == 400, bad


def test_a_json_array_record_that_is_not_json_costs_that_record(tmp_path: Path) -> None:
    # A doubled comma in one τ-bench run (a file edited by hand) stopped the read there: the 200 runs after it were
    # never scored, and the run said only that one record was invalid.
    records = [json.dumps(FORMATS["tau-bench"][1](i)) for i in range(400)]
    records[199] = records[199].replace(", ", ", , ", 1)
    body = "[" + ",\n".join(records) + "]\n"
    path = tmp_path / "data.json"
    path.write_text(body)
    results = results_of(anyio.run(lambda: runner.run(run_config(path, "tau-bench", tmp_path / "run"))).run_dir)
    bad = [r["error"] for r in results if r["status"] == "invalid_input"]
    assert len(results) == 400 and [e["line"] for e in bad] == [200], bad
    assert bad[0]["message"].startswith("invalid JSON: Expecting ") and "at line 200 column " in bad[0]["message"], bad


def test_a_json_array_record_that_lost_a_quote_stops_the_read_without_making_up_records(tmp_path: Path) -> None:
    # Stepped over by a bracket scan, a record that lost a quote was read inside out: the scan ended it inside a later
    # run, whose messages then read as dozens of invalid records, and the runs after it were lost without a word.
    records = [json.dumps(FORMATS["tau-bench"][1](i), indent=2) for i in range(400)]
    records[99] = records[99].replace('": ', ': ', 1)  # `"task_id: 7,`: the key's closing quote lost
    path = tmp_path / "data.json"
    path.write_text("[" + ",\n".join(records[:200]) + "\n" + ",\n".join(records[200:]) + ",\n]\n")  # (a comma lost, one left)
    results = results_of(anyio.run(lambda: runner.run(run_config(path, "tau-bench", tmp_path / "run"))).run_dir)
    bad = [r["error"]["message"] for r in results if r["status"] == "invalid_input"]
    assert len(results) == 100 and len(bad) == 1, bad
    assert bad[0].endswith("a quote is missing in or near this record, so where it ends cannot be told; the rest of the file is not read"), bad
    records[99] = json.dumps(FORMATS["tau-bench"][1](99), indent=2)
    path.write_text("[" + ",\n".join(records[:200]) + "\n" + ",\n".join(records[200:]) + ",\n]\n")
    results = results_of(anyio.run(lambda: runner.run(run_config(path, "tau-bench", tmp_path / "run2"))).run_dir)
    assert len(results) == 400 and {r["status"] for r in results} == {"ok"}


@pytest.mark.parametrize("fmt", sorted(f for f, (framing, _, _) in FORMATS.items() if framing == "jsonl"))
def test_the_line_after_a_utf16_line_is_read_as_written(tmp_path: Path, fmt: str) -> None:
    # A UTF-16 LE line's newline is 0A 00 (0D 00 0A 00 with "\r\n"): split at the 0A, its 00 began the next line, which
    # was then "invalid JSON: Expecting value at column 1". Every other line must give what it gives in a UTF-8 file.
    texts = [json.dumps(FORMATS[fmt][1](i)) for i in range(6)]
    path = tmp_path / "data.jsonl"
    path.write_text("".join(t + "\n" for t in texts))
    want = {r["case_id"]: (r["status"], r["error"]) for r in results_of(anyio.run(lambda: runner.run(run_config(path, fmt, tmp_path / "utf8"))).run_dir)}
    for newline in ("\n", "\r\n"):
        wide = ("\ufeff" + texts[3] + newline).encode("utf-16-le")
        path.write_bytes("".join(t + "\n" for t in texts[:3]).encode() + wide + "".join(t + "\n" for t in texts[4:]).encode())
        run = tmp_path / f"run{len(newline)}"
        got = {r["case_id"]: (r["status"], r["error"]) for r in results_of(anyio.run(lambda: runner.run(run_config(path, fmt, run))).run_dir)}
        (status, error), = [got.pop(k) for k, (_, e) in list(got.items()) if e and e.get("line") == 4]
        assert status == "invalid_input" and error["message"] == f"line is not valid UTF-8: it starts with FF FE, a UTF-16 LE byte-order mark: {SAVE_AS_UTF8}"
        assert len(got) == 5 and all(want.get(k) == v for k, v in got.items()), (got, want)  # the other five, as in UTF-8


def test_a_utf16_line_appended_last_is_one_invalid_record_and_is_not_read_again(tmp_path: Path) -> None:
    # Its newline's 00 after the last 0A was a line of its own: a second invalid record, "last line has no newline",
    # provisional, so the resume cursor stayed before it and every resume read it again.
    texts = [json.dumps(FORMATS["native"][1](i)) for i in range(4)]
    data = tmp_path / "data.jsonl"
    data.write_bytes("".join(t + "\n" for t in texts[:3]).encode() + ("\ufeff" + texts[3] + "\n").encode("utf-16-le"))
    config = tmp_path / "c.yaml"
    config.write_text(json.dumps({"dataset": {"path": str(data), "format": "native"}, "metrics": [{"type": "MaxModelRequests", "max_requests": 30}],
                                  "run": {"dir": str(tmp_path / "run")}, "assertions": {"max_invalid_share": 0.5}}))
    extract = _forkserver.run([sys.executable, "-m", "tracejudge", "extract", str(config), "-o", "-"], capture_output=True, text=True, timeout=120)
    assert len(extract.stdout.splitlines()) == 3 and "1 record was invalid" in extract.stderr and f"{data}:5" not in extract.stderr, extract.stderr
    cmd = [sys.executable, "-m", "tracejudge", "--log-level", "info", "run", str(config), "--no-progress"]
    assert _forkserver.run(cmd, capture_output=True, text=True, timeout=120).returncode == 0
    assert [r["status"] for r in results_of(tmp_path / "run")] == ["ok"] * 3 + ["invalid_input"]
    cursor = json.loads((tmp_path / "run" / "cursor.json").read_text())
    assert (cursor["records"], cursor["line"]) == (4, 4)
    again = _forkserver.run(cmd, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and '"resuming from the dataset cursor"' in again.stderr and "(0 new results, 4 already finished)" in again.stdout, again.stdout
    assert len(results_of(tmp_path / "run")) == 4
