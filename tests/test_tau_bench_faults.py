"""Three faults a user trial found in the τ-bench reader, on the real GPT-4o airline runs.

1. Runs of upstream's `react`/`act` strategies (`tau_bench/agents/chat_react_agent.py`) read as zero tool calls.
2. Task `outputs` (strings the agent must say: upstream's `r_outputs`) were dropped by `tau-bench`.
3. The runs one per line (JSON Lines) were "no format knows these records; … set dataset.format: json-path".

A second trial found three more:

4. JSON Lines whose first line is cut lost every record (runs: "the file is a JSON object; … json-path"; tasks: every run
   "task N is not in the tasks file").
5. A tasks file that cannot be read at all (gzip-compressed, no array) made every run "task N is not in the tasks file",
   and `run` a config error on `dataset.path` telling to check `dataset.format`.
6. A react `respond` with an empty `content` gave the step's output `""` but the trace's output null.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from hand_edits import filed
from tracejudge.core.config import DatasetConfig
from tracejudge.core.errors import ConfigError
from tracejudge.core.records import Case
from tracejudge.core.registry import build_metric, format_for
from tracejudge.stages.extract import extract_record
from tracejudge.stages.extract.errors import AdapterError
from tracejudge.stages.extract.first_records import check_first_records
from tracejudge.stages.extract.tau_bench import adapt, load_tasks
from tracejudge.stages.extract.tau_bench_react import is_react
from tracejudge.stages.score import ToolCalls, ToolCorrectness, TrajectoryMatch

READ_ONLY = ["get_*", "search_*", "list_*", "calculate", "think", "transfer_*"]
OUTPUTS_METRIC = "TauOutputs"


@pytest.fixture(scope="module")
def raw_runs(tau_paths) -> list[dict]:
    return json.loads(tau_paths[0].read_text())


@pytest.fixture(scope="module")
def tasks(tau_paths):
    return load_tasks(tau_paths[1])


@pytest.fixture(scope="module")
def cases(raw_runs, tasks) -> list[Case]:
    return [adapt(run, tasks) for run in raw_runs]


def as_react(run: dict, act: bool = False) -> dict:
    """`run` as upstream's `ChatReActAgent.solve` writes it: each assistant message `message.model_dump()` of a text
    answer `Thought:\\n…\\nAction:\\n{"name", "arguments"}` (`act`: the `Action:` part alone), a reply as the action
    `respond` with `{"content": text}`, and each tool's observation a user message `"API output: " + observation`."""
    traj = []
    for msg in run["traj"]:
        if msg["role"] == "assistant":
            calls = msg.get("tool_calls") or []
            if calls:  # (every tool-calling message of these runs has exactly one call, answered by the next message)
                fn = calls[0]["function"]
                action = {"name": fn["name"], "arguments": json.loads(fn["arguments"])}
                thought = msg["content"] or f"I should call {fn['name']}."
            else:
                action = {"name": "respond", "arguments": {"content": msg["content"]}}
                thought = "I can answer the user now."
            text = ("" if act else f"Thought:\n{thought}\n") + "Action:\n" + json.dumps(action)
            traj.append({"content": text, "role": "assistant", "tool_calls": None, "function_call": None})
        elif msg["role"] == "tool":
            traj.append({"role": "user", "content": "API output: " + msg["content"]})
        else:
            traj.append(dict(msg))
    return {**run, "traj": traj}


def _calls(case: Case) -> list[tuple]:
    return [(c.name, c.arguments, c.arguments_invalid, c.result, c.error) for c in case.trace.tool_calls()]


_METRICS = [TrajectoryMatch(order="in_order"), TrajectoryMatch(), ToolCalls(), ToolCorrectness(allow_extra=True),
            ToolCalls(arguments="exact", exclude_tools=READ_ONLY, include_failed=False)]


