"""The native trace formats read the traces of one conversation as one case (`group_by: conversation`, the default).

Recordings: `tests/data/conversation-groups/` (`tests/frameworks/record_conversation_groups.py`: the real OpenAI Agents
SDK, Langfuse and MLflow against the scripted loopback server). A chat app answers two turns of one conversation, a
trace per turn (`group_id` / `sessionId` / `mlflow.trace.session` `thread-7f3a`), and between them a question outside
any conversation; `<name>.truth.json` holds what the app sent and got. Before, each trace was a case: the judge saw
"And in Tokyo?" without the turn it follows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from tracejudge.core import registry
from tracejudge.core.config import DatasetConfig, load_config, validate_config
from tracejudge.core.errors import ConfigError
from tracejudge.core.records import Case
from tracejudge.engine.runner import run
from tracejudge.stages.extract import extract_record
from tracejudge.stages.extract.otel import turn_calls

DATA = Path(__file__).parent / "data" / "conversation-groups"
# export -> (format, metadata key, the key's field as errors name it)
EXPORTS = {
    "agents.jsonl": ("openai-agents", "openai_agents", "trace.group_id"),
    "agents.batch.jsonl": ("openai-agents", "openai_agents", "trace.group_id"),
    "langfuse.json": ("langfuse", "langfuse", "sessionId"),
    "langfuse.v2.json": ("langfuse", "langfuse", "sessionId"),
    "mlflow.jsonl": ("mlflow", "mlflow", "info.trace_metadata.mlflow.trace.session"),
}
LINES = [name for name in EXPORTS if name != "agents.batch.jsonl"]  # one trace per line: edited line by line below


def truth(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name.split('.')[0]}.truth.json").read_text())


def extract(path: Path, fmt: str, **options: Any) -> list[Any]:
    """Every result of reading `path` as `fmt`: a `Case`, or `(case_id, ErrorInfo)`."""
    f = registry.format_for(fmt)
    ds = DatasetConfig(path=path, format=fmt, options=options)
    ctx = f.prepare(ds)
    return [extract_record(raw, f, ctx) for raw in f.read(ds)]


def cases(results: list[Any]) -> dict[str, Case]:
    return {r.id: r for r in results if isinstance(r, Case)}


def errors(results: list[Any]) -> list[Any]:
    return [r for r in results if not isinstance(r, Case)]


def records(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines()]


def write(tmp_path: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def trace_id(row: dict[str, Any]) -> str:
    if "trace" in row:
        return row["trace"]["id"]
    if "info" in row:
        return row["info"]["trace_id"]
    return row["id"] if "id" in row else row["data"][0]["traceId"]


def key_holder(row: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The mapping holding a line's conversation key, and the key's name in it."""
    if "trace" in row:
        return row["trace"], "group_id"
    if "info" in row:
        return row["info"]["trace_metadata"], "mlflow.trace.session"
    if "data" in row:
        return next(o for o in row["data"] if o.get("isRootObservation")), "sessionId"
    return row, "sessionId"


def set_key(row: dict[str, Any], value: Any) -> dict[str, Any]:
    holder, key = key_holder(row)
    holder[key] = value
    return row


def break_trace(row: dict[str, Any]) -> str:
    """Make `row` a trace its format cannot read; returns the field the error names."""
    if "spans" in row:
        row["spans"][0]["span_data"] = {}
        return "spans[0].span_data.type"
    if "info" in row:
        row["data"]["spans"][0]["attributes"] = None
        return "data.spans[0].attributes"
    (row.get("observations") or row["data"])[1].pop("type")
    return "observations[1].type"


@pytest.mark.parametrize("name", list(EXPORTS))
def test_a_conversation_is_one_case_its_turns_in_order(name: str) -> None:
    fmt, meta, _ = EXPORTS[name]
    want = truth(name)
    conv, lone = want["conversation"], want["lone"]
    results = extract(DATA / name, fmt)
    assert not errors(results), results
    got = cases(results)
    assert list(got) == [lone["trace"], conv["key"]]  # lone traces as read, conversations once the file is read
    case = got[conv["key"]]
    turns = conv["turns"]
    assert case.input == turns[0]["user"] and case.turns == [t["user"] for t in turns[1:]]
    assert [m.content for m in case.trace.user_messages] == [t["user"] for t in turns]
    assert [(c.name, c.arguments, c.result) for c in case.trace.tool_calls()] == [
        (c["name"], c["arguments"], c["result"]) for t in turns for c in t["calls"]]
    assert [[(c.name, c.arguments) for c in calls] for calls in turn_calls(case)] == [
        [(c["name"], c["arguments"]) for c in t["calls"]] for t in turns]
    assert [t["final_text"] for t in case.metadata["otel"]["turns"]] == [t["answer"] for t in turns]
    assert case.trace.output == turns[-1]["answer"]
    usage = case.trace.usage
    assert (usage.input_tokens, usage.output_tokens, usage.requests) == (
        conv["usage"]["input_tokens"], conv["usage"]["output_tokens"], sum(t["requests"] for t in turns))
    assert case.metadata[meta]["traces"] == conv["traces"]  # each trace's id stays in the case
    alone = got[lone["trace"]]
    assert (alone.input, alone.turns, alone.trace.output) == (lone["user"], [], lone["answer"])
    assert (alone.trace.usage.input_tokens, alone.trace.usage.output_tokens) == (lone["usage"]["input_tokens"], lone["usage"]["output_tokens"])
    assert "traces" not in alone.metadata[meta]


