"""Format `inspect`: inspect-ai evaluation logs, `.eval` archives and `.json` logs, read into cases.

The logs in `tests/data/inspect/` were written by real `inspect_ai.eval(...)` runs (mockllm with scripted replies,
real tools) by `tests/frameworks/record_inspect.py`; `truth.json` is what each sample did, from the script and the
tools' code. The broken logs below are made from those files: cut, edited, or repacked.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from framework_truth import extract
from tracejudge.core.records import Case, ErrorInfo
import _forkserver

DATA = Path(__file__).parent / "data" / "inspect"
RECORDER = Path(__file__).parent / "frameworks" / "record_inspect.py"
TRUTH = json.loads((DATA / "truth.json").read_text())
LOGS = ["weather-tools.eval", "weather-tools.json", "weather-chat.eval", "weather-react.eval", "weather-react.json", "weather-agent.eval"]


def _cases(path: Path, **options: Any) -> dict[str, Case]:
    got = extract(path, "inspect", **options)
    assert all(isinstance(g, Case) for g in got), [g for g in got if not isinstance(g, Case)]
    return {c.id: c for c in got}


def _errors(path: Path, **options: Any) -> list[tuple[str, ErrorInfo]]:
    return [g for g in extract(path, "inspect", **options) if isinstance(g, tuple)]


def _expected_ids(task: str) -> set[str]:
    t = TRUTH[task]
    return {sid if t["epochs"] == 1 else f"{sid}#{e}" for sid in t["samples"] for e in range(1, t["epochs"] + 1)}


@pytest.mark.parametrize("log", LOGS)
def test_every_sample_and_epoch_is_a_case_as_it_ran(log: str) -> None:
    """Ids (`<id>`, or `<id>#<epoch>` for a 2-epoch run), calls with arguments, results and the tool error, answers,
    turns, reasoning, targets and usage: as the recorder's script and tools made them."""
    task = log.rsplit(".", 1)[0]
    cases = _cases(DATA / log)
    assert set(cases) == _expected_ids(task)
    for cid, case in cases.items():
        sid, _, epoch = cid.partition("#")
        want = TRUTH[task]["samples"][sid]
        assert case.trace is not None
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments, "result": c.result, "error": c.error} for c in case.trace.tool_calls()]
        assert calls == want["calls"]
        assert case.trace.output == want["output"]
        assert case.input == want["input"]
        assert [m.content for m in case.trace.user_messages] == want["user_turns"] and case.turns == want["user_turns"][1:]
        assert [s.thought for s in case.trace.steps if s.thought in want["thoughts"]] == want["thoughts"]
        usage = case.trace.usage
        assert (usage.input_tokens, usage.output_tokens, usage.requests) == (want["usage"]["input_tokens"], want["usage"]["output_tokens"],
                                                                              want["usage"]["requests"])
        assert usage.cost_usd == pytest.approx(want["usage"]["cost_usd"]) and usage.latency_s > 0
        assert case.metadata["task"] == task and case.metadata["model"] == "mockllm/model"
        assert case.metadata["inspect"]["epoch"] == int(epoch or 1) and str(case.metadata["inspect"]["sample_id"]) == sid
        assert case.metadata.get("run_error") == want["error"]


def test_targets_metadata_and_expected_calls_come_from_the_sample() -> None:
    cases = _cases(DATA / "weather-tools.eval")
    assert cases["paris#1"].expected_output == "21" and cases["2#2"].expected_output == ["unavailable", "Atlantis"]
    assert cases["2#1"].metadata["inspect"]["sample_id"] == 2  # the integer id as the log holds it; the case id is its text
    assert (cases["2#1"].metadata["city"], cases["2#1"].metadata["level"]) == ("Paris+Atlantis", 2)
    assert cases["2#1"].metadata["inspect"]["metadata"] == {"cities": ["Paris", "Atlantis"]}  # not a scalar: kept apart
    assert cases["paris#2"].metadata["inspect"]["scores"] == {"includes": "C", "match": "C"}
    assert [(e.name, e.arguments) for e in cases["2#1"].expected_tool_calls] == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Atlantis"})]
    assert "expected_tool_calls" not in cases["2#1"].metadata
    (step,) = [s for s in cases["2#1"].trace.steps if s.tool_calls]
    assert len(step.tool_calls) == 2 and step.thought == "Checking both cities."  # two calls of one message: one step