# --- 1. react / act runs --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("act", [False, True], ids=["react", "act"])
def test_react_and_act_runs_read_as_their_tool_calling_originals(raw_runs, tasks, cases, act):
    total = 0
    for run, original in zip(raw_runs, cases):
        case = adapt(as_react(run, act), tasks)
        assert case.id == original.id and case.metadata == original.metadata and case.input == original.input
        assert _calls(case) == _calls(original), case.id
        assert all(c.id is None for c in case.trace.tool_calls())  # (the format has no call ids)
        assert case.trace.user_messages == original.trace.user_messages, case.id  # no `API output:` is a user turn
        assert [s.output for s in case.trace.steps] == [s.output for s in original.trace.steps]
        assert case.trace.output == original.trace.output and case.trace.usage == original.trace.usage
        for step, was in zip(case.trace.steps, original.trace.steps):
            if act:
                assert step.thought is None
            elif was.thought is not None:  # the text beside a call is the thought, in both shapes
                assert step.thought == was.thought
            assert step.error is None
        for metric in _METRICS:
            assert metric.evaluate(case) == metric.evaluate(original), (case.id, metric)
        total += len(case.trace.tool_calls())
    assert total == 1164


def test_a_file_of_react_runs_reads_through_the_format(tmp_path, raw_runs, cases):
    text = json.dumps([as_react(run) for run in raw_runs[:8]], indent=2)
    assert [cid for cid, err in filed(tmp_path / "react.json", "tau-bench", text) if err is None] == [c.id for c in cases[:8]]


def test_tool_calling_runs_are_not_taken_for_react(raw_runs):
    assert not any(is_react(run["traj"]) for run in raw_runs)
    # A reply that says "Action:" does not make a tool-calling run a react one: its action must be JSON naming one.
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Action: none needed, your booking stands."}]
    assert not is_react(chat)
    assert adapt({"task_id": 1, "traj": chat}, None).trace.output == "Action: none needed, your booking stands."


def _react_run(*texts: str, after: str = "Thanks. ###STOP###") -> dict:
    traj = [{"role": "system", "content": "policy"}, {"role": "user", "content": "I need my reservation."}]
    for text in texts:
        traj += [{"role": "assistant", "content": text}, {"role": "user", "content": after}]
    return {"task_id": 3, "trial": 0, "reward": 0.0, "info": {"task": {"actions": [], "outputs": ["ZFA04Y"]}}, "traj": traj}


def test_an_action_that_is_not_json_is_the_reply_as_upstream_sends_it(tmp_path):
    # `generate_next_step`: `json.loads` fails → `respond` with the text after the last `Action:` ("this is a hack"): the user
    # simulator gets that text, and τ-bench's output check reads it as a reply.
    cut = '{"name": "respond", "arguments": {"content": "Your reservation is ZFA04Y."'
    run = _react_run('Thought:\nI can answer.\nAction:\n{"name": "think", "arguments": {"thought": "x"}}\nAction:\n' + cut)
    # Its only action does not parse: nothing tells it from a tool-calling chat, whose reply is the whole text.
    assert not is_react(run["traj"]) and adapt(run, None).trace.output == run["traj"][2]["content"]
    run["traj"].insert(2, {"role": "assistant", "content": 'Action:\n{"name": "get_reservation_details", "arguments": {"reservation_id": "ZFA04Y"}}'})
    run["traj"].insert(3, {"role": "user", "content": "API output: Error: reservation not found"})
    case = adapt(run, None)
    first, second = case.trace.steps
    assert first.tool_calls[0].name == "get_reservation_details" and first.tool_calls[0].error == "Error: reservation not found"
    assert second.tool_calls == [] and second.output == cut
    assert second.thought == 'I can answer.\nAction:\n{"name": "think", "arguments": {"thought": "x"}}'  # (all before the last `Action:`)
    assert second.error.startswith("Action: invalid JSON: ") and second.error.endswith("; τ-bench's agent sends such text to the user as its reply")
    assert [m.content for m in case.trace.user_messages] == ["I need my reservation.", "Thanks. ###STOP###"]
    assert case.trace.output == cut and build_metric({"type": OUTPUTS_METRIC}).evaluate(case).value == 1.0


def test_an_action_with_arguments_that_are_no_object_keeps_the_call_flagged():
    run = _react_run('Action:\n{"name": "get_user_details", "arguments": "mia_li_3668"}', 'Action:\n{"name": "cancel_reservation"}',
                     'Action:\n{"name": "get_user_details", "arguments": ["mia_li_3668"]}', after="API output: Error: bad arguments")
    calls = adapt(run, None).trace.tool_calls()
    assert [(c.name, c.arguments, c.arguments_invalid, c.error) for c in calls] == [
        ("get_user_details", "mia_li_3668", True, "Error: bad arguments"), ("cancel_reservation", "(missing)", True, "Error: bad arguments"),
        ("get_user_details", '["mia_li_3668"]', True, "Error: bad arguments")]
    assert ToolCalls(arguments="exact").evaluate(Case(id="c", expected_tool_calls=[{"name": "cancel_reservation", "arguments": {}}],
                                                      trace={"steps": [{"tool_calls": [calls[1]]}]})).value == 0.0