@pytest.mark.parametrize("name", list(EXPORTS))
def test_group_by_trace_reads_each_trace_as_its_own_case(name: str) -> None:
    fmt, meta, _ = EXPORTS[name]
    want = truth(name)
    turns = want["conversation"]["turns"]
    assert registry.format_for(fmt).options.model_validate({"group_by": "trace"}).group_by == "trace"  # an option of the format
    got = cases(extract(DATA / name, fmt, group_by="trace"))
    first, second = want["conversation"]["traces"]
    assert sorted(got) == sorted([first, want["lone"]["trace"], second])  # one trace each
    for tid, turn in ((first, turns[0]), (second, turns[1])):
        case = got[tid]
        assert (case.input, case.turns, case.trace.output) == (turn["user"], [], turn["answer"])
        assert [(c.name, c.arguments, c.result) for c in case.trace.tool_calls()] == [(c["name"], c["arguments"], c["result"]) for c in turn["calls"]]
        assert case.trace.usage.requests == turn["requests"] and "traces" not in case.metadata[meta]


@pytest.mark.parametrize("name", LINES)
def test_turns_follow_their_start_times_not_the_file_order(tmp_path: Path, name: str) -> None:
    fmt, _, _ = EXPORTS[name]
    conv = truth(name)["conversation"]
    path = write(tmp_path, name, list(reversed(records(name))))
    case = cases(extract(path, fmt))[conv["key"]]
    assert [m.content for m in case.trace.user_messages] == [t["user"] for t in conv["turns"]]
    assert case.trace.output == conv["turns"][-1]["answer"]


@pytest.mark.parametrize("name", LINES)
def test_a_trace_without_a_key_stands_alone(tmp_path: Path, name: str) -> None:
    fmt, meta, _ = EXPORTS[name]
    conv, lone = truth(name)["conversation"], truth(name)["lone"]
    rows = records(name)
    path = write(tmp_path, name, [set_key(r, None) if trace_id(r) == conv["traces"][1] else r for r in rows])
    got = cases(extract(path, fmt))
    assert list(got) == [lone["trace"], conv["traces"][1], conv["key"]]  # the second turn read alone, as the lone question is
    assert [m.content for m in got[conv["traces"][1]].trace.user_messages] == [conv["turns"][1]["user"]]
    assert got[conv["key"]].metadata[meta]["traces"] == conv["traces"][:1]  # a conversation of one trace is still named by its key
    path = write(tmp_path, name, [set_key(r, None) for r in rows])
    if fmt == "openai-agents":  # turn 2 replays turn 1 (`to_input_list()`): still one conversation, as format otel reads it
        got = cases(extract(path, fmt))
        assert set(got) == {lone["trace"], conv["traces"][0]} and got[conv["traces"][0]].metadata[meta]["traces"] == conv["traces"]
        return
    assert list(cases(extract(path, fmt))) == [trace_id(r) for r in rows]


@pytest.mark.parametrize("name", LINES)
def test_a_copy_of_a_trace_is_read_once_and_a_conflicting_one_is_refused(tmp_path: Path, name: str) -> None:
    fmt, meta, field = EXPORTS[name]
    conv = truth(name)["conversation"]
    rows = records(name)
    first = next(i for i, r in enumerate(rows) if trace_id(r) == conv["traces"][0])
    same = json.loads(json.dumps(rows[first]))
    other = {**json.loads(json.dumps(rows[first])), "copy": 2}
    elsewhere = set_key(json.loads(json.dumps(rows[first])), "thread-other")
    results = extract(write(tmp_path, name, [*rows, same, other, elsewhere]), fmt)
    refused = errors(results)
    assert [(cid, e.kind, e.line, e.field) for cid, e in refused] == [
        (conv["traces"][0], "invalid_input", len(rows) + 2, field), (conv["traces"][0], "invalid_input", len(rows) + 3, field)]
    assert f"read at line {first + 1} with other content" in refused[0][1].message
    assert f"is in conversation '{conv['key']}'" in refused[1][1].message and "'thread-other'" in refused[1][1].message
    case = cases(results)[conv["key"]]  # the first copy's conversation, each trace once
    assert case.metadata[meta]["traces"] == conv["traces"] and len(case.trace.user_messages) == 2


