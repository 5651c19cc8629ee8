"""Bytes a dataset should not hold cost only the record holding them; a byte-order mark is no part of a file; a cut line says so.

Every file is written to `tmp_path`, derived from the real data in `../shared/data` (one byte changed to a Latin-1 `é`,
a UTF-8 byte-order mark added, CRLF line ends, a line or file cut short); nothing is copied into the repository.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import DATA, require
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig, RunConfig
from tracejudge.core.errors import ConfigError
from tracejudge.engine import runner
from tracejudge.stages.extract import extract_record
from tracejudge.stages.load import read_json_array
from tracejudge.stages.load.encoding import file_encoding_problem

pytestmark = pytest.mark.usefixtures("fresh_log")

TAU = DATA / "tau_bench"
RUNS = TAU / "historical_trajectories" / "gpt-4o-airline.json"
TASKS = TAU / "tasks" / "tasks_airline_test.json"
TAU2 = DATA / "tau2_bench" / "leaderboard_submissions" / "claude-sonnet-4-5_aide-platform_2025-10-31" / "claude-sonnet-4-5_airline_default_gpt4.1_1trials.json"
OTEL = DATA / "otel_genai"
BOM = b"\xef\xbb\xbf"
LATIN1_E = "é".encode("latin-1")


def _latin1_at(body: bytes, needle: bytes, after: int = 0) -> tuple[bytes, int]:
    """`body` with the byte just inside the string value after `needle` (from `after` on) replaced by a Latin-1 `é`."""
    at = body.index(needle, after) + len(needle)
    return body[:at] + LATIN1_E + body[at + 1:], at


def _run(path: Path, run_dir: Path, fmt: str = "tau-bench", **dataset: Any) -> list[dict[str, Any]]:
    config = RunConfig.model_validate({
        "dataset": {"path": str(path), "format": fmt, **dataset},
        "metrics": [{"type": "ToolCorrectness", "allow_extra": True}] if fmt.startswith("tau") else [{"type": "MaxToolCalls", "max_calls": 10}],
        "run": {"dir": str(run_dir)},
    })
    outcome = anyio.run(lambda: runner.run(config))
    return [json.loads(line) for line in (outcome.run_dir / "results.jsonl").read_text().splitlines()]


def _extract(path: Path, fmt: str, **options: Any) -> list[Any]:
    """Every record of `path` read and adapted: a `Case`, or `(case id, ErrorInfo)` for an invalid one."""
    f = registry.format_for(fmt)
    ds = DatasetConfig(path=path, format=fmt, options=options)
    ctx = f.prepare(ds)
    return [extract_record(raw, f, ctx) for raw in f.read(ds)]


def _errors(got: list[Any]) -> list[Any]:
    return [g[1] for g in got if isinstance(g, tuple)]


def _scores(results: list[dict[str, Any]]) -> dict[str, Any]:
    return {r["case_id"]: (r["status"], json.dumps(r.get("scores"), sort_keys=True)) for r in results}


# --- one byte that is not UTF-8 -------------------------------------------------------------------------------------


def test_one_latin1_byte_in_a_tau_bench_file_costs_only_its_record(tmp_path: Path) -> None:
    # The text reader raised on the byte and the whole file was one error: a config error, exit 2, nothing scored.
    body, at = _latin1_at(require(RUNS).read_bytes(), b'"content": "', 9000)
    path = tmp_path / "runs.json"
    path.write_bytes(body)
    results = _run(path, tmp_path / "run", tasks=str(require(TASKS)))
    bad = [r for r in results if r["status"] == "invalid_input"]
    assert len(results) == 200 and len(bad) == 1, [r["error"] for r in bad]
    line, column = body.count(b"\n", 0, at) + 1, at - body.rfind(b"\n", 0, at)
    error = bad[0]["error"]
    assert error["file"] == str(path) and error["line"] <= line
    assert error["message"] == (f"record is not valid UTF-8: byte 0xE9 at line {line} column {column} (byte offset {at}) starts no UTF-8 "
                                "character (invalid continuation byte); save the file as UTF-8")
    assert error["message"].endswith(file_encoding_problem(path))  # the same place the whole-file check names


def test_a_nul_byte_in_a_tau_bench_file_is_named_at_its_place_and_costs_only_its_record(tmp_path: Path) -> None:
    # It was "invalid JSON: Invalid control character at line … column …", naming no NUL.
    body = require(RUNS).read_bytes()
    at = body.index(b'"content": "', 9000) + len(b'"content": "')
    path = tmp_path / "runs.json"
    path.write_bytes(body[:at] + b"\x00" + body[at:])
    records = list(read_json_array(path))
    bad = [r for r in records if r.error]
    line, column = body.count(b"\n", 0, at) + 1, at - body.rfind(b"\n", 0, at)
    assert len(records) == 200 and [r.error for r in bad] == [f"invalid JSON: a NUL byte at line {line} column {column}"], bad


@pytest.mark.parametrize("chunk", [1, 5, 4096])
def test_a_json_array_read_in_small_chunks_names_the_same_bytes(tmp_path: Path, chunk: int) -> None:
    # Bytes of a character cut by a chunk's end, a bad byte outside any string and one between records: each one
    # record's error (or the gap's), the rest read, the places those of the file.
    body = require(RUNS).read_bytes()
    head = body[:body.index(b"\n  },\n  {", 100_000) + 4] + b"\n]\n"  # the first records (past the gap below), a valid array
    body, inside = _latin1_at(head, b'"content": "', 2000)
    stray = body.index(b'"reward": ', inside) + len(b'"reward": ') + 3  # after "0.0": no string around it
    body = body[:stray] + b"\x80" + body[stray:]
    gap = body.index(b"\n  },\n  {", stray + 20_000) + 4  # after a record's "}", before its ","
    body = body[:gap] + b"\xff" + body[gap:]
    path = tmp_path / "runs.json"
    path.write_bytes(BOM + body.replace(b"\n", b"\r\n"))
    whole = [r for r in read_json_array(path)]
    assert [(r.line, r.error) for r in read_json_array(path, chunk_size=chunk)] == [(r.line, r.error) for r in whole]
    errors = [r.error for r in whole if r.error]
    offsets = [int(m) for e in errors for m in re.findall(r"byte offset (\d+)", e)]
    assert [e.split(" byte 0x")[0] for e in errors] == ["record is not valid UTF-8:"] * 2 + [
        "expected ',' or ']' between records, found a byte that is not valid UTF-8:"], errors
    crlf = path.read_bytes()
    assert [crlf[o] for o in offsets] == [0xE9, 0x80, 0xFF]
    assert sum(r.error is None for r in whole) == head.count(b'\n    "task_id": ') - 2  # every other record read


def test_a_tau2_bench_simulation_holding_a_latin1_byte_is_its_own_error(tmp_path: Path) -> None:
    src = require(TAU2).read_bytes()
    body, at = _latin1_at(src, b'"content": "', src.index(b'"simulations"') + 5000)
    path = tmp_path / "results.json"
    path.write_bytes(BOM + body)
    got = _extract(path, "tau2-bench")
    errors = _errors(got)
    assert len(got) == 50 and len(errors) == 1, errors
    assert re.fullmatch(r"simulations\[\d+\]: not valid UTF-8: byte 0xE9 at line \d+ column \d+ "
                        rf"\(byte offset {at + 3}\) starts no UTF-8 character \(invalid continuation byte\); save the file as UTF-8",
                        errors[0].message), errors[0].message
    # In a task (any simulation may be scored against it) it is the file's error, naming the byte.
    path.write_bytes(_latin1_at(src, b'"purpose": "')[0])
    errors = _errors(_extract(path, "tau2-bench"))
    assert len(errors) == 1 and "not valid UTF-8: byte 0xE9 at line " in errors[0].message, errors


def test_an_otel_json_file_of_exports_one_per_line_loses_only_the_line_with_a_bad_byte(tmp_path: Path) -> None:
    # A `.json` file holding JSON Lines was read whole as text: one bad byte lost every export in it.
    docs = [json.loads(require(OTEL / "hand" / name).read_bytes()) for name in ("mcp_tool_call.json", "openai_agents_handoff.json")]
    good = _extract(_write_lines(tmp_path / "good.json", docs), "otel")
    lines = [json.dumps(d).encode() for d in docs]
    lines[1], _ = _latin1_at(lines[1], b'"stringValue": "')
    path = tmp_path / "exports.json"
    path.write_bytes(b"\n".join(lines) + b"\n")
    got = _extract(path, "otel")
    errors = _errors(got)
    assert len(errors) == 1 and errors[0].line == 2 and errors[0].message.startswith("line is not valid UTF-8: byte 0xE9 at column "), errors
    kept = [c.id for c in got if not isinstance(c, tuple)]
    assert kept and set(kept) < {c.id for c in good if not isinstance(c, tuple)}


def _write_lines(path: Path, docs: list[Any]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


# --- a UTF-8 byte-order mark ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"])
def test_a_tau_bench_file_with_a_byte_order_mark_scores_as_without(tmp_path: Path, newline: bytes) -> None:
    # Was a config error: "expected a JSON array of records at the top level; the file is text that is not JSON".
    plain = tmp_path / "plain.json"
    plain.write_bytes(require(RUNS).read_bytes().replace(b"\n", newline))
    marked = tmp_path / "marked.json"
    marked.write_bytes(BOM + plain.read_bytes())
    want = _scores(_run(plain, tmp_path / "plain", tasks=str(require(TASKS))))
    assert len(want) == 200 and _scores(_run(marked, tmp_path / "marked", tasks=str(require(TASKS)))) == want


def test_a_tasks_file_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.json"
    tasks.write_bytes(BOM + require(TASKS).read_bytes())
    got = _extract(tasks, "tau-bench-tasks")
    assert len(got) == 50 and not _errors(got)


def test_an_otel_file_with_a_byte_order_mark_reads_as_without(tmp_path: Path) -> None:
    # Was `invalid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) at line 1 column 1`, and the case lost.
    plain, marked = tmp_path / "plain", tmp_path / "marked"
    shutil.copytree(require(OTEL / "hand"), plain, ignore=shutil.ignore_patterns("*.truth.json"))
    shutil.copytree(plain, marked)
    one = marked / "mcp_tool_call.json"
    one.write_bytes(BOM + one.read_bytes())
    want = [c.model_dump() for c in _extract(plain, "otel", group_by="conversation")]
    assert not _errors(_extract(plain, "otel", group_by="conversation"))
    assert [c.model_dump() if not isinstance(c, tuple) else c for c in _extract(marked, "otel", group_by="conversation")] == want


def test_a_tau2_bench_file_with_a_byte_order_mark_reads_as_without(tmp_path: Path) -> None:
    # Was one error for the file: "cannot read a tau2-bench results file: … expected a JSON object at the top level".
    path = tmp_path / "results.json"
    path.write_bytes(BOM + require(TAU2).read_bytes())
    got = _extract(path, "tau2-bench")
    assert not _errors(got) and [c.model_dump() for c in got] == [c.model_dump() for c in _extract(TAU2, "tau2-bench")]


def test_a_marked_json_array_read_as_another_format_is_told_what_it_holds(tmp_path: Path) -> None:
    # The wrong-format check looked at the mark, not the "[" after it, and said "the file is text that is not JSON".
    path = tmp_path / "runs.json"
    path.write_bytes(BOM + require(RUNS).read_bytes())
    with pytest.raises(ConfigError) as refused:
        _run(path, tmp_path / "run", fmt="openai-messages")
    assert "'tau-bench'" in str(refused.value) and "text that is not JSON" not in str(refused.value), str(refused.value)


def test_a_bfcl_function_doc_with_a_byte_order_mark_keeps_its_first_function(tmp_path: Path) -> None:
    from tracejudge.stages.extract.bfcl import load_context

    bfcl = require(DATA / "bfcl")
    shutil.copytree(bfcl / "multi_turn_func_doc", tmp_path / "multi_turn_func_doc")
    question = tmp_path / "BFCL_v4_multi_turn_base.json"
    question.write_bytes((bfcl / "BFCL_v4_multi_turn_base.json").read_bytes())
    want = load_context(question, None)["params"]
    doc = tmp_path / "multi_turn_func_doc" / "math_api.json"
    doc.write_bytes(BOM + doc.read_bytes())
    assert load_context(question, None)["params"] == want and want["MathAPI"]


# --- a line or file cut short ---------------------------------------------------------------------------------------


def _native_lines(n: int) -> list[bytes]:
    """`n` native cases, as `tracejudge extract` writes the first τ-bench runs."""
    fmt = registry.format_for("tau-bench")
    ds = DatasetConfig(path=require(RUNS), format="tau-bench", tasks=require(TASKS), limit=n)
    ctx = fmt.prepare(ds)
    got = [extract_record(raw, fmt, ctx) for raw in fmt.read(ds)]
    return [c.model_dump_json(exclude_none=True).encode() for c in got]


CUT = "; the line ends early (it looks truncated)"


def _cut_after(line: bytes, token: bytes, keep: int) -> bytes:
    """`line` cut `keep` bytes into the last `token` in it."""
    return line[:line.rindex(token) + keep]


def test_a_native_line_cut_short_says_it_ends_early(tmp_path: Path) -> None:
    # "Invalid control character at column 301" (the newline ending a line cut inside a string) said nothing of the cut.
    lines = _native_lines(12)
    cut = {  # line number → (its text, cut short?)
        2: (lines[1][:lines[1].index(b'"input":"') + 20], True),  # inside a string: the newline is the "control character"
        3: (_cut_after(lines[2], b"},{", 2), True),  # after a comma: a value expected
        4: (_cut_after(lines[3], b'":', 2), True),  # after a colon
        5: (_cut_after(lines[4], b"\\n", 1), True),  # inside an escape: a lone backslash
        6: (_cut_after(lines[5], b":false", 4), True),  # inside a keyword: `fal`
        7: (_cut_after(lines[7], b"0.", 2) + b"\r", True),  # inside a number, with a CRLF line end
        8: (lines[7] + b"}", False),  # a value, then one bracket too many ("Extra data"): whole, not cut
        9: (lines[8][:-1] + b",}", False),  # a trailing comma: malformed, not cut
        10: (lines[9][:-1] + b"]", False),  # the wrong bracket
    }
    body = [lines[0]] + [cut[n][0] if n in cut else lines[n - 1] for n in range(2, 13)]
    path = tmp_path / "data.jsonl"
    path.write_bytes(b"\n".join(body) + b"\n")
    errors = {e.line: e.message for e in _errors(_extract(path, "native"))}
    assert set(errors) == set(cut), errors
    for n, (text, short) in cut.items():
        assert errors[n].startswith("invalid JSON: ") and errors[n].endswith(CUT) == short, (n, errors[n])
        column = int(re.search(r"at column (\d+)", errors[n]).group(1))
        end = len(text.rstrip(b"\r\n").decode())
        assert not short or end - 3 <= column <= end + 1, (n, errors[n], end)  # at (or just before) the line's end


NUL = "invalid JSON: a NUL byte at column {} (byte offset {}): JSON allows none, in a string or out of one (in a string it is written \\u0000)"


def test_a_utf8_line_holding_a_nul_byte_names_it_where_a_utf16_line_is_told_utf16(tmp_path: Path) -> None:
    # A short line with a NUL (a third of its bytes) was "not valid UTF-8: … looks UTF-16"; a longer one "Invalid control
    # character" or "Extra data", naming no NUL. JSON has no raw NUL anywhere: in a string it is written \u0000.
    lines = _native_lines(14)
    at = lines[8].index(b'"input":"') + 9
    texts = {  # (after 8 good lines: the file's first 64 KiB are text, and the file is read line by line)
        9: lines[8][:at] + b"\x00" + lines[8][at:],  # inside a string
        10: b"{}\x00",  # after the record: a third of the line's bytes, which looked UTF-16
        11: lines[10] + b"\x00" * 64,  # a record, then a block of NULs (a file preallocated, then a crash)
        12: b"\x00" * 8,  # nothing but NULs, which looked UTF-32
    }
    wide = lines[12].decode().encode("utf-16-le")  # a line appended in UTF-16 without a mark: still told so
    body = [*lines[:8], *texts.values(), wide, lines[13]]
    path = tmp_path / "data.jsonl"
    path.write_bytes(b"\n".join(body) + b"\n")
    errors = _errors(_extract(path, "native"))
    assert all(e.file == str(path) for e in errors), errors
    got = {e.line: e.message for e in errors}
    nul = {n: text.index(b"\x00") for n, text in texts.items()}
    assert got == {**{n: NUL.format(len(texts[n][:i].decode()) + 1, i) for n, i in nul.items()},
                   13: f"line is not valid UTF-8: {wide.count(0)} of its {len(wide) + 1} bytes are NUL: the file looks UTF-16 "
                       "encoded; save it as UTF-8"}, got


@pytest.mark.parametrize("nuls", [1, 3])
def test_a_line_of_one_or_three_nuls_is_no_utf16_or_utf32_text(tmp_path: Path, nuls: int) -> None:
    # Such a line has no byte at the place where UTF-16 (UTF-32) puts a character's, so no position was "sparse" but
    # that empty one: it was told "looks UTF-16" (one NUL) or "UTF-32" (three), though it holds no text at all.
    lines = _native_lines(10)
    path = tmp_path / "data.jsonl"
    path.write_bytes(b"\n".join([*lines[:8], b"\x00" * nuls, lines[9]]) + b"\n")
    errors = _errors(_extract(path, "native"))
    assert [(e.line, e.message) for e in errors] == [(9, NUL.format(1, 0))], errors


def test_a_json_array_cut_short_says_the_file_ends_early(tmp_path: Path) -> None:
    body = require(RUNS).read_bytes()
    path = tmp_path / "runs.json"
    path.write_bytes(body[:len(body) // 2])
    errors = [r.error for r in read_json_array(path) if r.error]
    assert len(errors) == 1 and errors[0].endswith("; the file ends early (it looks truncated)"), errors


def test_the_runs_of_a_task_holding_a_bad_byte_say_the_task_could_not_be_read(tmp_path: Path) -> None:
    # Their reason was "task 0 is not in the tasks file" (task 0 is there; its record is not UTF-8): the cause was only
    # in a JSON log line, never in the results or the gate.
    body = require(TASKS).read_bytes()
    bad, at = _latin1_at(body, b'"instruction": "')  # (the first task's instruction)
    tasks = tmp_path / "tasks.json"
    tasks.write_bytes(bad)
    results = _run(require(RUNS), tmp_path / "run", tasks=str(tasks))
    broken = [r for r in results if r["status"] == "invalid_input"]
    assert broken and len(results) == 200
    line = bad.count(b"\n", 0, at) + 1
    for r in broken:
        message = r["error"]["message"]
        assert "could not be read from the tasks file" in message and "not in the tasks file" not in message, message
        assert f"tasks.json:" in message and "not valid UTF-8: byte 0xE9" in message and f"line {line}" in message, message