def test_a_respond_without_content_text_is_read_as_the_reply_with_the_error():
    step = adapt(_react_run('Action:\n{"name": "respond", "arguments": {"text": "Hello"}}'), None).trace.steps[0]
    assert step.output == '{"name": "respond", "arguments": {"text": "Hello"}}' and step.tool_calls == []
    assert step.error == "Action: `respond` without a `content` text in its arguments; upstream's agent stops the run on it; read as the reply"


def test_an_api_output_after_a_reply_is_no_user_turn():
    run = _react_run('Action:\n{"name": "respond", "arguments": {"content": "Hello"}}', after="API output: stray")
    case = adapt(run, None)
    assert [m.content for m in case.trace.user_messages] == ["I need my reservation."] and case.trace.tool_calls() == []


# --- 2. outputs -----------------------------------------------------------------------------------------------------


def _upstream_found(run: dict) -> dict[str, bool] | None:
    """`calculate_reward`'s verdict per output, from the raw run: every `respond` action's content (an assistant message
    without a tool call, `message_to_action`), each output `.lower()` in `content.lower().replace(",", "")`."""
    outputs = run["info"]["task"]["outputs"]
    if not outputs:
        return None
    said = [m["content"] for m in run["traj"] if m["role"] == "assistant" and not m.get("tool_calls")]
    return {o: any(o.lower() in s.lower().replace(",", "") for s in said) for o in outputs}


def test_outputs_are_kept_on_the_cases_of_tasks_that_have_them(cases, raw_runs, tau_paths):
    task_outputs = {t["task_index"]: t["outputs"] for t in json.loads(tau_paths[1].read_text())}
    with_outputs = {c.id for c in cases if "outputs" in c.metadata}
    assert with_outputs == {f"{t}-{trial}" for t in (2, 8, 9, 44) for trial in range(4)}
    for case in cases:
        assert case.metadata.get("outputs", []) == task_outputs[case.metadata["task_id"]]
    assert [c.metadata["outputs"] for c in cases if c.id in ("2-0", "8-0")] == [["23553"], ["327", "1000", "1786"]]
    # without a tasks file, from the task each run embeds
    assert {adapt(r, None).id for r in raw_runs if "outputs" in adapt(r, None).metadata} == with_outputs


@pytest.mark.parametrize("shape", ["tool-calling", "react", "act"])
def test_the_outputs_metric_is_upstreams_r_outputs(cases, raw_runs, tasks, shape):
    metric = build_metric({"type": OUTPUTS_METRIC})
    recorded = 0
    for run, case in zip(raw_runs, cases):
        if shape != "tool-calling":
            case = adapt(as_react(run, act=shape == "act"), tasks)
        score, want = metric.evaluate(case), _upstream_found(run)
        if want is None:
            assert score.value is None and "metadata.outputs" in score.reason
            continue
        assert score.value == (1.0 if all(want.values()) else 0.0) and score.passed is all(want.values()), case.id
        assert {d["output"]: d["found"] for d in score.details["outputs"]} == want
        info = (run["info"].get("reward_info") or {}).get("info") or {}
        if "r_outputs" in info:  # the runs that ended by themselves: upstream's own verdict, recorded
            assert score.value == info["r_outputs"] and want == info["outputs"], case.id
            recorded += 1
    assert recorded == 13


def test_the_outputs_rule_drops_the_replys_commas_only():
    metric = build_metric({"type": OUTPUTS_METRIC})

    def score(outputs: list[str], *replies: str) -> float | None:
        steps = [{"output": r} for r in replies] + [{"tool_calls": [{"name": "calculate", "arguments": {}, "result": "1000"}]}]
        return metric.evaluate(Case(id="c", metadata={"outputs": outputs}, trace={"steps": steps})).value

    assert score(["1000", "Mastercard"], "A refund of $1,000 ...", "to your MASTERCARD") == 1.0
    assert score(["1,000"], "A refund of $1,000") == 0.0  # upstream removes commas from the reply, not from the output
    assert score(["1000"], "A refund of $1,00") == 0.0 and score(["1000"]) == 0.0  # a tool's result is no reply
    assert score(["35"], "135 points") == 1.0  # a substring, as upstream
    assert metric.evaluate(Case(id="c", metadata={"outputs": [1]}, trace={})).value is None