def test_eval_and_json_logs_of_one_run_give_the_same_cases() -> None:
    for task in ("weather-tools", "weather-react"):
        zipped, plain = _cases(DATA / f"{task}.eval"), _cases(DATA / f"{task}.json")
        for cid, case in zipped.items():
            assert case.metadata["inspect"].pop("log") == f"{task}.eval" and plain[cid].metadata["inspect"].pop("log") == f"{task}.json"
            assert case == plain[cid]


def test_a_failed_sample_keeps_what_it_did_and_its_error() -> None:
    """The tool raised RuntimeError: inspect ended the sample. Its call stays, failed with that error (its `tool` event:
    `failed`, no result), not a call in flight; no output; `metadata.run_error`."""
    crash = _cases(DATA / "weather-chat.eval")["crash"]
    said = "RuntimeError('weather backend crashed on Nowhere')"
    assert crash.metadata["run_error"] == said
    assert crash.trace.output is None  # inspect's completion is the text said before the crash, never an answer
    (step,) = crash.trace.steps
    assert (step.thought, [(c.name, c.result, c.error) for c in step.tool_calls]) == ("Looking it up.", [("get_weather", None, said)])


def test_a_multi_turn_sample_places_each_user_turn_before_its_answer() -> None:
    chat = _cases(DATA / "weather-chat.eval")["chat"]
    assert [(m.step, m.content) for m in chat.trace.user_messages] == [(0, "How is Paris today?"), (2, "And in Fahrenheit?")]
    assert [(s.thought, s.output) for s in chat.trace.steps] == [("The user wants Paris: call get_weather first.", None), (None, "Paris is sunny, 21 C."),
                                                                ("Converting.", None), (None, "That is 69.8 F.")]


def test_submit_is_the_answer_not_a_call_unless_told_otherwise() -> None:
    agent = _cases(DATA / "weather-agent.eval")["agent"]
    assert [c.name for c in agent.trace.tool_calls()] == ["get_weather"]
    assert (agent.trace.steps[-1].thought, agent.trace.steps[-1].output) == ("Submitting.", "Paris: sunny, 21 C")
    assert "unpaired_results" not in agent.metadata["inspect"]  # submit's tool message is no stray result
    kept = _cases(DATA / "weather-agent.eval", answer_tools=[])["agent"]
    assert [(c.name, c.result) for c in kept.trace.tool_calls()] == [("get_weather", "sunny, 21 C"), ("submit", "Paris: sunny, 21 C")]


def test_id_prefix_names_the_task_or_the_log() -> None:
    assert set(_cases(DATA / "weather-tools.json", id_prefix="task")) == {f"weather-tools/{i}" for i in _expected_ids("weather-tools")}
    assert set(_cases(DATA / "weather-react.eval", id_prefix="log")) == {"weather-react/react"}


def test_peek_id_is_the_id_adapt_gives() -> None:
    from tracejudge.core import registry
    from tracejudge.core.config import DatasetConfig

    fmt = registry.format_for("inspect")
    for options in ({}, {"id_prefix": "task"}):  # (the viewer finds a case by the id peek_id tells)
        ds = DatasetConfig(path=DATA / "weather-tools.json", format="inspect", options=options)
        ids = [(fmt.peek_id(raw.payload), fmt.adapt(raw.payload, fmt.prepare(ds)).id) for raw in fmt.read(ds)]
        assert len(ids) == 4 and all(peeked == adapted for peeked, adapted in ids), ids