@pytest.mark.parametrize("name", LINES)
def test_a_key_that_is_not_text_is_refused_naming_its_field(tmp_path: Path, name: str) -> None:
    fmt, _, field = EXPORTS[name]
    conv = truth(name)["conversation"]
    rows = records(name)
    second = next(i for i, r in enumerate(rows) if trace_id(r) == conv["traces"][1])
    set_key(rows[second], {"thread": conv["key"]})
    results = extract(write(tmp_path, name, rows), fmt)
    [(cid, error)] = errors(results)
    assert (cid, error.kind, error.line, error.field) == (conv["traces"][1], "invalid_input", second + 1, field)
    # the report prints the field before the message (`agents.jsonl:2: trace.group_id (t…): expected …`): named once
    assert error.message.startswith("expected the id of the trace's conversation (text or a whole number), got an object"), error.message
    assert [m.content for m in cases(results)[conv["key"]].trace.user_messages] == [conv["turns"][0]["user"]]


@pytest.mark.parametrize("name", LINES)
def test_a_malformed_trace_of_a_conversation_costs_that_trace_only(tmp_path: Path, name: str) -> None:
    fmt, meta, _ = EXPORTS[name]
    conv = truth(name)["conversation"]
    rows = records(name)
    first = next(i for i, r in enumerate(rows) if trace_id(r) == conv["traces"][0])
    field = break_trace(rows[first])
    results = extract(write(tmp_path, name, rows), fmt)
    [(cid, error)] = errors(results)  # the same error as that trace read alone
    assert (cid, error.kind, error.line, error.field) == (conv["traces"][0], "invalid_input", first + 1, field)
    case = cases(results)[conv["key"]]
    assert case.input == conv["turns"][1]["user"] and case.trace.output == conv["turns"][1]["answer"]
    assert case.metadata[meta]["traces"] == conv["traces"][1:] and case.metadata[meta]["left_out"] == conv["traces"][:1]
    assert cases(extract(write(tmp_path, name, [rows[first]]), fmt, group_by="trace")) == {}  # ... as read alone
    assert errors(extract(tmp_path / name, fmt, group_by="trace"))[0][1].field == field


def test_an_item_stream_groups_traces_whose_items_lie_apart(tmp_path: Path) -> None:
    # Items one per line, as a TracingProcessor writing `item.export()` does, the lone trace's items between the turns'
    # and the second turn's trace item last; few open traces allowed: the first turn is closed long before the second.
    items = [item for batch in records("agents.batch.jsonl") for item in batch["data"]]
    traces = [i for i in items if i["object"] == "trace"]
    path = write(tmp_path, "items.jsonl", [i for i in items if i is not traces[2]] + [traces[2]])
    want = truth("agents.jsonl")
    got = cases(extract(path, "openai-agents", max_open_traces=1))
    case = got[want["conversation"]["key"]]
    assert [m.content for m in case.trace.user_messages] == [t["user"] for t in want["conversation"]["turns"]]
    assert case.metadata["openai_agents"]["traces"] == want["conversation"]["traces"]


def test_held_traces_spill_to_a_temporary_file(monkeypatch: pytest.MonkeyPatch) -> None:
    from tracejudge.stages.extract import conversation_groups

    in_memory = {name: [c.model_dump() for c in extract(DATA / name, fmt)] for name, (fmt, _, _) in EXPORTS.items()}
    monkeypatch.setattr(conversation_groups, "_IN_MEMORY", 1024)  # a KiB of held text: past it, on disk
    for name, (fmt, _, _) in EXPORTS.items():
        assert [c.model_dump() for c in extract(DATA / name, fmt)] == in_memory[name], name


def test_the_limit_counts_cases() -> None:
    want = truth("mlflow.jsonl")
    fmt = registry.format_for("mlflow")
    ds = DatasetConfig(path=DATA / "mlflow.jsonl", format="mlflow", limit=1)
    assert [extract_record(raw, fmt, fmt.prepare(ds)).id for raw in fmt.read(ds)] == [want["lone"]["trace"]]