# --- 3. JSON Lines --------------------------------------------------------------------------------------------------


def _jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_runs_one_per_line_read_as_the_array_does(tmp_path, raw_runs, tau_paths, cases):
    runs = _jsonl(tmp_path / "runs.jsonl", raw_runs)
    tasks = _jsonl(tmp_path / "tasks.jsonl", json.loads(tau_paths[1].read_text()))
    fmt = format_for("tau-bench")
    for tasks_path in (tau_paths[1], tasks):
        ds = DatasetConfig(path=runs, format="tau-bench", tasks=tasks_path)
        got = [extract_record(raw, fmt, fmt.prepare(ds)) for raw in fmt.read(ds)]
        assert [c.model_dump() for c in got] == [c.model_dump() for c in cases]
    assert fmt.count(DatasetConfig(path=runs, format="tau-bench", limit=7)) == 7
    assert len(list(format_for("tau-bench-tasks").read(DatasetConfig(path=tasks, format="tau-bench-tasks")))) == 50


def test_a_broken_line_costs_only_itself(tmp_path, raw_runs):
    lines = [json.dumps(r) for r in raw_runs[:3]]
    text = "\n".join([lines[0], lines[1][:200], lines[2]]) + "\n"
    got = filed(tmp_path / "runs.jsonl", "tau-bench", text)
    assert [cid for cid, _ in got] == ["0-0", "F:2", "2-0"]
    assert got[1][1].startswith("invalid JSON: ") and got[1][1].endswith("the line ends early (it looks truncated)")


def test_runs_one_per_line_given_another_format_are_told_tau_bench(tmp_path, raw_runs):
    runs = _jsonl(tmp_path / "runs.jsonl", raw_runs)
    ds = DatasetConfig(path=runs, format="native")
    fmt = format_for("native")
    with pytest.raises(ConfigError) as err:
        check_first_records(fmt, ds, fmt.prepare(ds))
    assert "they read as format 'tau-bench': set dataset.format" in str(err.value)
    assert "no format knows" not in str(err.value)


# --- 4. a cut first line of JSON Lines -------------------------------------------------------------------------------


def test_a_cut_first_line_costs_only_itself(tmp_path, raw_runs):
    lines = [json.dumps(r) for r in raw_runs[:4]]
    got = filed(tmp_path / "runs.jsonl", "tau-bench", "\n".join([lines[0][:300], *lines[1:]]) + "\n")
    assert [cid for cid, _ in got] == ["F:1", "1-0", "2-0", "3-0"]
    assert got[0][1].startswith("invalid JSON: ") and got[0][1].endswith("the line ends early (it looks truncated)")
    # a record cut at its start (it ends with `}`), and blank lines before the first that reads
    got = filed(tmp_path / "runs.jsonl", "tau-bench", "\n\n" + lines[0][300:] + "\n" + "\n".join(lines[1:]) + "\n")
    assert [cid for cid, _ in got] == ["F:3", "1-0", "2-0", "3-0"]


def test_still_no_json_lines_of_runs(tmp_path, raw_runs):
    # A native JSON Lines file, one object written with an indent, and lines that are all cut are no runs one per line:
    # the array reader says what each is, as before.
    native = "\n".join(json.dumps({"id": f"c{i}", "input": "hi"}) for i in range(3)) + "\n"
    indented = json.dumps(raw_runs[0], indent=2)
    cut = "\n".join(json.dumps(r)[:300] for r in raw_runs[:3]) + "\n"
    for text in (native, "{broken\n" + native, indented, cut):
        got = filed(tmp_path / "x.jsonl", "tau-bench", text)
        assert len(got) == 1 and got[0][0] == "F:1", text[:80]
    assert filed(tmp_path / "x.jsonl", "tau-bench", native)[0][1] == "expected a JSON array of records at the top level"