def _folder(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "logs"
    folder.mkdir(exist_ok=True)
    for name in names:
        shutil.copyfile(DATA / name, folder / name)
    return folder


def test_a_folder_reads_every_log_and_leaves_out_inspects_own_listings(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "weather-chat.eval", "weather-react.json")
    (folder / "logs.json").write_text("{}")  # an eval set's manifest
    (folder / "notes.txt").write_text("x")
    (folder / "weather-chat.shards" / "1").mkdir(parents=True)
    shutil.copyfile(DATA / "weather-chat.eval", folder / "weather-chat.shards" / "1" / "attempt.eval")  # merged into the log
    from tracejudge.stages.extract.inspect_logs import log_files

    assert [p.name for p in log_files(folder)] == ["weather-chat.eval", "weather-react.json"]
    assert set(_cases(folder)) == {"chat", "crash", "react"}


# ------------------------------------------------------------------------------------------------ broken logs
def _json_log() -> dict[str, Any]:
    return json.loads((DATA / "weather-tools.json").read_text())


def _repack(path: Path, doc: dict[str, Any], members: dict[str, bytes]) -> Path:
    """A `.eval` archive as inspect wrote them before Zstandard (deflate): `header.json` from `doc`, then `members`."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", json.dumps({k: v for k, v in doc.items() if k != "samples"}))
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_bad_samples_of_an_archive_are_each_an_invalid_input_naming_member_and_field(tmp_path: Path) -> None:
    doc = _json_log()
    good, no_messages, bad_call = (dict(s) for s in doc["samples"][:3])
    del no_messages["messages"]
    bad_call["messages"][1]["tool_calls"][0].pop("function")
    members = {"samples/2_epoch_1.json": json.dumps(good).encode(), "samples/paris_epoch_1.json": json.dumps(no_messages).encode(),
               "samples/2_epoch_2.json": json.dumps(bad_call).encode(), "samples/x_epoch_1.json": b"[1, 2]",
               "samples/y_epoch_1.json": b'{"id": "y", "epoch": 1, "messages": [', "samples/z_epoch_1.json": b'{"epoch": 1, "messages": []}'}
    log = _repack(tmp_path / "broken.eval", doc, members)
    results = extract(log, "inspect")
    assert [r.id for r in results if isinstance(r, Case)] == ["2#1"]
    errors = {info.file.removeprefix(f"{log}/"): (cid, info.field, info.message) for cid, info in (r for r in results if isinstance(r, tuple))}
    assert errors["samples/paris_epoch_1.json"][:2] == ("paris#1", "messages")
    assert "messages: expected the sample's list of chat messages, got nothing" in errors["samples/paris_epoch_1.json"][2]
    assert errors["samples/2_epoch_2.json"][:2] == ("2#2", "messages[1].tool_calls[0].function")
    assert errors["samples/x_epoch_1.json"][2] == "expected a sample object, got an array"
    assert errors["samples/y_epoch_1.json"][2].startswith("invalid JSON") and "ends early" in errors["samples/y_epoch_1.json"][2]
    assert errors["samples/z_epoch_1.json"][1:] == ("id", "id: expected the sample id (a string or an integer), got nothing")
    assert all(info.kind == "invalid_input" and info.line == 1 for _, info in (r for r in results if isinstance(r, tuple)))


def test_a_cut_archive_scores_the_samples_before_the_cut(tmp_path: Path) -> None:
    """Cut inside its third sample (no central directory left): two samples score, the cut one and the file say so."""
    src = DATA / "weather-tools.eval"
    third = [i for i in zipfile.ZipFile(src).infolist() if i.filename.startswith("samples/")][2]
    cut = third.header_offset + 30 + len(third.filename) + third.compress_size // 2
    log = tmp_path / "cut.eval"
    log.write_bytes(src.read_bytes()[:cut])
    results = extract(log, "inspect")
    assert len([r for r in results if isinstance(r, Case)]) == 2
    (member, info), (whole, file_info) = [r for r in results if isinstance(r, tuple)]
    assert info.file == f"{log}/{third.filename}" and "the archive ends inside it" in info.message
    assert file_info.file == str(log) and f"cut short inside {third.filename}" in file_info.message and whole == f"{log}:1"


def test_a_file_that_is_no_log_is_one_invalid_input(tmp_path: Path) -> None:
    not_zip = tmp_path / "notes.eval"
    not_zip.write_text("not a zip\n")
    array = tmp_path / "tasks.json"
    array.write_text("[1, 2]")
    other = tmp_path / "config.json"
    other.write_text('{"model": "x"}')
    for path, said in ((not_zip, "no zip archive"), (array, "expected a JSON object (an EvalLog)"), (other, "its keys: model")):
        ((cid, info),) = extract(path, "inspect")
        assert (cid, info.file, info.line) == (f"{path}:1", str(path), 1) and said in info.message


def test_bad_samples_of_a_json_log_name_their_line_and_the_others_score(tmp_path: Path) -> None:
    doc = _json_log()
    doc["samples"][1] = "oops"
    del doc["samples"][2]["input"]
    log = tmp_path / "edited.json"
    log.write_text(json.dumps(doc, indent=2))
    text = log.read_text().splitlines()
    results = extract(log, "inspect")
    assert [r.id for r in results if isinstance(r, Case)] == ["2#1", "paris#2"]
    (_, oops), (cid, missing) = [r for r in results if isinstance(r, tuple)]
    assert text[oops.line - 1].strip() == '"oops",' and oops.message == "expected a sample object, got a string"
    assert (cid, missing.field) == ("2#2", "input") and text[missing.line - 1].strip() == "{"


def test_a_json_log_cut_short_scores_the_samples_before_the_cut(tmp_path: Path) -> None:
    lines = (DATA / "weather-tools.json").read_text().splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line == "    {\n"]  # (inspect indents a sample of `samples` by 4)
    log = tmp_path / "cut.json"
    log.write_text("".join(lines[: starts[2] + 40]))  # inside the third sample
    results = extract(log, "inspect")
    assert [r.id for r in results if isinstance(r, Case)] == ["2#1", "paris#1"]
    ((_, info),) = [r for r in results if isinstance(r, tuple)]
    assert info.file == str(log) and "ends early" in info.message and "samples after it are not read" in info.message


def test_a_folder_mixing_good_and_bad_logs_scores_the_good_samples(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "weather-react.eval", "weather-agent.eval")
    (folder / "empty.eval").write_bytes(b"")
    doc = json.loads((DATA / "weather-react.json").read_text())
    del doc["samples"][0]["messages"]
    (folder / "edited.json").write_text(json.dumps(doc))
    results = extract(folder, "inspect", id_prefix="log")
    assert sorted(r.id for r in results if isinstance(r, Case)) == ["weather-agent/agent", "weather-react/react"]
    errors = {Path(info.file).name: (cid, info.field) for cid, info in (r for r in results if isinstance(r, tuple))}
    assert errors == {"edited.json": ("edited/react", "messages"), "empty.eval": (f"{folder / 'empty.eval'}:1", None)}


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="Python 3.14's zipfile reads Zstandard itself")
def test_without_zstandard_each_sample_says_what_to_install() -> None:
    # A fresh interpreter in which `import zstandard` fails, as where it is not installed.
    code = ("import sys, json; sys.modules['zstandard'] = None\n"
            f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
            "from framework_truth import extract\n"
            f"print(json.dumps([r[1].message for r in extract({str(DATA / 'weather-react.eval')!r}, 'inspect')]))")
    done = _forkserver.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    (message,) = json.loads(done.stdout)
    assert message.startswith("samples/react_epoch_1.json: it is compressed with Zstandard") and "pip install zstandard" in message


def test_tracejudge_run_scores_a_folder_of_logs(tmp_path: Path) -> None:
    """Through the CLI: every sample is a result with its scores, the broken log is an invalid_input naming itself."""
    folder = _folder(tmp_path, "weather-tools.eval", "weather-chat.eval", "weather-react.eval", "weather-agent.eval")
    (folder / "broken.eval").write_text("not a zip\n")
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(yaml.safe_dump({
        "dataset": {"path": str(folder), "format": "inspect", "options": {"id_prefix": "task"}},
        "metrics": [{"type": "ToolCorrectness", "name": "tools"}, {"type": "ToolCorrectness", "name": "tools_all", "include_failed": True},
                    {"type": "TrajectoryMatch", "name": "traj", "order": "in_order"}, {"type": "Contains", "name": "answer"}],
        "assertions": {"max_invalid_share": 0.2}, "run": {"dir": str(tmp_path / "run")}, "cache": {"dir": str(tmp_path / "cache")}}))
    done = _forkserver.run([sys.executable, "-m", "tracejudge", "run", str(cfg), "--no-progress"], capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    results = {r["case_id"]: r for r in map(json.loads, (tmp_path / "run" / "results.jsonl").read_text().splitlines())}
    value = {cid: {k: s["value"] for k, s in r["scores"].items()} for cid, r in results.items() if r["status"] == "ok"}
    assert value["weather-tools/paris#1"] == value["weather-tools/paris#2"] == {"tools": 1.0, "tools_all": 1.0, "traj": 1.0, "answer": 1.0}
    # The Atlantis call failed: left out by default, counted with include_failed.
    assert {k: v for k, v in value["weather-tools/2#1"].items() if k != "traj"} == {"tools": 0.0, "tools_all": 1.0, "answer": 1.0}
    assert 0 < value["weather-tools/2#1"]["traj"] < 1
    assert value["weather-agent/agent"] == value["weather-react/react"] == {"tools": 1.0, "tools_all": 1.0, "traj": 1.0, "answer": 1.0}
    assert value["weather-chat/chat"]["answer"] == 1.0 and value["weather-chat/chat"]["tools"] is None  # no expected calls
    assert value["weather-chat/crash"]["answer"] == 0.0
    broken = results[f"{folder / 'broken.eval'}:1"]
    assert broken["status"] == "invalid_input" and broken["error"]["file"] == str(folder / "broken.eval")
    assert len(results) == 9


# ------------------------------------------------------------------------------------------------ live
def _shape(folder: Path) -> dict[str, Any]:
    """What a recording is compared by: its files, each log's sample members, and per sample its keys and its messages'
    (role, keys, content block types)."""
    shape: dict[str, Any] = {}
    for path in sorted(folder.glob("*.eval")) + sorted(folder.glob("*.json")):
        if path.name == "truth.json":
            continue
        samples = json.loads(path.read_text())["samples"] if path.suffix == ".json" else None
        if samples is None:
            with zipfile.ZipFile(path) as zf:
                names = sorted(n for n in zf.namelist() if not n.startswith("_journal/"))
            shape[path.name] = names
            continue
        shape[path.name] = sorted(json.dumps([sorted(s), [(m["role"], sorted(m), [b["type"] for b in m["content"]] if isinstance(m["content"], list) else "str")
                                                          for m in s["messages"]]]) for s in samples)
    return shape


def _stable(case: Case) -> dict[str, Any]:
    out = case.model_dump()
    out["trace"]["usage"].pop("latency_s")
    out["metadata"]["inspect"].pop("working_time")
    return out


def test_a_live_recording_keeps_its_shape_and_reads_the_same(tmp_path: Path) -> None:
    """Re-recorded with the installed inspect-ai: the same truth, files, members and message shapes, the same cases."""
    pytest.importorskip("inspect_ai")
    done = _forkserver.run([sys.executable, str(RECORDER), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads((tmp_path / "truth.json").read_text()) == TRUTH
    assert _shape(tmp_path) == _shape(DATA), "inspect now writes logs of another shape"
    for log in LOGS:
        fresh, kept = _cases(tmp_path / log), _cases(DATA / log)
        assert {cid: _stable(c) for cid, c in fresh.items()} == {cid: _stable(c) for cid, c in kept.items()}, log


# ------------------------------------------------------------------------------------------------ trial faults (small generated logs)
def _msg(role: str, content: Any, source: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **({"source": source} if source else {}), **extra}


def _sample(sid: Any, messages: list[dict[str, Any]], epoch: Any = 1, **extra: Any) -> dict[str, Any]:
    """A sample as inspect writes one (the keys read), its input the first user message's text unless `extra` gives one."""
    first = next(m["content"] for m in messages if m["role"] == "user")
    return {"id": sid, "epoch": epoch, "input": first, "target": "x", "messages": messages, **extra}


def _write_log(path: Path, *samples: dict[str, Any], epochs: int = 1) -> Path:
    doc = {"version": 2, "status": "success", "eval": {"task": "t", "model": "mockllm/model", "config": {"epochs": epochs}},
           "samples": list(samples)}
    path.write_text(json.dumps(doc, indent=2))
    return path


def test_an_empty_completion_is_the_output_inspect_scored_not_a_missing_one(tmp_path: Path) -> None:
    """inspect scores `output.completion` `""` (an empty reply, a sample stopped by a limit) `I` (no_response): it is the
    output, `""`, so the inspect scorers score it too; the last assistant text stands in only where the log has no completion."""
    from tracejudge.core.registry import build_metric

    ask = _msg("user", "empty please", "input")
    log = _write_log(tmp_path / "t.json",
                     _sample("empty", [ask, _msg("assistant", "", "generate")], output={"completion": ""}),
                     _sample("limit", [ask, _msg("assistant", "", "generate", tool_calls=[{"id": "c1", "function": "f", "arguments": {}}])],
                             output={"completion": ""}, limit={"type": "message", "limit": 2}),
                     _sample("old", [ask, _msg("assistant", "said")]),  # no `output`: a log not from inspect's recorder
                     _sample("nocompletion", [ask, _msg("assistant", "said too")], output={"model": "m"}))
    cases = _cases(log)
    assert {cid: c.trace.output for cid, c in cases.items()} == {"empty": "", "limit": "", "old": "said", "nocompletion": "said too"}
    for kind in ("includes", "match"):
        got = build_metric({"type": kind}).evaluate(cases["empty"])
        assert got.value == 0.0 and got.passed is False, (kind, got)


def test_input_history_is_no_turn_and_reads_as_the_conversation_it_was(tmp_path: Path) -> None:
    """A few-shot input `[system, user q1, assistant a1, user q2]`: `input` holds it and a live re-run sends it once, so no
    turn repeats q2; a judge reads q1, a1, q2, then the agent's answer. A user message a solver adds later is a turn."""
    history = [_msg("system", "sys", "input"), _msg("user", "q1", "input"), _msg("assistant", "a1", "input"),
               _msg("user", [{"type": "text", "text": "q2"}, {"type": "image", "image": "attachment://x"}], "input")]
    given = [{k: v for k, v in m.items() if k != "source"} for m in history]
    fewshot = _sample("fewshot", [*history, _msg("assistant", "answer", "generate")], input=given, output={"completion": "answer"})
    later = _sample("later", [*history, _msg("assistant", "answer", "generate"), _msg("user", "and then?"), _msg("assistant", "then this", "generate")],
                    input=given, output={"completion": "then this"})
    for name, strip in (("t.json", False), ("nosource.json", True)):  # (a log whose messages have no `source`: by position)
        samples = [fewshot, later] if not strip else [{**s, "messages": [{k: v for k, v in m.items() if k != "source" or m["role"] != "user"}
                                                                           for m in s["messages"]]} for s in (fewshot, later)]
        cases = _cases(_write_log(tmp_path / name, *samples))
        one, two = cases["fewshot"], cases["later"]
        assert one.turns == [] and two.turns == ["and then?"], name
        assert one.input == [{"role": r, "content": c} for r, c in (("system", "sys"), ("user", "q1"), ("assistant", "a1"), ("user", "q2"))]
        assert [(m.step, m.content) for m in one.trace.user_messages] == [(0, "q1"), (1, "q2")]
        assert [(s.output, s.tool_calls) for s in one.trace.steps] == [("a1", []), ("answer", [])]
        assert one.trace.usage.requests == 1 and two.trace.usage.requests == 2  # the agent's requests, not the history's
        assert [(m.step, m.content) for m in two.trace.user_messages] == [(0, "q1"), (1, "q2"), (2, "and then?")]
        assert (one.trace.output, two.trace.output) == ("answer", "then this")


def test_a_bad_epoch_is_its_own_invalid_input_not_another_samples_duplicate(tmp_path: Path) -> None:
    """Epoch `"2"` or `0` of sample 2, beside sample 2's epoch 1: filed under its own line, on field `epoch`, never as `2#1`."""
    for bad in ("2", 0):
        log = _write_log(tmp_path / "t.json", _sample(2, [_msg("user", "q", "input")]), _sample(2, [_msg("user", "q", "input")], epoch=bad),
                         epochs=2)
        results = extract(log, "inspect")
        assert [r.id for r in results if isinstance(r, Case)] == ["2#1"]
        ((cid, info),) = [r for r in results if isinstance(r, tuple)]
        assert (cid, info.field, info.kind) == (f"{log}:{info.line}", "epoch", "invalid_input") and info.line > 1
        assert f"got {json.dumps(bad)}" in info.message


def test_an_empty_sample_id_is_called_empty(tmp_path: Path) -> None:
    log = _write_log(tmp_path / "t.json", _sample("", [_msg("user", "q", "input")]), _sample("  ", [_msg("user", "q", "input")]))
    messages = [info.message for _, info in _errors(log)]
    assert messages == ["id: the sample id is an empty string", "id: the sample id is only white space"]


def test_a_compressed_log_is_named_compressed(tmp_path: Path) -> None:
    import gzip

    folder = tmp_path / "logs"
    folder.mkdir()
    for name in ("a.eval", "b.json", "c.json.gz"):  # (named as a log, or as a compressed one)
        (folder / name).write_bytes(gzip.compress((DATA / "weather-react.json").read_bytes()))
    errors = {Path(info.file).name: info.message for _, info in _errors(folder)}
    assert set(errors) == {"a.eval", "b.json", "c.json.gz"}
    assert all("it starts with 1F 8B, the mark of a gzip-compressed file: decompress it first (gunzip)" in m for m in errors.values()), errors


def test_an_empty_folder_is_refused_by_run_as_by_extract(tmp_path: Path) -> None:
    """Nothing to read is the config error of an empty dataset (exit 2) for `run` and `extract` alike, not a run without results."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "notes.txt").write_text("x")  # (no log)
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(yaml.safe_dump({"dataset": {"path": str(tmp_path / "logs"), "format": "inspect"}, "metrics": [{"type": "includes"}],
                                   "run": {"dir": str(tmp_path / "run")}, "cache": {"dir": str(tmp_path / "cache")}}))
    for command in (["run", str(cfg), "--no-progress"], ["extract", str(cfg), "-o", str(tmp_path / "out.jsonl")]):
        done = _forkserver.run([sys.executable, "-m", "tracejudge", *command], capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and "no records in it" in done.stderr, (command[0], done.returncode, done.stderr[-2000:])
    assert not (tmp_path / "run").exists()