@pytest.mark.parametrize("fmt", ["openai-agents", "langfuse", "mlflow"])
def test_group_by_takes_conversation_or_trace(tmp_path: Path, fmt: str) -> None:
    (tmp_path / "t.jsonl").write_text("{}\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"dataset:\n  path: t.jsonl\n  format: {fmt}\n  options: {{group_by: session}}\nmetrics: [{{type: MaxToolCalls, max_calls: 3}}]\n")
    with pytest.raises(ConfigError) as exc:
        load_config(cfg)
    assert f"c.yaml:4: dataset.options.group_by: {fmt}: Input should be 'conversation' or 'trace'" in str(exc.value)
    cfg.write_text(cfg.read_text().replace("session", "trace"))
    assert load_config(cfg).dataset.options == {"group_by": "trace"}


def test_a_run_scores_the_conversation_as_one_case(tmp_path: Path) -> None:
    want = truth("agents.jsonl")
    config = validate_config({"dataset": {"path": str(DATA / "agents.jsonl"), "format": "openai-agents"},
                              "metrics": [{"type": "MaxToolCalls", "max_calls": 1}], "run": {"dir": str(tmp_path / "run")}})
    anyio.run(run, config)
    results = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    # the conversation made two calls in all: over a budget each of its traces alone stayed within
    assert sorted((r["case_id"], r["status"], r["scores"]["MaxToolCalls"]["passed"]) for r in results) == sorted(
        [(want["lone"]["trace"], "ok", True), (want["conversation"]["key"], "ok", False)])


def test_a_blank_conversation_key_is_no_key() -> None:
    # `" "` made a conversation whose case id was then refused as blank (`id: id: the case id is empty …`).
    from tracejudge.stages.extract.conversation_groups import key_of

    assert key_of(" ", "group_id") == (None, None) and key_of("", "group_id") == (None, None)
    assert key_of(7, "group_id") == ("7", None) and key_of("t-1", "group_id") == ("t-1", None)
    key, problem = key_of(True, "group_id")
    assert key is None and problem is not None and "got a boolean" in problem
    assert "group_id" not in problem  # the caller's refusal names the field (the report prints it), the message does not
    key, problem = key_of(42.0, "group_id")
    assert key is None and "got 42.0" in (problem or "")  # shown: "got a number" would say whole ones are refused too


# the key as each format's metadata keeps it (verbatim), beside the case id
KEPT = {"agents.jsonl": "group_id", "langfuse.json": "sessionId", "langfuse.v2.json": "sessionId", "mlflow.jsonl": "session"}


@pytest.mark.parametrize("name", LINES)
def test_a_key_with_a_trailing_space_is_another_conversation_whose_id_shows_it(tmp_path: Path, name: str) -> None:
    # The SDKs keep a key verbatim and group by its exact text (MLflow's `group_traces_by_session` keys a dict by it, the
    # Agents SDK and Langfuse pass it through untouched): `"thread-7f3a "` is another conversation. Its case id was the key
    # bare, so two cases both printed as `thread-7f3a`; now it is quoted, so the two read apart.
    fmt, meta, _ = EXPORTS[name]
    conv = truth(name)["conversation"]
    rows = records(name)
    spaced = conv["key"] + " "
    path = write(tmp_path, name, [set_key(r, spaced) if trace_id(r) == conv["traces"][1] else r for r in rows])
    got = cases(extract(path, fmt))
    assert set(got) == {truth(name)["lone"]["trace"], conv["key"], f'"{spaced}"'}
    assert [m.content for m in got[f'"{spaced}"'].trace.user_messages] == [conv["turns"][1]["user"]]
    assert got[f'"{spaced}"'].metadata[meta][KEPT[name]] == spaced  # the recorded key itself, as the SDK wrote it
    assert [m.content for m in got[conv["key"]].trace.user_messages] == [conv["turns"][0]["user"]]


def test_a_conversation_id_is_its_key_unless_the_key_could_pass_for_another() -> None:
    from tracejudge.stages.extract.conversation_groups import case_id_of

    assert [case_id_of(k) for k in ("thread-1", "thread 1", "café", '"')] == ["thread-1", "thread 1", "café", '"']
    assert [case_id_of(k) for k in ("thread-1 ", " thread-1", "t\t1", "t-1\u200b", "t-1\u00a0", '"thread-1 "')] == [
        '"thread-1 "', '" thread-1"', '"t\\t1"', '"t-1\\u200b"', '"t-1\\u00a0"', '"\\"thread-1 \\""']