def test_tasks_one_per_line_with_a_cut_first_line(tmp_path, raw_runs, tau_paths, cases):
    tasks = json.loads(tau_paths[1].read_text())
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join([json.dumps(tasks[0])[:100], *map(json.dumps, tasks[1:])]) + "\n")
    read = load_tasks(path)
    assert sorted(read) == list(range(1, 50)) and list(read.unreadable) == [0]
    by_id = {c.id: c for c in cases}
    for run in (r for r in raw_runs if r["task_id"] in (0, 1, 2)):
        if run["task_id"] == 0:
            with pytest.raises(AdapterError) as err:
                adapt(run, read)
            assert f"task 0 could not be read from the tasks file ({path}:1: invalid JSON: " in str(err.value)
        else:
            assert adapt(run, read).model_dump() == by_id[f"{run['task_id']}-{run['trial']}"].model_dump()
    # when a task is not among those read while some could not be, it is not claimed missing (an unreadable one may
    # have been it: a task may say its own index)
    read.pop(1)
    with pytest.raises(AdapterError) as err:
        adapt(next(r for r in raw_runs if r["task_id"] == 1), read)
    assert "is not in the tasks file" not in str(err.value)
    assert f"task 1 is not among the tasks read from the tasks file, 1 of which could not be read (the first: {path}:1: " in str(err.value)


# --- 5. a tasks file that cannot be read -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["gzip", "object", "text"])
def test_an_unreadable_tasks_file_is_one_config_error_naming_it(tmp_path, tau_paths, kind):
    path = tmp_path / "tasks.json"
    if kind == "gzip":
        path = tmp_path / "tasks.json.gz"
        path.write_bytes(gzip.compress(tau_paths[1].read_bytes()))
        want = f"dataset.tasks: {path}: it starts with 1F 8B, the mark of a gzip-compressed file: decompress it first (gunzip)"
    else:
        path.write_text('{"a": 1}\n' if kind == "object" else "tasks: none\n")
        want = f"dataset.tasks: no task of {path} could be read: {path}:1: "
    fmt = format_for("tau-bench")
    ds = DatasetConfig(path=tau_paths[0], format="tau-bench", tasks=path)
    with pytest.raises(ConfigError) as err:
        fmt.prepare(ds)
    assert str(err.value).startswith(want) and "not in the tasks file" not in str(err.value)
    if kind != "gzip":
        assert "a tasks file is a JSON array of" in str(err.value)


def test_a_text_tasks_file_starting_like_a_packed_one_is_read(tmp_path, tau_paths):
    # `BZh` starts bzip2 data, and may start text: only bytes that are no UTF-8 text are asked what they are packed with.
    path = tmp_path / "tasks.json"
    path.write_text("BZh" + tau_paths[1].read_text())
    with pytest.raises(ConfigError) as err:
        load_tasks(path)
    assert "compressed" not in str(err.value) and "could be read" in str(err.value)


# --- 6. an empty reply -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("earlier", [False, True])
def test_an_empty_last_reply_is_the_traces_output_in_both_shapes(earlier):
    said = ['Action:\n{"name": "respond", "arguments": {"content": "Your reservation is ZFA04Y."}}'] if earlier else []
    react = adapt(_react_run(*said, 'Action:\n{"name": "get_user_details", "arguments": {"user_id": "mia_li_3668"}}',
                             'Action:\n{"name": "respond", "arguments": {"content": ""}}'), None)
    assert is_react(_react_run('Action:\n{"name": "respond", "arguments": {"content": ""}}')["traj"])
    assert react.trace.steps[-1].output == "" and react.trace.output == ""
    chat = [{"role": "user", "content": "I need my reservation."}]
    if earlier:
        chat += [{"role": "assistant", "content": "Your reservation is ZFA04Y."}, {"role": "user", "content": "Thanks."}]
    chat += [{"role": "assistant", "content": ""}, {"role": "user", "content": "###STOP###"}]
    calling = adapt({"task_id": 3, "traj": chat}, None)
    assert calling.trace.steps[-1].output == "" and calling.trace.output == ""
    # no text at all is no reply: the one before stays the output
    chat[-2]["content"] = None
    assert adapt({"task_id": 3, "traj": chat}, None).trace.output == ("Your reservation is ZFA04Y." if earlier else None)
