"""A lone surrogate (`"\\ud800"`: half of a UTF-16 pair) in a record of `openai-messages`, `anthropic-messages` and
`json-path`: `run` and `extract` read it alike.

`run` scored such a record while `extract` refused it with Python's own exception text ("Error serializing to JSON:
UnicodeEncodeError ..."). Now text reads as U+FFFD with one warning naming the record and field, in both commands, and
a tool call's arguments holding one are the record's invalid_input naming the field, in both commands.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import _forkserver

HALF = "\\ud800"  # (written into the file as the six characters of a JSON escape)

# Per format: its options, then three lines: the lone surrogate in text, in a call's arguments, none at all.
FORMATS = {
    "openai-messages": ({"messages_field": "messages"}, [
        '{"id": "text", "messages": [{"role": "user", "content": "Weather in Par' + HALF + 'is?"}, '
        '{"role": "assistant", "content": "Sunny."}]}',
        '{"id": "args", "messages": [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": null, '
        '"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", '
        '"arguments": "{\\"city\\": \\"P' + "\\" + HALF + '\\"}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "21"}]}',
        '{"id": "clean", "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]}',
    ], "messages[0].content", "trace.steps[0].tool_calls[0].arguments.city"),
    "anthropic-messages": ({"messages_field": "messages"}, [
        '{"id": "text", "messages": [{"role": "user", "content": "Where is order 5?"}, '
        '{"role": "assistant", "content": [{"type": "text", "text": "On its w' + HALF + 'ay."}]}]}',
        '{"id": "args", "messages": [{"role": "user", "content": "Order?"}, {"role": "assistant", "content": '
        '[{"type": "tool_use", "id": "t1", "name": "get_order", "input": {"order_id": "5' + HALF + '"}}]}]}',
        '{"id": "clean", "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]}',
    ], "messages[1].content[0].text", "trace.steps[0].tool_calls[0].arguments.order_id"),
    "json-path": ({"id": "meta.run_id", "input": "question", "output": "answer.text", "tool_calls": "steps.*.calls",
                   "call": {"name": "tool", "arguments": "args", "result": "output"}}, [
        '{"meta": {"run_id": "text"}, "question": "Cancel order 7", "answer": {"text": "Cancell' + HALF + 'ed."}, "steps": []}',
        '{"meta": {"run_id": "args"}, "question": "Cancel", "answer": {"text": "Done."}, '
        '"steps": [{"calls": [{"tool": "cancel_order", "args": {"id": "7' + HALF + '"}, "output": "ok"}]}]}',
        '{"meta": {"run_id": "clean"}, "question": "Hi", "answer": {"text": "Hello."}, "steps": []}',
    ], "answer.text", "trace.steps[0].tool_calls[0].arguments.id"),
}


def _tracejudge(*args: str) -> tuple[int, str]:
    done = _forkserver.run([sys.executable, "-m", "tracejudge", *args], capture_output=True, text=True, timeout=300)
    return done.returncode, done.stderr


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_run_and_extract_read_a_lone_surrogate_alike(tmp_path: Path, fmt: str) -> None:
    options, lines, text_field, args_field = FORMATS[fmt]
    data = tmp_path / "records.jsonl"
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps({"dataset": {"path": str(data), "format": fmt, "options": options},
                               "metrics": [{"type": "ToolCalls"}], "run": {"dir": "run", "executor": "inprocess"}}))
    warning = f"{fmt}: records.jsonl:1 (text): {text_field} holds a lone surrogate"

    code, err = _tracejudge("run", str(cfg), "--no-progress")
    assert code == 1 and err.count(warning) == 1 and "read as U+FFFD" in err, err  # (the gate: one invalid_input)
    results = {r["case_id"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    assert {cid: r["status"] for cid, r in results.items()} == {"text": "ok", "args": "invalid_input", "clean": "ok"}
    refused = results["args"]["error"]
    assert refused["field"] == args_field and refused["line"] == 2, refused
    assert "the call's arguments hold a lone surrogate" in refused["message"]

    out = tmp_path / "cases.jsonl"
    code, err = _tracejudge("extract", str(cfg), "-o", str(out))
    assert code == 1 and err.count(warning) == 1, err
    assert "UnicodeEncodeError" not in err and "Error serializing" not in err, err
    assert f"invalid input {data}:2: {args_field} (args): the call's arguments hold a lone surrogate" in err, err
    cases = {c["id"]: c for c in map(json.loads, out.read_text(encoding="utf-8").splitlines())}
    assert sorted(cases) == ["clean", "text"]
    assert "\ufffd" in json.dumps(cases["text"], ensure_ascii=False) and "\ufffd" not in json.dumps(cases["clean"], ensure_ascii=False)


def _run_and_extract(tmp_path: Path, dataset: dict) -> tuple[tuple[int, str], list[dict], tuple[int, str], list[dict]]:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps({"dataset": dataset, "metrics": [{"type": "ToolCalls"}], "run": {"dir": "run", "executor": "inprocess"}}))
    ran = _tracejudge("run", str(cfg), "--no-progress")
    results = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    out = tmp_path / "cases.jsonl"
    extracted = _tracejudge("extract", str(cfg), "-o", str(out))
    return ran, results, extracted, [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_a_tau2_bench_simulation_reads_a_lone_surrogate_as_ufffd_in_run_and_extract(tmp_path: Path, data_dir: Path) -> None:
    # τ²-bench's results file: its first simulation's first message, cut mid-emoji as a recorder may cut it.
    source = data_dir / "tau2_bench" / "model_training_results" / "gpt-4.1_airline_default_gpt-4.1_1trials.json"
    text = source.read_text(encoding="utf-8")
    at = text.index('"content": "', text.index('"simulations"')) + len('"content": "') + 2
    data = tmp_path / "results.json"
    data.write_text(text[:at] + HALF + text[at:], encoding="utf-8")
    (code, err), results, (xcode, xerr), cases = _run_and_extract(tmp_path, {"path": str(data), "format": "tau2-bench"})
    warning = "tau2-bench: simulation "
    said = [line for line in err.splitlines() if warning in line and "simulations[0].messages[0].content holds a lone surrogate" in line]
    assert code == 0 and len(said) == 1 and "read as U+FFFD" in said[0], err
    assert {r["status"] for r in results} == {"ok"} and len(results) == len(cases)
    assert xcode == 0 and "UnicodeEncodeError" not in xerr and sum(warning in line for line in xerr.splitlines()) == 1, xerr
    assert sum("\ufffd" in json.dumps(c, ensure_ascii=False) for c in cases) == 1


def test_a_user_adapters_case_reads_a_lone_surrogate_as_ufffd_in_run_and_extract(tmp_path: Path) -> None:
    # Any other format's case is settled as it leaves the adapter: a user adapter's here, naming the case's field.
    (tmp_path / "myadapter.py").write_text(
        "def adapt(record):\n"
        "    return {'id': record['run'], 'input': 'q', 'trace': {'output': record['answer'], 'steps': []}}\n")
    data = tmp_path / "runs.jsonl"
    data.write_text('{"run": "r1", "answer": "Bought ' + HALF + '."}\n{"run": "r2", "answer": "Done."}\n', encoding="utf-8")
    (code, err), results, (xcode, xerr), cases = _run_and_extract(tmp_path, {"path": str(data), "format": "myadapter:adapt"})
    warning = "myadapter:adapt: runs.jsonl:1 (r1): trace.output holds a lone surrogate"
    assert err.count(warning) == 1 and [r["status"] for r in results] == ["ok", "ok"], err
    assert xcode == 0 and xerr.count(warning) == 1, xerr
    assert [c["trace"]["output"] for c in cases] == ["Bought \ufffd.", "Done."]


def test_an_otel_span_holding_a_lone_surrogate_is_warned_of_once_by_run_and_by_extract(tmp_path: Path, data_dir: Path) -> None:
    # A recorded MCP tool call, its model's last reply cut mid-emoji as an exporter may cut it. `run` also reads the file
    # for the progress bar's total and for a look at its first records: those reads warned of the span again (3 times).
    text = (data_dir / "otel_genai" / "hand" / "mcp_tool_call.json").read_text(encoding="utf-8")
    assert text.count("Expect 60 to 75F") == 1
    data = tmp_path / "spans.json"
    data.write_text(text.replace("Expect 60 to 75F", "Expect 60 to 75F " + HALF), encoding="utf-8")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps({"dataset": {"path": str(data), "format": "otel"}, "metrics": [{"type": "MaxModelRequests", "max_requests": 30}], "run": {"dir": "run"}}))
    warning = "attribute gen_ai.output.messages held a lone UTF-16 surrogate"
    code, err = _tracejudge("run", str(cfg))  # (with its progress bar: the total is counted by a read of its own)
    assert code == 0 and err.count(warning) == 1, err
    code, err = _tracejudge("extract", str(cfg), "-o", str(tmp_path / "cases.jsonl"))
    assert code == 0 and err.count(warning) == 1, err
    assert "\ufffd" in (tmp_path / "cases.jsonl").read_text(encoding="utf-8")


# A lone surrogate in a record's labels (its id, its tags), which the engine refuses rather than mend.
LABELLED = {
    "openai-messages": ('{"id": "c' + HALF + '", "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]}',
                        '{"id": "c2", "tags": ["vip' + HALF + '"], "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]}'),
    "anthropic-messages": ('{"id": "c' + HALF + '", "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]}',
                           '{"id": "c2", "tags": ["vip' + HALF + '"], "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."}]}'),
}


@pytest.mark.parametrize("fmt", sorted(LABELLED))
def test_extract_refuses_a_lone_surrogate_in_an_id_or_tags_in_the_words_run_gives(tmp_path: Path, fmt: str) -> None:
    data = tmp_path / "records.jsonl"
    data.write_text("\n".join(LABELLED[fmt]) + "\n", encoding="utf-8")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps({"dataset": {"path": str(data), "format": fmt, "options": {"messages_field": "messages"}},
                               "metrics": [{"type": "MaxModelRequests", "max_requests": 30}], "run": {"dir": "run", "executor": "inprocess"}}))
    _tracejudge("run", str(cfg), "--no-progress")
    ran = [json.loads(line)["error"]["message"] for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert ran == ["the case id holds text that UTF-8 cannot encode (a lone surrogate)",
                   "tags.0 holds text that UTF-8 cannot encode (a lone surrogate): the result cannot be written"], ran
    code, err = _tracejudge("extract", str(cfg), "-o", str(tmp_path / "cases.jsonl"))
    assert code == 1 and "UnicodeEncodeError" not in err and "Error serializing" not in err, err
    assert f"invalid input {data}:1: id (c\\ud800): the case id holds text that UTF-8 cannot encode (a lone surrogate)\n" in err, err
    assert f"invalid input {data}:2: tags.0 (c2): tags.0 holds text that UTF-8 cannot encode (a lone surrogate): the case cannot be written\n" in err, err
